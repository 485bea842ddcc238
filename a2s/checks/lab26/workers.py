"""Rank programs and ground truths of the lab 26 checks (importable by spawned gloo ranks).

Ground truth here is written independently of :mod:`minitorch.parallel`: full softmax
attention with numpy (:func:`a2s.checks.truths.attention`, shared), and a per-token loop for
the mixture of experts.

On the simulated world each rank is its own forked process (``harness.run_ranks``: the
router counts); on a gloo rank each call of the learner's function runs in a sealed forked
child of the rank (:func:`~a2s.checks.ranks.on_gloo_rank`: torch is a forbidden call
with the kernel's message), and the rank's process counts its bytes.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.ranks import LEARNER, CountingComm, on_gloo_rank, protocol_only
from a2s.checks.values import plain
from minitorch.comm import collectives
from minitorch.comm.protocol import Communicator
from minitorch.comm.torchdist import TorchDistComm

__all__ = [
    "moe_loop",
    "ring_gloo",
    "ring_program",
    "ring_variant",
    "unscaled_ring",
]

RING_REF = (
    "minitorch.parallel.context:ring_attention",
    "minitorch.parallel.context:merge_block",
    "minitorch.parallel.context:attention",
    # the grader's own ground truth
    "a2s.checks.truths:attention",
    "a2s.checks.lab26.workers:unscaled_ring",
    "a2s.checks.lab26.workers:ring_variant",
)


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


def ring_variant(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, p: int, acc: bool, den: bool
) -> np.ndarray:
    """Known mistakes of the online softmax, run in ring order (rank r sees blocks r, r-1, ..):
    a running max whose growth does not rescale the old accumulator (``acc=False``) or the
    old sum (``den=False``)."""
    n = q.shape[-2]
    s = np.einsum("hid,hjd->hij", q, k) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full((n, n), -np.inf), 1)
    rows, out = np.split(np.arange(n), p), np.zeros((*q.shape[:-1], v.shape[-1]))
    for r, mine in enumerate(rows):
        m = np.full((q.shape[0], len(mine)), -np.inf)
        num, tot = np.zeros((q.shape[0], len(mine), v.shape[-1])), np.zeros(m.shape)
        for t in range(p):
            cols = rows[(r - t) % p]
            blk = s[:, mine][:, :, cols]
            new = np.maximum(m, blk.max(axis=-1))
            safe = np.where(np.isfinite(new), new, 0.0)
            scale = np.where(np.isfinite(m), np.exp(m - safe), 0.0)
            e = np.where(np.isfinite(blk), np.exp(blk - safe[..., None]), 0.0)
            num = (num * scale[..., None] if acc else num) + e @ v[:, cols]
            tot = (tot * scale if den else tot) + e.sum(axis=-1)
            m = new
        out[:, mine] = num / tot[..., None]
    return out


def ring_program(
    comm: Communicator, fn: Callable[..., Any], case: dict[str, Any], counted: bool = True
) -> dict:
    """Run one attention case on this rank: its rows of Q, K, V; output, bytes per peer (when
    ``counted``: a gloo rank; on the simulated world the router counts) and the peak bytes
    the learner's function allocated (tracemalloc, in this rank's process)."""
    import tracemalloc

    p, r = comm.world_size, comm.rank
    counting = CountingComm(comm) if counted else None
    q, k, v = (np.split(a, p, axis=-2)[r].copy() for a in (case["q"], case["k"], case["v"]))
    view = protocol_only(counting) if counting is not None else comm
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    got = fn(view, q, k, v, case["causal"])
    allocated = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    out = plain(got, case=case["label"])
    return {
        "out": np.asarray(out, dtype=np.float64),
        "to": dict(counting.to) if counting is not None else {},
        "allocated": int(allocated),
    }


def _maker(source: str, name: str) -> Callable[[], Callable[..., Any]]:
    """Like :func:`~a2s.checks.ranks.learner_source`, with the setup cell's names (np,
    lab 20's all_to_all and all_gather): compiled here as the learner's, run in the child."""
    code = compile(source, f"{LEARNER}{name}>", "exec")

    def make() -> Callable[..., Any]:
        module = types.ModuleType("__a2s_rank__")
        module.__dict__.update(np=np, numpy=np)
        for n in ("all_to_all", "all_gather"):
            module.__dict__[n] = getattr(collectives, n)
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)
        return module.__dict__[name]  # type: ignore[no-any-return]

    return make


def ring_gloo(comm: TorchDistComm, source: str, name: str, cases: list[dict[str, Any]]) -> list:
    """On a gloo rank: each case's call of the learner's ``name`` in a sealed forked child of
    this rank (:func:`~a2s.checks.ranks.on_gloo_rank`: torch is a forbidden call
    there); the bytes per peer are this rank's own count."""
    make = _maker(source, name)
    out = []
    for case in cases:
        p, r = comm.world_size, comm.rank
        q, k, v = (np.split(a, p, axis=-2)[r].copy() for a in (case["q"], case["k"], case["v"]))
        comm.barrier()
        got, log = on_gloo_rank(
            comm, make, q, k, v, case["causal"], exercise="26.1", blocks=RING_REF
        )
        comm.flush()
        out.append({"out": np.asarray(got, dtype=np.float64), "to": dict(log["to"])})
    return out


def _route(
    x: np.ndarray, w_router: np.ndarray, k: int, raw: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    logits = x @ w_router
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = z / z.sum(axis=-1, keepdims=True)
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    gates = np.take_along_axis(probs, experts, axis=-1)
    if raw or k == 1:
        return experts, gates
    return experts, gates / gates.sum(axis=-1, keepdims=True)


def moe_loop(
    case: dict[str, Any], p_local: int = 0, token_major: bool = False, raw_gates: bool = False
) -> tuple[np.ndarray, int]:
    """One process, token by token: lab 10's priorities and capacity. Known mistakes:
    ``p_local > 0`` decides capacity per rank (``p_local`` ranks, local token order);
    ``token_major`` fills the experts token by token (each token's k choices together);
    ``raw_gates`` leaves the top-k gates unnormalized."""
    x, w_router, ws, k, cf = case["x"], case["w_router"], case["experts"], case["k"], case["cf"]
    n, e = x.shape[0], len(ws)
    experts, gates = _route(x, w_router, k, raw=raw_gates)
    groups = np.split(np.arange(n), p_local) if p_local else [np.arange(n)]
    y, dropped = np.zeros_like(x), 0
    for rows in groups:
        cap = int(np.ceil(k * len(rows) * cf / e))
        filled = [0] * e
        order = (
            [(t, j) for t in rows for j in range(k)]
            if token_major
            else [(t, j) for j in range(k) for t in rows]
        )  # every first choice first
        for t, j in order:
            ex = int(experts[t, j])
            if filled[ex] >= cap:
                dropped += 1
                continue
            filled[ex] += 1
            w1, b1, w2, b2 = ws[ex]
            y[t] += gates[t, j] * (np.maximum(x[t] @ w1 + b1, 0) @ w2 + b2)
    return y, dropped
