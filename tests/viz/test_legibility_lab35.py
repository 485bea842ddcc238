"""Lab 35's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import rl
from tests.viz.test_legibility import assert_legible


def test_grpo_run_plot_is_legible() -> None:
    steps = 10
    rewards = [0.4 + 0.02 * i for i in range(steps)]
    fig = rl.plot_grpo_run(rewards, [0.1] * steps, [0.05] * steps, [0.001] * steps, "GRPO")
    assert_legible(Path(__file__).stem, lambda: fig)


def test_grpo_run_plot_stacks_the_three_parts() -> None:
    fig = rl.plot_grpo_run([0.5, 0.6], [0.1, 0.2], [0.05, 0.05], [0.01, 0.01])
    bars = fig.axes[1].patches
    assert len(bars) == 6
    assert abs(max(b.get_y() + b.get_height() for b in bars) - 260.0) < 1e-6
