"""Lab 16's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import streams
from minitorch.runtime.overlap import overlap_step, prefetch_forward
from tests.viz.test_legibility import assert_legible


def test_timelines_are_legible() -> None:
    t, g = [1.0] * 12, [100] * 12
    panels = {
        f"bucket {cap} B": overlap_step(t, g, cap, 0.5, 0.01).device.timeline
        for cap in (100, 400, 1200)
    }
    panels["prefetch"] = prefetch_forward([2.0] * 6, [100] * 6, 0.5, 0.01).timeline
    assert_legible(Path(__file__).stem + "_timeline", lambda: streams.plot_timelines(panels))


def test_bucket_sweep_is_legible() -> None:
    caps = [100, 200, 400, 800, 1600]
    curves = {"step (simulated)": [21, 18, 18, 21, 28.5], "formula": [21, 18, 18, 21, 28.5]}
    assert_legible(
        Path(__file__).stem + "_sweep",
        lambda: streams.plot_bucket_sweep(caps, curves, best=200, backward=16),
    )
