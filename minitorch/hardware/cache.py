"""A set-associative LRU cache simulator that counts hits, misses and bytes moved.

A cache of ``size`` bytes holds ``size // line`` lines in ``sets = size // (line * ways)``
sets of ``ways`` lines each. A byte address ``a`` lives in line ``a // line``, which may only
sit in set ``(a // line) % sets``; a miss brings the line in and, when its set is full,
evicts the set's least recently used line. Traffic is counted in whole lines: every miss
moves ``line`` bytes from the next level (reads and writes alike: write-allocate, and
write-backs are not counted).

The simulator consumes address traces (numpy arrays of byte addresses) in chunks. Two steps
keep it fast: addresses become line numbers in one vectorised step, and an access to the
same line as the access just before it is a hit that changes nothing (the line is already
the most recent of its set), so runs of such accesses are counted without a Python loop;
only the remaining accesses go through the per-set LRU update, kept in insertion-ordered
dicts (the oldest key is the LRU line). ``simulate(trace, l1, l2)`` feeds the lines that
miss in L1, in order, to a second level.

Lab: 06_matmul_tiling
Paper: Hennessy & Patterson, *Computer Architecture: A Quantitative Approach*, ch. 2
(set-associative caches, LRU); Hill & Smith 1989, *Evaluating Associativity in CPU Caches*.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CacheConfig", "CacheStats", "LRUCache", "hit_mask", "lru_update", "simulate"]

CHUNK = 1 << 20  # accesses per vectorised step


@dataclass(frozen=True, slots=True)
class CacheConfig:
    """``size`` bytes in lines of ``line`` bytes, ``ways`` lines per set (all powers of two)."""

    size: int
    line: int = 64
    ways: int = 8

    def __post_init__(self) -> None:
        if min(self.size, self.line, self.ways) <= 0 or self.size % (self.line * self.ways):
            raise ValueError(f"size {self.size} is not a multiple of line * ways")

    @property
    def sets(self) -> int:
        return self.size // (self.line * self.ways)

    @property
    def lines(self) -> int:
        return self.size // self.line


@dataclass(slots=True)
class CacheStats:
    """Counts of one cache level: accesses, hits, misses and the bytes its misses moved."""

    line: int
    accesses: int = 0
    hits: int = 0
    misses: int = 0

    @property
    def bytes_moved(self) -> int:
        return self.misses * self.line

    @property
    def miss_rate(self) -> float:
        return self.misses / self.accesses if self.accesses else 0.0


def lru_update(
    sets: list[dict[int, None]], lines: np.ndarray, ways: int, last: int = -1
) -> list[int]:
    """Access ``lines`` in order in the per-set LRU state ``sets``; return the missed positions.

    ``sets[s]`` holds the lines of set ``s`` from least to most recently used (dict keys keep
    insertion order). An access to the line accessed just before (``last`` for the first) is
    a hit that changes nothing, so only the others enter the Python loop.
    """
    if lines.size == 0:
        return []
    new = np.empty(lines.size, dtype=bool)  # differs from the access just before
    new[0] = lines[0] != last
    np.not_equal(lines[1:], lines[:-1], out=new[1:])
    where = np.flatnonzero(new)
    n_sets = len(sets)
    missed: list[int] = []
    for pos, ln in zip(where.tolist(), lines[where].tolist(), strict=True):
        s = sets[ln % n_sets]
        if ln in s:
            del s[ln]  # hit: move to the most recent end
        else:
            missed.append(pos)
            if len(s) >= ways:
                del s[next(iter(s))]  # evict the least recently used line
        s[ln] = None
    return missed


@dataclass(slots=True)
class LRUCache:
    """One cache level with state: call :meth:`access` on successive chunks of a trace."""

    config: CacheConfig
    stats: CacheStats = field(init=False)
    _sets: list[dict[int, None]] = field(init=False, repr=False)
    _last: int = field(default=-1, init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.stats = CacheStats(self.config.line)
        self._sets = [{} for _ in range(self.config.sets)]
        self._last = -1

    def access_lines(self, lines: np.ndarray) -> np.ndarray:
        """Access line numbers in order; return the mask of accesses that missed."""
        lines = np.asarray(lines, dtype=np.int64).ravel()
        miss = np.zeros(lines.size, dtype=bool)
        if lines.size == 0:
            return miss
        missed = lru_update(self._sets, lines, self.config.ways, self._last)
        miss[missed] = True
        self._last = int(lines[-1])
        n_miss = len(missed)
        self.stats.accesses += int(lines.size)
        self.stats.misses += n_miss
        self.stats.hits += int(lines.size) - n_miss
        return miss

    def access(self, addrs: np.ndarray) -> np.ndarray:
        """Access byte addresses in order, in chunks; return the line numbers that missed."""
        addrs = np.asarray(addrs, dtype=np.int64).ravel()
        out = []
        for start in range(0, addrs.size, CHUNK):
            lines = addrs[start : start + CHUNK] // self.config.line
            out.append(lines[self.access_lines(lines)])
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def simulate(
    addrs: np.ndarray, l1: CacheConfig, l2: CacheConfig | None = None
) -> tuple[CacheStats, ...]:
    """Run a trace through a fresh L1 (and an L2 fed by L1's misses); return their stats."""
    first = LRUCache(l1)
    missed = first.access(addrs)
    if l2 is None:
        return (first.stats,)
    if l2.line != l1.line:
        raise ValueError("both levels must use the same line size")
    second = LRUCache(l2)
    second.access(missed * l1.line)
    return first.stats, second.stats


def hit_mask(addrs: np.ndarray, config: CacheConfig) -> np.ndarray:
    """Per access of ``addrs``: True for a hit in a fresh cache of ``config``."""
    lines = np.asarray(addrs, dtype=np.int64).ravel() // config.line
    hits = np.ones(lines.size, dtype=bool)
    hits[lru_update([{} for _ in range(config.sets)], lines, config.ways)] = False
    return hits
