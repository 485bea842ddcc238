"""Graders of exercises 21.1 (ring all-reduce) and 21.2 (recursive halving-doubling).

Ground truth: a plain-loop sum. Budgets, enforced on SimWorld's counters and clock:

* ring: ``2 (p-1)`` messages per rank, all to the right neighbour, and rank r sends exactly
  ``2 n - c[r+k] - c[r+k+1]`` bytes (chunks of the course convention; ``k`` the owner shift,
  the same for every rank): ``2 (p-1)/p`` of the buffer when ``p`` divides ``n``.
* halving-doubling (``p`` a power of two): ``2 log2 p`` messages per rank; bytes = the ranges
  of chunks held before each halving step (sent once halving, once doubling); on the clock,
  ``2 log2 p`` rounds when only latency counts and ``2 (p-1)/p n`` bytes' time when only
  bandwidth counts.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.lab21._truth import BLOCKS, check_values, ring_bytes, run_sim
from a2s.checks.truths import chunks, loop_sum, rank_inputs
from minitorch.comm.simworld import SimWorld

__all__ = ["check_halving_doubling", "check_ring_all_reduce"]

_WHOLE = (
    "Each step sends a whole buffer: right sums, but (p-1) n bytes per phase. A ring sends one "
    "chunk (about n/p) per step; passing the running total around the ring (a reduce then a "
    "broadcast dressed as a ring) is the same mistake."
)
_SPLIT = (
    "The bytes per rank do not match the chunk sizes of the course convention: chunk j has "
    "n // p + 1 elements for j < n % p, else n // p (the remainder does not all go to the "
    "last chunk)."
)
_INDEX = (
    "Wrong sums: check the chunk indices. At reduce-scatter step s rank r sends chunk "
    "(r - s) % p and adds the received one into chunk (r - s - 1) % p; at all-gather step s "
    "it sends (r + 1 - s) % p and stores into (r - s) % p."
)
_GATHER = (
    "After the reduce-scatter each rank holds only one chunk of the sum: the all-gather phase "
    "(p - 1 more steps passing finished chunks) gives every rank the rest."
)


def _ring_hint(got: Any, *, want: np.ndarray, p: int) -> str:
    """Missing all-gather (exactly one chunk right) or wrong chunk indices."""
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return "Return the whole reduced buffer (same length as x) on every rank."
    starts = [j * (len(want) // p) + min(j, len(want) % p) for j in range(p + 1)]
    right = [np.allclose(got[a:b], want[a:b]) for a, b in pairwise(starts)]
    return _GATHER if sum(right) == 1 and len(want) >= p > 1 else _INDEX


def _ring_cases(gen: np.random.Generator, mark: Callable[[str], str], count: int) -> list:
    specs = [(1, 5), (2, 4), (3, 7), (4, 1), (4, 12), (5, 13), (6, 0), (8, 17)] if not count else []
    specs += [(int(gen.integers(1, 9)), int(gen.integers(0, 40))) for _ in range(count)]
    return [
        (mark(f"ring p={p} n={n}"), p, rank_inputs(gen, p, n, bool(i % 2)))
        for i, (p, n) in enumerate(specs)
    ]


@grader("21.1", blocks=BLOCKS, hand="ranks")
def check_ring_all_reduce(ring_all_reduce: Callable[..., Any]) -> str:
    """Exercise 21.1: ring all-reduce, 2(p-1) chunk messages to the right neighbour per rank."""
    cases = _ring_cases(rng(2101), str, 0) + _ring_cases(fresh_rng("21.1"), fresh, 6)
    worst = 0.0
    for label, p, xs in cases:
        world = SimWorld(p)
        outs = run_sim(ring_all_reduce, "21.1", BLOCKS, world, label, xs)
        want = loop_sum(xs)
        check_values(label, outs, want, functools.partial(_ring_hint, want=want, p=p))
        n, item, sent = len(xs[0]), xs[0].itemsize, list(world.bytes_sent)
        if sent not in ring_bytes(n, p, item):
            whole = p > 1 and n > 0 and max(sent) >= (p - 1) * n * item
            raise CheckFailure(
                f"[{label}] right sums, but ranks sent {sent} bytes; a ring sends "
                f"{ring_bytes(n, p, item)[1]} (2 n - c[r+1] - c[r+2], rank r owning chunk "
                f"r+1). {_WHOLE if whole else _SPLIT}"
            )
        if world.msgs_sent != [2 * (p - 1)] * p:
            raise CheckFailure(
                f"[{label}] messages per rank {world.msgs_sent}, a ring sends 2 (p-1) = "
                f"{2 * (p - 1)} (one chunk per step, p-1 steps per phase)."
            )
        wrong = sorted(k for k in world.link_bytes if k[1] != (k[0] + 1) % p)
        if wrong:
            raise CheckFailure(
                f"[{label}] messages on links {wrong[:4]}: a ring only sends to the right "
                f"neighbour (rank + 1) % p and receives from the left."
            )
        if n >= p > 1:
            worst = max(worst, max(sent) / (item * n))
    return (
        f"{len(cases)} worlds (p = 1..8, uneven n, 6 fresh) exact, 2(p-1) chunk messages to "
        f"the right per rank; busiest rank sent {worst:.3f} of its buffer (2(p-1)/p)"
    )


def _held_bytes(n: int, p: int, r: int, item: int, descending: bool) -> int:
    """Bytes of the chunk ranges rank r holds before each halving step: it sends the half it
    gives away (halving) and, later, the half it kept (doubling), so each range once."""
    c, lo, hi, total = chunks(n, p), 0, p, 0
    ds = [p >> j for j in range(1, int(math.log2(p)) + 1)]
    for d in ds if descending else ds[::-1]:
        total += sum(c[lo:hi])
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if r & d else (lo, mid)
    return total * item


@grader("21.2", blocks=BLOCKS, hand="ranks")
def check_halving_doubling(halving_doubling: Callable[..., Any]) -> str:
    """Exercise 21.2: recursive halving-doubling on p = 1, 2, 4, 8 ranks."""
    gen, fr = rng(2102), fresh_rng("21.2")
    specs: list[tuple[Callable[[str], str], int, int]] = [
        (str, p, n) for p, n in [(1, 3), (2, 5), (4, 4), (4, 11), (8, 8), (8, 21)]
    ]
    specs += [(fresh, 2 ** int(fr.integers(0, 4)), int(fr.integers(0, 40))) for _ in range(5)]
    for i, (mark, p, n) in enumerate(specs):
        label = mark(f"halving-doubling p={p} n={n}")
        xs = rank_inputs(gen if mark is str else fr, p, n, bool(i % 2))
        world = SimWorld(p)
        outs = run_sim(halving_doubling, "21.2", BLOCKS, world, label, xs)
        check_values(label, outs, loop_sum(xs), "Add what the partner sends to the half you keep.")
        steps = int(math.log2(p))
        if world.msgs_sent != [2 * steps] * p:
            raise CheckFailure(
                f"[{label}] messages per rank {world.msgs_sent}: halving-doubling sends "
                f"2 log2 p = {2 * steps} (one exchange with rank XOR d for d = p/2 .. 1, then "
                f"back). A ring's 2(p-1) messages is the latency this exercise removes."
            )
        item, sent = xs[0].itemsize, list(world.bytes_sent)
        ok = [[_held_bytes(n, p, r, item, d) for r in range(p)] for d in (True, False)]
        if sent not in ok:
            raise CheckFailure(
                f"[{label}] right sums, but ranks sent {sent} bytes where halving-doubling "
                f"sends {ok[0]}: halving, send the half of your chunk range you give away "
                f"(whole chunks, course convention); doubling, the half you kept. Sending the "
                f"whole buffer each step costs log2 p times n."
            )
    p, n = 8, 64
    times = []
    for alpha, beta in ((1.0, 0.0), (0.0, 1.0)):
        world = SimWorld(p, alpha=alpha, beta=beta)
        run_sim(halving_doubling, "21.2", BLOCKS, world, "clock", [np.ones(n)] * p)
        times.append(world.time)
    want = [2 * math.log2(p), 2 * (p - 1) / p * 8 * n]
    if not np.allclose(times, want):
        raise CheckFailure(
            f"[clock p=8 n=64] latency-only time {times[0]:g} rounds (want {want[0]:g}), "
            f"bandwidth-only {times[1]:g} byte-times (want {want[1]:g}): exchange with both "
            f"partners in the same order on every rank, sending before receiving."
        )
    return (
        f"{len(specs)} worlds (p = 1, 2, 4, 8, uneven n, 5 fresh) exact; 2 log2 p messages; "
        f"clock at p=8: {times[0]:g} rounds (ring: 14) and {times[1]:g} byte-times"
    )
