"""Grader of exercise 26.1: ring attention on SimWorld (p = 2..4, causal and not), then gloo.

The learner's ``ring_attention(comm, q, k, v, causal)`` gets this rank's rows (h, n/p, d) of
Q, K, V and returns its rows of softmax attention over the WHOLE sequence. Values: float64,
equal to one-process attention to 1e-10. The point, enforced: K/V blocks travel only to the
ring neighbour ``r + 1``, and each rank sends exactly ``(p - 1)`` K and V blocks (never the
whole K/V at once, never to every rank). Known mistakes: merging partial softmaxes without
the ``e^(m - m')`` rescaling; ignoring the causal mask or the block offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, guarded
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from a2s.checks.lab26.workers import RING_REF, ring_program, ring_variant, unscaled_ring
from a2s.checks.truths import attention
from minitorch.comm.simworld import SimWorld

__all__ = ["check_ring_attention", "ring_cases"]

_SOURCE = (
    "[2 gloo processes] Your function passed on the simulated world, but {why}. On a real rank "
    "it is defined from its own source text alone, with only np and lab 20's all_to_all and "
    "all_gather in scope, and it may move data only through comm's send/recv/isend/irecv: keep "
    "it self-contained (no helpers or globals from other cells)."
)


def _case(
    seed: int, p: int, h: int, nb: int, d: int, causal: bool, scale: float, label: str
) -> dict:
    gen = np.random.default_rng(seed)
    q, k, v = (gen.standard_normal((h, p * nb, d)) for _ in range(3))
    return {"q": q * scale, "k": k, "v": v, "causal": causal, "p": p, "label": label}


def ring_cases(fresh_count: int = 2) -> list[dict[str, Any]]:
    """Teaching cases, then fresh ones (seeded by the grading run)."""
    cases = [
        _case(1, 2, 1, 3, 4, False, 1.0, "p=2, 1 head, not causal"),
        _case(2, 3, 2, 2, 3, False, 4.0, "p=3, 2 heads, large scores, not causal"),
        _case(3, 3, 1, 3, 2, True, 1.0, "p=3, causal"),
        _case(4, 4, 2, 2, 4, True, 3.0, "p=4, 2 heads, causal"),
    ]
    gen = fresh_rng("26.1")
    for _ in range(fresh_count):
        p, causal = int(gen.integers(2, 5)), bool(gen.integers(0, 2))
        h, nb, d = (int(v) for v in gen.integers(1, 4, 3))
        label = fresh(f"p={p}, h={h}, n={p * nb}, d={d}, causal={causal}")
        cases.append(_case(int(gen.integers(2**31)), p, h, nb, d, causal, 2.0, label))
    return cases


def compare(case: dict, outs: list[dict], where: str) -> None:
    """Values against one process, then the ring's byte budget; CheckFailure with a hint."""
    p = len(outs)
    q, k, v, causal = case["q"], case["k"], case["v"], case["causal"]
    own = q[..., : q.shape[-2] // p, :].shape
    ok = all(np.shape(o["out"]) == own for o in outs)
    got = np.concatenate([o["out"] for o in outs], axis=-2) if ok else None
    tag = f"[{case['label']}, {where}]"
    if got is None:
        raise CheckFailure(
            f"{tag} each rank must return its own rows, shape "
            f"{q.shape[0], q.shape[1] // p, v.shape[-1]}."
        )
    want = attention(q, k, v, causal)
    if not np.allclose(got, want, rtol=0, atol=1e-10):
        running = {
            (a, d): ring_variant(q, k, v, causal, p, acc=a, den=d)
            for a, d in ((False, False), (False, True), (True, False))
        }
        if np.allclose(got, unscaled_ring(q, k, v, causal, p), rtol=0, atol=1e-10):
            hint = (
                "you took each block's exponentials against that block's OWN max and added them "
                "as they are: the blocks' terms are then on different scales. Keep one running "
                "max m per query row; when a block raises it to m', multiply the accumulator and "
                "the sum by exp(m - m') before adding the block's terms (the online softmax)."
            )
        elif np.allclose(got, running[False, False], rtol=0, atol=1e-10):
            hint = (
                "the running max grew but the old accumulator and the old sum kept their scale: "
                "when m becomes m', multiply BOTH by exp(m - m') before adding the new block."
            )
        elif np.allclose(got, running[False, True], rtol=0, atol=1e-10):
            hint = (
                "you rescaled the running sum but not the accumulator: when m becomes m', "
                "multiply the accumulator (the weighted sum of V) by exp(m - m') too."
            )
        elif np.allclose(got, running[True, False], rtol=0, atol=1e-10):
            hint = (
                "you rescaled the accumulator but not the running sum: when m becomes m', "
                "multiply the sum of exponentials by exp(m - m') too."
            )
        elif np.allclose(got, attention(q, k, v, not causal), rtol=0, atol=1e-10):
            hint = "you got the non-causal answer." if causal else "you masked a non-causal case."
            hint += (
                " With causal=True, query i sees keys j <= i in GLOBAL positions: block t "
                "comes from rank (r - t) mod p."
            )
        else:
            err = float(np.max(np.abs(got - want)))
            hint = (
                f"off by up to {err:.2e}. Check which rank each received block came from "
                "(at step t: (r - t) mod p) and that you divide by the running sum at the end."
            )
        raise CheckFailure(f"{tag} wrong attention: {hint}")
    block = k.nbytes // p
    for r, o in enumerate(outs):
        want_to = {(r + 1) % p: 2 * (p - 1) * block} if p > 1 else {}
        if o["to"] != want_to:
            raise CheckFailure(
                f"{tag} right values, but rank {r} sent {o['to']} (peer: bytes) where the ring "
                f"sends {want_to}: (p - 1) = {p - 1} K blocks and {p - 1} V blocks of {block} "
                "bytes, each only to the next rank (r + 1) mod p. Gathering every K/V block at "
                "once (all-gather) needs p times the memory ring attention avoids."
            )


def _launch(raw: Callable[..., Any], gloo: list[dict]) -> list:
    """The learner's source on 2 gloo ranks, one launch; a rank's failure is the learner's."""
    import inspect
    import textwrap

    from a2s.checks.ranks import launch_learner

    try:
        source = textwrap.dedent(inspect.getsource(raw))
    except (OSError, TypeError):
        raise CheckFailure(_SOURCE.format(why="its source code cannot be read")) from None
    target = "a2s.checks.lab26.workers:ring_gloo"
    return launch_learner(target, 2, source, raw.__name__, gloo, advice=_SOURCE)


def simulated(raw: Any, case: dict, exercise: str, blocks: tuple[str, ...]) -> list[dict]:
    """One attention case on the simulated world, each rank in its own forked process; the
    bytes per peer are the router's record (here), never the rank's own."""
    p = case["p"]
    student = guarded(raw, exercise, blocks, forbid=("torch", "tracemalloc"))
    try:
        run = run_ranks(ring_program, SimWorld(p), [(student, case, False)] * p)
    except (StudentError, CheckFailure) as exc:
        exc.args = (f"[{case['label']}] {exc}",)
        raise
    return [dict(o, to=dict(run.to[r])) for r, o in enumerate(run.results)]


_P_MEM = 8  # ranks of the memory case: holding every foreign block is 2(p-1) = 14 blocks
_HELD = 13.0  # K or V blocks at once (measured: the ring 7.3, keeping every block 31)


def _one_block_at_a_time(raw: Any) -> float:
    """The ring holds one foreign K/V pair at a time: on p = 8 ranks with blocks much larger
    than the scores, every allocation of a rank's call is measured (tracemalloc, in its own
    process); keeping the received blocks, or gathering them, goes far over."""
    case = _case(11, _P_MEM, 1, 16, 2048, False, 1.0, f"p={_P_MEM}, 1 head, 16 rows, d=2048")
    outs = simulated(raw, case, "26.1", RING_REF)
    compare(case, outs, "simulated world")
    block = case["k"].nbytes // _P_MEM
    most = max(o["allocated"] for o in outs) / block
    if most > _HELD:
        raise CheckFailure(
            f"[{case['label']}] right values and bytes, but a rank allocated {most:.1f} K/V "
            f"blocks' worth at once (measured with tracemalloc in the rank's process; the "
            f"budget is {_HELD:g}): each rank holds ONE foreign block at a time. Use the block "
            "you hold, send it on, then replace it with the one you receive: keeping every "
            "received block (to compute at the end) needs the memory ring attention avoids."
        )
    return most


@grader("26.1", blocks=RING_REF, hand="ranks")
def check_ring_attention(ring_attention: Callable[..., Any], real: bool = True) -> str:
    """Exercise 26.1: ring attention equals full attention; K/V only around the ring."""
    cases = ring_cases()
    raw = getattr(ring_attention, "fn", ring_attention)
    for case in cases:
        outs = simulated(raw, case, "26.1", RING_REF)
        compare(case, outs, "simulated world")
    held = _one_block_at_a_time(raw)
    if not real:
        return (
            f"{len(cases)} simulated cases (p = 2..4) equal full attention, ring bytes exact; "
            f"at most {held:.1f} blocks' worth allocated at once on p = {_P_MEM}"
        )
    gloo = [ring_cases(0)[0], _case(7, 2, 2, 3, 3, True, 2.0, "p=2, causal")]
    runs = _launch(raw, gloo)
    for i, case in enumerate(gloo):
        compare(case, [runs[0][i], runs[1][i]], "2 gloo processes")
    return (
        f"{len(cases)} simulated (p = 2..4) and {len(gloo)} real (2 gloo processes) cases equal "
        "full attention to 1e-10; each rank sent exactly 2(p-1) K/V blocks, to its neighbour "
        f"only; at most {held:.1f} blocks' worth allocated at once on p = {_P_MEM}"
    )
