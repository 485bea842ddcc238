"""Grader of exercise 08.2: the online softmax, two passes over HBM instead of three.

Ground truth: ``torch.softmax`` in float64, on rows with logits up to 1e3 (a softmax without
the max shift overflows there). Budgets: X read exactly twice (statistics, then output) and Y
written once, in column tiles of at most ``block`` columns; and, on a long row, the kernel's
extra memory (tracemalloc) a few tiles, so keeping every tile of the first pass for the second
fails even when it loads them again. A wrong Y is matched against modelled mistakes (the sum
not rescaled, rescaled the wrong way, no max shift) and the hint names the one it matches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.core import assert_close, fresh_rng, grader, rng
from a2s.checks.lab08._truth import assert_peak, assert_traffic, run_kernel
from minitorch.kernels.io_model import HBM, Traffic

__all__ = ["check_online_softmax"]

_A = "minitorch.kernels.attention"
_THREE = (
    "Three passes over X (max, then sum, then output) is the safe softmax: keep a running "
    "maximum m and a running sum l, and rescale l by exp(m_old - m_new) whenever m grows, so "
    "one pass gives both."
)
_KEPT = (
    "You read X once and kept its tiles for the second pass: a kernel's SRAM holds one tile, "
    "not the whole row. Load each tile of X again to write Y (X is read exactly twice)."
)
_RESCALE = (
    "When the running maximum grows from m to m', the sum so far was taken against m: "
    "multiply it by exp(m - m') before adding the new block's exp(x - m')."
)
_INVERTED = (
    "The rescale factor is exp(m - m') (at most 1: the old sum shrinks when the maximum "
    "grows); yours multiplies by exp(m' - m)."
)
_SHIFT = (
    "Subtract the running maximum before exponentiating: exp(x) overflows to inf for logits "
    "near 1e3, exp(x - m) never exceeds 1."
)
_OTHER = "Y must be exp(x - m) / l with m the row maximum and l = sum of exp(x - m) over the row."
_MEMORY = ("memory: 4 x 16384, blocks of 256", (4, 16384), 256, 1.0)
_KEPT_MEMORY = (
    "A kernel's SRAM holds one tile of X at a time: load each tile again for the second pass "
    "instead of keeping the first pass's tiles (or anything of size r x n) in memory."
)


def _variant(x: np.ndarray, block: int, bug: str) -> np.ndarray:
    """A plain loop over the column blocks with one known mistake (the hints' models)."""
    m, l = np.full(len(x), -np.inf), np.zeros(len(x))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if bug == "no shift":
            e = np.exp(x)
            return e / e.sum(axis=1, keepdims=True)
        for j in range(0, x.shape[1], block):
            xb = x[:, j : j + block]
            m_new = np.maximum(m, xb.max(axis=1))
            factor = {"no rescale": 1.0, "inverted": np.exp(m_new - m)}.get(bug, np.exp(m - m_new))
            l = l * factor + np.exp(xb - m_new[:, None]).sum(axis=1)
            m = m_new
        return np.exp(x - m[:, None]) / l[:, None]


_BUGS = (("no rescale", _RESCALE), ("inverted", _INVERTED), ("no shift", _SHIFT))
TRUTH_BLOCKS = (f"{__name__}:_variant",)


def _hint(got: np.ndarray, x: np.ndarray, block: int) -> str:
    """The hint of the modelled mistake ``got`` matches, else the plain statement of Y."""
    for bug, hint in _BUGS:
        want = _variant(x, block, bug)
        if got.shape == want.shape and np.allclose(
            got, want, rtol=1e-9, atol=1e-14, equal_nan=True
        ):
            return hint
    return _OTHER


def _cases() -> list[tuple[str, tuple[int, int], int, float]]:
    named = [
        ("one row, 3 blocks", (1, 12), 4, 1.0),
        ("growing maximum", (2, 9), 3, 5.0),
        ("23 columns, blocks of 4: short last block", (4, 23), 4, 30.0),
        ("logits of 1e3 (overflow without the shift)", (3, 10), 4, 1e3),
        ("block of 1", (2, 5), 1, 2.0),
        ("block wider than the row", (3, 6), 16, 1.0),
    ]
    g = fresh_rng("08.2")
    return named + [
        (
            fresh(f"random case {i}"),
            (int(g.integers(1, 6)), int(g.integers(1, 40))),
            int(g.integers(1, 9)),
            float(10 ** g.uniform(0, 3)),
        )
        for i in range(3)
    ]


@grader(
    "08.2",
    blocks=(
        f"{_A}:online_softmax",
        f"{_A}:online_softmax_hbm",
        f"{_A}:_online_stats",
        *TRUTH_BLOCKS,
    ),
    hand="kernel",
)
def check_online_softmax(online_softmax: Callable[..., object]) -> str:
    """Exercise 08.2: softmax of HBM X into Y with the statistics in one pass."""
    cases = [*_cases(), _MEMORY]
    peak = 0
    for i, (case, shape, block, scale) in enumerate(cases):
        x = rng(820 + i).standard_normal(shape) * scale
        if "growing" in case:
            x = np.sort(x, axis=1)  # every block raises the maximum
        r = shape[0]
        hbm = HBM({"X": x, "Y": np.zeros(shape)}, {"X": r * block, "Y": r * block})
        peak = run_kernel(online_softmax, hbm, block, case=case, measure=case == _MEMORY[0])
        want = torch.softmax(torch.from_numpy(x), dim=1).numpy()
        got = hbm.array("Y")
        if not np.allclose(got, want, rtol=1e-10, atol=1e-14):
            hint = _hint(got, x, block)
            assert_close(got, want, case=case, rtol=1e-10, atol=1e-14, what="Y", hint=hint)
        assert_traffic(
            hbm.traffic(),
            Traffic(2 * x.nbytes, x.nbytes),
            case=case,
            other=_THREE,
            hints=[(Traffic(x.nbytes, 0), _THREE), (Traffic(-x.nbytes, 0), _KEPT)],
        )
        if case == _MEMORY[0]:  # the rows (512 KiB) are 64 tiles: keeping them shows
            assert_peak(peak, _budget(shape[0], block), case=case, hint=_KEPT_MEMORY)
    return (
        f"{len(cases)} cases match torch.softmax (logits up to 1e3) reading X twice, not "
        f"three times: a third fewer HBM reads than the safe softmax; peak "
        f"{peak / 1024:,.0f} KiB on a row of {_MEMORY[1][1] * 8 * _MEMORY[1][0] // 1024:,} KiB"
    )


def _budget(rows: int, block: int) -> int:
    """192 KiB of slack (interpreter, watch, the harness's buffers) and 8 tiles of
    rows x block float64 (x, exp, products)."""
    return 192 * 1024 + 8 * 8 * rows * block
