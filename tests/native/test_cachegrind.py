"""Cachegrind's misses of the C++ matmul against lab 06's LRU simulator, same pattern."""

from __future__ import annotations

import pytest

from minitorch.hardware.cache import CacheConfig
from minitorch.native import cachegrind as cg
from tests.native.conftest import needs_gxx, needs_valgrind

OUT = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./cg_main ijk 8
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=???
fn=a2s_matmul_ijk
0 100 1 1 40 7 3 10 2 0
fn=main
0 50 2 2 5 1 1
fl=other.cpp
fn=a2s_matmul_ijk
12 1 0 0 2 1 0 0 0 0
summary: 151 3 3 47 9 4 10 2 0
"""

D1, LL = CacheConfig(4096, 64, 4), CacheConfig(32768, 64, 8)


def test_an_output_file_is_summed_per_function() -> None:
    prof = cg.parse(OUT)
    assert prof.events[:4] == ("Ir", "I1mr", "ILmr", "Dr")
    ijk = prof.functions["a2s_matmul_ijk"]
    assert (ijk["Ir"], ijk["Dr"], ijk["D1mr"], ijk["D1mw"]) == (101, 42, 8, 2)
    assert prof.functions["main"]["Dw"] == 0  # short lines: missing counts are zero
    assert prof.total("Ir") == 151
    with pytest.raises(ValueError, match="events"):
        cg.parse("fn=x\n1 2 3\n")


def test_the_simulator_side_needs_no_tool() -> None:
    d1, ll, acc = cg.simulated_misses("ikj", 16, D1, LL)
    assert acc == 3 * 16**3 and 0 < ll <= d1 < acc
    assert ll == 3 * 16 * 16 * 8 // 64  # every line of A, B and C once, all fit in LL
    with pytest.raises(ValueError, match="kernel"):
        cg.simulated_misses("kji", 4, D1, LL)


@needs_gxx
@needs_valgrind
@pytest.mark.parametrize(("kernel", "n"), [("ijk", 32), ("ikj", 48)])
def test_cachegrind_agrees_with_the_lru_simulator(kernel: str, n: int) -> None:
    c = cg.compare(kernel, n, D1, LL)
    assert c.accesses == pytest.approx(4 * n**3, abs=64)  # C's += is a read and a write
    assert c.trace_accesses == 3 * n**3
    for got, want in zip(c.measured, c.simulated, strict=True):
        assert abs(got - want) <= max(2, 0.002 * want), c  # a miss or two: the call itself
    assert c.measured[0] > 8 * c.measured[1] if kernel == "ijk" else True


@needs_gxx
@needs_valgrind
def test_the_tiled_kernel_agrees_within_ten_percent() -> None:
    # the tiled nest keeps loop bounds on the stack: those accesses take ways of D1's sets
    c = cg.compare("tiled", 32, D1, LL, tile=8)
    assert 4 * 32**3 < c.accesses < 1.1 * 4 * 32**3
    assert abs(c.ratio[0] - 1) <= 0.10 and abs(c.ratio[1] - 1) <= 0.01, c
    ijk = cg.compare("ijk", 32, D1, LL)
    assert c.measured[0] * 10 < ijk.measured[0]  # tiling: an order of magnitude fewer misses


def test_available_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    why = cg.available()
    assert why is not None and "valgrind is not installed" in why and "apt-get" in why
