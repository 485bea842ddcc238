"""Plots of lab 18: KV memory held while serving, and KV waste against the block size.

Lab: 18_paged_kv_cache
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_kv_memory"]


def plot_kv_memory(
    steps: Sequence[int],
    stored: Sequence[float],
    paged: Sequence[float],
    reserved: Sequence[float],
    block_sizes: Sequence[int],
    paged_waste: Sequence[float],
    reserved_waste: float,
) -> Figure:
    """Two panels. Left: KV slots over decode steps: tokens actually stored, slots held by
    paging (whole blocks) and by max-length reservation. Right: the fraction of held slots
    that are wasted, paging at each block size (log2 axis) against reservation (a line)."""
    fig, (ax, ax_w) = plt.subplots(1, 2, figsize=(8.7, 3.6))
    ax.plot(steps, [r / 1e3 for r in reserved], lw=2, color="C3", label="reserve max length")
    ax.plot(steps, [p / 1e3 for p in paged], lw=2, ls="--", color="C1", label="paged (blocks held)")
    ax.plot(steps, [s / 1e3 for s in stored], lw=1.5, ls=":", color="k", label="tokens stored")
    ax.set_xlabel("decode step")
    ax.set_ylabel("KV slots held (thousands)")
    ax.set_title("memory while serving")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    ax_w.plot(block_sizes, [100 * w for w in paged_waste], "o-", lw=2, color="C1", label="paged")
    ax_w.axhline(100 * reserved_waste, color="C3", ls="--", lw=2, label="reserve max length")
    ax_w.set_xscale("log", base=2)
    ax_w.set_xticks(list(block_sizes), [str(b) for b in block_sizes])
    ax_w.set_ylim(0, 100)
    ax_w.set_xlabel("block size (tokens)")
    ax_w.set_ylabel("wasted KV slots (%)")
    ax_w.set_title("waste vs block size")
    ax_w.legend(fontsize=9, loc="center right")
    ax_w.grid(alpha=0.3)
    fig.tight_layout()
    return fig
