"""Grader of exercise 08.2: the online softmax, two passes over HBM instead of three.

Ground truth: ``torch.softmax`` in float64, on rows with logits up to 1e3 (a softmax without
the max shift overflows there). Budget: X read exactly twice (statistics, then output) and Y
written once, in column tiles of at most ``block`` columns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from minitorch.checks.cases import fresh
from minitorch.checks.core import assert_close, fresh_rng, grader, rng
from minitorch.checks.lab08.kernel import assert_traffic, run_kernel
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


@grader("08.2", blocks=(f"{_A}:online_softmax", f"{_A}:online_softmax_hbm", f"{_A}:_online_stats"))
def check_online_softmax(online_softmax: Callable[..., object]) -> str:
    """Exercise 08.2: softmax of HBM X into Y with the statistics in one pass."""
    cases = _cases()
    for i, (case, shape, block, scale) in enumerate(cases):
        x = rng(820 + i).standard_normal(shape) * scale
        if "growing" in case:
            x = np.sort(x, axis=1)  # every block raises the maximum
        r = shape[0]
        hbm = HBM({"X": x, "Y": np.zeros(shape)}, {"X": r * block, "Y": r * block})
        run_kernel(online_softmax, hbm, block, case=case)
        want = torch.softmax(torch.from_numpy(x), dim=1).numpy()
        assert_close(
            hbm.array("Y"), want, case=case, rtol=1e-10, atol=1e-14, what="Y", hint=_RESCALE
        )
        assert_traffic(
            hbm.traffic(),
            Traffic(2 * x.nbytes, x.nbytes),
            case=case,
            other=_THREE,
            hints=[(Traffic(x.nbytes, 0), _THREE), (Traffic(-x.nbytes, 0), _KEPT)],
        )
    return (
        f"{len(cases)} cases match torch.softmax (logits up to 1e3) reading X twice, not "
        f"three times: a third fewer HBM reads than the safe softmax"
    )
