"""Graders of exercises 20.1 (flat broadcast) and 20.2 (naive all-reduce = reduce + broadcast).

Ground truth: the root's array (20.1) and a plain-loop sum (20.2). Budget: the flat broadcast
sends ``(p-1) n`` bytes from the root and nothing from the others; the naive all-reduce sends
``n`` from every rank but 0 (the reduce) and ``(p-1) n`` from rank 0 (the broadcast).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.lab20._truth import (
    BLOCKS,
    WorldCase,
    compare,
    run_world,
)
from a2s.checks.truths import loop_sum, rank_inputs

__all__ = ["check_all_reduce", "check_broadcast"]

_ROOT_RETURNS = (
    "Every rank returns the data, the root included: return (a copy of) x on the root, "
    "what comm.recv(root) gave on the others."
)
_SELF_SEND = (
    "The root must not send to itself: a message to your own rank still crosses the counter. "
    "Skip dst == root."
)
_RELAY = (
    "Only the root sends in the flat tree: every other rank receives x straight from the root "
    "and sends nothing (a chain or a tree that relays it is lab 21's)."
)
_SHAPES = [(1, 5), (2, 4), (3, 7), (4, 1), (5, 0), (8, 13)]


def _broadcast_cases(gen: np.random.Generator, mark: Callable[[str], str], count: int) -> list:
    out = []
    specs = [(p, n, p - 1 if p > 2 else 0) for p, n in _SHAPES] if count == 0 else []
    for _ in range(count):
        p = int(gen.integers(1, 9))
        specs.append((p, int(gen.integers(0, 20)), int(gen.integers(0, p))))
    for p, n, root in specs:
        xs = rank_inputs(gen, p, n, ints=bool(gen.integers(0, 2)))
        nbytes = xs[0].nbytes
        out.append(
            WorldCase(
                mark(f"broadcast p={p} n={n} root={root}"),
                [(x, root) for x in xs],
                [xs[root]] * p,
                [(p - 1) * nbytes if r == root else 0 for r in range(p)],
            )
        )
    return out


@grader("20.1", blocks=BLOCKS, hand="ranks")
def check_broadcast(broadcast: Callable[..., Any]) -> str:
    """Exercise 20.1: flat-tree broadcast of the root's array to every rank."""
    cases = _broadcast_cases(rng(2001), str, 0)
    cases += _broadcast_cases(fresh_rng("20.1"), fresh, 6)
    total = 0
    for case in cases:
        outs, world = run_world(broadcast, "20.1", case)
        root = case.args[0][1]

        def value_hint(r: int, got: Any, want: Any, root: int = root) -> str:
            return _ROOT_RETURNS if r == root or got is None else "Receive from the root."

        def budget_hint(sent: list[int], root: int = root, n: int = case.args[0][0].nbytes) -> str:
            if any(b for r, b in enumerate(sent) if r != root):
                return _RELAY
            if sent[root] == len(sent) * n:
                return _SELF_SEND
            return "The root sends x to each of the p-1 others: (p-1) n bytes."

        compare(case, outs, world, value_hint=value_hint, budget_hint=budget_hint)
        total += sum(world.world.bytes_sent)
    return (
        f"{len(cases)} worlds (p = 1..8, uneven n, any root; 6 fresh) right, bytes per rank "
        f"exactly the flat tree's; {total} bytes in all"
    )


_EVERYONE = (
    "Every rank sent its x to every other rank: the sums are right, but each rank sent "
    "(p-1) n bytes. The naive algorithm reduces to rank 0 (each other rank sends n once) and "
    "rank 0 broadcasts the sum."
)
_OWN = "Rank 0 must add its own x to what it receives, and every rank must return the total."
_NAIVE = (
    "The naive algorithm: every rank r > 0 sends its x to rank 0 once (n bytes), rank 0 "
    "sends the sum to each of the p-1 others ((p-1) n bytes)."
)


def _own_missing(xs: list[np.ndarray]) -> Callable[[int, Any, Any], str]:
    """The value hint of 20.2: rank 0's own x left out is the modelled mistake."""

    def hint(r: int, got: Any, want: Any) -> str:
        missing = want - xs[0]
        if isinstance(got, np.ndarray) and got.shape == want.shape and np.allclose(got, missing):
            return _OWN
        return "Every rank returns the sum of all p ranks' x."

    return hint


def _everyone(nb: int) -> Callable[[list[int]], str]:
    """The budget hint of 20.2: every rank sending x to every other is the modelled mistake."""
    return lambda sent: _EVERYONE if sent == [(len(sent) - 1) * nb] * len(sent) else _NAIVE


def _all_reduce_cases(gen: np.random.Generator, mark: Callable[[str], str], count: int) -> list:
    specs = list(_SHAPES) if count == 0 else []
    specs += [(int(gen.integers(1, 9)), int(gen.integers(0, 20))) for _ in range(count)]
    out = []
    for p, n in specs:
        xs = rank_inputs(gen, p, n, ints=bool(gen.integers(0, 2)))
        nb = xs[0].nbytes
        out.append(
            WorldCase(
                mark(f"all-reduce p={p} n={n}"),
                [(x,) for x in xs],
                [loop_sum(xs)] * p,
                [(p - 1) * nb if r == 0 else nb for r in range(p)],
            )
        )
    return out


@grader("20.2", blocks=BLOCKS, hand="ranks")
def check_all_reduce(all_reduce: Callable[..., Any]) -> str:
    """Exercise 20.2: naive all-reduce (reduce to rank 0, then broadcast from rank 0)."""
    cases = _all_reduce_cases(rng(2002), str, 0) + _all_reduce_cases(fresh_rng("20.2"), fresh, 6)
    worst = 0
    for case in cases:
        outs, world = run_world(all_reduce, "20.2", case)
        compare(
            case,
            outs,
            world,
            value_hint=_own_missing([a[0] for a in case.args]),
            budget_hint=_everyone(case.args[0][0].nbytes),
        )
        worst = max(worst, max(world.world.bytes_sent))
    return (
        f"{len(cases)} worlds (p = 1..8, uneven n; 6 fresh) sum right, rank 0 sends (p-1) n "
        f"and the others n; busiest rank {worst} bytes"
    )
