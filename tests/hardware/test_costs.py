"""GEMM cost formulas against a counted loop and a closed form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.hardware import arithmetic_intensity, machine_info, matmul_bytes, matmul_flops


def test_flops_match_a_counted_loop() -> None:
    m, n, k = 3, 4, 5
    count = sum(2 for _ in range(m) for _ in range(n) for _ in range(k))
    assert matmul_flops(m, n, k) == count


@given(st.integers(1, 4096))
def test_square_float32_intensity_is_n_over_6(n: int) -> None:
    assert arithmetic_intensity(n, n, n, 4) == pytest.approx(n / 6)


def test_bytes_count_each_operand_once() -> None:
    assert matmul_bytes(2, 3, 4, 2) == 2 * (2 * 4 + 4 * 3 + 2 * 3)


def test_machine_info_describes_this_machine() -> None:
    info = machine_info()
    assert info.cores >= 1 and len(info.lines()) == 5
