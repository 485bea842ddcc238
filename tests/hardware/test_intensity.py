"""Op costs against plain-loop counters and the closed forms of the module docstring."""

from __future__ import annotations

import pytest

from minitorch.hardware import intensity as it
from minitorch.hardware.costs import matmul_bytes, matmul_flops


def _count_softmax(r: int, c: int) -> int:
    flops = 0
    for _ in range(r):
        for _ in range(c):
            flops += 1 + 1 + 1 + 1 + 1  # max, subtract, exp, sum, divide
    return flops


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (3, 5, 7), (64, 32, 16)])
def test_gemm_matches_lab00_costs(m: int, n: int, k: int) -> None:
    c = it.gemm_cost(m, n, k, 2)
    assert (c.flops, c.bytes) == (matmul_flops(m, n, k), matmul_bytes(m, n, k, 2))


def test_gemv_counts() -> None:
    c = it.gemv_cost(4, 3, 4)
    assert (c.flops, c.bytes) == (24, 4 * (12 + 3 + 4))
    assert it.gemv_cost(4096, 4096).intensity == pytest.approx(0.5, rel=1e-3)


@pytest.mark.parametrize(("r", "c"), [(1, 1), (3, 7), (16, 5)])
def test_softmax_against_loop(r: int, c: int) -> None:
    cost = it.softmax_cost(r, c, 4)
    assert cost.flops == _count_softmax(r, c)
    assert cost.bytes == 8 * r * c


def test_layernorm_counts_rows_and_parameters() -> None:
    c = it.layernorm_cost(3, 4, 2)
    assert c.flops == 8 * 12 + 5 * 3
    assert c.bytes == 2 * (2 * 12 + 2 * 4)


def test_attention_fused_and_materialised() -> None:
    fused, naive = it.attention_cost(4, 2, 4), it.attention_cost(4, 2, 4, materialized=True)
    assert fused.flops == naive.flops == 4 * 16 * 2 + 5 * 16
    assert fused.bytes == 4 * 4 * 4 * 2
    assert naive.bytes - fused.bytes == 4 * 4 * 16
    # fused intensity grows like n; materialised is capped by (4d + 5) / 16 (float32)
    assert it.attention_cost(8192, 64).intensity == pytest.approx(
        4 * it.attention_cost(2048, 64).intensity
    )
    assert it.attention_cost(8192, 64, materialized=True).intensity < (4 * 64 + 5) / 16
