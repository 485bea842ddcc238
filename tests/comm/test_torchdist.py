"""The gloo bridge: point-to-point semantics, byte counts, errors reported from a rank."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minitorch.comm.torchdist import RankError, TorchDistComm, launch

RING = """
def ring_shift(comm, x):
    right, left = (comm.rank + 1) % comm.world_size, (comm.rank - 1) % comm.world_size
    comm.send(x * (comm.rank + 1), right)
    return comm.recv(left)
"""


def _cases(comm: TorchDistComm) -> dict[str, Any]:
    from minitorch.comm.torchdist import run_source

    r, p = comm.rank, comm.world_size
    out: dict[str, Any] = {}
    # every rank sends before it receives: buffered sends must not deadlock (1 MiB each)
    big = np.full(1 << 17, r, np.float64)
    comm.send(big, (r + 1) % p)
    out["big"] = float(comm.recv((r - 1) % p).sum())
    h = comm.irecv((r - 1) % p, tag=3)
    comm.isend(np.arange(6, dtype=np.int32).reshape(2, 3) + r, (r + 1) % p, tag=3).wait()
    got = h.wait()
    out["shape"], out["dtype"], out["first"] = got.shape, str(got.dtype), int(got[0, 0])
    comm.send(np.zeros((0, 4), np.float32), (r + 1) % p)
    out["empty"] = comm.recv((r - 1) % p).shape
    out["ring"] = run_source(comm, RING, "ring_shift", np.ones(3)).tolist()
    out["allreduce"] = comm.torch_all_reduce(np.array([r + 1.0])).tolist()
    comm.barrier()
    out["bytes"], out["messages"] = comm.bytes_sent, comm.messages_sent
    out["to"] = list(comm.bytes_to)
    # one channel, sizes and dtypes that change or repeat (header joined to the payload or not)
    seq = [
        np.arange(4.0),
        np.arange(4.0) + 1,
        np.arange(8, dtype=np.float32).reshape(2, 4),
        np.zeros((0, 2)),
        np.zeros((0, 2)),
        np.arange(3, dtype=np.int8),
        np.full(1, 7.0),
    ]
    for a in seq:
        comm.send(a + r if a.size else a, (r + 1) % p, tag=5)
    got = [comm.recv((r - 1) % p, tag=5) for _ in seq]
    want = [a + (r - 1) % p if a.size else a for a in seq]
    out["seq"] = all(
        g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
        for g, w in zip(got, want, strict=True)
    )
    return out


def _boom(comm: TorchDistComm) -> None:
    if comm.rank == 1:
        raise ValueError("boom on purpose")
    comm.barrier()


def test_point_to_point_on_two_ranks() -> None:
    res = launch(_cases, 2)
    for r, out in enumerate(res):
        left = (r - 1) % 2
        assert out["big"] == left * (1 << 17)
        assert out["shape"] == (2, 3) and out["dtype"] == "int32" and out["first"] == left
        assert out["empty"] == (0, 4)
        assert out["ring"] == [left + 1.0] * 3
        assert out["allreduce"] == [3.0]
        assert out["messages"] == 4
        assert out["bytes"] == 8 * (1 << 17) + 24 + 0 + 24
        assert out["to"][1 - r] == out["bytes"] and out["to"][r] == 0
        assert out["seq"]


def test_a_failing_rank_is_reported_with_its_traceback() -> None:
    with pytest.raises(RankError, match="boom on purpose"):
        launch(_boom, 2, timeout=60)


def test_bad_world_size() -> None:
    with pytest.raises(ValueError, match="world_size"):
        launch(_boom, 0)
