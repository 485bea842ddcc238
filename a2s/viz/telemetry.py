"""Plots of lab 30: a decode run under a power cap (clock and power over time).

Lab: 30_telemetry_power_and_faults
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_capped_run"]

_COLORS = ("#3182bd", "#e6550d", "#31a354", "#756bb1")


def plot_capped_run(
    runs: Mapping[str, Sequence[tuple[float, float, float, float]]], cap_w: float, title: str
) -> Figure:
    """Clock (top) and power (bottom) against time for each run; ``runs[name]`` holds one
    ``(t_ns, f_mhz, power_w, temp_c)`` row per governor step, ``t_ns`` the step's end (as
    ``SimulatedGpu`` logs it); the cap is a dashed line."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.2), sharex=True)
    for (name, rows), color in zip(runs.items(), _COLORS, strict=False):
        arr = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
        t_ms = arr[:, 0] / 1e6
        top.step(t_ms, arr[:, 1], where="pre", color=color, lw=1.8, label=name)
        bottom.step(t_ms, arr[:, 2], where="pre", color=color, lw=1.8, label=name)
    bottom.axhline(cap_w, color="0.3", ls="--", lw=1.2, label=f"cap {cap_w:g} W")
    top.set_ylim(500, 2100)
    top.set_ylabel("SM clock (MHz)")
    bottom.set_ylabel("board power (W)")
    bottom.set_xlabel("time (ms)")
    top.set_title(title)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    top.legend(loc="lower right", fontsize=9)
    bottom.legend(loc="upper right", fontsize=9)
    fig.tight_layout()
    return fig
