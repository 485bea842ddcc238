"""Lab 00 graders: the reference passes, realistic wrong answers and reference calls fail."""

from __future__ import annotations

import pytest

from a2s.checks import lab00
from a2s.checks.core import CheckFailure, ReferenceCalledError
from minitorch.hardware import costs
from tests.helpers.graders import always_equal, rejects


def flops(m, n, k):
    return 2 * m * n * k


def intensity(m, n, k, s):
    return 2 * m * n * k / (s * (m * k + k * n + m * n))


def test_reference_passes() -> None:
    lab00.check_matmul_flops(flops)
    lab00.check_arithmetic_intensity(intensity)


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


def test_a_value_that_decides_its_own_equality_is_rejected() -> None:
    rejects(lab00.check_matmul_flops, lambda m, n, k: always_equal(0), match="subclass of int")
    rejects(
        lab00.check_arithmetic_intensity, lambda *a: always_equal(0.0), match="subclass of float"
    )


def test_answers_memorised_from_the_fixed_cases_fail_a_fresh_case(monkeypatch) -> None:
    """Every fixed case (and the 4096³ figure) answered from a table: a fresh case fails,
    and its message names the seed that replays it."""
    seen: dict[tuple[int, int, int], int] = {}

    def record(m, n, k):
        seen[(m, n, k)] = flops(m, n, k)
        return seen[(m, n, k)]

    monkeypatch.setenv("A2S_SEED", "1")
    lab00.check_matmul_flops(record)
    fixed = dict(seen)
    monkeypatch.setenv("A2S_SEED", "1234")
    rejects(
        lab00.check_matmul_flops,
        lambda m, n, k: fixed.get((m, n, k), 0),
        match=r"\(fresh case, A2S_SEED=1234\)\] matmul_flops returned 0",
    )


def test_arithmetic_intensity_declares_that_it_builds_on_matmul_flops() -> None:
    assert lab00.check_arithmetic_intensity.uses == (
        ("00.1", "matmul_flops", "minitorch.hardware.costs:matmul_flops"),
    )
    assert lab00.check_matmul_flops.forbid == ("torch",)
