"""Grader of exercise 06.1 (the LRU lookup and update of a set-associative cache).

Ground truth: a plain-loop simulator written here, one list per set with the most recent line
last, nothing from :mod:`minitorch.hardware.cache`. The same loop, with one rule changed, gives
the known wrong answers (FIFO replacement, evicting the most recent line, the set taken from
the byte address, no line at all), so a wrong answer is named.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader
from a2s.checks.table import Table

__all__ = ["check_lru_hits", "plain_lru"]

_CACHE = "minitorch.hardware.cache"
BLOCKS = (
    f"{_CACHE}:LRUCache",
    f"{_CACHE}:simulate",
    f"{_CACHE}:hit_mask",
    f"{_CACHE}:lru_update",
)
# the grader's own plain-loop simulator is ground truth: blocked like the reference while students
# run (a module ``forbid`` would switch on the profile hook, which takes every dataclass
# ``__init__`` for the blocked ``LRUCache.__init__``)
TRUTH_BLOCKS = (f"{__name__}:plain_lru",)


def plain_lru(addrs: np.ndarray, size: int, line: int, ways: int, bug: str = "") -> np.ndarray:
    """Hit (True) or miss per access of a fresh LRU cache; ``bug`` makes a known mistake."""
    n_sets = size // (line * ways)
    sets: list[list[int]] = [[] for _ in range(n_sets)]
    hits = np.zeros(len(addrs), dtype=bool)
    for t, addr in enumerate(int(a) for a in addrs):
        ln = addr if bug == "no line" else addr // line
        s = sets[(addr if bug == "set from address" else ln) % n_sets]
        if ln in s:
            hits[t] = True
            if bug != "fifo":
                s.remove(ln)
                s.append(ln)
            continue
        if len(s) == ways:
            s.pop(-1 if bug == "evict mru" else 0)
        s.append(ln)
    return hits


_HINTS = {
    "fifo": "A hit must make the line the most recently used of its set; yours kept its place "
    "(that is FIFO replacement, not LRU).",
    "evict mru": "On a miss in a full set evict the *least* recently used line; you evicted the "
    "most recent one.",
    "set from address": "The set is chosen by the line number: (addr // line) % sets, not by the "
    "byte address.",
    "no line": "Addresses in the same line (addr // line) must share one cache line: the second "
    "access to a line is a hit.",
}
_NAMED: list[tuple[str, list[int], tuple[int, int, int]]] = [
    ("one line, eight floats", [0, 8, 16, 56, 64, 72], (256, 64, 2)),
    ("evict the least recent: A B C A in one 2-way set", [0, 64, 128, 64, 0], (128, 64, 2)),
    ("LRU, not FIFO: A B A C A in one 2-way set", [0, 64, 0, 128, 0], (128, 64, 2)),
    ("direct-mapped conflict: two lines one set apart", [0, 256, 0, 256, 64, 320], (256, 64, 1)),
    ("sets: line % sets", [0, 64, 128, 192, 256, 0, 64, 512, 256], (256, 64, 2)),
    ("32-byte lines", [0, 24, 32, 40, 64, 0, 96, 128, 0], (128, 32, 2)),
]


def _configs(gen: np.random.Generator) -> tuple[int, int, int]:
    line = int(gen.choice([16, 32, 64]))
    ways = int(gen.choice([1, 2, 4, 8]))
    sets = int(gen.choice([1, 2, 4, 8]))
    return line * ways * sets, line, ways


def _same(got: object, want: np.ndarray) -> bool:
    g = np.asarray(got)
    return g.shape == want.shape and bool(np.array_equal(g.astype(bool), want))


def _message(c: Case, got: object, want: np.ndarray, hint: str) -> str:
    addrs, size, line, ways = c.args
    where = f"[{c.label}] size={size}, line={line}, ways={ways}"
    g = np.asarray(got)
    if g.shape != want.shape:
        return f"{where}: return one bool per access, shape {want.shape}."
    t = int(np.argmax(g.astype(bool) != want))
    return (
        f"{where}: access {t} (address {addrs[t]}) is a {'hit' if g[t] else 'miss'} in yours, "
        f"a {'hit' if want[t] else 'miss'} in LRU. {hint}"
    )


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple[object, ...]]:
    cfg = _configs(g)
    span = int(g.integers(2, 6)) * cfg[0]  # a few cache sizes of addresses
    addrs = (g.integers(0, span // 8, int(g.integers(20, 400))) * 8).astype(np.int64)
    return f"random trace {i}", (addrs, *cfg)


LRU = Table(
    "06.1",
    truth=plain_lru,
    named=[(label, (np.asarray(addrs, dtype=np.int64), *cfg)) for label, addrs, cfg in _NAMED],
    draw=_random,
    seeded=30,
    fresh=10,
    mistakes=[
        Mistake(h, answer=functools.partial(plain_lru, bug=bug)) for bug, h in _HINTS.items()
    ],
    hint=(
        "Compare with a plain loop: per access, line = addr // line, set = line % sets; a hit "
        "moves the line to the most recent end, a miss in a full set evicts the oldest."
    ),
    same=_same,
    message=_message,
)


@grader("06.1", blocks=(*BLOCKS, *TRUTH_BLOCKS))
def check_lru_hits(lru_hits: Callable[..., object]) -> str:
    """Exercise 06.1: lru_hits(addrs, size, line, ways) -> bool per access."""
    count = LRU.grade(lru_hits)
    cases = LRU.cases()
    misses = sum(int((~c.want()).sum()) for c in cases)
    accesses = sum(len(c.args[0]) for c in cases)
    return (
        f"{count} traces (10 fresh), {accesses:,} accesses: every hit and miss as a "
        f"plain-loop LRU ({misses:,} misses)"
    )
