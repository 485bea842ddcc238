"""Graders of exercises 20.3 (reduce-scatter) and 20.4 (all-gather), direct algorithms.

Chunks follow the course convention (the first ``n % p`` chunks one element longer).
Ground truth: a plain-loop sum cut into chunks (20.3) and the concatenation (20.4).
Budget: reduce-scatter rank r sends every chunk but its own once (``n - c_r`` bytes);
all-gather rank r sends its chunk to the ``p - 1`` others (``(p-1) c_r``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.harness import RankRun
from a2s.checks.lab20._truth import (
    BLOCKS,
    WorldCase,
    compare,
    run_world,
)
from a2s.checks.truths import chunk_bounds, loop_sum, rank_inputs

__all__ = ["check_all_gather", "check_reduce_scatter"]

_SHAPES = [(1, 5), (2, 4), (3, 7), (4, 2), (5, 0), (8, 13)]
_SPLIT = (
    "Chunk r of n elements over p ranks: the first n % p chunks have n // p + 1 elements, "
    "the others n // p (as np.array_split cuts); the remainder does not all go to the last."
)
_WHOLE = (
    "Sending whole buffers (an all-reduce, then keeping your chunk) gives the right chunk but "
    "moves p times the data: send each peer only the chunk it owns."
)
_FUNNEL = (
    "Gathering at one rank and broadcasting from it gives the right result but that rank "
    "sends everything: send your own chunk straight to every other rank."
)


def _specs(gen: np.random.Generator, count: int) -> list[tuple[int, int]]:
    specs = list(_SHAPES) if count == 0 else []
    return specs + [(int(gen.integers(1, 9)), int(gen.integers(0, 25))) for _ in range(count)]


def _rs_cases(gen: np.random.Generator, mark: Callable[[str], str], count: int) -> list:
    out = []
    for p, n in _specs(gen, count):
        xs = rank_inputs(gen, p, n, ints=bool(gen.integers(0, 2)))
        total, bounds, item = loop_sum(xs), chunk_bounds(n, p), xs[0].itemsize
        out.append(
            WorldCase(
                mark(f"reduce-scatter p={p} n={n}"),
                [(x,) for x in xs],
                [total[a:b] for a, b in bounds],
                [(n - (b - a)) * item for a, b in bounds],
            )
        )
    return out


def _whole(nb: int, chunk: int, run: RankRun) -> Callable[[list[int]], str]:
    """The budget hint of 20.3: the modelled mistake is a message of the whole buffer (an
    all-reduce, then a slice); the router's record of message sizes tells it apart from a
    chunk (``chunk``: the largest chunk's bytes)."""

    def hint(sent: list[int]) -> str:
        sizes = {size for _r, kind, _p, size, _d, _t in run.order if kind == "S"}
        if nb > chunk and nb in sizes:
            return _WHOLE
        return "Rank r sends each other rank s only chunk s of its x: n - c_r elements in all."

    return hint


def _funnel(nb: int, chunk: int, budget: list[int], run: RankRun) -> Callable[[list[int]], str]:
    """The budget hint of 20.4: the modelled mistake is one rank gathering and sending the
    whole buffer (``nb`` bytes, more than the largest chunk's ``chunk``) on, the only rank
    over its budget."""

    def hint(sent: list[int]) -> str:
        over = {r for r, (s, b) in enumerate(zip(sent, budget, strict=True)) if s > b}
        whole = {r for r, kind, _p, size, _d, _t in run.order if kind == "S" and size == nb}
        if nb > chunk and len(over) == 1 and over == whole:
            return _FUNNEL
        return "Rank r sends its own chunk to each of the p-1 others: (p-1) c_r elements."

    return hint


def _rs_hint(r: int, got: Any, want: Any) -> str:
    if isinstance(got, np.ndarray) and got.shape != want.shape:
        return _SPLIT
    return "Add the chunk r of every rank (your own included)."


@grader("20.3", blocks=BLOCKS, hand="ranks")
def check_reduce_scatter(reduce_scatter: Callable[..., Any]) -> str:
    """Exercise 20.3: rank r ends with chunk r of the sum; each rank sends n - c_r bytes."""
    cases = _rs_cases(rng(2003), str, 0) + _rs_cases(fresh_rng("20.3"), fresh, 6)
    moved = 0
    for case in cases:
        outs, world = run_world(reduce_scatter, "20.3", case)
        whole = _whole(case.args[0][0].nbytes, max(w.nbytes for w in case.want), world)
        compare(case, outs, world, value_hint=_rs_hint, budget_hint=whole)
        moved += sum(world.world.bytes_sent)
    return (
        f"{len(cases)} worlds (p = 1..8, uneven chunks; 6 fresh) right, each rank sends "
        f"n - c_r bytes; {moved} bytes in all"
    )


def _ag_cases(gen: np.random.Generator, mark: Callable[[str], str], count: int) -> list:
    out = []
    for p, n in _specs(gen, count):
        (full,) = rank_inputs(gen, 1, n, ints=bool(gen.integers(0, 2)))
        bounds = chunk_bounds(n, p)
        out.append(
            WorldCase(
                mark(f"all-gather p={p} n={n}"),
                [(full[a:b].copy(),) for a, b in bounds],
                [full] * p,
                [(p - 1) * (b - a) * full.itemsize for a, b in bounds],
            )
        )
    return out


@grader("20.4", blocks=BLOCKS, hand="ranks")
def check_all_gather(all_gather: Callable[..., Any]) -> str:
    """Exercise 20.4: every rank ends with all chunks in rank order; rank r sends (p-1) c_r."""
    cases = _ag_cases(rng(2004), str, 0) + _ag_cases(fresh_rng("20.4"), fresh, 6)
    moved = 0
    for case in cases:
        outs, world = run_world(all_gather, "20.4", case)
        compare(
            case,
            outs,
            world,
            value_hint=lambda r, g, w: "Concatenate the chunks in rank order, yours included.",
            budget_hint=_funnel(
                case.want[0].nbytes, max(a[0].nbytes for a in case.args), case.budget, world
            ),
        )
        moved += sum(world.world.bytes_sent)
    return (
        f"{len(cases)} worlds (p = 1..8, uneven chunks; 6 fresh) gathered in rank order, rank "
        f"r sends (p-1) c_r bytes; {moved} bytes in all"
    )
