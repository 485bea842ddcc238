"""Lab 28's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import capstone
from tests.viz.test_legibility import assert_legible


def test_serving_plot_is_legible() -> None:
    g = np.random.default_rng(0)
    held = np.concatenate([np.arange(2, 36), np.full(10, 36), np.arange(36, 4, -3)])
    bound = held.copy()
    reserved = held + g.integers(3, 15, len(held))
    ttft, tpot = g.lognormal(-3.5, 0.7, 24), g.normal(0.0101, 0.0001, 24)
    fig = capstone.plot_serving(held.tolist(), bound.tolist(), reserved.tolist(), ttft, tpot)
    assert_legible(Path(__file__).stem, lambda: fig)


def test_decode_projection_plot_is_legible() -> None:
    batches = [2**i for i in range(12)]
    curves = {
        f"{chip} {fmt}": [k * b / (1 + b / 256) if b <= 1024 else float("nan") for b in batches]
        for chip, fmt, k in (("H100", "INT8", 50), ("H100", "BF16", 25), ("H200", "INT8", 73))
    }
    fig = capstone.plot_decode_projection(batches, curves)
    assert_legible(Path(__file__).stem + "_projection", lambda: fig)
