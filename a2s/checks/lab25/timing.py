"""Grader of exercise 25.3: predict the bubble, then time any schedule in simulated time.

``predict_bubble(p, m, v)`` must be the idle fraction of ``p x makespan`` of a flushed
pipeline, ``(p - 1) / (v m + p - 1)`` (Narayanan et al. 2021 write the bubble as
``(p - 1) / (v m)`` of the *ideal* time; the fraction of the total is what a timeline shows).
``simulate_schedule(schedule, t_f, t_b, t_comm)`` returns ``(makespan, bubble)``: each op
starts when its stage has finished the previous op and its input has arrived, ``t_comm``
after the producing op ended on another stage. Ground truth: the grader's own
dependency-graph recursion, on GPipe, 1F1B, interleaved and random valid schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake, fresh
from a2s.checks.core import fresh_rng, grader, plain, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.lab25._truth import OWN, audit, random_schedule, reference_1f1b
from a2s.checks.lab25._truth import reference_interleaved as _interleaved
from a2s.checks.table import Table

__all__ = ["check_simulate"]

_PREDICTED = [(4, 8, 1), (2, 1, 1), (8, 32, 1), (4, 8, 2), (4, 16, 4)]

_BLOCKS = (
    "minitorch.parallel.pipeline:bubble_formula",
    "minitorch.parallel.pipeline_exec:simulate",
    "minitorch.parallel.pipeline_exec:simulate_on_world",
    "minitorch.parallel.pipeline_exec:_walk",  # the stage-advancing loop, given a visitor
    *OWN,
)


def _bubble(p: int, m: int, v: int) -> float:
    return (p - 1) / (v * m + p - 1)


def _read_fraction(got: Any, label: str) -> Any:
    return float(got) if type(got) is Fraction else got  # exact, and a fine answer


_PREDICT_MISTAKES = (
    Mistake(
        "(p-1)/(v m) is the bubble over the IDEAL time (Megatron's ratio); the "
        "idle fraction of the whole run divides by the total, v m + p - 1 slots",
        answer=lambda p, m, v: (p - 1) / (v * m),
    ),
    Mistake(
        "that is integer division (//): the bubble is a fraction, use /",
        when=lambda got, p, m, v: isinstance(got, int) and got == (p - 1) // (v * m + p - 1),
    ),
    Mistake(
        "with v chunks each slot is 1/v as long: the p - 1 fill slots shrink",
        answer=lambda p, m, v: (p - 1) / (m + p - 1) if v > 1 else _bubble(p, m, v),
    ),
)


def _near(got: Any, want: float) -> bool:
    return isinstance(got, (int, float, np.floating)) and abs(float(got) - want) <= 1e-12


def _drawn(gen: Any, i: int) -> tuple[str, tuple[int, int, int]]:
    p, m, v = int(gen.integers(2, 9)), int(gen.integers(1, 40)), int(gen.integers(1, 5))
    return f"p={p}, m={m}, v={v}", (p, m, v)


PREDICT = Table(
    "25.3",
    truth=_bubble,
    named=[(f"p={p}, m={m}, v={v}", (p, m, v)) for p, m, v in _PREDICTED],
    draw=_drawn,
    fresh=1,
    mistakes=_PREDICT_MISTAKES,
    hint="write the fraction as a function of p, m and v",
    read=_read_fraction,
    same=_near,
    what="prediction",
    message=lambda c, got, want, hint: f"[{c.label}] predicted {got!r}, want {want:.6f}: {hint}.",
)


# one stage, two chunks: F of each microbatch through chunk 0 then 1, backwards in reverse
_ONE = (("F", ((0, 0), (0, 1), (1, 0), (1, 1))), ("B", ((0, 1), (0, 0), (1, 1), (1, 0))))


@grader("25.3", blocks=_BLOCKS)
def check_simulate(
    simulate_schedule: Callable[..., Any], predict_bubble: Callable[..., Any]
) -> str:
    """Exercise 25.3: the prediction, then (makespan, bubble) of schedules to 1e-9."""
    n_pred = PREDICT.grade(predict_bubble)
    gpipe = [[("F", j, 0) for j in range(4)] + [("B", j, 0) for j in range(4)]] * 3
    hand = [
        [("F", 0, 0), ("F", 1, 0), ("B", 1, 0), ("B", 0, 0)],
        [("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0)],
    ]
    named = [
        ("GPipe p=3, m=4", gpipe, 1.0, 2.0, 0.0),
        ("1F1B p=4, m=8, t_comm=0.5", reference_1f1b(4, 8), 1.0, 2.0, 0.5),
        ("interleaved p=2, m=4, v=2", _interleaved(2, 4, 2), 0.5, 1.0, 0.0),
        ("interleaved p=4, m=4, v=2, t_comm=0.25", _interleaved(4, 4, 2), 0.5, 1.0, 0.25),
        ("a hand-made schedule, t_b = 3 t_f", hand, 1.0, 3.0, 0.0),
        (
            "one stage, 2 chunks, t_comm=1",
            [[(k, j, c) for k, pairs in _ONE for j, c in pairs]],
            1.0,
            2.0,
            1.0,
        ),
        (
            "a random valid schedule, p=3, m=3, v=2",
            random_schedule(rng(25), 3, 3, 2),
            1.0,
            1.5,
            0.2,
        ),
    ]
    gen = fresh_rng("25.3")
    for _ in range(2):
        p, m, v = int(gen.integers(2, 5)), int(gen.integers(1, 5)), int(gen.integers(1, 3))
        t_comm = float(gen.choice([0.0, 0.3]))
        label = fresh(f"a random valid schedule, p={p}, m={m}, v={v}, t_comm={t_comm}")
        named.append((label, random_schedule(gen, p, m, v), 1.0, 2.0, t_comm))
    for label, sched, t_f, t_b, t_comm in named:
        v = 1 + max(c for ops in sched for _, _, c in ops)
        m = 1 + max(j for ops in sched for _, j, _ in ops)
        want = audit(sched, m, v, label, t_f, t_b, t_comm)
        copy = [[tuple(op) for op in ops] for ops in sched]
        got = plain(simulate_schedule(copy, t_f, t_b, t_comm), what="result", case=label)
        if not isinstance(got, tuple | list) or len(got) != 2:
            raise CheckFailure(f"[{label}] return (makespan, bubble), got {got!r}.")
        span, bubble = (float(g) for g in got)
        if abs(span - want[0]) > 1e-9 * max(1.0, want[0]):
            hint = "each op starts at max(its stage is free, its input arrived)"
            serial = max(sum(t_f if k == "F" else t_b for k, _, _ in ops) for ops in sched)
            if abs(span - serial) < 1e-9:
                hint = "you summed each stage's work: an op must also wait for its input"
            elif t_comm and abs(span - audit(sched, m, v, label, t_f, t_b, 0.0)[0]) < 1e-9:
                hint = "t_comm is missing: an input from another stage arrives t_comm after"
            elif len(sched) == 1:
                hint = (
                    "with one stage every input comes from the stage itself (its other "
                    "chunk): no t_comm is paid"
                )
            raise CheckFailure(
                f"[{label}] makespan {span:.6g}, want {want[0]:.6g} (forward {t_f}, backward "
                f"{t_b}, t_comm {t_comm}): {hint}. A B needs the NEXT stage's B of the same "
                "microbatch (and chunk), an F the previous stage's F."
            )
        if abs(bubble - want[1]) > 1e-9:
            raise CheckFailure(
                f"[{label}] right makespan, bubble {bubble:.6g}, want {want[1]:.6g}: the bubble "
                "is the idle share of all p stages over the whole run, 1 - work / (p makespan)."
            )
    return (
        f"{n_pred} predictions equal (p-1)/(v m+p-1); {len(named)} schedules timed exactly "
        "(GPipe, 1F1B, interleaved, random), stage waits and t_comm included"
    )
