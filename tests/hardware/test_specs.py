"""Spec sheets: dense figures, every entry sourced, no dtype invented."""

from __future__ import annotations

import pytest

from minitorch.hardware import SPECS
from minitorch.hardware.specs import NOT_LISTED


def test_every_spec_names_its_source() -> None:
    for spec in SPECS.values():
        assert "datasheet" in spec.source
        assert spec.bandwidth > 1e12 and spec.peak


def test_known_figures_and_ridges() -> None:
    assert SPECS["A100"].peak["bf16"] == 312e12
    assert SPECS["H100"].peak["bf16"] == pytest.approx(989.5e12)
    assert SPECS["H200"].bandwidth == 4.8e12
    assert SPECS["H100"].ridge("bf16") == pytest.approx(989.5 / 3.35)
    # same compute die: H200's higher bandwidth moves its ridge left
    assert SPECS["H200"].ridge("bf16") < SPECS["H100"].ridge("bf16")


def test_missing_dtype_is_an_error_not_a_guess() -> None:
    with pytest.raises(KeyError):
        SPECS["A100"].roofline("fp8")  # Ampere has no FP8 tensor cores
    assert "Ascend 910B" in NOT_LISTED


def test_roofline_of_a_spec() -> None:
    r = SPECS["H100"].roofline("fp8")
    assert r.peak == pytest.approx(1979e12) and r.bandwidth == 3.35e12
