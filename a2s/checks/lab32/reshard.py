"""Grader of exercise 32.6: reshard a ZeRO checkpoint for a new world size, reading only
what the new rank owns.

``reshard(shards, numel, new_world, rank)`` returns rank ``rank``'s chunk (a 1-D array) in a
world of ``new_world`` ranks, from the shards of ``len(shards)`` old ranks: ``shards[k]`` is
old rank ``k``'s chunk of a flattened parameter of ``numel`` elements in the ZeRO layout
(``chunk_bounds``: ``numel // N`` each, one more for the first ``numel % N`` ranks), read only
through ``shards[k].read(lo, hi)`` (elements ``lo:hi`` of that shard, as slicing does).

The learner's function runs in a child process (:func:`~a2s.checks.harness.run_apart`); each
shard is a proxy whose reads are requests to the grader, which records the elements every
read returned. The answer compared is ``(values, elements read)``: the values against a plain
loop over the new rank's indices (owner found by walking the old ranks' sizes), the reads
against the new chunk's size, so reassembling the whole array on every rank fails even with
the right values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import remote, run_apart
from a2s.checks.table import Table

__all__ = ["RESHARD", "Shard", "check_reshard"]


class Shard:
    """One old rank's chunk as the grader holds it; ``read`` slices as numpy does."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = np.asarray(data, np.float32)

    def read(self, lo: Any, hi: Any) -> np.ndarray:
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise TypeError(f"shard.read(lo, hi) takes whole numbers, not {v!r}")
        if not 0 <= int(lo) <= int(hi):
            raise IndexError(f"shard.read({lo}, {hi}): need 0 <= lo <= hi")
        return self.data[int(lo) : int(hi)].copy()


class _Counter:
    """A shard (or its proxy) whose reads are counted (for the truth and the mistakes)."""

    def __init__(self, shard: Any, log: list[int]) -> None:
        self.shard, self.log = shard, log

    def read(self, lo: int, hi: int) -> np.ndarray:
        got = np.asarray(self.shard.read(lo, hi))
        self.log.append(int(got.size))
        return got


def _counted(fn: Callable[..., np.ndarray]) -> Callable[..., tuple[np.ndarray, int]]:
    """``fn`` of the learner's signature, answering ``(values, elements read)``."""

    def call(shards: Sequence[Any], numel: int, new_world: int, rank: int) -> Any:
        log: list[int] = []
        got = fn([_Counter(s, log) for s in shards], numel, new_world, rank)
        return (np.asarray(got, np.float32), sum(log))

    call.__name__ = getattr(fn, "__name__", "answer")
    return call


def _edges(n: int, w: int, first: bool = True) -> list[int]:
    """Cumulative chunk edges: the remainder to the first ranks (``first``) or to the last."""
    edges = [0]
    for k in range(w):
        extra = (k < n % w) if first else (k == w - 1) * (n % w)
        edges.append(edges[-1] + n // w + int(extra))
    return edges


def _loop(
    shards: Sequence[Any], numel: int, new_world: int, rank: int, first: bool = True
) -> np.ndarray:
    """One element at a time, each from its owner (found by walking the old ranks' sizes).

    A plain function, not a closure: the guard stubs it while the learner's code runs."""
    old, new = _edges(numel, len(shards), first), _edges(numel, new_world, first)
    out = []
    for i in range(new[rank], new[rank + 1]):
        k = 0
        while not old[k] <= i < old[k + 1]:
            k += 1
        out.extend(np.asarray(shards[k].read(i - old[k], i - old[k] + 1)).tolist())
    return np.asarray(out, np.float32)


def _loop_last(shards: Sequence[Any], numel: int, new_world: int, rank: int) -> np.ndarray:
    """The mistake: the remainder given to the last rank."""
    return _loop(shards, numel, new_world, rank, first=False)


def _whole(shards: Sequence[Any], numel: int, new_world: int, rank: int) -> np.ndarray:
    """Every old shard read whole, concatenated, then sliced."""
    full = np.concatenate([np.asarray(s.read(0, numel), np.float32) for s in shards])
    new = _edges(numel, new_world)
    return full[new[rank] : new[rank + 1]]


def _past_end(shards: Sequence[Any], numel: int, new_world: int, rank: int) -> np.ndarray:
    """Each intersection read one element past its end (an inclusive end)."""
    old, new = _edges(numel, len(shards)), _edges(numel, new_world)
    a, b = new[rank], new[rank + 1]
    parts = [np.zeros(0, np.float32)]
    for k in range(len(shards)):
        s, e = max(a, old[k]), min(b, old[k + 1])
        if s < e:
            parts.append(np.asarray(shards[k].read(s - old[k], e - old[k] + 1), np.float32))
    return np.concatenate(parts)


def _truth(shards: Sequence[Any], numel: int, new_world: int, rank: int) -> tuple[np.ndarray, int]:
    """``(values, elements read)`` of the plain loop (a plain function: stubbed in the
    learner's calls, where a closure of ``_counted`` could be called as an answer)."""
    log: list[int] = []
    got = _loop([_Counter(s, log) for s in shards], numel, new_world, rank)
    return (np.asarray(got, np.float32), sum(log))


_MISTAKES = (
    Mistake(
        " The layout gives the remainder to the first ranks (chunk_bounds: rank k holds "
        "numel // N + 1 elements when k < numel % N), not to the last rank.",
        answer=_counted(_loop_last),
    ),
    Mistake(
        " Your rank read every old shard whole and cut its chunk out: right values, but N "
        "times the bytes on every rank. Read only the intersections of your range with the "
        "old shards' ranges.",
        answer=_counted(_whole),
    ),
    Mistake(
        " Each read went one element past the end of the intersection: hi is exclusive "
        "(read(lo, hi) returns hi - lo elements).",
        answer=_counted(_past_end),
    ),
)


def _case(numel: int, old: int, new: int, rank: int, gen: np.random.Generator | None = None):
    full = (
        np.arange(numel, dtype=np.float32) * 1.5 + 7.0
        if gen is None
        else gen.standard_normal(numel).astype(np.float32)
    )
    edges = _edges(numel, old)
    shards = [Shard(full[edges[k] : edges[k + 1]]) for k in range(old)]
    return (shards, numel, new, rank)


_NAMED = [
    ("N = M = 4, 10 elements: rank 1 keeps its own shard", (10, 4, 4, 1)),
    ("4 -> 3 ranks, 10 elements (old 3,3,2,2; new 4,3,3): rank 0", (10, 4, 3, 0)),
    ("4 -> 3 ranks, 10 elements: rank 1 reads old shards 1 and 2", (10, 4, 3, 1)),
    ("2 elements, 4 -> 3 ranks: rank 2 holds none", (2, 4, 3, 2)),
    ("2 elements, 4 -> 3 ranks: rank 0", (2, 4, 3, 0)),
    ("3 -> 1 rank, 11 elements: the whole array", (11, 3, 1, 0)),
    ("growth 2 -> 5 ranks, 13 elements: rank 3", (13, 2, 5, 3)),
]


def _draw(gen: np.random.Generator, i: int) -> tuple[str, tuple]:
    old, new = int(gen.integers(1, 7)), int(gen.integers(1, 7))
    numel, rank = int(gen.integers(0, 40)), int(gen.integers(0, new))
    return (
        f"{numel} elements, {old} -> {new} ranks: rank {rank}",
        _case(numel, old, new, rank, gen),
    )


def _apart(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` in a child with the shards as proxies; answer ``(values, elements read)``
    where the count is the grader's own record of what the reads returned."""

    def call(shards: Sequence[Shard], numel: int, new_world: int, rank: int) -> Any:
        log: list[int] = []
        proxies, serve = [], {}
        for k, s in enumerate(shards):
            proxy, entries = remote(_Counter(s, log), ["read"], f"shard{k}")
            proxies.append(proxy)
            serve.update(entries)
        got = run_apart(fn, proxies, numel, new_world, rank, serve=serve, timeout=30)
        if type(got) is tuple and len(got) == 2 and type(got[1]) is int:  # a _counted answer
            got = got[0]
        return (got, sum(log))

    return call


def _read(got: Any, label: str) -> tuple[np.ndarray, int]:
    values, n = got
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] reshard returned {type(values).__name__}; return a 1-D array of the "
            "rank's elements."
        ) from None
    if arr.ndim != 1:
        raise CheckFailure(
            f"[{label}] reshard returned an array of shape {arr.shape}; return the rank's chunk "
            "as a 1-D array (an empty one for a rank that owns nothing)."
        )
    return arr, int(n)


def _same(got: Any, want: Any) -> bool:
    (g, gn), (w, wn) = got, want
    g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
    return g.shape == w.shape and bool(np.array_equal(g, w)) and int(gn) == int(wn)


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    (g, gn), (w, wn) = got, want
    g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
    where = f"[{case.label}] "
    hint = f" {hint.lstrip()}" if hint else ""
    if g.shape == w.shape and np.array_equal(g, w):
        return (
            f"{where}the values are right, but your rank read {gn} elements ({4 * gn} bytes) "
            f"from the old shards; it owns {wn} ({4 * wn} bytes) and needs no more.{hint}"
        )
    return (
        f"{where}reshard returned {g.size} elements {np.round(g[:8], 4).tolist()}"
        f"{' ...' if g.size > 8 else ''}; the rank owns {w.size}: "
        f"{np.round(w[:8], 4).tolist()}{' ...' if w.size > 8 else ''}.{hint}"
    )


RESHARD = Table(
    "32.6",
    truth=_truth,
    named=[(label, _case(*args)) for label, args in _NAMED],
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    hint=" Rank r of M owns chunk_bounds(numel, M)[r] = [a, b); from old shard k (holding "
    "[lo_k, hi_k)) it needs [max(a, lo_k), min(b, hi_k)), read at offsets minus lo_k.",
    read=_read,
    same=_same,
    what="reshard",
    message=_message,
    # apart: the shards are proxies in a forked child; the grader counts what every read returned
    prepare=_apart,
)

_BLOCKS = (
    "minitorch.elastic.reshard",
    "minitorch.elastic.sharded",
    "minitorch.comm.collectives:chunk_bounds",
    "a2s.checks.lab32.reshard:_truth",
    "a2s.checks.lab32.reshard:_loop",
)


@grader("32.6", blocks=_BLOCKS)
def check_reshard(reshard: Callable[..., Any]) -> str:
    """Exercise 32.6: a new rank's chunk, read from the overlapping old shards only."""
    n = RESHARD.grade(reshard)
    return (
        f"{n} reshards (N = M, 4 -> 3, ranks owning nothing, M = 1, growth) equal a plain loop, "
        "each rank reading exactly its own elements from the overlapping old shards"
    )
