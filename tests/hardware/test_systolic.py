"""The systolic simulator: exact products, closed-form cycles, the wavefront, tiling."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware import systolic


def _ints(gen, shape):
    return gen.integers(-5, 6, shape).astype(np.float64)


@pytest.mark.parametrize(
    ("m", "k", "n", "r", "c"), [(1, 1, 1, 1, 1), (5, 3, 4, 3, 4), (7, 2, 3, 4, 5), (1, 8, 8, 8, 8)]
)
def test_weight_stationary_is_exact_with_closed_form_cycles(m, k, n, r, c):
    gen = np.random.default_rng(0)
    a, b = _ints(gen, (m, k)), _ints(gen, (k, n))
    run = systolic.simulate_ws(a, b, r, c, frames=True)
    assert np.array_equal(run.c, a @ b)
    assert run.cycles == len(run.busy) == 2 * r + c + m - 2 == systolic.ws_cycles(m, r, c)
    assert run.busy.sum() == m * k * n and run.frames is not None
    # the wavefront: PE (k, n) works on row m at cycle R + m + k + n
    mm, kk, nn = np.meshgrid(np.arange(m), np.arange(k), np.arange(n), indexing="ij")
    want = np.bincount((r + mm + kk + nn).ravel(), minlength=run.cycles)
    assert np.array_equal(run.busy, want)
    assert run.frames[r + m - 1 + k - 1 + n - 1, k - 1, n - 1]


@pytest.mark.parametrize(("m", "k", "n", "r", "c"), [(2, 5, 3, 2, 3), (3, 1, 2, 4, 4)])
def test_output_stationary_is_exact_with_closed_form_cycles(m, k, n, r, c):
    gen = np.random.default_rng(1)
    a, b = _ints(gen, (m, k)), _ints(gen, (k, n))
    run = systolic.simulate_os(a, b, r, c)
    assert np.array_equal(run.c, a @ b)
    assert run.cycles == systolic.os_cycles(k, r, c) == 2 * r + c + k - 2
    assert run.busy.sum() == m * k * n


def test_a_fold_larger_than_the_array_is_refused():
    with pytest.raises(ValueError, match="tile"):
        systolic.simulate_ws(np.ones((2, 5)), np.ones((5, 2)), 4, 4)


def test_tiled_gemm_matches_matmul_and_the_closed_form():
    gen = np.random.default_rng(2)
    a, b = gen.standard_normal((6, 11)), gen.standard_normal((11, 9))
    c, cycles = systolic.tiled_gemm(a, b, 4, 4)
    np.testing.assert_allclose(c, a @ b, atol=1e-12)
    folds = 3 * 3
    assert cycles == systolic.gemm_cycles(6, 11, 9, 4, 4) == (2 * 4 + 4 + 6 - 2) + (folds - 1) * 6
    assert systolic.gemm_cycles(6, 11, 9, 4, 4, double_buffered=False) == folds * (8 + 4 + 6 - 2)


def test_utilisation_decode_is_low_prefill_is_high():
    assert systolic.utilisation(4096, 4096, 4096, 128, 128) > 0.95
    assert systolic.utilisation(1, 4096, 4096, 128, 128) < 0.01
    assert systolic.cube_cycles(17, 16, 16) == 2
    assert systolic.gemm_cycles(128, 128, 128, 128, 128, "os") == 2 * 128 + 128 + 128 - 2
    with pytest.raises(ValueError):
        systolic.gemm_cycles(1, 1, 1, 1, 1, "rs")


def test_spec_sheet_additions_for_lab27():
    from minitorch.hardware.specs import MATRIX_UNITS, NOT_LISTED, SPECS

    assert SPECS["TPU v4"].ridge("bf16") == pytest.approx(275 / 1.2)
    assert MATRIX_UNITS["Ascend 910"].shape == (16, 16, 16)
    assert MATRIX_UNITS["TPU v4"].macs_per_cycle == 128 * 128
    assert all(u.source for u in MATRIX_UNITS.values()) and "Ascend 910B" in NOT_LISTED
