"""Plot of lab 33: accuracy against sparsity (magnitude pruning, 2:4), QAT against PTQ.

Lab: 33_sparsity_distillation_qat
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_compression"]


def plot_compression(
    sparsities: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    points: Mapping[str, tuple[float, float]],
    bits: Sequence[int],
    ptq: Sequence[float],
    qat: Sequence[float],
    title: str = "compressing the tiny GPT",
) -> Figure:
    """Left: held-out token accuracy against the fraction of linear weights removed, one line
    per pruning scope, single points (such as 2:4) as markers. Right: the loss of the model
    quantized after training (PTQ) and after quantization-aware fine-tuning (QAT), per
    bit width."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.6, 3.7), width_ratios=(1.6, 1))
    for i, (name, curve) in enumerate(curves.items()):
        left.plot(sparsities, curve, "-o", color=f"C{i}", lw=2, ms=4, label=name)
    for j, (name, (s, acc)) in enumerate(points.items()):
        left.plot([s], [acc], "*", color=f"C{len(curves) + j}", ms=13, label=name)
    left.set_xlabel("fraction of linear weights removed")
    left.set_ylabel("held-out token accuracy")
    left.set_ylim(0, 1.05)
    left.grid(alpha=0.3)
    left.legend(fontsize=9, loc="lower left")
    left.set_title("magnitude pruning")
    x = np.arange(len(bits))
    right.bar(x - 0.2, ptq, 0.4, color="C3", label="PTQ (round to nearest)")
    right.bar(x + 0.2, qat, 0.4, color="C2", label="QAT (fake-quant, STE)")
    right.set_xticks(x, [f"INT{b}" for b in bits])
    right.set_xlabel("weight bits")
    right.set_ylabel("loss after quantization")
    right.set_ylim(0, 1.4 * max([*ptq, *qat, 1e-12]))
    right.grid(alpha=0.3, axis="y")
    right.legend(fontsize=9, loc="upper left")
    right.set_title("QAT vs PTQ")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
