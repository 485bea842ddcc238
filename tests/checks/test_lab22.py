"""Lab 22 graders: the reference passes; wrong answers, budget breakers and reference calls fail."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from a2s.checks import lab22
from a2s.checks.core import CheckFailure, ReferenceCalledError
from minitorch.comm import fit, verbs
from tests.helpers.graders import rejects, unblocked_in

free = unblocked_in("minitorch.comm")


def test_reference_passes() -> None:
    lab22.check_rdma_put(free(verbs.rdma_put))
    lab22.check_send_recv(free(verbs.send_recv))
    lab22.check_fit_alpha_beta(free(fit.fit_alpha_beta))


# ---------------------------------------------------------------- 22.1 one-sided put
def put_two_sided(qp, src, length, off, rkey):
    """Value-correct emulation with send/recv: the receiver's CPU posts and polls."""
    dst = qp.remote.mrs[rkey]
    staging = qp.remote.reg_mr(np.zeros(length, np.uint8))
    qp.peer.post_recv(staging)
    qp.post_send(src, length)
    dst.buf[off : off + length] = staging.buf[:length]
    qp.peer.local.poll_cq()
    return qp.local.poll_cq()[0].byte_len


def put_bounce(qp, src, length, off, rkey):
    """Value-correct, but copies into a bounce buffer first."""
    bounce = qp.local.reg_mr(np.zeros(src.length, np.uint8))
    qp.local.memcpy(bounce, src, length)
    qp.rdma_write(bounce, length, off, rkey)
    return qp.local.poll_cq()[0].byte_len


def put_no_poll(qp, src, length, off, rkey):
    qp.rdma_write(src, length, off, rkey)
    return length


def put_whole_region(qp, src, length, off, rkey):
    qp.rdma_write(src, length, 0, rkey)
    return qp.local.poll_cq()[0].byte_len


def put_with_lkey(qp, src, length, off, rkey):
    qp.rdma_write(src, length, off, src.lkey)
    return qp.local.poll_cq()[0].byte_len


def put_by_hand(qp, src, length, off, rkey):
    """Cheat: writes the remote buffer directly and forges the wire counter."""
    qp.remote.mrs[rkey].buf[off : off + length] = src.buf[:length]
    qp.local.wire_bytes += length
    return length


def put_bounce_forged(qp, src, length, off, rkey):
    """Cheat: a bounce buffer, then the hosts' counters reset to what the budget wants."""
    n = put_bounce(qp, src, length, off, rkey)
    qp.local.copies = qp.local.bytes_copied = 0
    qp.local.cpu_ops = 2
    return n


def put_cq_cleared(qp, src, length, off, rkey):
    """Cheat: empties the completion queue instead of polling it."""
    qp.rdma_write(src, length, off, rkey)
    qp.local.cq.clear()
    return length


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (put_by_hand, "receiver's CPU ran"),  # a CPU write of the region is counted
        (put_bounce_forged, "CPU copy"),
        (put_cq_cleared, "left in the sender's queue"),
        (put_two_sided, "receiver's CPU ran"),
        (put_bounce, "CPU copy"),
        (put_no_poll, "poll_cq"),
        (put_whole_region, "wrong bytes|outside"),
        (put_with_lkey, "NIC refused"),
    ],
)
def test_wrong_puts_are_rejected(wrong, hint: str) -> None:
    rejects(lab22.check_rdma_put, wrong, match=hint)


def test_put_calling_the_reference_is_rejected() -> None:
    rejects(
        lab22.check_rdma_put,
        verbs.rdma_put,
        match="rdma_put|send_recv|fit_alpha_beta",
        error=ReferenceCalledError,
    )


# ---------------------------------------------------------------- 22.2 two-sided send/recv
def send_first(qs, qr, src, dst, length):
    qs.post_send(src, length)
    qr.post_recv(dst)
    qr.local.poll_cq()
    return qs.local.poll_cq()[0].byte_len


def recv_staged(qs, qr, src, dst, length):
    """Value-correct, but lands in a staging buffer and copies out."""
    staging = qr.local.reg_mr(np.zeros(dst.length, np.uint8))
    qr.post_recv(staging)
    qs.post_send(src, length)
    wc = qr.local.poll_cq()[0]
    qr.local.memcpy(dst, staging, length)
    qs.local.poll_cq()
    return wc.byte_len


def send_as_write(qs, qr, src, dst, length):
    """Value-correct one-sided write: not a two-sided receive."""
    qs.rdma_write(src, length, 0, dst.rkey)
    return qs.local.poll_cq()[0].byte_len


def send_no_sender_poll(qs, qr, src, dst, length):
    qr.post_recv(dst)
    qs.post_send(src, length)
    return qr.local.poll_cq()[0].byte_len


def recv_by_hand(qs, qr, src, dst, length):
    """Cheat: copies the bytes itself, then posts and polls to look two-sided."""
    dst.buf[:length] = src.buf[:length]
    qr.post_recv(dst)
    qr.local.poll_cq()
    return length


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (recv_by_hand, "CPU copy"),  # writing dst.buf is a CPU copy, counted
        (send_first, "receiver-not-ready"),
        (recv_staged, "CPU copy"),
        (send_as_write, "two-sided receive"),
        (send_no_sender_poll, "unpolled"),
    ],
)
def test_wrong_send_recvs_are_rejected(wrong, hint: str) -> None:
    rejects(lab22.check_send_recv, wrong, match=hint)


def test_send_recv_calling_the_reference_is_rejected() -> None:
    rejects(
        lab22.check_send_recv,
        verbs.send_recv,
        match="rdma_put|send_recv|fit_alpha_beta",
        error=ReferenceCalledError,
    )


# ---------------------------------------------------------------- 22.3 alpha-beta fit
def fit_origin(n, t):
    n, t = np.asarray(n, float), np.asarray(t, float)
    return 0.0, float((n * t).sum() / (n * n).sum())


def fit_swapped(n, t):
    n, t = np.asarray(n, float), np.asarray(t, float)
    b = ((n - n.mean()) * (t - t.mean())).sum() / ((n - n.mean()) ** 2).sum()
    return b, t.mean() - b * n.mean()


def fit_polyfit(n, t):
    b, a = np.polyfit(n, t, 1)
    return float(a), float(b)


def fit_lstsq(n, t):
    n = np.asarray(n, float)
    (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(n), n], 1), t, rcond=None)
    return float(a), float(b)


def fit_statistics(n, t):
    line = statistics.linear_regression([float(v) for v in n], [float(v) for v in t])
    return line.intercept, line.slope


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (fit_statistics, "linear_regression"),
        (fit_origin, "through the origin"),
        (fit_swapped, r"\(alpha, beta\)"),
        (fit_polyfit, "polyfit"),
        (fit_lstsq, "linalg"),
    ],
)
def test_wrong_fits_are_rejected(wrong, hint: str) -> None:
    rejects(lab22.check_fit_alpha_beta, wrong, match=hint)


def test_fit_calling_the_reference_is_rejected() -> None:
    rejects(
        lab22.check_fit_alpha_beta,
        fit.fit_alpha_beta,
        match="rdma_put|send_recv|fit_alpha_beta",
        error=ReferenceCalledError,
    )


def test_forbidden_fit_is_a_check_failure() -> None:
    with pytest.raises(CheckFailure):
        lab22.check_fit_alpha_beta(fit_polyfit)


MUSTS = [
    ("22.1", "with **one** RDMA write posted on the source region itself", "test_attempt"),
    ("22.1", "the receiver's CPU runs **0** verbs", "test_wrong_puts_are_rejected"),
    ("22.1", "**0** CPU copies on either side (no bounce buffer)", "test_attempt"),
    (
        "22.1",
        "wire bytes = `length`, the sender's completion queue drained, at most 3 sender verbs",
        "test_wrong_puts_are_rejected",
    ),
    ("22.1", "A send/recv emulation with the right bytes fails", "test_attempt"),
    (
        "22.2",
        "The receiver must post `dst` itself **before** the sender posts its send",
        "test_attempt",
    ),
    ("22.2", "**0** CPU copies (no staging buffer to copy out of)", "test_attempt"),
    (
        "22.2",
        "the receiver runs exactly 2 verbs (one `post_recv`, one `poll_cq`)",
        "test_wrong_send_recvs_are_rejected",
    ),
    ("22.2", "both completion queues drained", "test_attempt"),
    (
        "22.3",
        "`numpy.polyfit`, `numpy.linalg`, `numpy.polynomial` and "
        "`statistics.linear_regression` are forbidden",
        "test_wrong_fits_are_rejected",
    ),
    ("22.3", "points on an exact line give that line back", "test_reference_passes"),
]
