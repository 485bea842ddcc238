"""Plots of lab 11: layer error of RTN, GPTQ and AWQ by bits; the quantized GPT's loss and size.

Lab: 11_quantization
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_layer_error", "plot_model_quant"]


def plot_layer_error(bits: Sequence[int], errors: Mapping[str, Sequence[float]]) -> Figure:
    """Relative output error ``||XW^T - XQ^T||^2 / ||XW^T||^2`` of each method against bits."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for (name, values), marker in zip(errors.items(), "os^D", strict=False):
        ax.semilogy(list(bits), list(values), marker + "-", lw=2, label=name)
    ax.set_xticks(list(bits), [str(b) for b in bits])
    ax.set_xlabel("bits per weight")
    ax.set_ylabel("relative output error")
    ax.set_title("one linear layer, calibration inputs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_model_quant(
    names: Sequence[str], losses: Sequence[float], nbytes: Sequence[int], fp32_loss: float
) -> Figure:
    """Two panels: held-out loss of each quantized model, and its linear weights' bytes."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    y = np.arange(len(names))
    colors = ["0.5" if n.startswith(("FP32", "INT8")) else "C0" for n in names]
    a.barh(y, losses, color=colors)
    a.axvline(fp32_loss, color="k", ls=":", lw=1)
    a.set_yticks(y, list(names))
    a.invert_yaxis()
    a.set_xlabel("held-out loss (answer tokens)")
    a.set_title("tiny GPT, quantized linear weights")
    b.barh(y, np.asarray(nbytes) / 1024, color=colors)
    b.set_yticks(y, [""] * len(names))
    b.invert_yaxis()
    b.set_xlabel("linear weight memory (KiB)")
    b.set_title("weights + FP16 scales / zeros")
    for ax in (a, b):
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
