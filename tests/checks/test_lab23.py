"""Graders of lab 23: right answers pass; wrong values, broken budgets, reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab23
from a2s.checks.core import CheckFailure, ReferenceCalledError
from a2s.checks.errors import StudentError
from minitorch.comm.collectives import all_reduce
from minitorch.parallel import data, timeline, zero
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch")  # assign_buckets builds on runtime.overlap


# --------------------------------------------------------------------------- 23.1 buckets
def assign_buckets(nbytes, bucket_bytes):
    buckets, current, size = [], [], 0
    for i in range(len(nbytes) - 1, -1, -1):
        current.append(i)
        size += nbytes[i]
        if size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    return buckets + ([current] if current else [])


def forward_buckets(nbytes, bucket_bytes):
    n = len(nbytes)
    return [[n - 1 - i for i in b] for b in assign_buckets(nbytes[::-1], bucket_bytes)]


def test_assign_buckets():
    lab23.check_assign_buckets(assign_buckets)
    lab23.check_assign_buckets(lambda n, c: tuple(np.array(b) for b in assign_buckets(n, c)))
    lab23.check_assign_buckets(unblocked(data.assign_buckets))
    rejects(lab23.check_assign_buckets, forward_buckets, match="forward order")
    rejects(
        lab23.check_assign_buckets,
        data.assign_buckets,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 23.2 DDP sync
def ddp_sync(comm, grads, buckets):
    out = [np.array(g) for g in grads]
    for bucket in buckets:
        flat = np.concatenate([out[i].ravel() for i in bucket])
        flat = all_reduce(comm, flat) / comm.world_size
        start = 0
        for i in bucket:
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def ddp_sync_summed(comm, grads, buckets):
    return [all_reduce(comm, np.array(g)) for g in grads]


def ddp_sync_per_param(comm, grads, buckets):
    return [all_reduce(comm, np.array(g)) / comm.world_size for g in grads]


def ddp_sync_probing(comm, grads, buckets):
    """ddp_sync that first tries every way around the protocol; any that works moves weights."""
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    one, peer = torch.ones(1), 1 - comm.rank
    attempts = [
        lambda: dist.all_reduce(one),
        lambda: dist.all_gather([torch.zeros(1), torch.zeros(1)], one),
        lambda: dist.reduce_scatter(one, [one, one]),
        lambda: dist.broadcast(one, 0),
        lambda: c10d.all_reduce(one),
        lambda: dist.send(one, peer),
        lambda: dist.group.WORLD.allreduce([one]),
        lambda: comm.inner,
        lambda: comm.__dict__,
        lambda: setattr(comm, "messages", 0),
    ]
    worked = 0
    for attempt in attempts:
        try:
            attempt()
            worked += 1
        except AttributeError:
            pass
        except RuntimeError as exc:
            worked += "not allowed" not in str(exc)
    out = [np.array(g) + worked for g in grads]
    for bucket in buckets:
        flat = np.concatenate([out[i].ravel() for i in bucket])
        flat = all_reduce(comm, flat) / comm.world_size
        start = 0
        for i in bucket:
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def test_ddp_sync_on_two_gloo_processes():
    """One spawn of 2 gloo ranks: the learner's function runs in a sealed child of each rank,
    and every route around the protocol (torch.distributed, the process group, the comm's
    internals) is a forbidden call there. (The check's honest gloo path runs in
    test_notebooks.)"""
    from a2s.checks.errors import ForbiddenCallError
    from a2s.checks.lab23.ddp import _TEACHING, _launch

    cases = [dict(c, p=2, label=f"case {k}") for k, c in enumerate(_TEACHING[:1])]
    with pytest.raises(ForbiddenCallError, match="torch"):
        _launch(ddp_sync_probing, cases)


def ddp_sync_torch(comm, grads, buckets):
    """A cheat: torch.distributed's all_reduce in place of the protocol's."""
    import torch
    import torch.distributed as dist

    out = []
    for g in grads:
        t = torch.from_numpy(np.array(g))
        dist.all_reduce(t)
        out.append(t.numpy() / comm.world_size)
    return out


def test_ddp_sync_simulated():
    lab23.check_ddp_sync(ddp_sync, real=False)
    rejects(lab23.check_ddp_sync, ddp_sync_torch, match="torch")

    lab23.check_ddp_sync(unblocked(data.ddp_sync), real=False)
    with pytest.raises(CheckFailure, match="SUMMED"):
        lab23.check_ddp_sync(ddp_sync_summed, real=False)
    with pytest.raises(CheckFailure, match="one all-reduce per bucket"):  # right, too many msgs
        lab23.check_ddp_sync(ddp_sync_per_param, real=False)
    rejects(lab23.check_ddp_sync, data.ddp_sync, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 23.3 timeline
def exposed_comm(compute, nbytes, buckets, alpha, beta):
    t, ready = 0.0, {}
    for i in range(len(compute) - 1, -1, -1):
        t += compute[i]
        ready[i] = t
    free = 0.0
    for b in buckets:
        start = max(free, max(ready[i] for i in b))
        free = start + alpha + beta * sum(nbytes[i] for i in b)
    return max(0.0, free - t)


def exposed_no_overlap(compute, nbytes, buckets, alpha, beta):
    return float(sum(alpha + beta * sum(nbytes[i] for i in b) for b in buckets))


def exposed_parallel(compute, nbytes, buckets, alpha, beta):
    t, ready = 0.0, {}
    for i in range(len(compute) - 1, -1, -1):
        t += compute[i]
        ready[i] = t
    ends = [max(ready[i] for i in b) + alpha + beta * sum(nbytes[i] for i in b) for b in buckets]
    return max(0.0, max(ends) - t)


def predict_one_bucket(nbytes, alpha, beta):
    return alpha + beta * sum(nbytes)


def predict_without_latency(nbytes, alpha, beta):
    return float(beta * sum(nbytes))


def test_exposed_comm():
    lab23.check_exposed_comm(exposed_comm, predict_one_bucket)
    lab23.check_exposed_comm(unblocked(timeline.exposed_comm), predict_one_bucket)
    no_alpha = predict_without_latency
    rejects(lab23.check_exposed_comm, exposed_comm, no_alpha, match="alpha \\+ beta")
    rejects(lab23.check_exposed_comm, exposed_no_overlap, predict_one_bucket, match="no overlap")
    rejects(lab23.check_exposed_comm, exposed_parallel, predict_one_bucket, match="ONE channel")
    rejects(
        lab23.check_exposed_comm,
        timeline.exposed_comm,
        predict_one_bucket,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 23.4 ZeRO bytes
def zero_bytes(psi, n, stage):
    return [16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n][stage]


def zero_bytes_stage2_unsharded_grads(psi, n, stage):
    return 4 * psi + 12 * psi / n if stage == 2 else zero_bytes(psi, n, stage)


def test_zero_bytes():
    lab23.check_zero_bytes(zero_bytes)
    lab23.check_zero_bytes(unblocked(zero.zero_bytes))
    rejects(lab23.check_zero_bytes, zero_bytes_stage2_unsharded_grads, match="shards the fp16")
    rejects(lab23.check_zero_bytes, zero.zero_bytes, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 23.5 ZeRO-3
def zero3_forward(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
        store.free(i)
    return h


def zero3_never_free(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
    return h


def zero3_gather_twice(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        store.gather(i)
        store.free(i)
        h = np.tanh(h @ store.gather(i).astype(np.float32))
        store.free(i)
    return h


def zero3_wrong(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = h @ store.gather(i).astype(np.float32)
        store.free(i)
    return h


def zero3_reset_peak(store, x):
    """A cheat: keep every layer, then reset the rank's memory counter before returning."""
    ws = [store.gather(i).astype(np.float32) for i in range(len(store.shapes))]
    for i in range(len(ws)):
        store.free(i)
    store.peak_bytes = 0
    h = np.asarray(x, np.float32)
    for w in ws:
        h = np.tanh(h @ w)
    return h


def test_zero3_forward():
    lab23.check_zero3_forward(zero3_forward)
    lab23.check_zero3_forward(lambda s, x: zero3_forward(s, x).tolist())  # a list is an answer
    rejects(lab23.check_zero3_forward, zero3_reset_peak, match="peak_bytes", error=StudentError)
    lab23.check_zero3_forward(unblocked(zero.zero3_forward))
    rejects(lab23.check_zero3_forward, zero3_never_free, match="free")  # value right, peak not
    rejects(lab23.check_zero3_forward, zero3_gather_twice, match="exactly once")
    rejects(lab23.check_zero3_forward, zero3_wrong, match="differs")
    rejects(
        lab23.check_zero3_forward, zero.zero3_forward, match="reference", error=ReferenceCalledError
    )


# Every "must", "only", budget and invariant of the lab's prose, and the test that fails when
# it is broken (test_attempt: the adversarial battery, tests/checks/test_lab23_attacks.py).
MUSTS = [
    ("23.1", "Walk from the **last** parameter to the first", "test_attempt"),
    ("23.1", "close the bucket as soon as its bytes reach `bucket_bytes`", "test_attempt"),
    ("23.1", "every bucket but the last holds at least `bucket_bytes`", "test_assign_buckets"),
    ("23.1", "Forward order fails", "test_assign_buckets"),
    (
        "23.2",
        "one all-reduce per bucket (per-parameter all-reduces send too many messages)",
        "test_ddp_sync_simulated",
    ),
    (
        "23.2",
        "Summing without dividing moves the weights $N$ times too far",
        "test_ddp_sync_simulated",
    ),
    (
        "23.2",
        "compares the weights with one process trained on the whole batch: equal to 1e-10",
        "test_attempt",
    ),
    ("23.2", "Exercise code may not call torch", "test_attempt"),
    ("23.2", "calling torch there fails as it does here", "test_ddp_sync_on_two_gloo_processes"),
    (
        "23.2",
        "whose messages and bytes are counted outside it, where your code cannot reach them",
        "test_attempt",
    ),
    (
        "23.3",
        "with one bucket the two functions agree; the result is never negative",
        "test_exposed_comm",
    ),
    (
        "23.3",
        "Launching every bucket after backward, or letting buckets overlap each other, fails",
        "test_attempt",
    ),
    ("23.4", "stage 3 is stage 0 divided by $N$", "test_zero_bytes"),
    ("23.4", "compares your formula with the bytes a `ZeroRank` really holds", "test_attempt"),
    (
        "23.5",
        "release it with `store.free(i)` **as soon as its matmul is done**",
        "test_zero3_forward",
    ),
    (
        "23.5",
        "every rank's **peak** memory may exceed its shards by at most two full layers",
        "test_zero3_forward",
    ),
    ("23.5", "every layer must be gathered exactly once (bytes counted)", "test_attempt"),
    ("23.5", "a rank may hold at most 12 fp16 layers' worth beyond its shards", "test_attempt"),
]
