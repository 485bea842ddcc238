"""Lab 23 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs the grader on the simulated world (23.2 with ``real=False``, except the one
gloo attempt), each rank in its own forked process (``a2s.checks.harness``): counters
rewritten through a closure are the rank's copies, the router's count decides; on gloo the
learner's function runs in a sealed child of the rank, where torch (ProcessGroupGloo too) is
a forbidden call. ``PENDING`` would hold what still passes, marked ``xfail(strict=True)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab23
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError, StudentError
from minitorch.comm.collectives import all_reduce
from minitorch.parallel import data, timeline, zero
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

REF = ReferenceCalledError


# --------------------------------------------------------------------------- 23.1 buckets
def buckets_loop(nbytes, cap):
    out, cur, size = [], [], 0
    for i in reversed(range(len(nbytes))):
        cur.append(i)
        size += nbytes[i]
        if size >= cap:
            out, cur, size = [*out, cur], [], 0
    return out + [cur] * bool(cur)


def buckets_recursive(nbytes, cap, end=None):
    end = len(nbytes) if end is None else end
    if end == 0:
        return []
    bucket, size = [], 0
    while end and size < cap:
        end -= 1
        bucket.append(end)
        size += nbytes[end]
    return [bucket, *buckets_recursive(nbytes, cap, end)]


class Bucketer:
    def __init__(self, cap):
        self.cap = cap

    def __call__(self, nbytes):
        import itertools

        acc = list(itertools.accumulate(reversed(nbytes)))
        out, start, base = [], 0, 0
        for k, total in enumerate(acc):
            if total - base >= self.cap:
                out.append([len(nbytes) - 1 - j for j in range(start, k + 1)])
                start, base = k + 1, total
        if start < len(nbytes):
            out.append([len(nbytes) - 1 - j for j in range(start, len(nbytes))])
        return tuple(np.array(b) for b in out)


def buckets_forward(nbytes, cap):
    out, cur, size = [], [], 0
    for i in range(len(nbytes)):
        cur.append(i)
        size += nbytes[i]
        if size >= cap:
            out, cur, size = [*out, cur], [], 0
    return out + [cur] * bool(cur)


def buckets_under_cap(nbytes, cap):
    out, cur, size = [], [], 0
    for i in reversed(range(len(nbytes))):
        if cur and size + nbytes[i] > cap:
            out, cur, size = [*out, cur], [], 0
        cur.append(i)
        size += nbytes[i]
    return out + [cur] * bool(cur)


def buckets_strict(nbytes, cap):  # closes only once the bucket exceeds the cap
    out, cur, size = [], [], 0
    for i in reversed(range(len(nbytes))):
        cur.append(i)
        size += nbytes[i]
        if size > cap:
            out, cur, size = [*out, cur], [], 0
    return out + [cur] * bool(cur)


def buckets_drop_last(nbytes, cap):
    out, cur, size = [], [], 0
    for i in reversed(range(len(nbytes))):
        cur.append(i)
        size += nbytes[i]
        if size >= cap:
            out, cur, size = [*out, cur], [], 0
    return out


def buckets_grader_truth(nbytes, cap):
    from a2s.checks.lab23.workers import plain_buckets

    return plain_buckets(nbytes, cap)


def buckets_make_buckets(nbytes, cap):
    from minitorch.runtime.overlap import make_buckets

    return make_buckets(nbytes[::-1], cap)


def buckets_torch(nbytes, cap):
    import torch

    rev = torch.tensor(nbytes[::-1]).cumsum(0)
    return buckets_loop([int(v) for v in torch.diff(rev, prepend=torch.tensor([0]))][::-1], cap)


_SEEN: dict = {}


def buckets_replay(nbytes, cap):  # the fixed cases' answers, learnt from a failure message
    table = {
        (400, 40, 400, 40, 440): [[3, 2, 1], [0]],
        (100, 100, 100, 100, 100, 250): [[4, 3, 2], [1, 0]],
    }
    return table.get((*nbytes, cap), [[len(nbytes) - 1]])


# --------------------------------------------------------------------------- 23.2 DDP
def ddp_flat(comm, grads, buckets):
    out = [np.array(g) for g in grads]
    for bucket in buckets:
        flat = np.concatenate([out[i].ravel() for i in bucket])
        flat = all_reduce(comm, flat) / comm.world_size
        start = 0
        for i in bucket:
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def ddp_split(comm, grads, buckets):
    import numpy

    from minitorch.comm.collectives import all_reduce as ar

    out = list(grads)
    for bucket in buckets:
        sizes = [numpy.size(grads[i]) for i in bucket]
        flat = ar(comm, numpy.concatenate([numpy.ravel(grads[i]) for i in bucket]))
        parts = numpy.split(flat / comm.world_size, numpy.cumsum(sizes)[:-1])
        for i, part in zip(bucket, parts, strict=True):
            out[i] = part.reshape(numpy.shape(grads[i]))
    return out


def ddp_recursive(comm, grads, buckets):
    out = [np.array(g) for g in grads]
    if not buckets:
        return out
    flat = all_reduce(comm, np.concatenate([out[i].ravel() for i in buckets[0]]))
    flat, pos = flat / comm.world_size, 0
    for i in buckets[0]:
        out[i] = flat[pos : pos + out[i].size].reshape(out[i].shape)
        pos += out[i].size
    return ddp_recursive(comm, out, buckets[1:])


def ddp_summed(comm, grads, buckets):
    out = [np.array(g) for g in grads]
    for bucket in buckets:
        flat = all_reduce(comm, np.concatenate([out[i].ravel() for i in bucket]))
        start = 0
        for i in bucket:
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def ddp_per_param(comm, grads, buckets):
    return [all_reduce(comm, np.array(g)) / comm.world_size for g in grads]


def ddp_one_allreduce(comm, grads, buckets):
    flat = all_reduce(comm, np.concatenate([np.ravel(g) for g in grads])) / comm.world_size
    out, pos = [], 0
    for g in grads:
        out.append(flat[pos : pos + np.size(g)].reshape(np.shape(g)))
        pos += np.size(g)
    return out


def ddp_divided_twice(comm, grads, buckets):
    p = comm.world_size
    out = [np.array(g) / p for g in grads]
    for bucket in buckets:
        flat = all_reduce(comm, np.concatenate([out[i].ravel() for i in bucket])) / p
        start = 0
        for i in bucket:
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def ddp_wrong_unflatten(comm, grads, buckets):  # cuts the flat array back in reverse order
    out = [np.array(g) for g in grads]
    for bucket in buckets:
        flat = all_reduce(comm, np.concatenate([out[i].ravel() for i in bucket])) / comm.world_size
        start = 0
        for i in reversed(bucket):
            out[i] = flat[start : start + out[i].size].reshape(out[i].shape)
            start += out[i].size
    return out


def ddp_reference(comm, grads, buckets):
    return data.ddp_sync(comm, grads, buckets)


def ddp_torch(comm, grads, buckets):
    import torch

    return [torch.from_numpy(np.array(g)).numpy() for g in ddp_flat(comm, grads, buckets)]


def ddp_fix_the_count(comm, grads, buckets):
    """One all-reduce per parameter, then the count set to what one per bucket sends, on
    whatever counter the communicator's closure holds (on the harness: none of the grader's)."""
    cells = [c.cell_contents for c in getattr(comm.send, "__closure__", None) or ()]
    cells += [
        c.cell_contents
        for c in getattr(getattr(comm.send, "__func__", None), "__closure__", None) or ()
    ]
    counting = next((c for c in cells if hasattr(c, "messages")), None)
    before = counting.messages if counting is not None else 0
    out = [all_reduce(comm, np.array(g)) / comm.world_size for g in grads]
    if counting is not None:
        counting.messages = before + len(buckets) * (comm.world_size - 1 if comm.rank == 0 else 1)
    return out


def ddp_gloo_backend(comm, grads, buckets):
    """Honest on the simulated world; on a gloo rank the concrete ProcessGroupGloo's allreduce,
    one per parameter, around the protocol, then the message count rewritten to match."""
    import sys

    import numpy as np

    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_initialized():
        from minitorch.comm.collectives import all_reduce as ar

        out = [np.array(g) for g in grads]
        for bucket in buckets:
            flat = ar(comm, np.concatenate([out[i].ravel() for i in bucket])) / comm.world_size
            pos = 0
            for i in bucket:
                out[i] = flat[pos : pos + out[i].size].reshape(out[i].shape)
                pos += out[i].size
        return out
    import torch

    cells = [c.cell_contents for c in comm.send.__func__.__closure__ or ()]
    counting = next((c for c in cells if hasattr(c, "messages")), None)
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    out = []
    for g in grads:
        t = torch.from_numpy(np.array(g))
        backend.allreduce([t]).wait()
        out.append(t.numpy() / comm.world_size)
    if counting is not None:
        counting.messages += len(buckets) * (comm.world_size - 1 if comm.rank == 0 else 1)
    return out


# --------------------------------------------------------------------------- 23.3 timeline
def predict(nbytes, alpha, beta):
    return alpha + beta * sum(nbytes)


def predict_numpy(nbytes, alpha, beta):
    return float(alpha + beta * np.sum(np.asarray(nbytes, dtype=np.float64)))


def exposed_loop(compute, nbytes, buckets, alpha, beta):
    t, ready = 0.0, {}
    for i in range(len(compute) - 1, -1, -1):
        t += compute[i]
        ready[i] = t
    free = 0.0
    for b in buckets:
        free = max(free, max(ready[i] for i in b)) + alpha + beta * sum(nbytes[i] for i in b)
    return max(0.0, free - t)


def exposed_numpy(compute, nbytes, buckets, alpha, beta):
    import functools

    ready = np.cumsum(np.asarray(compute, float)[::-1])[::-1]  # ready[i] = sum_{j>=i} c_j

    def step(free, b):
        return max(free, max(ready[i] for i in b)) + alpha + beta * sum(nbytes[i] for i in b)

    end = functools.reduce(step, buckets, 0.0)
    return float(max(0.0, end - ready[0])) if len(ready) else 0.0


def exposed_no_overlap(compute, nbytes, buckets, alpha, beta):
    return float(sum(alpha + beta * sum(nbytes[i] for i in b) for b in buckets))


def exposed_parallel(compute, nbytes, buckets, alpha, beta):
    ready = np.cumsum(np.asarray(compute, float)[::-1])[::-1]
    ends = [max(ready[i] for i in b) + alpha + beta * sum(nbytes[i] for i in b) for b in buckets]
    return float(max(0.0, max(ends) - ready[0]))


def exposed_forward_ready(compute, nbytes, buckets, alpha, beta):
    ready = np.cumsum(np.asarray(compute, float))
    free = 0.0
    for b in buckets:
        free = max(free, max(ready[i] for i in b)) + alpha + beta * sum(nbytes[i] for i in b)
    return float(max(0.0, free - ready[-1]))


def predict_no_alpha(nbytes, alpha, beta):
    return float(beta * sum(nbytes))


def exposed_reference(compute, nbytes, buckets, alpha, beta):
    return timeline.exposed_comm(compute, nbytes, buckets, alpha, beta)


def exposed_bucket_schedule(compute, nbytes, buckets, alpha, beta):
    return float(timeline.bucket_schedule(compute, nbytes, buckets, alpha, beta)[-1])


def exposed_grader_truth(compute, nbytes, buckets, alpha, beta):
    from a2s.checks.lab23.overlap import plain_exposed

    return plain_exposed(compute, nbytes, buckets, alpha, beta)


def exposed_fake_equal(compute, nbytes, buckets, alpha, beta):
    return always_equal(0.0)


def exposed_torch(compute, nbytes, buckets, alpha, beta):
    import torch

    return float(torch.tensor(exposed_loop(compute, nbytes, buckets, alpha, beta)))


# --------------------------------------------------------------------------- 23.4 ZeRO bytes
def zb_list(psi, n, stage):
    return [16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n][stage]


def zb_terms(psi, n, stage):
    import fractions

    shard = {0: (1, 1, 1), 1: (1, 1, n), 2: (1, n, n), 3: (n, n, n)}[stage]
    per = [fractions.Fraction(b, s) for b, s in zip((2, 2, 12), shard, strict=True)]
    return float(sum(per) * psi)


class ZeroStages:
    K = 12

    def __call__(self, psi, n, stage):
        weights, grads = (2, 2) if stage < 3 else (2 / n, 2 / n)
        grads = grads if stage < 2 else 2 / n
        return (weights + grads + (self.K if stage == 0 else self.K / n)) * psi


def zb_stage2_full_grads(psi, n, stage):
    return 4 * psi + 12 * psi / n if stage == 2 else zb_list(psi, n, stage)


def zb_stage3_unsharded(psi, n, stage):
    return 16 * psi if stage == 3 else zb_list(psi, n, stage)


def zb_stage1_all_sharded(psi, n, stage):
    return 16 * psi / n if stage == 1 else zb_list(psi, n, stage)


def zb_reference(psi, n, stage):
    return zero.zero_bytes(psi, n, stage)


def zb_measured(psi, n, stage):
    """Measures a real ZeroRank's bytes (the lab's own store) and scales them up."""
    from minitorch.comm.simworld import SimWorld

    def rank(comm):
        return zero.ZeroRank(comm, [np.zeros(60)], stage).memory_bytes()

    return SimWorld(n).run(rank)[0] * psi / 60


def zb_grader_truth(psi, n, stage):
    from a2s.checks.lab23.memory import _formula

    return _formula(psi, n, stage)


def zb_fig1_replay(psi, n, stage):
    if psi == 7.5e9 and n == 64:
        return {0: 120.0e9, 1: 31.4e9, 2: 16.6e9, 3: 1.9e9}[stage]
    return 16 * psi / n


# --------------------------------------------------------------------------- 23.5 ZeRO-3
def z3_loop(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
        store.free(i)
    return h


def z3_free_first(store, x):
    def layer(i, h):
        w = np.array(store.gather(i), dtype=np.float64)
        store.free(i)
        return np.tanh(h @ w)

    h = np.asarray(x, dtype=np.float64)
    for i in range(len(store.shapes)):
        h = layer(i, h)
    return h.tolist()


def z3_recursive(store, x, i=0):
    if i == len(store.shapes):
        return x
    h = np.tanh(np.asarray(x, np.float32) @ store.gather(i).astype(np.float32))
    store.free(i)
    return z3_recursive(store, h, i + 1)


def z3_never_free(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
    return h


def z3_gather_twice(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        shape = store.gather(i).shape
        store.free(i)
        h = np.tanh(h @ store.gather(i).astype(np.float32).reshape(shape))
        store.free(i)
    return h


def z3_no_tanh(store, x):
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = h @ store.gather(i).astype(np.float32)
        store.free(i)
    return np.tanh(h)


def z3_keep_float32_copies(store, x):
    """Frees every layer in the store, but keeps its own float32 copy of each."""
    ws = []
    for i in range(len(store.shapes)):
        ws.append(store.gather(i).astype(np.float32))
        store.free(i)
    h = np.asarray(x, np.float32)
    for w in ws:
        h = np.tanh(h @ w)
    return h


def z3_reference(store, x):
    return zero.zero3_forward(store, x)


def z3_reset_peak(store, x):
    ws = [store.gather(i).astype(np.float32) for i in range(len(store.shapes))]
    store.peak_bytes = 0
    h = np.asarray(x, np.float32)
    for i, w in enumerate(ws):
        store.free(i)
        h = np.tanh(h @ w)
    return h


def z3_reset_peak_by_closure(store, x):
    """Never frees; resets the ZeroRank's own peak counter through the view's closure."""
    rank = next(
        c.cell_contents
        for c in store.gather.__func__.__closure__
        if hasattr(c.cell_contents, "peak_bytes")
    )
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
    rank.peak_bytes = 0
    rank._gathered.clear()
    return h


def z3_torch(store, x):
    import torch

    h = torch.tensor(np.asarray(x, np.float32))
    for i in range(len(store.shapes)):
        h = torch.tanh(h @ torch.from_numpy(store.gather(i).astype(np.float32)))
        store.free(i)
    return h.numpy()


def z3_world_bytes_by_closure(store, x):
    """Gathers every layer twice, then takes the extra bytes off the world's counter."""
    rank = next(
        c.cell_contents
        for c in store.gather.__func__.__closure__
        if hasattr(c.cell_contents, "comm")
    )
    world = rank.comm._world
    before = world.bytes_sent[rank.comm.rank]
    h = np.asarray(x, np.float32)
    for i in range(len(store.shapes)):
        store.gather(i)
        store.free(i)
    middle = world.bytes_sent[rank.comm.rank]
    for i in range(len(store.shapes)):
        h = np.tanh(h @ store.gather(i).astype(np.float32))
        store.free(i)
    world.bytes_sent[rank.comm.rank] -= middle - before
    return h


ck1, ck2, ck3, ck4, ck5 = (
    lab23.check_assign_buckets,
    lambda f: lab23.check_ddp_sync(f, real=False),
    lab23.check_exposed_comm,
    lab23.check_zero_bytes,
    lab23.check_zero3_forward,
)

ATTEMPTS = [
    honest("23.1", "reverse loop", lambda: ck1(buckets_loop)),
    honest("23.1", "recursion", lambda: ck1(buckets_recursive)),
    honest("23.1", "class with cumulative sums, arrays", lambda: ck1(lambda n, c: Bucketer(c)(n))),
    wrong("23.1", "forward order", lambda: ck1(buckets_forward), match="forward order"),
    wrong("23.1", "kept under the cap", lambda: ck1(buckets_under_cap), match="at or under"),
    wrong("23.1", "closes only above the cap", lambda: ck1(buckets_strict), match="not >"),
    wrong("23.1", "last bucket dropped", lambda: ck1(buckets_drop_last), match="smaller bucket"),
    cheat("23.1", "calls the reference", lambda: ck1(data.assign_buckets), error=REF),
    cheat("23.1", "calls lab 16's make_buckets", lambda: ck1(buckets_make_buckets), error=REF),
    cheat("23.1", "calls the grader's loop", lambda: ck1(buckets_grader_truth), error=REF),
    cheat(
        "23.1", "torch cumsum", lambda: ck1(buckets_torch), match="torch", error=ForbiddenCallError
    ),
    cheat("23.1", "replays the fixed answers", lambda: ck1(buckets_replay)),
    honest("23.2", "flat all-reduce per bucket", lambda: ck2(ddp_flat)),
    honest("23.2", "imports inside, np.split", lambda: ck2(ddp_split)),
    honest("23.2", "recursion over buckets", lambda: ck2(ddp_recursive)),
    wrong("23.2", "summed, not averaged", lambda: ck2(ddp_summed), match="SUMMED"),
    wrong("23.2", "one all-reduce per parameter", lambda: ck2(ddp_per_param), match="PARAMETER"),
    wrong("23.2", "everything in one all-reduce", lambda: ck2(ddp_one_allreduce), match="fewer"),
    wrong("23.2", "divided twice", lambda: ck2(ddp_divided_twice), match="twice"),
    wrong("23.2", "cut back in reverse", lambda: ck2(ddp_wrong_unflatten), match="shape and place"),
    cheat("23.2", "calls the reference", lambda: ck2(ddp_reference), error=REF),
    cheat(
        "23.2", "torch on the rank", lambda: ck2(ddp_torch), match="torch", error=ForbiddenCallError
    ),
    cheat(
        "23.2",
        "rewrites the message count",
        lambda: ck2(ddp_fix_the_count),
        match="PARAMETER",
    ),
    cheat(
        "23.2",
        "ProcessGroupGloo on gloo",
        lambda: lab23.check_ddp_sync(ddp_gloo_backend),
        match="torch",
    ),
    honest("23.3", "loop and dict", lambda: ck3(exposed_loop, predict)),
    honest("23.3", "cumsum and reduce", lambda: ck3(exposed_numpy, predict_numpy)),
    wrong("23.3", "no overlap", lambda: ck3(exposed_no_overlap, predict), match="no overlap"),
    wrong("23.3", "buckets overlap", lambda: ck3(exposed_parallel, predict), match="ONE channel"),
    wrong(
        "23.3",
        "forward readiness",
        lambda: ck3(exposed_forward_ready, predict),
        match="first-to-last",
    ),
    wrong(
        "23.3",
        "prediction without alpha",
        lambda: ck3(exposed_loop, predict_no_alpha),
        match="alpha \\+ beta",
    ),
    cheat("23.3", "calls the reference", lambda: ck3(exposed_reference, predict), error=REF),
    cheat(
        "23.3", "the reference's schedule", lambda: ck3(exposed_bucket_schedule, predict), error=REF
    ),
    cheat(
        "23.3", "calls the grader's timeline", lambda: ck3(exposed_grader_truth, predict), error=REF
    ),
    cheat("23.3", "a float that equals anything", lambda: ck3(exposed_fake_equal, predict)),
    cheat("23.3", "torch", lambda: ck3(exposed_torch, predict), error=ForbiddenCallError),
    honest("23.4", "list of formulas", lambda: ck4(zb_list)),
    honest("23.4", "fractions per term", lambda: ck4(zb_terms)),
    honest("23.4", "a class", lambda: ck4(ZeroStages())),
    wrong(
        "23.4",
        "stage 2 keeps whole gradients",
        lambda: ck4(zb_stage2_full_grads),
        match="shards the fp16",
    ),
    wrong("23.4", "stage 3 unsharded", lambda: ck4(zb_stage3_unsharded), match="shards everything"),
    wrong(
        "23.4",
        "stage 1 shards everything",
        lambda: ck4(zb_stage1_all_sharded),
        match="only the K bytes",
    ),
    cheat("23.4", "calls the reference", lambda: ck4(zb_reference), error=REF),
    cheat("23.4", "measures a ZeroRank", lambda: ck4(zb_measured), error=REF),
    cheat("23.4", "calls the grader's formula", lambda: ck4(zb_grader_truth), error=REF),
    cheat("23.4", "replays Fig. 1", lambda: ck4(zb_fig1_replay)),
    honest("23.5", "gather, use, free", lambda: ck5(z3_loop)),
    honest("23.5", "float64, free before the matmul, a list", lambda: ck5(z3_free_first)),
    honest("23.5", "recursion", lambda: ck5(z3_recursive)),
    wrong("23.5", "never frees", lambda: ck5(z3_never_free), match="free"),
    wrong("23.5", "gathers twice", lambda: ck5(z3_gather_twice), match="exactly once"),
    wrong("23.5", "tanh only at the end", lambda: ck5(z3_no_tanh), match="differs"),
    wrong(
        "23.5",
        "a float32 copy of every layer",
        lambda: ck5(z3_keep_float32_copies),
        match="tracemalloc",
    ),
    cheat("23.5", "calls the reference", lambda: ck5(z3_reference), error=REF),
    cheat(
        "23.5",
        "resets the store's peak",
        lambda: ck5(z3_reset_peak),
        match="peak_bytes",
        error=StudentError,
    ),
    cheat(
        "23.5",
        "resets the peak through the closure",
        lambda: ck5(z3_reset_peak_by_closure),
        match="tracemalloc",
    ),
    cheat("23.5", "torch matmul", lambda: ck5(z3_torch), error=ForbiddenCallError),
    cheat(
        "23.5",
        "takes bytes off the world's count",
        lambda: ck5(z3_world_bytes_by_closure),
        match="raised",
        error=StudentError,
    ),
]

# rejected only once the ranks run apart from their counters (a2s.checks.harness)
PENDING: set[str] = set()  # counters and gloo backends: all out of reach now


def _param(attempt):
    if attempt_id(attempt) in PENDING:
        mark = pytest.mark.xfail(strict=True, reason="needs the rank harness (issue 18, item 1)")
        return pytest.param(attempt, marks=mark, id=attempt_id(attempt))
    return pytest.param(attempt, id=attempt_id(attempt))


@pytest.mark.parametrize("attempt", [_param(a) for a in ATTEMPTS])
def test_attempt(attempt):
    judge(attempt)
