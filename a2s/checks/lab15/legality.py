"""Graders of exercises 15.2 (distance vectors of a stencil) and 15.3 (legality of interchange
and tiling).

Ground truth for 15.2 is a brute-force search: run the stencil's iterations in source order,
note every element each one reads or writes, and collect ``later - earlier`` for each pair of
iterations that touch one element, at least one of them writing it. Ground truth for 15.3 runs
the transformed nest: the iterations of a small box in the order of the permuted (or tiled,
tile 3) loops, and a transformation is legal iff the source of every dependence still runs
before its sink. A legality test that allows an illegal interchange fails here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import assert_true, grader
from a2s.checks.table import Table
from minitorch.compiler.loops import Kernel, stencil

__all__ = ["brute_distances", "check_distance_vectors", "check_legality", "runs_in_order"]

_D = "minitorch.compiler.dependence"
_G = __name__  # the grader's own ground truth, blocked too
Vec = tuple[int, ...]


# --------------------------------------------------------------------------- 15.2
def brute_distances(kernel: Kernel) -> list[Vec]:
    """Every ``later - earlier`` iteration pair touching one element, one of them a write."""
    ext = [e for _, e in kernel.dims]
    names = [v for v, _ in kernel.dims]
    touched: dict[tuple[object, ...], list[tuple[Vec, bool]]] = {}
    for point in np.ndindex(*ext):  # source order
        env = dict(zip(names, point, strict=True))
        for acc, write in [*((r, False) for r in kernel.reads), (kernel.lhs, True)]:
            element = (acc.array, *(env[v] + c for v, c in acc.index))
            touched.setdefault(element, []).append((point, write))
    found: set[Vec] = set()
    for events in touched.values():
        for t, (p, wp) in enumerate(events):
            for q, wq in events[t + 1 :]:
                if (wp or wq) and p != q:
                    found.add(tuple(b - a for a, b in zip(p, q, strict=True)))
    return sorted(found)


def _lex_positive(d: Sequence[int]) -> bool:
    return next((x > 0 for x in d if x != 0), False)


def _read_vectors(got: Any, case: str) -> list[Vec]:
    ok = isinstance(got, (list, tuple)) and all(
        isinstance(d, (list, tuple)) and all(isinstance(x, (int, np.integer)) for x in d)
        for d in got
    )
    assert_true(ok, f"[{case}] return a list of tuples of ints, got {got!r}.")
    vectors = [tuple(int(x) for x in d) for d in got]
    assert_true(
        vectors == sorted(set(vectors)),
        f"[{case}] return the sorted list of distinct vectors (sorted(set(...))), got {vectors}.",
    )
    return vectors


_DIST_MISTAKES = [
    Mistake(
        "Sign error: a distance is sink - source, made lexicographically positive (the source "
        "runs first). Write A[I + w], read A[J + r] meet when J - I = w - r.",
        answer=lambda k: sorted(tuple(-x for x in d) for d in brute_distances(k)),
    ),
    Mistake(
        "A lexicographically negative vector: when w - r is negative the read comes first (an "
        "anti dependence): negate it instead of keeping it.",
        when=lambda got, k: any(not _lex_positive(d) and any(d) for d in got),
    ),
    Mistake(
        "Drop the zero vector: a read and a write of the same iteration are ordered inside the "
        "statement and constrain no loop.",
        when=lambda got, k: any(not any(d) for d in got),
    ),
    Mistake(
        "Some dependences are missing: count the anti dependences too (a read that a later "
        "iteration overwrites), not only flow (write, then read).",
        when=lambda got, k: set(got) < set(brute_distances(k)),
    ),
]

_STENCILS = [
    ("A[i+1,j+1] = A[i,j+1] + A[i+1,j] (Gauss-Seidel)", [(-1, 0), (0, -1)]),
    ("A[i+1,j+1] = A[i,j+2] + A[i+1,j]", [(-1, 1), (0, -1)]),
    ("A[i+1,j+1] = A[i+2,j] + A[i+1,j] (reads ahead)", [(1, -1), (0, -1)]),
    ("A[i+1,j+1] = A[i,j] + A[i+1,j+1] + A[i+2,j+1]", [(-1, -1), (0, 0), (1, 0)]),
]


def _random_stencil(g: np.random.Generator, i: int) -> tuple[str, tuple[object]]:
    pairs = g.integers(-1, 2, (int(g.integers(2, 4)), 2)).tolist()
    offs = [(int(di), int(dj)) for di, dj in pairs]
    return f"offsets {offs}", (stencil(7, 7, offs),)


DISTANCES = Table(
    "15.2",
    truth=brute_distances,
    named=[(label, (stencil(7, 7, offs),)) for label, offs in _STENCILS],
    draw=_random_stencil,
    fresh=3,
    mistakes=_DIST_MISTAKES,
    read=_read_vectors,
    what="distance vectors",
    message="[{label}] got {got}, the dependent iteration pairs give {want}.{hint}",
)


@grader("15.2", blocks=(f"{_D}:distance_vectors", f"{_D}:_distance", f"{_G}:brute_distances"))
def check_distance_vectors(distance_vectors: Callable[..., object]) -> str:
    """Exercise 15.2: the distance vectors of in-place 2-D stencils."""
    count = DISTANCES.grade(distance_vectors)
    skewed = brute_distances(stencil(7, 7, _STENCILS[1][1]))
    return f"{count} stencils (3 fresh) match the dependent pairs; the skewed one: {skewed}"


# --------------------------------------------------------------------------- 15.3
def runs_in_order(
    distances: Sequence[Vec], keys: Callable[[np.ndarray], list[np.ndarray]], ext: int
) -> Vec | None:
    """The first distance whose sink runs before its source in the order ``keys`` gives."""
    dims = len(distances[0]) if distances else 0
    pts = np.indices((ext,) * dims).reshape(dims, -1)
    rank = np.empty(pts.shape[1], dtype=np.int64)
    rank[np.lexsort(keys(pts)[::-1])] = np.arange(pts.shape[1])
    pos = rank.reshape((ext,) * dims)
    for d in distances:
        src = tuple(slice(max(0, -x), ext - max(0, x)) for x in d)
        dst = tuple(slice(max(0, x), ext - max(0, -x)) for x in d)
        if (pos[src] > pos[dst]).any():
            return tuple(d)
    return None


def _perm_legal(distances: Sequence[Vec], perm: Sequence[int]) -> bool:
    return runs_in_order(distances, lambda p: [p[t] for t in perm], 5) is None


def _tile_legal(distances: Sequence[Vec], band: tuple[int, int]) -> bool:
    lo, hi = band
    dims = len(distances[0])

    def keys(p: np.ndarray) -> list[np.ndarray]:
        outer = [p[t] for t in range(lo)]
        return outer + [p[t] // 3 for t in range(lo, hi)] + [p[t] for t in range(lo, dims)]

    return runs_in_order(distances, keys, 7) is None


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted(range(len(perm)), key=lambda t: perm[t]))


_PERM_MISTAKES = [
    Mistake(
        "Loop t of the new nest runs iterator perm[t], so the permuted vector is "
        "(d[perm[0]], d[perm[1]], ...): you applied the inverse permutation.",
        answer=lambda ds, perm: _perm_legal(ds, _inverse(perm)),
    ),
    Mistake(
        "This interchange is illegal: permute each distance vector first, then test that it is "
        "lexicographically positive (the unpermuted vectors are positive by construction).",
        answer=lambda ds, perm: True,
    ),
    Mistake(
        "Too strict: a vector only needs its first non-zero component positive; (1, -1) in the "
        "original order is fine.",
        answer=lambda ds, perm: all(min(d) >= 0 for d in ds),
    ),
]
_TILE_MISTAKES = [
    Mistake(
        "Tiling reorders iterations inside the band in every direction: a dependence not carried "
        "by an outer loop needs every band component >= 0, not just a positive vector.",
        answer=lambda ds, band: True,
    ),
    Mistake(
        "A dependence already carried by a loop outside (before) the band is satisfied whatever "
        "the band does: skip it.",
        answer=lambda ds, band: all(min(d[band[0] : band[1]]) >= 0 for d in ds),
    ),
    Mistake(
        "The band is half-open, like a slice: loops band[0] .. band[1] - 1, i.e. d[lo:hi].",
        answer=lambda ds, band: _tile_legal(ds, (band[0], min(band[1] + 1, len(ds[0])))),
    ),
]

_SETS: list[tuple[str, list[Vec]]] = [
    ("Gauss-Seidel {(0,1), (1,0)}", [(0, 1), (1, 0)]),
    ("skewed {(0,1), (1,-1)}", [(0, 1), (1, -1)]),
    ("3-D {(1,0,-1), (0,1,0)}", [(1, 0, -1), (0, 1, 0)]),
    ("matmul's reduction {(0,0,1)}", [(0, 0, 1)]),
    ("{(0,1,-1), (1,-1,0)}", [(0, 1, -1), (1, -1, 0)]),
    ("{(0,0,1), (0,1,-1)}", [(0, 0, 1), (0, 1, -1)]),
]


def _fresh_set(gen: np.random.Generator) -> list[Vec]:
    out: set[Vec] = set()
    while len(out) < 2:
        d = tuple(int(x) for x in gen.integers(-2, 3, 3))
        if _lex_positive(d):
            out.add(d)
    return sorted(out)


def _perms(dims: int) -> list[tuple[int, ...]]:
    return (
        [(0, 1), (1, 0)]
        if dims == 2
        else [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    )


def _orders(label: str, ds: list[Vec]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(f"{label}, order {p}", (ds, p)) for p in _perms(len(ds[0]))]


def _bands(label: str, ds: list[Vec]) -> list[tuple[str, tuple[Any, ...]]]:
    bands = [(0, 2)] if len(ds[0]) == 2 else [(0, 3), (1, 3), (0, 2)]
    return [(f"{label}, band {b}", (ds, b)) for b in bands]


def _legal_message(what: str) -> Callable[[Case, object, object, str], str]:
    return lambda c, got, want, hint: (
        f"[{c.label}] {what} returned {got!r}; running the transformed nest says "
        f"{'legal' if want else 'illegal'}. {hint}"
    )


def _as_bool(got: object, case: str) -> object:
    assert_true(type(got) in (bool, np.bool_), f"[{case}] return a bool, got {got!r}.")
    return bool(got)


def _named_set(cases: Any, kind: str, ds: list[Vec]) -> list[tuple[str, tuple[Any, ...]]]:
    return cases(f"{kind} {ds}", ds)


def _legality(what: str, cases: Any, truth: Any, mistakes: Any) -> Table:
    """Every set of distance vectors, named, seeded (one) and fresh (two), as cases."""

    return Table(
        "15.3",
        truth=truth,
        named=[c for label, ds in _SETS for c in cases(label, list(ds))],
        draw=lambda g, i: _named_set(cases, "seeded", _fresh_set(g)),
        draw_fresh=lambda g, i: _named_set(cases, "random", _fresh_set(g)),
        seeded=1,
        fresh=2,
        mistakes=mistakes,
        read=_as_bool,
        message=_legal_message(what),
    )


PERMS = _legality("interchange_legal", _orders, _perm_legal, _PERM_MISTAKES)
TILES = _legality("tiling_legal", _bands, _tile_legal, _TILE_MISTAKES)


@grader(
    "15.3",
    blocks=(
        f"{_D}:legal_permutation",
        f"{_D}:legal_tiling",
        f"{_D}:lex_positive",
        f"{_D}:respects",
        f"{_G}:runs_in_order",
        f"{_G}:_perm_legal",
        f"{_G}:_tile_legal",
    ),
)
def check_legality(
    interchange_legal: Callable[..., object], tiling_legal: Callable[..., object]
) -> str:
    """Exercise 15.3: interchange_legal(distances, perm) and tiling_legal(distances, band)."""
    n_perm = PERMS.grade(interchange_legal)
    n_tile = TILES.grade(tiling_legal)
    illegal = sum(not c.want() for c in PERMS.cases())
    return (
        f"{n_perm} loop orders ({illegal} illegal) and {n_tile} tilings decided "
        "as the run order of the transformed nest does (2 sets fresh)"
    )
