"""Plots of lab 28 (the capstone): KV memory while serving, latency percentiles, and the
projected decode throughput of the scaled model per GPU.

Lab: 28_capstone
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_decode_projection", "plot_serving"]


def plot_serving(
    held: Sequence[int],
    bound: Sequence[int],
    reserved: Sequence[int],
    ttft: Sequence[float],
    tpot: Sequence[float],
) -> Figure:
    """Left: KV blocks held at each engine step, with the paging bound and a max-length
    reservation. Right: the distribution of TTFT and TPOT over requests (ms, modelled clock),
    p50 and p99 marked."""
    fig, (ax_kv, ax_lat) = plt.subplots(1, 2, figsize=(8.7, 3.4))
    steps = np.arange(len(held))
    ax_kv.step(
        steps,
        reserved,
        where="post",
        lw=1.5,
        ls="--",
        color="tab:red",
        label="reserved at max length",
    )
    ax_kv.step(
        steps, bound, where="post", lw=2.5, color="tab:gray", alpha=0.6, label="paging bound"
    )
    ax_kv.step(steps, held, where="post", lw=1.2, color="tab:blue", label="blocks held")
    ax_kv.set_xlabel("engine step")
    ax_kv.set_ylabel("KV blocks")
    ax_kv.set_title("KV memory while serving")
    ax_kv.legend(fontsize=9, loc="lower center")
    for name, values, color in (("TTFT", ttft, "tab:purple"), ("TPOT", tpot, "tab:green")):
        x = np.sort(np.asarray(values, dtype=float)) * 1e3
        ax_lat.plot(x, np.arange(1, len(x) + 1) / len(x), lw=2, color=color, label=name)
        for q, ls in ((50, ":"), (99, "--")):
            ax_lat.axvline(np.percentile(x, q), color=color, ls=ls, lw=1.2)
    ax_lat.set_xscale("log")
    ax_lat.set_xlabel("ms (modelled clock); dotted p50, dashed p99")
    ax_lat.set_ylabel("fraction of requests")
    ax_lat.set_title("latency per request")
    ax_lat.legend(fontsize=9, loc="lower right")
    for ax in (ax_kv, ax_lat):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_decode_projection(batches: Sequence[int], curves: Mapping[str, Sequence[float]]) -> Figure:
    """Projected decode tokens/s per GPU against sequences per step (log-log), one line per
    (chip, format); a line stops where the weights and KV cache no longer fit in memory."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for (name, tps), ls in zip(curves.items(), ["-", "--", "-.", ":"] * 3, strict=False):
        ax.plot(batches, tps, lw=2, ls=ls, marker="o", ms=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequences per decode step (batch)")
    ax.set_ylabel("decode tokens/s per GPU")
    ax.set_title("70B-class decode on the roofline (TP=8, 4k context)")
    ax.legend(fontsize=9, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
