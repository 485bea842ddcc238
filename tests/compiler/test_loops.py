"""The loop-nest IR: every schedule runs each iteration once and computes what the plain loop
computes (matmul against numpy's ``@``, the in-place stencil against a plain double loop)."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.compiler.loops import (
    compile_nest,
    fuse,
    iteration_order,
    lower,
    matmul,
    nest,
    reorder,
    split,
    stencil,
    tile,
    trace,
    unroll,
    vectorize,
)

SCHEDULES = {
    "plain": lambda s: s,
    "reorder kij": lambda s: reorder(s, "k", "i", "j"),
    "split k by 3 (guard)": lambda s: split(s, "k", 3),
    "tile i, j by 4, 5": lambda s: tile(s, "i", "j", 4, 5),
    "fuse tile loops": lambda s: fuse(tile(s, "i", "j", 4, 4), "io", "jo"),
    "unroll k inner": lambda s: unroll(split(s, "k", 2), "ki"),
    "vectorize j": lambda s: vectorize(reorder(split(s, "j", 4), "k", "ji"), "ji"),
    "vectorize reduction k": lambda s: vectorize(split(s, "k", 4), "ki"),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_matmul_schedules_compute_a_at_b(name):
    n, m, p = 10, 12, 7
    s = SCHEDULES[name](nest(matmul(n, m, p)))
    gen = np.random.default_rng(0)
    a, b, c = gen.standard_normal((n, p)), gen.standard_normal((p, m)), np.zeros((n, m))
    compile_nest(s)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)
    points = iteration_order(s)
    assert len(points) == n * m * p
    assert len({tuple(q) for q in points.tolist()}) == n * m * p


def test_split_and_tile_give_the_expected_loops_and_order():
    s = tile(nest(matmul(8, 8, 8)), "i", "j", 4, 2)
    assert s.order == ("io", "jo", "ii", "ji", "k")
    points = iteration_order(s)
    assert points[:3].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]]
    assert points[8].tolist() == [0, 1, 0]  # after k, the next j in the tile
    assert points[16].tolist() == [1, 0, 0]  # after the 2 columns of the tile, the next row


def test_stencil_matches_a_plain_double_loop():
    offsets = [(-1, 1), (0, -1)]
    a0 = np.random.default_rng(1).standard_normal((6, 7))
    want = a0.copy()
    for i in range(1, 5):
        for j in range(1, 6):
            want[i, j] = (want[i - 1, j + 1] + want[i, j - 1]) * 0.5
    got = a0.copy()
    compile_nest(nest(stencil(6, 7, offsets)))(got)
    np.testing.assert_allclose(got, want)


def test_lower_writes_readable_numpy_source():
    src = lower(vectorize(reorder(split(nest(matmul(4, 8, 4)), "j", 4), "k", "ji"), "ji"))
    assert "for jo in range(2):" in src
    assert "C[i, j0:j1] += A[i, k] * B[k, j0:j1]" in src


def test_trace_is_reads_then_write_row_major():
    t = trace(nest(matmul(2, 2, 2)))
    # iteration (0, 0, 0): A[0,0] at 0, B[0,0] at 32, C[0,0] at 64; then (0, 0, 1)
    assert t[:6].tolist() == [0, 32, 64, 8, 48, 64]


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda s: vectorize(s, "i"), "innermost"),
        (lambda s: fuse(s, "i", "k"), "adjacent"),
        (lambda s: unroll(s, "k"), "short"),
        (lambda s: split(s, "q", 2), "no loop"),
    ],
)
def test_primitives_refuse_what_they_cannot_do(make, error):
    with pytest.raises((ValueError, KeyError), match=error):
        make(nest(matmul(4, 4, 32)))
