"""Lab 22 tried as a class would: correct answers written differently, typical mistakes, cheats.

22.1 and 22.2 run the learner's transfer in a forked child (:func:`harness.run_apart`): the
hosts, their regions and the verb log stay in the grader's process, so a cheat that rewrites
the hosts' counters, empties the completion queue or edits the log through a closure changes
the child's copies only; 22.3 is in-process.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from a2s.checks import lab22
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError
from minitorch.comm import fit, verbs
from tests.checks.test_lab22 import (
    fit_lstsq,
    fit_origin,
    fit_polyfit,
    fit_statistics,
    fit_swapped,
    put_bounce,
    put_no_poll,
    put_two_sided,
    recv_staged,
    send_as_write,
    send_first,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong

REF = ReferenceCalledError
P, S, F = lab22.check_rdma_put, lab22.check_send_recv, lab22.check_fit_alpha_beta


# --------------------------------------------------------------------------- 22.1 put
def put_poll_loop(qp, src, length, remote_offset, rkey):  # poll until its own completion
    qp.rdma_write(src, length, remote_offset, rkey, wr_id=7)
    while True:
        done = [wc for wc in qp.local.poll_cq(1) if wc.wr_id == 7]
        if done:
            return done[0].byte_len


class Putter:  # a class; keyword arguments; the completion read by attribute
    def __call__(self, qp, src, length, remote_offset, rkey):
        qp.rdma_write(mr=src, length=length, remote_offset=remote_offset, rkey=rkey)
        (wc,) = qp.local.poll_cq(max_entries=16)
        return wc.byte_len


def put_whole_region(qp, src, length, off, rkey):  # ignores the offset
    qp.rdma_write(src, length, 0, rkey)
    return qp.local.poll_cq()[0].byte_len


def put_bounce_forged(qp, src, length, off, rkey):  # a bounce copy, then counters "reset"
    n = put_bounce(qp, src, length, off, rkey)
    qp.local.copies = qp.local.bytes_copied = 0
    return n


def put_log_edited(qp, src, length, off, rkey):  # a bounce copy, then the log cleaned by gc
    n = put_bounce(qp, src, length, off, rkey)
    for obj in gc.get_objects():
        if type(obj) is list and obj and all(type(e) is tuple and len(e) == 3 for e in obj):
            if any(e[1:2] == ("memcpy",) for e in obj):
                obj[:] = [e for e in obj if e[1] != "memcpy"]
    return n


def put_cq_cleared(qp, src, length, off, rkey):
    qp.rdma_write(src, length, off, rkey)
    qp.local.cq.clear()
    return length


def put_by_cpu(qp, src, length, off, rkey):  # the bytes written by hand into the remote region
    qp.remote.mrs[rkey].buf[off : off + length] = src.buf[:length]
    return length


def put_torch(qp, src, length, off, rkey):
    import torch

    torch.zeros(1)
    return verbs.rdma_put.__wrapped__(qp, src, length, off, rkey)  # pragma: no cover


# --------------------------------------------------------------------------- 22.2 send/recv
def sr_named(qs, qr, src, dst, length):  # wr_ids matched, keyword arguments
    qr.post_recv(mr=dst, wr_id=11)
    qs.post_send(mr=src, length=length, wr_id=12)
    (got,) = [wc for wc in qr.local.poll_cq() if wc.wr_id == 11]
    [wc for wc in qs.local.poll_cq() if wc.wr_id == 12]
    return got.byte_len


def sr_sender_first_poll(qs, qr, src, dst, length):  # polls the sender first: as good
    qr.post_recv(dst)
    qs.post_send(src, length)
    qs.local.poll_cq()
    return int(qr.local.poll_cq()[0].byte_len)


def sr_no_sender_poll(qs, qr, src, dst, length):
    qr.post_recv(dst)
    qs.post_send(src, length)
    return qr.local.poll_cq()[0].byte_len


def sr_by_cpu(qs, qr, src, dst, length):  # copies the bytes itself, then posts and polls
    dst.buf[:length] = src.buf[:length]
    qr.post_recv(dst)
    qr.local.poll_cq()
    return length


def sr_staged_forged(qs, qr, src, dst, length):
    n = recv_staged(qs, qr, src, dst, length)
    qr.local.copies = 0
    return n


def sr_reference(qs, qr, src, dst, length):
    return verbs.send_recv(qs, qr, src, dst, length)


def sr_put_reference(qs, qr, src, dst, length):  # another exercise's reference
    return verbs.rdma_put(qs, src, length, 0, dst.rkey)


def sr_fixed(qs, qr, src, dst, length):  # a memorised answer: no transfer at all
    return length


# --------------------------------------------------------------------------- 22.3 fit
def fit_sums(sizes, times):  # the closed form with Python sums
    n = [float(v) for v in sizes]
    t = [float(v) for v in times]
    k, sn, st = len(n), sum(n), sum(t)
    snn, snt = sum(a * a for a in n), sum(a * b for a, b in zip(n, t, strict=True))
    beta = (k * snt - sn * st) / (k * snn - sn * sn)
    return (st - beta * sn) / k, beta


def fit_centred(sizes, times):  # centred sums, numpy
    n, t = np.asarray(sizes, float), np.asarray(times, float)
    beta = ((n - n.mean()) * (t - t.mean())).sum() / ((n - n.mean()) ** 2).sum()
    return float(t.mean() - beta * n.mean()), float(beta)


def fit_endpoints(sizes, times):  # the line through the first and last points
    n, t = np.asarray(sizes, float), np.asarray(times, float)
    beta = (t[-1] - t[0]) / (n[-1] - n[0])
    return float(t[0] - beta * n[0]), float(beta)


def fit_torch(sizes, times):
    import torch

    n = torch.tensor(sizes, dtype=torch.float64)
    return fit_centred(n.numpy(), times)


ATTEMPTS = [
    honest("22.1", "poll until its wr_id", lambda: P(put_poll_loop)),
    honest("22.1", "a class with keywords", lambda: P(Putter())),
    wrong("22.1", "bounce buffer", lambda: P(put_bounce), "CPU copy"),
    wrong("22.1", "two-sided", lambda: P(put_two_sided), "receiver's CPU ran"),
    wrong("22.1", "no poll", lambda: P(put_no_poll), "poll_cq"),
    wrong("22.1", "ignores the offset", lambda: P(put_whole_region), "wrong bytes|outside"),
    cheat("22.1", "calls the reference", lambda: P(verbs.rdma_put), error=REF),
    cheat("22.1", "bounce, counters reset", lambda: P(put_bounce_forged), match="CPU copy"),
    cheat("22.1", "bounce, log edited by gc", lambda: P(put_log_edited), match="CPU copy"),
    cheat("22.1", "empties the queue", lambda: P(put_cq_cleared), match="left in the sender"),
    cheat("22.1", "writes the region by hand", lambda: P(put_by_cpu), match="receiver's CPU"),
    cheat("22.1", "torch", lambda: P(put_torch), error=ForbiddenCallError),
    honest("22.2", "named wr_ids", lambda: S(sr_named)),
    honest("22.2", "sender polled first", lambda: S(sr_sender_first_poll)),
    wrong("22.2", "send before recv", lambda: S(send_first), "receiver-not-ready"),
    wrong("22.2", "staging buffer", lambda: S(recv_staged), "CPU copy"),
    wrong("22.2", "one-sided write", lambda: S(send_as_write), "two-sided receive"),
    wrong("22.2", "sender not polled", lambda: S(sr_no_sender_poll), "unpolled"),
    cheat("22.2", "copies by hand", lambda: S(sr_by_cpu), match="CPU copy"),
    cheat("22.2", "staged, copies reset", lambda: S(sr_staged_forged), match="CPU copy"),
    cheat("22.2", "calls the reference", lambda: S(sr_reference), error=REF),
    cheat("22.2", "22.1's reference", lambda: S(sr_put_reference), error=REF),
    cheat("22.2", "memorised answer", lambda: S(sr_fixed), match="wrong bytes"),
    honest("22.3", "Python sums", lambda: F(fit_sums)),
    honest("22.3", "centred sums", lambda: F(fit_centred)),
    wrong("22.3", "through the origin", lambda: F(fit_origin), "through the origin"),
    wrong("22.3", "swapped pair", lambda: F(fit_swapped), r"\(alpha, beta\)"),
    wrong("22.3", "two endpoints", lambda: F(fit_endpoints), "smallest and largest"),
    cheat("22.3", "calls the reference", lambda: F(fit.fit_alpha_beta), error=REF),
    cheat("22.3", "np.polyfit", lambda: F(fit_polyfit), match="polyfit"),
    cheat("22.3", "np.linalg.lstsq", lambda: F(fit_lstsq), match="linalg"),
    cheat(
        "22.3", "statistics.linear_regression", lambda: F(fit_statistics), match="linear_regression"
    ),
    cheat("22.3", "torch", lambda: F(fit_torch), error=ForbiddenCallError),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
