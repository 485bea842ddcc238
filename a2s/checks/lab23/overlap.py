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

from a2s.checks.cases import Case, Mistake, fresh, run_cases
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab23.workers import plain_buckets

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


def _case(label: str, compute: list[float], nbytes: list[int], cap: int, a: float, b: float):
    args = (compute, nbytes, plain_buckets(nbytes, cap), a, b)
    return Case(label, args, plain_exposed(*args), _MISTAKES)


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
    layers = [1e-3, 2e-3, 1e-3, 2e-3, 1e-3, 2e-3]
    sizes = [4_000_000, 16_000, 4_000_000, 16_000, 4_000_000, 16_000]
    # buckets launched out of index order: the one case where forward readiness, no overlap
    # and overlapping buckets give three different wrong answers (on 23.1's reverse-order
    # buckets forward readiness queues every bucket after backward, i.e. no overlap)
    mixed = ([1.0, 2.0, 3.0], [10, 10, 10], [[1], [0], [2]], 2.0, 0.0)
    cases = [Case("3 layers, buckets [[1], [0], [2]]", mixed, plain_exposed(*mixed), _MISTAKES)]
    cases += [
        _case(f"6 layers, cap={cap} B", layers, sizes, cap, 5e-4, 1e-9)
        for cap in (10**9, 4_016_000, 1)
    ]
    cases.append(
        _case("first bucket waits for the channel", [1.0, 1.0, 1.0], [10, 10, 10], 10, 1.5, 0.0)
    )
    gen = fresh_rng("23.3")
    for _ in range(6):
        n = int(gen.integers(1, 10))
        comp = [float(v) for v in gen.uniform(1e-4, 3e-3, n)]
        nb = [int(v) for v in gen.integers(1_000, 5_000_000, n)]
        cap = int(gen.integers(1, 10_000_000))
        cases.append(
            _case(fresh(f"n={n}, cap={cap}"), comp, nb, cap, float(gen.uniform(0, 1e-3)), 1e-9)
        )
    total = run_cases(
        exposed_comm,
        cases,
        what="exposed seconds",
        same=lambda got, want: (
            isinstance(got, float) and abs(got - want) <= 1e-12 + 1e-9 * abs(want)
        ),
        message=lambda c, got, want, hint: (
            f"[{c.label}] got {got!r} s, expected {want!r} s. "
            + (
                hint
                or "Gradient i is ready at compute[n-1] + ... + compute[i]; a bucket starts at "
                "max(its LAST gradient ready, the channel free), lasts alpha + beta * its "
                "bytes; return max(0, end of the last all-reduce - end of backward)."
            )
        ),
    )
    one, best = cases[1].want(), cases[2].want()
    return (
        f"prediction right; {total} timelines (6 fresh); one bucket exposes {one * 1e3:.2f} ms, "
        f"4 MB buckets {best * 1e3:.2f} ms"
    )
