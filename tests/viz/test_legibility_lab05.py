"""Lab 05's figures are legible at JupyterLab's default width (the checks of test_legibility)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from a2s.viz import roofline as viz
from minitorch.hardware import SPECS, Roofline
from tests.viz.test_legibility import assert_legible

_OPS = [
    ("gemm 1024³", 170.7, 1.1e11),
    ("gemv 4096²", 0.5, 1.6e10),
    ("softmax 4096x1024", 0.625, 9e9),
    ("layernorm 4096x1024", 1.0, 1.2e10),
    ("attention n=2048, fused", 522.0, 9e10),
    ("attention n=2048, materialised", 15.6, 6e10),
]

FIGURES = {
    "05-this-machine": lambda: viz.plot_roofline(
        [Roofline("1 thread", 1.25e11, 3.8e10), Roofline("2 threads", 2.4e11, 4.0e10)],
        _OPS,
        title="this machine (float32), ops measured on 1 thread",
    ),
    "05-accelerators": lambda: viz.plot_roofline(
        [SPECS[k].roofline("bf16") for k in ("A100", "H100", "H200")]
        + [Roofline("this CPU fp32", 2.4e11, 4.0e10)],
        [("attention fused, bf16", 2068.0, 9.9e14), ("attention materialised", 63.0, 2.1e14)],
        title="spec-sheet rooflines (bf16, dense)",
        unit=1e12,
        unit_name="TFLOP/s",
        hi=4096.0,
    ),
    "05-scaling": lambda: viz.plot_scaling(0.083, [(1, 1.0), (2, 1.85)]),
}


@pytest.mark.parametrize("name", FIGURES)
def test_lab05_figure_is_legible(name: str) -> None:
    assert_legible(name, FIGURES[name])
