"""Rank programs and ground truths of the lab 26 checks (importable by spawned gloo ranks).

Ground truth here is written independently of :mod:`minitorch.parallel`: full softmax
attention with numpy, and a per-token loop for the mixture of experts.

The learner's function gets :func:`~minitorch.checks.ranks.protocol_only` of the counting
communicator (rank, world_size, send/recv/isend/irecv, barrier: no counters, no simulated
world, no torch handles), and on a gloo rank
:func:`~minitorch.checks.ranks.sealed_torch_distributed` makes torch.distributed's own
collectives and point-to-point calls raise while its source is defined and run, so every
byte goes through the counted protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.checks.ranks import CountingComm, protocol_only, sealed_torch_distributed
from minitorch.checks.values import plain
from minitorch.comm import collectives
from minitorch.comm.protocol import Communicator

__all__ = [
    "full_attention",
    "moe_loop",
    "ring_gloo",
    "ring_program",
    "unscaled_ring",
]

_HINT = " (and lab 20's collectives built on them)"
RING_REF = ("minitorch.parallel.context:ring_attention", "minitorch.parallel.context:merge_block")


def full_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v over the whole sequence (the single-process answer)."""
    s = np.einsum("hid,hjd->hij", q, k) / np.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s + np.triu(np.full((n, n), -np.inf), 1)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hij,hjd->hid", w / w.sum(axis=-1, keepdims=True), v)


def unscaled_ring(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, p: int) -> np.ndarray:
    """The known mistake: block softmaxes against their own maxima, added without rescaling."""
    n = q.shape[-2]
    s = np.einsum("hid,hjd->hij", q, k) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full((n, n), -np.inf), 1)
    num, den = np.zeros((*q.shape[:-1], v.shape[-1])), np.zeros(q.shape[:-1])
    for cols in np.split(np.arange(n), p):
        blk = s[..., cols]
        m = blk.max(axis=-1, keepdims=True)
        e = np.where(np.isfinite(m), np.exp(blk - np.where(np.isfinite(m), m, 0)), 0.0)
        num += e @ v[..., cols, :]
        den += e.sum(axis=-1)
    return num / den[..., None]


def ring_program(comm: Communicator, fn: Callable[..., Any], case: dict[str, Any]) -> dict:
    """Run one attention case on this rank: its rows of Q, K, V; output and bytes per peer."""
    p, r = comm.world_size, comm.rank
    counting = CountingComm(comm)
    q, k, v = (np.split(a, p, axis=-2)[r] for a in (case["q"], case["k"], case["v"]))
    out = plain(
        fn(protocol_only(counting), q.copy(), k.copy(), v.copy(), case["causal"]),
        case=case["label"],
    )
    return {"out": np.asarray(out, dtype=np.float64), "to": dict(counting.to)}


def ring_gloo(comm: Communicator, source: str, name: str, cases: list[dict[str, Any]]) -> list:
    """On a gloo rank: define the learner's ``name`` from ``source``; run every case guarded."""
    from minitorch.checks.core import guarded

    namespace: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    for n in ("all_to_all", "all_gather"):
        namespace[n] = getattr(collectives, n)
    with sealed_torch_distributed(comm, _HINT):
        exec(compile(source, f"<{name} on rank {comm.rank}>", "exec"), namespace)
        fn = guarded(namespace[name], "26.1", RING_REF, forbid=())
        return [ring_program(comm, fn, case) for case in cases]


def _route(x: np.ndarray, w_router: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    logits = x @ w_router
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = z / z.sum(axis=-1, keepdims=True)
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    gates = np.take_along_axis(probs, experts, axis=-1)
    return experts, gates / gates.sum(axis=-1, keepdims=True) if k > 1 else gates


def moe_loop(case: dict[str, Any], p_local: int = 0) -> tuple[np.ndarray, int]:
    """One process, token by token: lab 10's priorities and capacity. ``p_local > 0``: the
    known mistake of deciding capacity per rank (``p_local`` ranks, local token order)."""
    x, w_router, ws, k, cf = case["x"], case["w_router"], case["experts"], case["k"], case["cf"]
    n, e = x.shape[0], len(ws)
    experts, gates = _route(x, w_router, k)
    groups = np.split(np.arange(n), p_local) if p_local else [np.arange(n)]
    y, dropped = np.zeros_like(x), 0
    for rows in groups:
        cap = int(np.ceil(k * len(rows) * cf / e))
        filled = [0] * e
        for j in range(k):  # every first choice before any second choice
            for t in rows:
                ex = int(experts[t, j])
                if filled[ex] >= cap:
                    dropped += 1
                    continue
                filled[ex] += 1
                w1, b1, w2, b2 = ws[ex]
                y[t] += gates[t, j] * (np.maximum(x[t] @ w1 + b1, 0) @ w2 + b2)
    return y, dropped
