"""Dependence analysis: distance vectors against a brute-force search, and the legality tests
against running the permuted or tiled nest and watching the order of each dependent pair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from a2s.checks.lab15.legality import brute_distances
from minitorch.compiler.dependence import (
    distance_vectors,
    legal_permutation,
    legal_tiling,
    lex_positive,
    respects,
)
from minitorch.compiler.loops import matmul, nest, reorder, split, stencil, tile

OFFSETS = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]


def test_lex_positive():
    assert lex_positive((0, 1, -5)) and not lex_positive((0, -1, 5)) and not lex_positive((0, 0))


@pytest.mark.parametrize("seed", range(6))
def test_distances_match_a_brute_force_search(seed):
    gen = np.random.default_rng(seed)
    offs = [OFFSETS[int(t)] for t in gen.choice(len(OFFSETS), 3, replace=False)]
    kernel = stencil(7, 7, offs)
    assert distance_vectors(kernel) == brute_distances(kernel)


def test_matmul_reduction_is_carried_by_k():
    assert distance_vectors(matmul(4, 4, 4)) == [(0, 0, 1)]


def test_the_skewed_stencil_forbids_interchange_and_tiling():
    kernel = stencil(8, 8, [(-1, 1), (0, -1)])
    ds = distance_vectors(kernel)
    assert ds == [(0, 1), (1, -1)]
    assert legal_permutation(ds, (0, 1)) and not legal_permutation(ds, (1, 0))
    assert not legal_tiling(ds, (0, 2))
    s = nest(kernel)
    assert respects(s, ds)
    assert not respects(reorder(s, "j", "i"), ds)
    assert not respects(tile(s, "i", "j", 3, 3), ds)


@pytest.mark.parametrize("seed", range(8))
def test_legality_agrees_with_running_the_schedule(seed):
    gen = np.random.default_rng(seed)
    offs = [OFFSETS[int(t)] for t in gen.choice(len(OFFSETS), 2, replace=False)]
    kernel = stencil(9, 9, offs)
    ds = distance_vectors(kernel)
    s = nest(kernel)
    for perm in itertools.permutations(range(2)):
        assert legal_permutation(ds, perm) == respects(reorder(s, *("ij"[p] for p in perm)), ds)
    assert legal_tiling(ds, (0, 2)) == respects(tile(s, "i", "j", 3, 3), ds)


def test_splitting_alone_is_always_legal():
    kernel = stencil(9, 9, [(-1, 1), (0, -1)])
    assert respects(split(split(nest(kernel), "i", 2), "j", 4), distance_vectors(kernel))
