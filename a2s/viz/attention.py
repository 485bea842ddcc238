"""Plots of lab 08: peak memory of naive and flash attention over the sequence length.

Lab: 08_fused_kernels_flash_attention
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_peak_memory"]


def plot_peak_memory(ns: Sequence[int], peaks: Mapping[str, Sequence[float]], d: int) -> Figure:
    """Measured peak extra memory (MiB) of each attention kernel against n, log-log.

    ``peaks`` maps a kernel's name to its peak bytes per n. Dotted lines are the models:
    two n x n float64 matrices (S and P) for naive attention, and four (n, d) float64 arrays
    (the counting HBM's copies of Q, K, V and O) for FlashAttention, whose tiles do not grow.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    n = np.asarray(ns, dtype=np.float64)
    for (name, values), marker in zip(peaks.items(), "os^D", strict=False):
        ax.loglog(n, np.asarray(values) / 2**20, marker + "-", lw=2, label=f"measured: {name}")
    ax.loglog(n, 2 * 8 * n**2 / 2**20, "k:", lw=1, label="model: S and P, $2 \\cdot 8n^2$ B")
    ax.loglog(n, 4 * 8 * n * d / 2**20, "k--", lw=1, label="model: Q, K, V, O, $4 \\cdot 8nd$ B")
    ax.set_xticks(list(ns), [str(v) for v in ns])
    ax.minorticks_off()
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title(f"attention forward, d = {d}, float64 (tracemalloc)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
