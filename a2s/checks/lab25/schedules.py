"""Graders of exercises 25.1 (GPipe), 25.2 (1F1B) and 25.4 (interleaved 1F1B) schedules.

Every schedule must be complete (one F and one B of each microbatch and chunk per stage),
run each backward after its forward, and finish when every stage runs its list in order and
waits for its inputs (a broken dependency deadlocks). Then the point of each schedule is
enforced: its bubble in simulated time (forward 1, backward 2 per stage; 1/v and 2/v per
chunk) must equal the closed form exactly, and its peak of stashed activations per stage
must fit the budget: ``m`` is allowed for GPipe, ``min(p - s, m)`` for 1F1B,
``min(2 (p - s - 1) + (v - 1) p + 1, m v)`` chunk-activations for the interleaved schedule.
The interleaved schedules are timed again with ``t_comm = 0.25`` per message between stages
and must be as fast as Megatron's order (the graders' ``_truth.reference_interleaved``): a
shorter warm-up has the same bubble with free messages and waits for them otherwise.
Ground truth: the graders' own dependency-graph timing (``_truth.audit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab25._truth import (
    OWN,
    audit,
    peaks,
    read_schedule,
    reference_interleaved,
)

__all__ = ["check_gpipe", "check_interleaved", "check_one_f_one_b"]

_P = "minitorch.parallel.pipeline"
_TOL = 1e-9
_T_COMM = 0.25  # the interleaved schedules are timed again with this message time
# the three schedules and the helpers that would write the interleaved order for the learner
_BLOCKS = (
    tuple(
        f"{_P}:{name}"
        for name in ("gpipe", "one_f_one_b", "interleaved", "warmup_count", "_micro_chunk")
    )
    + OWN
)


def _run(fn: Callable[..., Any], args: tuple, p: int, label: str) -> list:
    got = plain(fn(*args), what="schedule", case=label)
    return read_schedule(got, p, label)


def _bubble(label: str, got: float, p: int, m: int, v: int, name: str) -> None:
    want = (p - 1) / (v * m + p - 1)
    if abs(got - want) > _TOL:
        raise CheckFailure(
            f"[{label}] valid, but its bubble in simulated time is {got:.4f}, not {name}'s "
            f"(p-1)/({'v m' if v > 1 else 'm'}+p-1) = {want:.4f}: some stage idles while it "
            "could compute. Start each stage's next op as early as its inputs allow (a stage "
            "that runs F and B of one microbatch before the next forward is plain model "
            "parallelism, bubble (p-1)/p)."
        )


def _cases(named: list[tuple[int, ...]], exercise: str, count: int, draw: Callable) -> list:
    gen = fresh_rng(exercise)
    out = [(c, f"p={c[0]}, m={c[1]}" + (f", v={c[2]}" if len(c) > 2 else "")) for c in named]
    for _ in range(count):
        c = draw(gen)
        out.append((c, fresh(f"p={c[0]}, m={c[1]}" + (f", v={c[2]}" if len(c) > 2 else ""))))
    return out


@grader("25.1", blocks=_BLOCKS, hand="property")
def check_gpipe(gpipe_schedule: Callable[..., Any]) -> str:
    """Exercise 25.1: GPipe, every forward then every backward; bubble (p-1)/(m+p-1)."""
    cases = _cases(
        [(2, 3), (4, 4), (4, 8), (1, 3), (3, 1)],
        "25.1",
        3,
        lambda g: (int(g.integers(2, 6)), int(g.integers(1, 9))),
    )
    for (p, m), label in cases:
        sched = _run(gpipe_schedule, (p, m), p, label)
        _, bubble = audit(sched, m, 1, label)
        for s, ops in enumerate(sched):
            kinds = "".join(k for k, _, _ in ops)
            if kinds != "F" * m + "B" * m:
                raise CheckFailure(
                    f"[{label}] stage {s} runs {kinds[:12]}...: GPipe flushes, it runs all m "
                    "forwards before any backward (the backwards then run after the pipeline "
                    "has filled)."
                )
        _bubble(label, bubble, p, m, 1, "GPipe")
    return f"{len(cases)} GPipe schedules valid, bubble (p-1)/(m+p-1) exact, peak m activations"


@grader("25.2", blocks=_BLOCKS, hand="property")
def check_one_f_one_b(one_f_one_b_schedule: Callable[..., Any]) -> str:
    """Exercise 25.2: 1F1B, GPipe's bubble with at most min(p - s, m) stashed per stage."""
    cases = _cases(
        [(2, 3), (4, 4), (4, 8), (3, 2), (1, 3), (5, 2), (4, 1)],  # m < p - 1: min(p-s-1, m)
        "25.2",
        3,
        lambda g: (int(g.integers(2, 6)), int(g.integers(1, 10))),
    )
    stashed = 0
    for (p, m), label in cases:
        sched = _run(one_f_one_b_schedule, (p, m), p, label)
        _, bubble = audit(sched, m, 1, label)
        got = peaks(sched)
        budget = [min(p - s, m) for s in range(p)]
        gpipe = all("".join(k for k, _, _ in ops) == "F" * m + "B" * m for ops in sched)
        warm = [next((i for i, op in enumerate(ops) if op[0] == "B"), m) for ops in sched]
        for s in range(p):
            if got[s] > budget[s]:
                hint = "stage s needs only p - s - 1 warm-up forwards"
                if len(set(warm)) == 1 and p > 1 and not gpipe:
                    hint = (
                        f"every stage runs the same {warm[0]} warm-up forwards: stage s needs "
                        "only p - s - 1, fewer the later the stage"
                    )
                elif gpipe:
                    hint = (
                        "this is GPipe's memory: 1F1B runs only p - s - 1 warm-up forwards, "
                        "then one backward after each forward"
                    )
                elif got[s] == budget[s] + 1:
                    hint = "one warm-up forward too many: stage s needs p - s - 1"
                raise CheckFailure(
                    f"[{label}] stage {s} holds {got[s]} microbatches' activations at once; the "
                    f"1F1B budget is min(p - s, m) = {budget[s]} ({hint})."
                )
        _bubble(label, bubble, p, m, 1, "1F1B")
        stashed += sum(got)
    return (
        f"{len(cases)} 1F1B schedules valid, bubble (p-1)/(m+p-1) exact, peak stash "
        f"min(p-s, m) per stage ({stashed} activations in all vs GPipe's p*m)"
    )


@grader("25.4", blocks=_BLOCKS, hand="property")
def check_interleaved(interleaved_schedule: Callable[..., Any]) -> str:
    """Exercise 25.4: interleaved 1F1B; bubble (p-1)/(v m+p-1) with chunks of 1/v the work."""
    cases = _cases(
        [(2, 4, 2), (4, 8, 2), (2, 2, 3), (3, 6, 1), (4, 4, 3)],
        "25.4",
        2,
        lambda g: (p := int(g.integers(2, 5)), p * int(g.integers(1, 4)), int(g.integers(2, 4))),
    )
    for (p, m, v), label in cases:
        sched = _run(interleaved_schedule, (p, m, v), p, label)
        try:
            _, bubble = audit(sched, m, v, label, t_f=1.0 / v, t_b=2.0 / v)
        except CheckFailure as exc:
            if v == 1 or "exactly once" in str(exc):
                raise
            raise CheckFailure(
                f"{exc} Megatron's order: the k-th forward of a stage is microbatch "
                "(k // (p v)) p + k % p on chunk (k // p) % v, its k-th backward the same "
                "microbatch on chunk v - 1 - (k // p) % v (groups of p microbatches go through "
                "chunk 0, then chunk 1, ...; backwards visit the chunks in reverse)."
            ) from None
        got = peaks(sched)
        for s in range(p):
            budget = min(2 * (p - s - 1) + (v - 1) * p + 1, m * v) if v > 1 else min(p - s, m)
            if got[s] > budget:
                if v == 1:
                    hint = "with v = 1 the warm-up is 1F1B's min(p - s - 1, m) (your 25.2)"
                elif got[s] == budget + 1:
                    hint = "one warm-up forward too many"
                else:
                    hint = "running every forward first is GPipe over the virtual stages"
                raise CheckFailure(
                    f"[{label}] stage {s} holds {got[s]} chunk-activations at once; the "
                    f"interleaved budget is {budget} (warm-up 2(p-s-1) + (v-1)p forwards, "
                    f"then one backward after each forward): {hint}."
                )
        _bubble(label, bubble, p, m, v, "the interleaved schedule")
        # with communication time a short warm-up makes a stage wait for its neighbour's
        # message: the same bubble at t_comm = 0, a slower pipeline at t_comm > 0
        span, _ = audit(sched, m, v, label, 1.0 / v, 2.0 / v, _T_COMM)
        want, _ = audit(reference_interleaved(p, m, v), m, v, label, 1.0 / v, 2.0 / v, _T_COMM)
        if span > want + _TOL:
            warm = [
                next((i for i, op in enumerate(ops) if op[0] == "B"), len(ops)) for ops in sched
            ]
            need = [
                min(2 * (p - s - 1) + (v - 1) * p if v > 1 else p - s - 1, m * v) for s in range(p)
            ]
            short = [s for s in range(p) if warm[s] < need[s]]
            why = (
                f"stage {short[0]} runs {warm[short[0]]} warm-up forwards where Megatron's "
                f"order runs 2(p-s-1) + (v-1)p = {need[short[0]]}: with a shorter warm-up "
                "each backward waits for the next stage's message"
                if short
                else "a stage waits for a message it could have had earlier"
            )
            raise CheckFailure(
                f"[{label}] the right bubble with free messages, but with t_comm = {_T_COMM} "
                f"per message between stages it takes {span:.4g} where Megatron's order takes "
                f"{want:.4g}: {why}."
            )
    return (
        f"{len(cases)} interleaved schedules valid, bubble (p-1)/(v m+p-1) exact (fill and "
        "drain v times shorter than 1F1B's), stash within Megatron's warm-up + 1"
    )
