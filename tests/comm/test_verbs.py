"""The verbs simulation: keys and access rights enforced, costs counted per side."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.comm import verbs as V


def _pair(size: int = 32):
    a, b = V.Host("a"), V.Host("b")
    src = a.reg_mr(np.arange(size, dtype=np.uint8))
    dst = b.reg_mr(np.zeros(size, np.uint8), V.LOCAL_WRITE | V.REMOTE_WRITE | V.REMOTE_READ)
    qa, qb = V.connect(a, b)
    a.cpu_ops = b.cpu_ops = 0
    return a, b, src, dst, qa, qb


def test_rdma_write_leaves_the_target_cpu_idle() -> None:
    a, b, src, dst, qa, _ = _pair()
    assert V.rdma_put(qa, src, 8, 4, dst.rkey) == 8
    assert dst.buf[4:12].tolist() == list(range(8)) and not dst.buf[:4].any()
    assert b.cpu_ops == 0 and a.copies == b.copies == 0 and a.wire_bytes == 8 and not a.cq


def test_send_needs_a_posted_receive() -> None:
    _, _, src, dst, qa, qb = _pair()
    with pytest.raises(V.VerbsError, match="not ready"):
        qa.post_send(src, 4)
    assert V.send_recv(qa, qb, src, dst, 16) == 16
    assert dst.buf[:16].tolist() == list(range(16))


def test_send_recv_costs_the_receiver_two_verbs() -> None:
    a, b, src, dst, qa, qb = _pair()
    V.send_recv(qa, qb, src, dst, 32)
    assert b.cpu_ops == 2 and a.cpu_ops == 2 and a.copies + b.copies == 0


def test_rdma_read_pulls_without_the_target() -> None:
    _a, b, src, dst, qa, _ = _pair()
    dst.buf[:] = 7
    qa.rdma_read(src, 5, 0, dst.rkey)
    assert src.buf[:5].tolist() == [7] * 5 and b.cpu_ops == 0 and b.wire_bytes == 5


def test_keys_and_rights_are_enforced() -> None:
    _a, b, src, dst, qa, _ = _pair()
    ro = b.reg_mr(np.zeros(8, np.uint8), V.LOCAL_WRITE)
    with pytest.raises(V.VerbsError, match="unknown rkey"):
        qa.rdma_write(src, 4, 0, src.lkey)
    with pytest.raises(V.VerbsError, match="not registered"):
        qa.rdma_write(src, 4, 0, ro.rkey)
    with pytest.raises(V.VerbsError, match="bounds"):
        qa.rdma_write(src, 8, 30, dst.rkey)


def test_memcpy_is_counted() -> None:
    a, _, src, _, _, _ = _pair()
    other = a.reg_mr(np.zeros(32, np.uint8))
    a.memcpy(other, src, 10)
    assert a.copies == 1 and a.bytes_copied == 10 and other.buf[9] == 9
