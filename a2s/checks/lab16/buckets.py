"""Graders of exercises 16.2-16.4: DDP's bucketed all-reduce overlapped with backward.

16.2: the learner's ``bucket_schedule(bwd_times, grad_bytes, bucket_bytes, alpha, beta)``
returns (start, end) of every bucket's all-reduce; ground truth is the plain loop of
``_truth.schedule``. 16.3: ``predict_exposed(...)``, the closed form for equal layers,
compared with that loop's exposed time. 16.4: ``choose_bucket_bytes(...)`` is graded by
its **step time budget**: the cap it returns must give the shortest step of any cap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake, fresh
from a2s.checks.compare import number
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab16._truth import intervals, schedule, step_time
from a2s.checks.table import Table

__all__ = ["check_bucket_schedule", "check_choose_bucket", "check_predict_exposed"]

_R = "minitorch.runtime.overlap"
_SCHEDULE_BLOCKS = (
    f"{_R}:allreduce_intervals",
    f"{_R}:overlap_step",
    f"{_R}:make_buckets",
    "minitorch.runtime.streams:Device",
    "a2s.checks.lab16._truth:schedule",
    "a2s.checks.lab16._truth:step_time",
)

_TRUTH = ("a2s.checks.lab16._truth:schedule", "a2s.checks.lab16._truth:step_time")
_SCHEDULE_HINTS: list[tuple[dict[str, Any], str]] = [
    (
        dict(overlap=False),
        "Every all-reduce starts after the whole backward: no overlap. A "
        "bucket's all-reduce may start as soon as its last gradient is ready.",
    ),
    (
        dict(fifo=False),
        "Two all-reduces overlap in time: the comm stream is FIFO, a bucket "
        "starts only after the previous bucket's all-reduce has ended.",
    ),
    (
        dict(strict=True),
        "A bucket closes as soon as it holds at least bucket_bytes (>=), "
        "not only once it exceeds them.",
    ),
]


def _random_model(gen: np.random.Generator) -> tuple[list[float], list[int], float, float]:
    n = int(gen.integers(3, 17))
    t = [float(x) for x in gen.integers(1, 9, n)]
    g = [int(x) for x in gen.integers(10, 200, n)]
    alpha = float(np.mean(t)) * float(gen.uniform(0.2, 2.0))
    beta = sum(t) / sum(g) * float(gen.uniform(0.3, 1.5))
    return t, g, alpha, beta


def _schedule_cases(gen: np.random.Generator, mark: Callable[[str], str], k: int) -> list:
    out = []
    for i in range(k):
        t, g, a, b = _random_model(gen)
        out.append(
            (mark(f"random model {i} ({len(t)} layers)"), (t, g, int(gen.integers(10, 600)), a, b))
        )
    return out


_TEACH_2 = [
    ("4 layers, 2 per bucket", ([1.0] * 4, [100] * 4, 200, 0.5, 0.01)),
    ("comm-bound, 1 per bucket", ([1.0] * 6, [100] * 6, 100, 1.0, 0.01)),
    ("cap between layer sizes", ([2.0, 1.0, 3.0, 1.0, 1.0], [60, 50, 80, 30, 90], 100, 0.25, 0.02)),
    ("one bucket", ([1.0, 2.0, 3.0], [10, 20, 30], 1000, 1.0, 0.1)),
]


@grader("16.2", blocks=_SCHEDULE_BLOCKS, hand="parts")
def check_bucket_schedule(bucket_schedule: Callable[..., Any]) -> str:
    """Exercise 16.2: when each bucket's all-reduce runs on the comm stream."""
    cases = list(_TEACH_2) + _schedule_cases(rng(1602), str, 4)
    cases += _schedule_cases(fresh_rng("16.2"), fresh, 6)
    hidden = total = 0.0
    for label, args in cases:
        want = np.asarray(schedule(*args))
        got_raw = plain(bucket_schedule(*args), what="(start, end) per bucket", case=label)
        count = len(got_raw) if isinstance(got_raw, (list, tuple, np.ndarray)) else -1
        if count != len(want):
            hint = (
                "Did you close buckets at > instead of >=?"
                if count == len(schedule(*args, strict=True))
                else "Pack layers in order; close a bucket once it holds >= bucket_bytes; "
                "the last bucket takes what is left."
            )
            assert_true(
                False, f"[{label}] expected {len(want)} buckets, your schedule has {count}. {hint}"
            )
        got = intervals(got_raw, len(want), 2, label, "(start, end) per bucket")
        if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            hint = next(
                (
                    h
                    for kw, h in _SCHEDULE_HINTS
                    if np.allclose(got, schedule(*args, **kw), rtol=1e-9)
                ),
                "start = max(time the bucket's last gradient is ready, end of the "
                "previous all-reduce); end = start + alpha + beta * bucket bytes.",
            )
            bad = int(np.argmax(np.any(~np.isclose(got, want, rtol=1e-9), axis=1)))
            assert_true(
                False,
                f"[{label}] bucket {bad}: got {tuple(float(x) for x in got[bad])}, expected "
                f"{tuple(float(x) for x in want[bad])}. {hint}",
            )
        comm = float(np.sum(want[:, 1] - want[:, 0]))
        exposed = max(float(sum(args[0])), float(want[-1, 1])) - float(sum(args[0]))
        hidden += comm - exposed
        total += comm
    return (
        f"{len(cases)} schedules (6 fresh) exact; {hidden / total:.0%} of all-reduce time "
        "hidden behind backward"
    )


def _exposed(n: int, t: float, g: float, k: int, a: float, b: float) -> float:
    return step_time([t] * n, [int(g)] * n, k * g, a, b) - n * t


_TEACH_3 = [
    ("compute-bound (hidden)", (8, 1.0, 100, 2, 0.5, 0.002)),
    ("comm-bound (alpha per bucket)", (8, 1.0, 100, 1, 1.5, 0.001)),
    ("one bucket", (8, 1.0, 100, 8, 0.5, 0.01)),
    ("balanced", (16, 1.0, 100, 4, 1.0, 0.01)),
]

_PREDICT_MISTAKES = [
    Mistake(
        "Only the last bucket is exposed when communication keeps up (c <= k t); here it does "
        "not: the comm stream is still busy with earlier buckets.",
        answer=lambda n, t, g, k, a, b: a + b * k * g,
    ),
    Mistake(
        "That is the no-overlap cost (every all-reduce after backward).",
        answer=lambda n, t, g, k, a, b: (n // k) * (a + b * k * g),
    ),
    Mistake(
        "When comm keeps up, the last bucket still takes c after backward ends: take the max.",
        answer=lambda n, t, g, k, a, b: k * t + (n // k) * (a + b * k * g) - n * t,
    ),
]


def _uniform(gen: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    k = int(gen.choice([1, 2, 3, 4, 6]))
    n, t, g = k * int(gen.integers(1, 7)), float(gen.uniform(0.5, 2)), int(gen.integers(10, 500))
    return f"k={k}", (n, t, g, k, float(gen.uniform(0, 2)), float(gen.uniform(0, 0.02)))


def _read_number(got: Any, label: str) -> float:
    return number(got, case=label, message=f"[{label}] return a number")


EXPOSED = Table(
    "16.3",
    truth=_exposed,
    named=_TEACH_3,
    draw=_uniform,
    fresh=8,
    mistakes=_PREDICT_MISTAKES,
    hint="The comm stream ends at max over buckets j of (j k t + (n - j + 1) c).",
    read=_read_number,
    same=lambda got, want: bool(np.isclose(got, want, rtol=1e-6, atol=1e-9)),
    message="[{label}] predicted {got:.10g}, the schedule exposes {want:.10g}.{hint}",
)


@grader(
    "16.3",
    blocks=(
        f"{_R}:exposed_uniform",
        f"{_R}:overlap_step",
        f"{_R}:allreduce_intervals",
        f"{_R}:make_buckets",
        "minitorch.runtime.streams:Device",
        f"{__name__}:_exposed",
        *_TRUTH,
    ),
)
def check_predict_exposed(predict_exposed: Callable[..., Any]) -> str:
    """Exercise 16.3: exposed all-reduce time for L equal layers, k layers per bucket."""
    count = EXPOSED.grade(predict_exposed)
    return f"{count} predictions (8 fresh) equal the simulated exposed time"


def _caps(g: list[int]) -> list[int]:
    return sorted({sum(g[i:j]) for i in range(len(g)) for j in range(i + 1, len(g) + 1)})


_TEACH_4 = [
    ("16 equal layers", ([1.0] * 16, [100] * 16, 0.5, 0.01)),
    (
        "uneven layers",
        ([3.0, 1.0, 1.0, 2.0, 1.0, 4.0, 1.0, 1.0], [400, 50, 50, 300, 20, 500, 40, 40], 1.0, 0.004),
    ),
    # the best cap (160 B) is no prefix sum of the bytes: trying only sum(g[:j]) loses
    (
        "best cap not a prefix",
        ([1.0, 3.0, 3.0, 4.0, 2.0, 4.0, 3.0], [90, 20, 70, 90, 10, 40, 60], 0.5, 0.03),
    ),
]


@grader(
    "16.4",
    blocks=(f"{_R}:best_bucket_bytes", *_TRUTH),
    uses=(("16.2", "bucket_schedule", f"{_R}:allreduce_intervals"),),
    hand="property",
)
def check_choose_bucket(choose_bucket_bytes: Callable[..., Any]) -> str:
    """Exercise 16.4: a bucket cap whose step time is the shortest of any cap (the budget)."""
    cases = list(_TEACH_4)
    gen = fresh_rng("16.4")
    cases += [(fresh(f"random model {i}"), _random_model(gen)) for i in range(4)]
    gains = []
    for label, (t, g, a, b) in cases:
        cap = number(
            choose_bucket_bytes(t, g, a, b),
            case=label,
            message=f"[{label}] return a bucket size in bytes (a number)",
        )
        assert_true(cap > 0, f"[{label}] bucket_bytes must be positive, got {cap}.")
        best = min(step_time(t, g, c, a, b) for c in _caps(g))
        got = step_time(t, g, cap, a, b)
        one, each = step_time(t, g, sum(g), a, b), step_time(t, g, 1, a, b)
        why = (
            " That is one bucket: nothing overlaps."
            if np.isclose(got, one) and got > best
            else " Per-layer buckets pay alpha on every layer."
            if np.isclose(got, each)
            else ""
        )
        assert_true(
            got <= best * (1 + 1e-9),
            f"[{label}] budget: your cap {cap:g} B gives a step of {got:.6g}, but the "
            f"best cap gives {best:.6g}.{why} Try every cap that changes the buckets "
            "(sums of any run of consecutive layers' bytes, not only from the first layer) "
            "and keep the fastest.",
        )
        gains.append(min(one, each) / got)
    return (
        f"{len(cases)} models (4 fresh): every chosen cap reaches the best step, "
        f"{min(gains):.2f}-{max(gains):.2f}x faster than the better of 1 bucket / per layer"
    )
