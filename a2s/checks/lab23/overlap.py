"""Grader of exercise 23.3: exposed communication of bucketed all-reduces on a timeline.

The learner first predicts the exposed time of ONE bucket (no overlap: alpha + beta * total
bytes), then writes the timeline. Ground truth: an event loop written here. Backward
computes parameter n-1 first; a bucket starts when its last gradient is ready and the
single channel is free, and takes ``alpha + beta * bytes``. Known mistakes: no overlap
(every all-reduce after backward), buckets that overlap each other (no single channel),
forward-order readiness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import assert_true, grader, plain
from a2s.checks.lab23.workers import plain_buckets
from a2s.checks.table import Table

__all__ = ["check_exposed_comm", "plain_exposed"]


def plain_exposed(compute, nbytes, buckets, alpha, beta, *, serial=True, reverse=True) -> float:
    """The grader's timeline; ``serial``/``reverse`` False give two known mistakes."""
    n = len(compute)
    ready, t = {}, 0.0
    for i in range(n - 1, -1, -1) if reverse else range(n):
        t += compute[i]
        ready[i] = t
    free = last = 0.0
    for b in buckets:
        start = max(max(ready[i] for i in b), free if serial else 0.0)
        end = start + alpha + beta * sum(nbytes[i] for i in b)
        free, last = end, max(last, end)
    return max(0.0, last - t)


def _no_overlap(compute, nbytes, buckets, alpha, beta) -> float:
    return sum(alpha + beta * sum(nbytes[i] for i in b) for b in buckets)


_MISTAKES = [
    Mistake(
        "That is the time of every all-reduce run after backward: no overlap. A bucket starts "
        "as soon as its last gradient is ready (and the channel is free).",
        answer=_no_overlap,
    ),
    Mistake(
        "Your all-reduces ran at the same time. There is ONE channel: a bucket starts at "
        "max(its gradients ready, the previous all-reduce's end).",
        answer=lambda *a: plain_exposed(*a, serial=False),
    ),
    Mistake(
        "You computed the gradients first-to-last. Backward starts at the LAST parameter: "
        "gradient i is ready after compute[n-1] + ... + compute[i].",
        answer=lambda *a: plain_exposed(*a, reverse=False),
    ),
]


def _args(compute: list[float], nbytes: list[int], cap: int, a: float, b: float) -> tuple:
    return (compute, nbytes, plain_buckets(nbytes, cap), a, b)


def _random(gen: Any, i: int) -> tuple[str, tuple]:
    n = int(gen.integers(1, 10))
    comp = [float(v) for v in gen.uniform(1e-4, 3e-3, n)]
    nb = [int(v) for v in gen.integers(1_000, 5_000_000, n)]
    cap = int(gen.integers(1, 10_000_000))
    return f"n={n}, cap={cap}", _args(comp, nb, cap, float(gen.uniform(0, 1e-3)), 1e-9)


_LAYERS = [1e-3, 2e-3, 1e-3, 2e-3, 1e-3, 2e-3]
_SIZES = [4_000_000, 16_000, 4_000_000, 16_000, 4_000_000, 16_000]
EXPOSED = Table(
    "23.3",
    truth=plain_exposed,
    named=[
        # buckets launched out of index order: the one case where forward readiness, no
        # overlap and overlapping buckets give three different wrong answers (on 23.1's
        # reverse-order buckets forward readiness queues every bucket after backward)
        (
            "3 layers, buckets [[1], [0], [2]]",
            ([1.0, 2.0, 3.0], [10, 10, 10], [[1], [0], [2]], 2.0, 0.0),
        ),
        *(
            (f"6 layers, cap={cap} B", _args(_LAYERS, _SIZES, cap, 5e-4, 1e-9))
            for cap in (10**9, 4_016_000, 1)
        ),
        ("first bucket waits for the channel", _args([1.0, 1.0, 1.0], [10, 10, 10], 10, 1.5, 0.0)),
    ],
    draw=_random,
    fresh=6,
    mistakes=_MISTAKES,
    hint=(
        "Gradient i is ready at compute[n-1] + ... + compute[i]; a bucket starts at "
        "max(its LAST gradient ready, the channel free), lasts alpha + beta * its "
        "bytes; return max(0, end of the last all-reduce - end of backward)."
    ),
    same=lambda got, want: isinstance(got, float) and abs(got - want) <= 1e-12 + 1e-9 * abs(want),
    what="exposed seconds",
    message="[{label}] got {got!r} s, expected {want!r} s.{hint}",
)


@grader(
    "23.3",
    blocks=(
        "minitorch.parallel.timeline:exposed_comm",
        "minitorch.parallel.timeline:bucket_schedule",
        "a2s.checks.lab23.overlap:plain_exposed",
    ),
)
def check_exposed_comm(
    exposed_comm: Callable[..., Any], predict_one_bucket: Callable[..., Any]
) -> str:
    """Exercise 23.3: the prediction for one bucket, then ``exposed_comm(...) -> seconds``."""
    for nb, a, b in [([100, 200, 300], 0.5, 0.01), ([4_000_000] * 6, 5e-4, 1e-9), ([8], 0.0, 1.0)]:
        got = plain(predict_one_bucket(nb, a, b), what="predicted seconds", case=f"nbytes={nb}")
        want = a + b * sum(nb)
        assert_true(
            isinstance(got, float) and abs(got - want) <= 1e-12 + 1e-9 * want,
            f"[predict, nbytes={nb}, alpha={a}, beta={b}] you predict {got!r} s; with one bucket "
            f"nothing overlaps: the whole all-reduce, alpha + beta * total bytes = {want!r} s, "
            "runs after backward.",
        )
    total = EXPOSED.grade(exposed_comm)
    one, best = (plain_exposed(*EXPOSED.named[k][1]) for k in (1, 2))
    return (
        f"prediction right; {total} timelines (6 fresh); one bucket exposes {one * 1e3:.2f} ms, "
        f"4 MB buckets {best * 1e3:.2f} ms"
    )
