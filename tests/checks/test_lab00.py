"""Lab 00 graders: the reference passes, realistic wrong answers and reference calls fail."""

from __future__ import annotations

import pytest

from minitorch.checks import lab00
from minitorch.checks.core import CheckFailure, ReferenceCalledError
from minitorch.hardware import costs


def test_reference_passes() -> None:
    lab00.check_matmul_flops(lambda m, n, k: 2 * m * n * k)
    lab00.check_arithmetic_intensity(
        lambda m, n, k, s: 2 * m * n * k / (s * (m * k + k * n + m * n))
    )


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda m, n, k: m * n * k, "multiplies only"),
        (lambda m, n, k: m * n * (2 * k - 1), "first add"),
        (lambda m, n, k: 2 * m * n, "loop performs"),
    ],
)
def test_wrong_flop_counts_are_rejected(wrong, hint: str) -> None:
    with pytest.raises(CheckFailure, match=hint):
        lab00.check_matmul_flops(wrong)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda m, n, k, s: 2 * m * n * k / (s * (m * k + k * n)), "writing C"),
        (lambda m, n, k, s: 2 * m * n * k / (m * k + k * n + m * n), "bytes"),
        (lambda m, n, k, s: m * n * k / (s * (m * k + k * n + m * n)), "expected"),
    ],
)
def test_wrong_intensities_are_rejected(wrong, hint: str) -> None:
    with pytest.raises(CheckFailure, match=hint):
        lab00.check_arithmetic_intensity(wrong)


def test_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab00.check_matmul_flops(costs.matmul_flops)
    with pytest.raises(ReferenceCalledError):
        lab00.check_arithmetic_intensity(costs.arithmetic_intensity)
    with pytest.raises(ReferenceCalledError):  # the bytes helper is blocked too
        lab00.check_arithmetic_intensity(
            lambda m, n, k, s: 2 * m * n * k / costs.matmul_bytes(m, n, k, s)
        )
