"""Lab 12's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import lora
from tests.viz.test_legibility import assert_legible


def test_adaptation_plot_is_legible() -> None:
    steps = list(range(0, 401, 50))
    curves = {
        "full fine-tuning (93,504 trainable)": [min(1.0, s / 200) for s in steps],
        "LoRA r = 4 (9,344 trainable)": [min(1.0, s / 300) for s in steps],
    }
    fig = lora.plot_adaptation(
        steps, curves, 0.39, [1, 2, 4, 8, 16], [2208, 4416, 8832, 17664, 35328], 44064
    )
    assert_legible(Path(__file__).stem, lambda: fig)


def test_adaptation_plot_with_a_prefix_is_legible() -> None:
    steps = list(range(0, 401, 50))
    curves = {
        "full fine-tuning (93,504 trainable)": [min(1.0, s / 200) for s in steps],
        "LoRA r = 4 (9,344 trainable)": [min(1.0, s / 300) for s in steps],
        "prefix P = 16 (2,048 trainable)": [s / 10000 for s in steps],
    }
    fig = lora.plot_adaptation(
        steps,
        curves,
        0.0,
        [1, 2, 4, 8, 16],
        [2208, 4416, 8832, 17664, 35328],
        44064,
        marks={"prefix P = 16": 16384},
    )
    assert_legible(Path(__file__).stem + "_prefix", lambda: fig)
