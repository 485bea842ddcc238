"""Plots of lab 19: queue length and batch size over time; inter-token latency distributions.

Lab: 19_continuous_batching
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_batching", "plot_token_latency"]


def plot_batching(
    runs: Mapping[str, tuple[Sequence[float], Sequence[int], Sequence[int]]],
) -> Figure:
    """Two panels, one line per policy: requests waiting (left) and sequences in the step's
    batch (right) against time; ``runs[name] = (times, waiting, batch)``, times in seconds."""
    fig, (ax_q, ax_b) = plt.subplots(1, 2, figsize=(8.7, 3.4), sharex=True)
    for (name, (t, waiting, batch)), ls in zip(runs.items(), ["-", "--", ":"] * 3, strict=False):
        ax_q.step(t, waiting, where="post", lw=1.8, ls=ls, label=name)
        ax_b.step(t, batch, where="post", lw=1.2, ls=ls, label=name)
    ax_q.set_ylabel("requests waiting")
    ax_q.set_title("queue length")
    ax_b.set_ylabel("sequences in the step")
    ax_b.set_title("batch size")
    for ax in (ax_q, ax_b):
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_token_latency(gaps: Mapping[str, Sequence[float]]) -> Figure:
    """Cumulative distribution of the time between consecutive output tokens (ms, log x),
    one line per configuration, with the 99th percentile marked."""
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    for name, g in gaps.items():
        x = np.sort(np.asarray(g, dtype=float)) * 1e3
        (line,) = ax.plot(x, np.arange(1, len(x) + 1) / len(x), lw=2, label=name)
        ax.axvline(np.percentile(x, 99), color=line.get_color(), ls=":", lw=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("time between output tokens (ms); dotted: p99")
    ax.set_ylabel("fraction of tokens")
    ax.set_title("inter-token latency")
    ax.legend(fontsize=9, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
