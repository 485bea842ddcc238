"""Lab 33's bench at its smallest sizes: the counted ratios are the closed forms; no times."""

from __future__ import annotations

import pytest

from a2s.bench import load
from a2s.bench.lab33 import sparse24_counted, sparse24_wall_clock
from a2s.figures import missed_target


def test_lab33_registers_its_two_experiments() -> None:
    assert {fn.__name__ for fn in load()["33"]} == {"sparse24_counted", "sparse24_wall_clock"}


def test_counted_bytes_are_nine_sixteenths_and_multiplies_half() -> None:
    nbytes, mults = sparse24_counted(n=2, out=16, cols=32)
    assert (nbytes.unit, mults.unit) == ("x", "x")
    assert nbytes.value == pytest.approx(9 / 16, abs=0)  # fp16 values + 2-bit indices
    assert "576 of 1,024 B" in nbytes.anchor  # 16 x 16 x 2 + 16 x 32 / 8 of 16 x 32 x 2
    assert mults.value == 0.5 and "512 of 1,024" in mults.anchor  # 2 x 16 x 32 dense
    assert "same y: True" in mults.anchor


def test_wall_clock_is_a_ratio_with_its_baseline() -> None:
    (fig,) = sparse24_wall_clock(n=2, out=16, cols=32, repeats=1)
    assert fig.unit == "x" and fig.value > 0 and "dense" in fig.anchor
    assert not missed_target(fig.value, fig.anchor)  # reported only: no target
