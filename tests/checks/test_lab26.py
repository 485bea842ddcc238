"""Graders of lab 26: right answers pass; wrong values, broken budgets, reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab26
from a2s.checks.core import CheckFailure, ReferenceCalledError
from minitorch.comm.collectives import all_gather, all_to_all
from minitorch.model.moe_router import expert_capacity, top_k_gating
from minitorch.parallel import context, expert, planner
from minitorch.parallel.planner_cost import USABLE, Layout, memory_per_gpu, step_time
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.parallel")


# --------------------------------------------------------------------------- 26.1 ring attention
def ring_attention(comm, q, k, v, causal):
    """Self-contained (its source runs on the gloo ranks)."""
    p, r = comm.world_size, comm.rank
    nb, d = q.shape[-2], q.shape[-1]
    acc = np.zeros((*q.shape[:-1], v.shape[-1]))
    m, l = np.full(q.shape[:-1], -np.inf), np.zeros(q.shape[:-1])
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kb, (r + 1) % p)
            comm.send(vb, (r + 1) % p)
        if not (causal and src > r):
            s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(d)
            if causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1))
            scale = np.exp(m - m_new)
            e = np.exp(s - m_new[..., None])
            acc = acc * scale[..., None] + e @ vb
            l, m = l * scale + e.sum(axis=-1), m_new
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return acc / l[..., None]


def ring_no_rescale(comm, q, k, v, causal):
    p, r = comm.world_size, comm.rank
    nb, d = q.shape[-2], q.shape[-1]
    num, den = np.zeros((*q.shape[:-1], v.shape[-1])), np.zeros(q.shape[:-1])
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kb, (r + 1) % p)
            comm.send(vb, (r + 1) % p)
        if not (causal and src > r):
            s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(d)
            if causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))  # its own max, never rescaled
            num, den = num + e @ vb, den + e.sum(axis=-1)
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return num / den[..., None]


def ring_without_mask(comm, q, k, v, causal):
    return ring_attention(comm, q, k, v, False)


def gathered_attention(comm, q, k, v, causal):
    """Right values, wrong budget: every rank gathers the whole K and V (all-gather)."""
    kk = np.concatenate([np.asarray(b) for b in all_to_all(comm, [k] * comm.world_size)], axis=-2)
    vv = np.concatenate([np.asarray(b) for b in all_to_all(comm, [v] * comm.world_size)], axis=-2)
    q0, n = comm.rank * q.shape[-2], kk.shape[-2]
    s = q @ np.swapaxes(kk, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(n)[None, :] <= q0 + np.arange(q.shape[-2])[:, None], s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ vv


def ring_probing(comm, q, k, v, causal):
    """Ring attention that first tries every way around the protocol; any that works shows."""
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    one, peer = torch.ones(1), 1 - comm.rank
    attempts = [
        lambda: dist.all_reduce(one),
        lambda: dist.all_gather([torch.zeros(1), torch.zeros(1)], one),
        lambda: dist.all_to_all([torch.zeros(1)] * 2, [one] * 2),
        lambda: dist.broadcast(one, 0),
        lambda: c10d.all_reduce(one),
        lambda: dist.isend(one, peer),
        lambda: dist.group.WORLD.allreduce([one]),
        lambda: c10d._get_default_group().allgather([[torch.zeros(1)] * 2], [one]),
        lambda: comm.inner,
        lambda: comm.__dict__,
        lambda: setattr(comm, "to", {}),
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
    p, r = comm.world_size, comm.rank
    nb, d = q.shape[-2], q.shape[-1]
    acc = np.zeros((*q.shape[:-1], v.shape[-1]))
    m, l = np.full(q.shape[:-1], -np.inf), np.zeros(q.shape[:-1])
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kb, (r + 1) % p)
            comm.send(vb, (r + 1) % p)
        if not (causal and src > r):
            s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(d)
            if causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1))
            scale = np.exp(m - m_new)
            e = np.exp(s - m_new[..., None])
            acc = acc * scale[..., None] + e @ vb
            l, m = l * scale + e.sum(axis=-1), m_new
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return acc / l[..., None] + worked


def test_ring_attention_on_gloo_refuses_torch_collectives():
    """The one real launch of this file (2 ranks): the learner's function runs in a sealed
    child of each rank, where torch's collectives and the communicator's internals are
    forbidden calls. (The check's own gloo path runs in test_notebooks.)"""
    from a2s.checks.errors import ForbiddenCallError
    from a2s.checks.lab26.ring import _launch, ring_cases

    with pytest.raises(ForbiddenCallError, match="torch"):
        _launch(ring_probing, [ring_cases(0)[0]])


def ring_torch_gather(comm, q, k, v, causal):
    """A cheat: K and V gathered by torch.distributed instead of the ring."""
    import torch
    import torch.distributed as dist

    p = comm.world_size
    ks = [torch.zeros(k.shape, dtype=torch.float64) for _ in range(p)]
    dist.all_gather(ks, torch.from_numpy(k))
    return ks[0].numpy()


def test_ring_attention_reference_and_mistakes():
    lab26.check_ring_attention(ring_attention, real=False)
    rejects(lab26.check_ring_attention, ring_torch_gather, match="torch")

    lab26.check_ring_attention(unblocked(context.ring_attention), real=False)
    rejects(lambda f: lab26.check_ring_attention(f, real=False), ring_no_rescale, match="OWN max")
    rejects(
        lambda f: lab26.check_ring_attention(f, real=False), ring_without_mask, match="non-causal"
    )
    rejects(
        lambda f: lab26.check_ring_attention(f, real=False),
        gathered_attention,
        match="only to the next rank",
    )
    with pytest.raises(CheckFailure, match="OWN max"):
        lab26.check_ring_attention(ring_no_rescale, real=False)
    with pytest.raises(ReferenceCalledError):
        lab26.check_ring_attention(context.ring_attention, real=False)


# --------------------------------------------------------------------------- 26.2 Ulysses
def _attend(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def ulysses_attention(comm, q, k, v, causal):
    p = comm.world_size
    heads = [np.concatenate(all_to_all(comm, np.split(t, p, axis=0)), axis=1) for t in (q, k, v)]
    out = _attend(*heads, causal)
    return np.concatenate(all_to_all(comm, np.split(out, p, axis=1)), axis=0)


def ulysses_gather(comm, q, k, v, causal):
    """Right values, p times the bytes: all-gather the sequence of Q, K and V."""
    full = [np.concatenate(all_to_all(comm, [t] * comm.world_size), axis=1) for t in (q, k, v)]
    nb, r = q.shape[1], comm.rank
    return _attend(*full, causal)[:, r * nb : (r + 1) * nb]


def ulysses_wrong_order(comm, q, k, v, causal):
    p = comm.world_size
    heads = [
        np.concatenate(all_to_all(comm, np.split(t, p, axis=0))[::-1], axis=1) for t in (q, k, v)
    ]
    out = _attend(*heads, causal)
    return np.concatenate(all_to_all(comm, np.split(out, p, axis=1)), axis=0)


def test_ulysses():
    lab26.check_ulysses(ulysses_attention)
    lab26.check_ulysses(unblocked(context.ulysses_attention))
    rejects(lab26.check_ulysses, ulysses_gather, match="all-gather")
    rejects(lab26.check_ulysses, ulysses_wrong_order, match="RANK order")
    rejects(
        lab26.check_ulysses,
        context.ulysses_attention,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 26.3 expert parallel
def _mlp(x, w):
    return np.maximum(x @ w[0] + w[1], 0) @ w[2] + w[3]


def expert_parallel_moe(
    comm, x, w_router, local_experts, k, capacity_factor, local_drops=False, pad=False
):
    p, r, per = comm.world_size, comm.rank, len(local_experts)
    e = per * p
    experts, gates = top_k_gating(x @ w_router, k)
    counts = np.stack([np.bincount(experts[:, j], minlength=e) for j in range(k)])
    allc = all_gather(comm, counts[None])
    if local_drops:
        allc = counts[None].repeat(p, axis=0) * 0
        allc[r] = counts
    n_all = x.shape[0] if local_drops else int(allc[:, 0].sum())
    cap = expert_capacity(n_all, e, capacity_factor, k)
    slot = np.zeros(experts.shape, np.int64)
    for j in range(k):
        seen = np.zeros(e, np.int64)
        for t in range(x.shape[0]):
            ex = experts[t, j]
            slot[t, j] = allc[:, :j, ex].sum() + allc[:r, j, ex].sum() + seen[ex]
            seen[ex] += 1
    keep = slot < cap
    sends = [
        [
            (t, j)
            for t in range(x.shape[0])
            for j in range(k)
            if keep[t, j] and experts[t, j] // per == q
        ]
        for q in range(p)
    ]
    rows = all_to_all(comm, [x[[t for t, _ in s]].reshape(-1, x.shape[1]) for s in sends])
    ids = all_to_all(comm, [np.array([experts[t, j] for t, j in s], np.int64) for s in sends])
    outs = []
    for got, eid in zip(rows, ids, strict=True):
        out = (
            np.stack(
                [
                    _mlp(row, local_experts[int(i) - r * per])
                    for row, i in zip(got, eid, strict=True)
                ]
            )
            if len(eid)
            else got
        )
        outs.append(np.concatenate([out, np.zeros((len(out), x.shape[1]))]) if pad else out)
    back = all_to_all(comm, outs)
    y = np.zeros_like(x)
    for q in range(p):
        for (t, j), row in zip(sends[q], back[q][: len(sends[q])], strict=True):
            y[t] += gates[t, j] * row
    return y, int((~keep).sum())


def ep_local_drops(comm, x, w_router, local_experts, k, capacity_factor):
    return expert_parallel_moe(
        comm, x, w_router, local_experts, k, capacity_factor, local_drops=True
    )


def ep_padded(comm, x, w_router, local_experts, k, capacity_factor):
    return expert_parallel_moe(comm, x, w_router, local_experts, k, capacity_factor, pad=True)


def ep_no_drops(comm, x, w_router, local_experts, k, capacity_factor):
    return expert_parallel_moe(comm, x, w_router, local_experts, k, 1e9)


def test_expert_parallel():
    lab26.check_expert_parallel(expert_parallel_moe)
    lab26.check_expert_parallel(lambda *a: list(expert_parallel_moe(*a)))  # [y, dropped]
    lab26.check_expert_parallel(unblocked(expert.expert_parallel_moe))
    rejects(lab26.check_expert_parallel, ep_local_drops, match="per rank")
    rejects(lab26.check_expert_parallel, ep_no_drops, match="no assignment was dropped")
    rejects(lab26.check_expert_parallel, ep_padded, match="padded")
    rejects(
        lab26.check_expert_parallel,
        expert.expert_parallel_moe,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 26.4 planner
def plan(model, cluster, batch, check_memory=True, sort=True):
    found = []
    for tp in range(1, cluster.gpus + 1):
        if (
            cluster.gpus % tp
            or model.heads % tp
            or (cluster.per_node % tp and tp % cluster.per_node)
        ):
            continue
        for pp in range(1, cluster.gpus // tp + 1):
            if (cluster.gpus // tp) % pp or model.layers % pp:
                continue
            dp = cluster.gpus // (tp * pp)
            if batch % dp:
                continue
            lay = Layout(tp, pp, dp)
            if check_memory and memory_per_gpu(model, lay, batch) > USABLE * cluster.memory:
                continue
            found.append((step_time(model, cluster, lay, batch)["total"], lay))
    if sort:
        found.sort(key=lambda f: f[0])
    return [lay for _, lay in found]


def plan_ignoring_memory(model, cluster, batch):
    return plan(model, cluster, batch, check_memory=False)


def plan_unsorted(model, cluster, batch):
    return plan(model, cluster, batch, sort=False)


def plan_tp_only_in_node(model, cluster, batch):
    """Never tries pipelines deeper than 8: misses the fast layouts of the big models."""
    return [lay for lay in plan(model, cluster, batch) if lay.pp <= 8] or plan(
        model, cluster, batch
    )


def plan_best_only(model, cluster, batch):
    """Right first answer, but the task asks for every feasible layout."""
    return plan(model, cluster, batch)[:1]


def plan_any_batch(model, cluster, batch):
    """Forgets that dp must divide the batch."""
    n, found = cluster.gpus, []
    for tp in (t for t in range(1, n + 1) if n % t == 0 and model.heads % t == 0):
        if cluster.per_node % tp and tp % cluster.per_node:
            continue
        for pp in (q for q in range(1, n // tp + 1) if (n // tp) % q == 0):
            lay = Layout(tp, pp, n // (tp * pp))
            if (
                model.layers % pp == 0
                and memory_per_gpu(model, lay, batch) <= USABLE * cluster.memory
            ):
                found.append(lay)
    return sorted(found, key=lambda lay: step_time(model, cluster, lay, batch)["total"])


def test_plan():
    lab26.check_plan(plan)
    lab26.check_plan(lambda m, c, b: tuple(reversed(plan(m, c, b)[::-1])))
    rejects(lab26.check_plan, plan_best_only, match="every feasible layout")
    rejects(lab26.check_plan, plan_any_batch, match="does not divide the batch")
    lab26.check_plan(unblocked(planner.plan_layouts))
    rejects(lab26.check_plan, plan_ignoring_memory, match="does not fit")
    rejects(lab26.check_plan, plan_unsorted, match="not sorted")
    rejects(lab26.check_plan, plan_tp_only_in_node, match="a feasible layout takes")
    rejects(lab26.check_plan, planner.plan_layouts, match="reference", error=ReferenceCalledError)


# Every "must", "only", budget and invariant of the lab's prose, and the test that fails when
# it is broken (test_attempt: the adversarial battery, tests/checks/test_lab26_attacks.py).
MUSTS = [
    (
        "26.1",
        r"each rank sends exactly $(p-1)$ K blocks and $(p-1)$ V blocks, and only to rank "
        r"$(r + 1) \bmod p$",
        "test_attempt",
    ),
    ("26.1", "Each rank holds one foreign block at a time", "test_attempt"),
    ("26.1", "hold one foreign K/V block at a time", "test_attempt"),
    (
        "26.1",
        "Values equal one-process attention to 1e-10",
        "test_ring_attention_reference_and_mistakes",
    ),
    (
        "26.1",
        "whose messages and bytes are counted outside it, where your code cannot reach them",
        "test_attempt",
    ),
    (
        "26.2",
        r"each rank sends exactly $4\frac{p-1}{p}$ × `q.nbytes` — an all-gather of the "
        "sequence fails",
        "test_attempt",
    ),
    (
        "26.2",
        r"after the first all-to-all, rank $r$ holds heads $r\frac{h}{p}..$ for the whole "
        "sequence",
        "test_attempt",
    ),
    (
        "26.3",
        "each rank sends exactly `d * 8` float bytes per kept row it dispatches to another "
        "rank's expert and per output row it returns",
        "test_attempt",
    ),
    ("26.3", "integer metadata (counts, expert ids) is free", "test_attempt"),
    ("26.3", "the ranks' drops add up to one process's", "test_expert_parallel"),
    ("26.4", "none over the memory limit; sorted; the first is the fastest", "test_attempt"),
    ("26.4", "choice has TP = 8, PP and DP within a factor 2 of the published layout", "test_plan"),
]
