"""Graders of lab 23: right answers pass; wrong values, broken budgets, reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.checks import lab23
from minitorch.checks.core import CheckFailure, ReferenceCalledError
from minitorch.comm.collectives import all_reduce
from minitorch.parallel import data, timeline, zero
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.parallel")


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


def test_ddp_sync_on_two_gloo_processes():
    lab23.check_ddp_sync(ddp_sync)  # one spawn of 2 gloo ranks


def test_ddp_sync_simulated():
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


def test_zero3_forward():
    lab23.check_zero3_forward(zero3_forward)
    lab23.check_zero3_forward(unblocked(zero.zero3_forward))
    rejects(lab23.check_zero3_forward, zero3_never_free, match="free")  # value right, peak not
    rejects(lab23.check_zero3_forward, zero3_gather_twice, match="exactly once")
    rejects(lab23.check_zero3_forward, zero3_wrong, match="differs")
    rejects(
        lab23.check_zero3_forward, zero.zero3_forward, match="reference", error=ReferenceCalledError
    )
