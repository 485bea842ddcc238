"""Grader of exercise 21.5: the learner's ring on real gloo processes (one launch, 3 ranks).

A dry run on SimWorld comes first (a function that is not written, or wrong, fails there
without spawning anything). Then the function's source travels to the ranks
(:mod:`a2s.checks.lab21.workers`); on each, the learner's ring runs in a sealed,
forked child of the rank's process (:func:`a2s.checks.ranks.on_gloo_rank`) with a
protocol-only communicator; torch there is a forbidden call, as in the kernel. Ground
truth: gloo's ``dist.all_reduce`` of the same data (exact on integers, allclose on floats),
asked by the rank's process. Budget, counted by the rank's process from the learner's
requests: ``2 (p-1)`` messages per rank, all to the right neighbour, and the ring's
``2 n - c[r+k] - c[r+k+1]`` bytes. A rank's failure shows as the learner's own error.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import fresh_rng, grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab21._truth import BLOCKS, check_values, ring_bytes, run_sim
from a2s.checks.ranks import launch_learner
from a2s.checks.truths import loop_sum
from minitorch.comm.simworld import SimWorld

__all__ = ["check_ring_on_gloo"]

P = 3
_CASES = [
    (12, "int64", 1),
    (7, "int32", 2),
    (1000, "float32", 3),
    (2, "float64", 4),
    (0, "int64", 5),
]


def _source(fn: Callable[..., Any]) -> tuple[str, str]:
    raw = getattr(fn, "fn", fn)
    if inspect.unwrap(raw) is not raw:
        raise CheckFailure(
            "Exercise 21.5: pass the plain function (it is wrapped): its source is what runs on "
            "the gloo ranks."
        )
    try:
        return textwrap.dedent(inspect.getsource(raw)), raw.__name__
    except (OSError, TypeError) as exc:
        raise CheckFailure(
            f"Exercise 21.5: cannot read the source of your function ({exc}); define it with "
            f"def in a cell of its own."
        ) from None


def _close(got: Any, want: np.ndarray) -> bool:
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return False
    if want.dtype.kind in "iu":
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=1e-5, atol=1e-5))


@grader("21.5", blocks=BLOCKS, hand="ranks")
def check_ring_on_gloo(ring: Callable[..., Any]) -> str:
    """Exercise 21.5: the ring on 3 gloo processes equals dist.all_reduce, bytes enforced."""
    xs = [np.arange(7) * (r + 1) for r in range(P)]  # a dry run on SimWorld first: no spawn
    outs = run_sim(ring, "21.5", BLOCKS, SimWorld(P), "dry run on SimWorld p=3 n=7", xs)
    check_values("dry run on SimWorld p=3 n=7", outs, loop_sum(xs), "Is it 21.1's ring?")
    source, name = _source(ring)
    fr = fresh_rng("21.5")
    cases = list(_CASES) + [
        (
            int(fr.integers(1, 3000)),
            str(fr.choice(["int64", "float32"])),
            int(fr.integers(6, 10**6)),
        )
        for _ in range(2)
    ]
    per_rank = launch_learner(
        "a2s.checks.lab21.workers:grade_ring",
        P,
        source,
        name,
        cases,
        timeout=60,
        advice="Exercise 21.5: {why}. Does every send have its recv, on the right neighbours?",
    )
    for i, (n, dtype, _seed) in enumerate(cases):
        label = f"gloo p={P} n={n} {dtype}" + (" (fresh)" if i >= len(_CASES) else "")
        recs = [rank[i] for rank in per_rank]
        truth = loop_sum([rec["x"] for rec in recs])
        for r, rec in enumerate(recs):
            if not _close(rec["want"], truth):
                raise CheckFailure(f"[{label}] rank {r}: gloo's all_reduce disagrees with the sum")
            if not _close(rec["got"], rec["want"]):
                raise CheckFailure(
                    f"[{label}] rank {r} returned {np.array2string(rec['got'], threshold=6)}, "
                    f"dist.all_reduce gives {np.array2string(rec['want'], threshold=6)}."
                )
        item = np.dtype(dtype).itemsize
        sent = [rec["bytes"] for rec in recs]
        if sent not in ring_bytes(n, P, item):
            other = [k for k in (1, 2, 4, 8) if k != item and sent in ring_bytes(n, P, k)]
            hint = (
                f"your chunks have {other[0]}-byte elements, x's dtype {dtype} has {item}: keep "
                f"x's dtype (buf = x.copy(), not x.astype(...))."
                if other
                else "one chunk (course convention) per step."
            )
            raise CheckFailure(
                f"[{label}] right sums, but ranks sent {sent} bytes; the ring sends "
                f"{ring_bytes(n, P, item)[1]}: {hint}"
            )
        msgs = [rec["messages"] for rec in recs]
        stray = [
            r
            for r, rec in enumerate(recs)
            if any(b for d, b in enumerate(rec["to"]) if d != (r + 1) % P)
        ]
        if msgs != [2 * (P - 1)] * P or stray:
            raise CheckFailure(
                f"[{label}] messages per rank {msgs}, ranks {stray} sent to a peer other than "
                f"the right neighbour: a ring sends 2 (p-1) messages to (rank + 1) % p."
            )
    return (
        f"{len(cases)} buffers (int32/int64/float32/float64, uneven, 2 fresh) on {P} gloo "
        f"processes equal dist.all_reduce; 2(p-1) messages and the ring's bytes per rank"
    )
