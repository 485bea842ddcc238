"""Affine dependence analysis with distance vectors, and the legality of interchange and tiling.

Two iterations depend on each other when they touch the same element and one of them writes
it. For uniformly generated references (every index an iterator plus a constant, the same
iterator in each dimension, as in :mod:`minitorch.compiler.loops`), a write ``A[I + w]`` at
iteration ``I`` and an access ``A[J + r]`` at ``J`` meet when ``J - I = w - r``: the
**distance vector** is ``w - r``, made lexicographically positive (a negative one is the
same dependence seen from the other end: an anti instead of a flow dependence). An iterator
absent from both indices (matmul's ``k`` for ``C[i, j]``) carries the dependence from one
iteration to the next: distance 1 there, when every other component is 0.

A loop order (a permutation of the iterators) is legal iff every distance vector, permuted,
stays lexicographically positive: the source of each dependence still runs first. A band of
loops may be tiled iff every dependence not already carried by an outer loop has only
components ``>= 0`` in the band (the band is *fully permutable*).

Lab: 15_loop_optimization_autotuning
Paper: Wolf & Lam 1991, *A data locality optimizing algorithm*; Irigoin & Triolet 1988,
*Supernode partitioning*; Bondhugula et al. 2008, *Pluto* (polyhedral tiling).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.compiler.loops import Access, Kernel, Nest, iteration_order

__all__ = [
    "distance_vectors",
    "legal_permutation",
    "legal_tiling",
    "lex_positive",
    "respects",
]

Distance = tuple[int, ...]


def lex_positive(d: Sequence[int]) -> bool:
    """True when the first non-zero component of ``d`` is positive."""
    return next((int(x) > 0 for x in d if x != 0), False)


def _distance(kernel: Kernel, w: Access, r: Access) -> Distance | None:
    """``w - r`` per iterator, made lexicographically positive; None when loop-independent."""
    names = [v for v, _ in kernel.dims]
    if [v for v, _ in w.index] != [v for v, _ in r.index]:
        raise NotImplementedError(f"not uniformly generated: {w} and {r}")
    d = dict.fromkeys(names, 0)
    for (v, cw), (_, cr) in zip(w.index, r.index, strict=True):
        d[v] = cw - cr
    vec = [d[v] for v in names]
    if not any(vec):
        free = [t for t, v in enumerate(names) if v not in {u for u, _ in w.index}]
        if not free:
            return None  # same iteration: the statement reads before it writes
        vec[free[0]] = 1  # carried by the first loop the element does not depend on
    elif any(v not in {u for u, _ in w.index} for v in names):
        raise NotImplementedError("a free iterator with a non-zero distance elsewhere")
    return tuple(vec) if lex_positive(vec) else tuple(-x for x in vec)


def distance_vectors(kernel: Kernel) -> list[Distance]:
    """Every distinct distance vector of ``kernel``, in its iterators' order, sorted."""
    writes = [kernel.lhs]
    others = [*kernel.reads, kernel.lhs]
    found: set[Distance] = set()
    for w in writes:
        for r in others:
            if r.array == w.array:
                d = _distance(kernel, w, r)
                if d is not None:
                    found.add(d)
    return sorted(found)


def legal_permutation(distances: Sequence[Sequence[int]], perm: Sequence[int]) -> bool:
    """Loop ``t`` of the new order runs iterator ``perm[t]``: legal iff all stay positive."""
    return all(lex_positive([d[p] for p in perm]) for d in distances)


def legal_tiling(distances: Sequence[Sequence[int]], band: tuple[int, int]) -> bool:
    """May loops ``band[0]:band[1]`` (source order) be tiled? Fully permutable band."""
    lo, hi = band
    for d in distances:
        if lex_positive(d[:lo]):
            continue  # carried outside the band: already satisfied
        if any(x < 0 for x in d[lo:hi]):
            return False
    return True


def respects(s: Nest, distances: Sequence[Sequence[int]]) -> bool:
    """Run-order check on a concrete schedule: each dependence's source runs before its sink."""
    ext = [e for _, e in s.kernel.dims]
    pts = iteration_order(s)
    pos = np.full(ext, -1, dtype=np.int64)
    pos[tuple(pts.T)] = np.arange(len(pts))
    for d in distances:
        src = tuple(slice(max(0, -x), e - max(0, x)) for x, e in zip(d, ext, strict=True))
        dst = tuple(slice(max(0, x), e - max(0, -x)) for x, e in zip(d, ext, strict=True))
        if (pos[src] >= pos[dst]).any():
            return False
    return True
