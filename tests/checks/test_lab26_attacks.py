"""Lab 26 tried as a class would: correct answers written differently, typical mistakes, cheats.

On the simulated world (26.1 with ``real=False``), each rank in its own forked process
(``a2s.checks.harness``): the bytes per peer are the router's record in the grader's
process, and a rank's allocations are measured there with tracemalloc.
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab26
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError, StudentError
from minitorch.comm.collectives import all_gather, all_to_all
from minitorch.model.moe_router import expert_capacity, top_k_gating
from minitorch.parallel import context, expert, planner
from minitorch.parallel.planner_cost import USABLE, Layout, memory_per_gpu, step_time
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong

REF = ReferenceCalledError


# --------------------------------------------------------------------------- 26.1 ring
def ring(comm, q, k, v, causal, acc_scale=True, sum_scale=True, mask=True):
    p, r = comm.world_size, comm.rank
    nb, d = q.shape[-2], q.shape[-1]
    acc = np.zeros((*q.shape[:-1], v.shape[-1]))
    m, total = np.full(q.shape[:-1], -np.inf), np.zeros(q.shape[:-1])
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kb, (r + 1) % p)
            comm.send(vb, (r + 1) % p)
        if not (mask and causal and src > r):
            s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(d)
            if mask and causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            new = np.maximum(m, s.max(axis=-1))
            scale = np.exp(m - new)
            e = np.exp(s - new[..., None])
            acc = (acc * scale[..., None] if acc_scale else acc) + e @ vb
            total = (total * scale if sum_scale else total) + e.sum(axis=-1)
            m = new
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return acc / total[..., None]


def ring_log_space(comm, q, k, v, causal):
    """Log-sum-exp merging of block results (out, lse), with isend/irecv handles."""
    import math

    p, r = comm.world_size, comm.rank
    nb = q.shape[-2]
    out, lse = None, None
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        handles = []
        if t < p - 1:
            handles = [comm.isend(kb.copy(), (r + 1) % p), comm.isend(vb.copy(), (r + 1) % p)]
        if not (causal and src > r):
            s = np.einsum("hid,hjd->hij", q, kb) / math.sqrt(q.shape[-1])
            if causal and src == r:
                s[:, np.triu_indices(nb, 1)[0], np.triu_indices(nb, 1)[1]] = -np.inf
            mx = s.max(axis=-1, keepdims=True)
            w = np.exp(s - mx)
            blk_lse = (np.log(w.sum(-1, keepdims=True)) + mx)[..., 0]
            blk = np.einsum("hij,hjd->hid", w / w.sum(-1, keepdims=True), vb)
            if out is None:
                out, lse = blk, blk_lse
            else:
                new = np.logaddexp(lse, blk_lse)
                out = out * np.exp(lse - new)[..., None] + blk * np.exp(blk_lse - new)[..., None]
                lse = new
        for handle in handles:
            handle.wait()
        if t < p - 1:
            kb = comm.irecv((r - 1) % p).wait()
            vb = comm.irecv((r - 1) % p).wait()
    return out


def ring_own_max(comm, q, k, v, causal):  # each block against its own max, no rescaling
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
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            num, den = num + e @ vb, den + e.sum(axis=-1)
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return num / den[..., None]


def ring_keep_blocks(comm, q, k, v, causal):
    """Passes the blocks around the ring, but keeps every one and computes at the end."""
    p, r = comm.world_size, comm.rank
    held = [(r, k, v)]
    kb, vb = k, v
    for t in range(p - 1):
        comm.send(kb, (r + 1) % p)
        comm.send(vb, (r + 1) % p)
        kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
        held.append(((r - t - 1) % p, kb, vb))
    order = sorted(held, key=lambda b: b[0])
    kk = np.concatenate([b[1] for b in order], axis=-2)
    vv = np.concatenate([b[2] for b in order], axis=-2)
    nb = q.shape[-2]
    s = q @ np.swapaxes(kk, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        rows = r * nb + np.arange(nb)[:, None]
        s = np.where(np.arange(kk.shape[-2])[None, :] <= rows, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ vv


def ring_reference(comm, q, k, v, causal):
    return context.ring_attention(comm, q, k, v, causal)


def ring_merge_block(comm, q, k, v, causal):
    p, r = comm.world_size, comm.rank
    nb = q.shape[-2]
    state = (
        np.zeros((*q.shape[:-1], v.shape[-1])),
        np.full(q.shape[:-1], -np.inf),
        np.zeros(q.shape[:-1]),
    )
    kb, vb = k, v
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kb, (r + 1) % p)
            comm.send(vb, (r + 1) % p)
        if not (causal and src > r):
            s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
            if causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            state = context.merge_block(state, s, vb)
        if t < p - 1:
            kb, vb = comm.recv((r - 1) % p), comm.recv((r - 1) % p)
    return state[0] / state[2][..., None]


def ring_torch(comm, q, k, v, causal):
    import torch

    return torch.from_numpy(ring(comm, q, k, v, causal)).numpy()


def ring_all_gather(comm, q, k, v, causal):
    kk, vv = all_gather(comm, np.swapaxes(k, 0, 1)), all_gather(comm, np.swapaxes(v, 0, 1))
    kk, vv = np.swapaxes(kk, 0, 1), np.swapaxes(vv, 0, 1)
    nb, r = q.shape[-2], comm.rank
    s = q @ np.swapaxes(kk, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(
            np.arange(kk.shape[-2])[None, :] <= r * nb + np.arange(nb)[:, None], s, -np.inf
        )
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ vv


def ring_grader_truth(comm, q, k, v, causal):
    from a2s.checks.truths import attention as full_attention

    _p, nb = comm.world_size, q.shape[-2]
    qq, kk, vv = (np.concatenate(list(all_gather(comm, a[None])), axis=-2) for a in (q, k, v))
    return full_attention(qq, kk, vv, causal)[..., comm.rank * nb : (comm.rank + 1) * nb, :]


def ring_fake_log(comm, q, k, v, causal):
    """Sends every block to every rank, then tries to re-attribute the bytes to the neighbour
    through the communicator's closure (there is none: the router keeps the count)."""
    cells = comm.send.__func__.__closure__ or ()
    counting = next(c.cell_contents for c in cells if hasattr(c.cell_contents, "to"))
    counting.to = {(comm.rank + 1) % comm.world_size: counting.bytes}
    return ring(comm, q, k, v, causal)


# --------------------------------------------------------------------------- 26.2 Ulysses
def _attend(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def uly(comm, q, k, v, causal):
    p = comm.world_size
    qh, kh, vh = (
        np.concatenate(all_to_all(comm, np.split(t, p, axis=0)), axis=1) for t in (q, k, v)
    )
    s = qh @ np.swapaxes(kh, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = (e / e.sum(axis=-1, keepdims=True)) @ vh
    return np.concatenate(all_to_all(comm, np.split(out, p, axis=1)), axis=0)


def uly_send_recv(comm, q, k, v, causal):
    """The all-to-all by hand: send every other rank its heads, receive theirs."""
    p, r = comm.world_size, comm.rank

    def swap(t, split_axis, join_axis):
        parts = np.split(t, p, axis=split_axis)
        for dst in range(p):
            if dst != r:
                comm.send(np.ascontiguousarray(parts[dst]), dst)
        got = [parts[r] if src == r else comm.recv(src) for src in range(p)]
        return np.concatenate(got, axis=join_axis)

    qh, kh, vh = (swap(t, 0, 1) for t in (q, k, v))
    return swap(_attend(qh, kh, vh, causal), 1, 0)


def uly_wrong_join(comm, q, k, v, causal):  # rows joined in reverse rank order
    p = comm.world_size
    qh, kh, vh = (
        np.concatenate(all_to_all(comm, np.split(t, p, axis=0))[::-1], axis=1) for t in (q, k, v)
    )
    out = _attend(qh, kh, vh, causal)
    return np.concatenate(all_to_all(comm, np.split(out, p, axis=1)[::-1]), axis=0)


def uly_gather_sequence(comm, q, k, v, causal):
    p, r, nb = comm.world_size, comm.rank, q.shape[-2]
    kk = np.concatenate(list(all_gather(comm, k[None])), axis=-2)
    vv = np.concatenate(list(all_gather(comm, v[None])), axis=-2)
    s = q @ np.swapaxes(kk, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(p * nb)[None, :] <= r * nb + np.arange(nb)[:, None], s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ vv


def uly_no_mask(comm, q, k, v, causal):
    return uly(comm, q, k, v, False)


def uly_reference(comm, q, k, v, causal):
    return context.ulysses_attention(comm, q, k, v, causal)


def uly_helpers(comm, q, k, v, causal):
    qh, kh, vh = (context._seq_to_heads(comm, t) for t in (q, k, v))
    return context._heads_to_seq(comm, _attend(qh, kh, vh, causal))


def uly_torch(comm, q, k, v, causal):
    import torch

    return uly(comm, torch.tensor(q).numpy(), k, v, causal)


def uly_lab24_attention(comm, q, k, v, causal):
    p = comm.world_size
    qh, kh, vh = (
        np.concatenate(all_to_all(comm, np.split(t, p, axis=0)), axis=1) for t in (q, k, v)
    )
    out = context.attention(qh, kh, vh, causal)
    return np.concatenate(all_to_all(comm, np.split(out, p, axis=1)), axis=0)


def uly_world_counter(comm, q, k, v, causal):
    out = uly_gather_sequence(comm, q, k, v, causal)
    comm._world.bytes_sent[comm.rank] = 0
    return out


# --------------------------------------------------------------------------- 26.3 EP MoE
def _mlp(x, w):
    w1, b1, w2, b2 = w
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def _bound_for(q, keep, experts, per):
    n, k = keep.shape
    return [(t, j) for t in range(n) for j in range(k) if keep[t, j] and experts[t, j] // per == q]


def ep(comm, x, w_router, local_experts, k, capacity_factor, order="choice", gates_raw=False):
    p, r, per = comm.world_size, comm.rank, len(local_experts)
    n, n_exp = x.shape[0], per * p
    if gates_raw:
        logits = x @ w_router
        z = np.exp(logits - logits.max(-1, keepdims=True))
        probs = z / z.sum(-1, keepdims=True)
        experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
        gates = np.take_along_axis(probs, experts, axis=-1)
    else:
        experts, gates = top_k_gating(x @ w_router, k)
    counts = np.stack([np.bincount(experts[:, j], minlength=n_exp) for j in range(k)])
    allc = all_gather(comm, counts[None])
    cap = expert_capacity(int(allc[:, 0].sum()), n_exp, capacity_factor, k)
    keep = np.zeros((n, k), bool)
    if order == "choice":
        for j in range(k):
            seen = np.zeros(n_exp, np.int64)
            for t in range(n):
                e = experts[t, j]
                keep[t, j] = allc[:, :j, e].sum() + allc[:r, j, e].sum() + seen[e] < cap
                seen[e] += 1
    else:  # token-major: each token's k choices together (a drop-order bug)
        before = allc[:r].sum(axis=(0, 1))
        seen = np.zeros(n_exp, np.int64)
        for t in range(n):
            for j in range(k):
                e = experts[t, j]
                keep[t, j] = before[e] + seen[e] < cap
                seen[e] += 1
    sends = [_bound_for(q, keep, experts, per) for q in range(p)]
    rows = all_to_all(comm, [x[[t for t, _ in s]].reshape(-1, x.shape[1]) for s in sends])
    ids = all_to_all(comm, [np.array([experts[t, j] for t, j in s], np.int64) for s in sends])
    outs = []
    for got, eid in zip(rows, ids, strict=True):
        outs.append(
            np.array(
                [
                    _mlp(row, local_experts[int(e) - r * per])
                    for row, e in zip(got, eid, strict=True)
                ]
            ).reshape(got.shape)
        )
    back = all_to_all(comm, outs)
    y = np.zeros_like(x)
    for q in range(p):
        for (t, j), row in zip(sends[q], back[q], strict=True):
            y[t] += gates[t, j] * row
    return y, int((~keep).sum())


def ep_dict_routing(comm, x, w_router, local_experts, k, capacity_factor):
    """The same protocol with dicts and a class for the slot bookkeeping."""
    from collections import defaultdict

    class Slots:
        def __init__(self, allc, r, cap):
            self.allc, self.r, self.cap, self.seen = allc, r, cap, defaultdict(int)

        def take(self, j, e):
            used = self.allc[:, :j, e].sum() + self.allc[: self.r, j, e].sum() + self.seen[j, e]
            self.seen[j, e] += 1
            return used < self.cap

    p, r, per = comm.world_size, comm.rank, len(local_experts)
    n, n_exp = x.shape[0], per * p
    experts, gates = top_k_gating(x @ w_router, k)
    counts = np.stack([np.bincount(experts[:, j], minlength=n_exp) for j in range(k)])
    allc = all_gather(comm, counts[None])
    slots = Slots(allc, r, expert_capacity(int(allc[:, 0].sum()), n_exp, capacity_factor, k))
    kept = {(t, j): slots.take(j, experts[t, j]) for j in range(k) for t in range(n)}
    sends = {
        q: [
            tj
            for tj in sorted(kept, key=lambda a: (a[0], a[1]))
            if kept[tj] and experts[tj] // per == q
        ]
        for q in range(p)
    }
    rows = all_to_all(comm, [x[[t for t, _ in sends[q]]].reshape(-1, x.shape[1]) for q in range(p)])
    ids = all_to_all(comm, [np.array([experts[tj] for tj in sends[q]], np.int64) for q in range(p)])
    back = all_to_all(
        comm,
        [
            np.array(
                [_mlp(row, local_experts[int(e) - r * per]) for row, e in zip(g, i, strict=True)]
            ).reshape(g.shape)
            for g, i in zip(rows, ids, strict=True)
        ],
    )
    y = np.zeros_like(x)
    for q in range(p):
        for (t, j), row in zip(sends[q], back[q], strict=True):
            y[t] += gates[t, j] * row
    return y, sum(not v for v in kept.values())


def ep_local_capacity(comm, x, w_router, local_experts, k, capacity_factor):
    """Capacity decided on this rank alone, all-to-alls as usual."""
    p, r, per = comm.world_size, comm.rank, len(local_experts)
    n, n_exp = x.shape[0], per * p
    experts, gates = top_k_gating(x @ w_router, k)
    all_gather(comm, np.zeros((1, k, n_exp), np.int64))  # the same messages, unused
    cap = expert_capacity(n, n_exp, capacity_factor, k)
    keep, filled = np.zeros((n, k), bool), np.zeros(n_exp, np.int64)
    for j in range(k):
        for t in range(n):
            e = experts[t, j]
            keep[t, j] = filled[e] < cap
            filled[e] += keep[t, j]
    sends = [_bound_for(q, keep, experts, per) for q in range(p)]
    rows = all_to_all(comm, [x[[t for t, _ in s]].reshape(-1, x.shape[1]) for s in sends])
    ids = all_to_all(comm, [np.array([experts[t, j] for t, j in s], np.int64) for s in sends])
    back = all_to_all(
        comm,
        [
            np.array(
                [_mlp(row, local_experts[int(e) - r * per]) for row, e in zip(g, i, strict=True)]
            ).reshape(g.shape)
            for g, i in zip(rows, ids, strict=True)
        ],
    )
    y = np.zeros_like(x)
    for q in range(p):
        for (t, j), row in zip(sends[q], back[q], strict=True):
            y[t] += gates[t, j] * row
    return y, int((~keep).sum())


def ep_reference(comm, x, w_router, local_experts, k, capacity_factor):
    return expert.expert_parallel_moe(comm, x, w_router, local_experts, k, capacity_factor)


def ep_global_positions(comm, x, w_router, local_experts, k, capacity_factor):
    experts, _ = top_k_gating(x @ w_router, k)
    counts = np.stack(
        [
            np.bincount(experts[:, j], minlength=len(local_experts) * comm.world_size)
            for j in range(k)
        ]
    )
    expert.global_positions(experts, all_gather(comm, counts[None]), comm.rank)
    return ep(comm, x, w_router, local_experts, k, capacity_factor)


def ep_torch(comm, x, w_router, local_experts, k, capacity_factor):
    import torch

    y, dropped = ep(comm, x, w_router, local_experts, k, capacity_factor)
    return torch.tensor(y).numpy(), dropped


def ep_grader_loop(comm, x, w_router, local_experts, k, capacity_factor):
    """Gathers every rank's tokens and experts and runs the grader's own loop."""
    from a2s.checks.lab26.workers import moe_loop

    xs = all_gather(comm, x)
    ws = [tuple(all_gather(comm, np.stack([w[i] for w in local_experts]))) for i in range(4)]
    experts_all = [tuple(a[i] for a in ws) for i in range(len(ws[0]))]
    y, dropped = moe_loop(
        {"x": xs, "w_router": w_router, "experts": experts_all, "k": k, "cf": capacity_factor}
    )
    n = x.shape[0]
    return y[comm.rank * n : (comm.rank + 1) * n], dropped if comm.rank == 0 else 0


def ep_float_metadata(comm, x, w_router, local_experts, k, capacity_factor):
    """Sends the expert ids as float64 ("they are small")."""
    import minitorch.comm.collectives as col

    real = col.all_to_all

    def as_float(c, blocks):
        if blocks and blocks[0].dtype == np.int64:
            return [b.astype(np.int64) for b in real(c, [b.astype(np.float64) for b in blocks])]
        return real(c, blocks)

    globals()["all_to_all"] = as_float
    try:
        return ep(comm, x, w_router, local_experts, k, capacity_factor)
    finally:
        globals()["all_to_all"] = real


# --------------------------------------------------------------------------- 26.4 planner
def plan(model, cluster, batch):
    n, found = cluster.gpus, []
    for tp in range(1, n + 1):
        if n % tp or model.heads % tp or (cluster.per_node % tp and tp % cluster.per_node):
            continue
        for pp in range(1, n // tp + 1):
            dp = n // (tp * pp)
            if (n // tp) % pp or model.layers % pp or batch % dp:
                continue
            lay = Layout(tp, pp, dp)
            if memory_per_gpu(model, lay, batch) <= USABLE * cluster.memory:
                found.append((step_time(model, cluster, lay, batch)["total"], lay))
    return [lay for _, lay in sorted(found, key=lambda f: f[0])]


def plan_itertools(model, cluster, batch):
    import itertools

    divisors = [d for d in range(1, cluster.gpus + 1) if cluster.gpus % d == 0]
    layouts = [
        Layout(tp, pp, cluster.gpus // (tp * pp))
        for tp, pp in itertools.product(divisors, divisors)
        if cluster.gpus % (tp * pp) == 0
        and model.heads % tp == 0
        and (cluster.per_node % tp == 0 or tp % cluster.per_node == 0)
        and model.layers % pp == 0
        and batch % (cluster.gpus // (tp * pp)) == 0
    ]
    fits = [lay for lay in layouts if memory_per_gpu(model, lay, batch) <= USABLE * cluster.memory]
    return sorted(fits, key=lambda lay: step_time(model, cluster, lay, batch)["total"])


def plan_no_memory(model, cluster, batch):
    n, found = cluster.gpus, []
    for tp in range(1, n + 1):
        if n % tp or model.heads % tp or (cluster.per_node % tp and tp % cluster.per_node):
            continue
        for pp in range(1, n // tp + 1):
            dp = n // (tp * pp)
            if (n // tp) % pp or model.layers % pp or batch % dp:
                continue
            found.append(Layout(tp, pp, dp))
    return sorted(found, key=lambda lay: step_time(model, cluster, lay, batch)["total"])


def plan_slowest_first(model, cluster, batch):
    return plan(model, cluster, batch)[::-1]


def plan_no_batch_rule(model, cluster, batch):
    n, found = cluster.gpus, []
    for tp in range(1, n + 1):
        if n % tp or model.heads % tp or (cluster.per_node % tp and tp % cluster.per_node):
            continue
        for pp in range(1, n // tp + 1):
            if (n // tp) % pp or model.layers % pp:
                continue
            lay = Layout(tp, pp, n // (tp * pp))
            if memory_per_gpu(model, lay, batch) <= USABLE * cluster.memory:
                found.append(lay)
    return sorted(found, key=lambda lay: step_time(model, cluster, lay, batch)["total"])


def plan_reference(model, cluster, batch):
    return planner.plan_layouts(model, cluster, batch)


def plan_estimates(model, cluster, batch):
    return [e.layout for e in planner.plan(model, cluster, batch)]


def plan_grader_search(model, cluster, batch):
    from a2s.checks.lab26.planner import _feasible

    found = _feasible(model, cluster, batch)
    return [Layout(*key) for key in sorted(found, key=found.__getitem__)]


def plan_published_replay(model, cluster, batch):
    """The published layouts for the paper's setups, the real search elsewhere."""
    for pub in planner.PUBLISHED.values():
        if pub.model == model:
            return [pub.layout]
    return plan(model, cluster, batch)


def plan_torch(model, cluster, batch):
    import torch

    return plan(model, cluster, int(torch.tensor(batch)))


ck1 = lambda fn: lab26.check_ring_attention(fn, real=False)  # noqa: E731
ck2, ck3, ck4 = lab26.check_ulysses, lab26.check_expert_parallel, lab26.check_plan

ATTEMPTS = [
    honest("26.1", "online softmax", lambda: ck1(ring)),
    honest("26.1", "log-sum-exp merge, isend/irecv", lambda: ck1(ring_log_space)),
    wrong("26.1", "each block its own max", lambda: ck1(ring_own_max), match="OWN max"),
    wrong(
        "26.1",
        "no rescaling of the old terms",
        lambda: ck1(lambda c, q, k, v, m: ring(c, q, k, v, m, acc_scale=False, sum_scale=False)),
        match="BOTH",
    ),
    wrong(
        "26.1",
        "sum rescaled, accumulator not",
        lambda: ck1(lambda c, q, k, v, m: ring(c, q, k, v, m, acc_scale=False)),
        match="not the accumulator",
    ),
    wrong(
        "26.1",
        "no causal mask",
        lambda: ck1(lambda c, q, k, v, m: ring(c, q, k, v, m, mask=False)),
        match="non-causal answer",
    ),
    wrong("26.1", "keeps every block", lambda: ck1(ring_keep_blocks), match="ONE foreign block"),
    cheat("26.1", "calls the reference", lambda: ck1(ring_reference), error=REF),
    cheat("26.1", "the reference's merge", lambda: ck1(ring_merge_block), error=REF),
    cheat("26.1", "torch", lambda: ck1(ring_torch), error=ForbiddenCallError),
    cheat("26.1", "all-gathers K and V", lambda: ck1(ring_all_gather), match="each only to the"),
    cheat("26.1", "the grader's attention", lambda: ck1(ring_grader_truth), error=REF),
    cheat(
        "26.1",
        "re-attributes the bytes",
        lambda: ck1(ring_fake_log),
        match="raised",
        error=StudentError,
    ),
    honest("26.2", "all_to_all", lambda: ck2(uly)),
    honest("26.2", "all-to-all by hand", lambda: ck2(uly_send_recv)),
    wrong("26.2", "rows joined in reverse", lambda: ck2(uly_wrong_join), match="RANK order"),
    wrong(
        "26.2",
        "all-gathers the sequence",
        lambda: ck2(uly_gather_sequence),
        match="all-gather of the sequence",
    ),
    wrong("26.2", "no causal mask", lambda: ck2(uly_no_mask), match="wrong attention"),
    cheat("26.2", "calls the reference", lambda: ck2(uly_reference), error=REF),
    cheat("26.2", "the reference's all-to-alls", lambda: ck2(uly_helpers), error=REF),
    cheat("26.2", "torch", lambda: ck2(uly_torch), error=ForbiddenCallError),
    cheat("26.2", "the reference's attention", lambda: ck2(uly_lab24_attention), error=REF),
    cheat(
        "26.2",
        "zeroes the world's bytes",
        lambda: ck2(uly_world_counter),
        match="_world",
        error=StudentError,
    ),
    honest("26.3", "choice-major slots", lambda: ck3(ep)),
    honest("26.3", "dicts and a class", lambda: ck3(ep_dict_routing)),
    wrong("26.3", "capacity per rank", lambda: ck3(ep_local_capacity), match="per rank"),
    wrong(
        "26.3",
        "token-major drops",
        lambda: ck3(lambda *a: ep(*a, order="token")),
        match="FIRST choice",
    ),
    wrong(
        "26.3",
        "gates not renormalized",
        lambda: ck3(lambda *a: ep(*a, gates_raw=True)),
        match="renormalize",
    ),
    wrong("26.3", "float metadata", lambda: ck3(ep_float_metadata), match="integer arrays"),
    cheat("26.3", "calls the reference", lambda: ck3(ep_reference), error=REF),
    cheat("26.3", "the reference's positions", lambda: ck3(ep_global_positions), error=REF),
    cheat("26.3", "torch", lambda: ck3(ep_torch), error=ForbiddenCallError),
    cheat("26.3", "gathers all and runs the grader's loop", lambda: ck3(ep_grader_loop), error=REF),
    honest("26.4", "nested loops", lambda: ck4(plan)),
    honest("26.4", "itertools.product", lambda: ck4(plan_itertools)),
    wrong("26.4", "no memory filter", lambda: ck4(plan_no_memory), match="does not fit"),
    wrong("26.4", "slowest first", lambda: ck4(plan_slowest_first), match="not sorted"),
    wrong(
        "26.4",
        "dp need not divide the batch",
        lambda: ck4(plan_no_batch_rule),
        match="does not divide the batch",
    ),
    cheat("26.4", "calls the reference", lambda: ck4(plan_reference), error=REF),
    cheat("26.4", "the reference's estimates", lambda: ck4(plan_estimates), error=REF),
    cheat("26.4", "the grader's search", lambda: ck4(plan_grader_search), error=REF),
    cheat(
        "26.4",
        "replays the published layouts",
        lambda: ck4(plan_published_replay),
        match="feasible",
    ),
    cheat("26.4", "torch", lambda: ck4(plan_torch), error=ForbiddenCallError),
]

PENDING: set[str] = set()


def _param(attempt):
    if attempt_id(attempt) in PENDING:
        mark = pytest.mark.xfail(strict=True, reason="needs the rank harness (issue 18, item 1)")
        return pytest.param(attempt, marks=mark, id=attempt_id(attempt))
    return pytest.param(attempt, id=attempt_id(attempt))


@pytest.mark.parametrize("attempt", [_param(a) for a in ATTEMPTS])
def test_attempt(attempt):
    judge(attempt)
