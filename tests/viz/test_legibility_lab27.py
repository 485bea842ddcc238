"""Lab 27's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from matplotlib.figure import Figure

from a2s.checks.lab27 import gpt_gemms
from a2s.viz import accelerator
from minitorch.hardware import noc, systolic
from minitorch.model.train import TINY
from tests.viz.test_legibility import assert_legible

_A, _B = np.ones((64, 32)), np.ones((32, 32))


def _util() -> Figure:
    pre, dec = gpt_gemms(TINY, 256, 32), gpt_gemms(TINY, 1, 32)
    keep = [i for i, (nm, *_) in enumerate(pre) if nm.startswith("L0") or nm == "lm_head"]
    series = {
        f"{phase}, 128x128 array": [systolic.utilisation(*g[i][1:], 128, 128) for i in keep]
        for phase, g in (("prefill", pre), ("decode", dec))
    }
    series["prefill, 16x16x16 cube"] = [1.0] * len(keep)
    series["decode, 16x16x16 cube"] = [1 / 16] * len(keep)
    return accelerator.plot_utilisation([pre[i][0] for i in keep], series, "tiny GPT")


def _noc() -> Figure:
    orders = {"row-major": [(i % 4, i // 4) for i in range(16)], "your ring": noc.snake_ring(4, 4)}
    meshes = {k: noc.xy_link_loads(noc.ring_traffic(v, 1.0), 4, 4) for k, v in orders.items()}
    return accelerator.plot_link_loads(meshes, orders)


FIGURES: dict[str, Callable[[], Figure]] = {
    "27-busy": lambda: accelerator.plot_busy(
        {
            "weight-stationary": systolic.simulate_ws(_A, _B, 32, 32).busy,
            "output-stationary (2 folds)": np.concatenate(
                [systolic.simulate_os(_A[:32], _B, 32, 32).busy] * 2
            ),
        },
        1024,
        "A (64, 32) @ B (32, 32) on a 32x32 array: fill, steady state, drain",
    ),
    "27-utilisation": _util,
    "27-noc": _noc,
    "27-dies": lambda: accelerator.plot_die_placements(
        [
            ("1 die", 1.9e-7, 0.0, 1e-6),
            ("4 dies of 2, advanced package, 1 us", 8.9e-7, 7.06e-7, 1e-6),
            ("2 dies of 4, standard package, 2 us", None, 0.0, 2e-6),
        ],
        "the tiny GPT layer on chiplets",
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])
