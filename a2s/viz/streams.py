"""Plots of lab 16: stream timelines (one row per stream) and step time against bucket size.

Lab: 16_streams_and_overlap
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from minitorch.runtime.streams import Span

__all__ = ["draw_timeline", "plot_bucket_sweep", "plot_timelines"]

_COLORS = {"compute": "#4C72B0", "comm": "#DD8452", "copy": "#55A868"}


def draw_timeline(
    ax: Axes,
    spans: Sequence[Span],
    title: str = "",
    labels: bool = True,
    end: float | None = None,
) -> None:
    """Draw ``spans`` on ``ax``: one row per stream (first-seen order, top down).

    ``end``: the right end of the time axis (default: the last span's end).
    """
    streams = list(dict.fromkeys(s.stream for s in spans))
    end = end or max((s.end for s in spans), default=1.0) or 1.0
    for row, stream in enumerate(streams):
        y = len(streams) - 1 - row
        for s in (x for x in spans if x.stream == stream):
            color = _COLORS.get(s.kind, "#8172B2")
            ax.barh(
                y, s.end - s.start, left=s.start, height=0.6, color=color, edgecolor="white", lw=1
            )
            if labels and (s.end - s.start) / end > 0.1:
                ax.text(
                    (s.start + s.end) / 2,
                    y,
                    s.name,
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                    clip_on=True,
                )
    ax.set_yticks(range(len(streams)), list(reversed(streams)))
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.6, len(streams) - 0.4)
    ax.set_xlabel("time")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="x")


def plot_timelines(panels: Mapping[str, Sequence[Span]], labels: bool = True) -> Figure:
    """One timeline per panel, stacked, sharing the time axis (compare schedules)."""
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(8.7, 1.1 + 1.25 * len(panels)), sharex=True, squeeze=False
    )
    end = max((s.end for spans in panels.values() for s in spans), default=1.0)
    for ax, (title, spans) in zip(axes[:, 0], panels.items(), strict=True):
        draw_timeline(ax, spans, title, labels, end)
        ax.set_xlabel("")
    axes[-1, 0].set_xlabel("time")
    fig.tight_layout()
    return fig


def plot_bucket_sweep(
    caps: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    best: float | None = None,
    backward: float | None = None,
    ylabel: str = "time",
) -> Figure:
    """Step (or exposed) time against bucket size (log x), one line per curve.

    Later curves are drawn dashed with smaller markers, so coinciding curves stay visible.
    """
    fig, ax = plt.subplots(figsize=(8.7, 3.4))
    styles = [("o", "-", 8, 2.5), ("s", "--", 4, 1.5), ("^", ":", 4, 1.5), ("v", "-.", 4, 1.5)]
    for (name, ys), (marker, ls, ms, lw) in zip(curves.items(), styles * 2, strict=False):
        ax.semilogx(caps, ys, marker=marker, ls=ls, ms=ms, lw=lw, label=name)
    if backward is not None:
        ax.axhline(backward, color="gray", ls=":", lw=1.5, label="backward alone")
    if best is not None:
        ax.axvline(best, color="black", ls="--", lw=1, label="best bucket")
    ax.set_xlabel("bucket size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title("too small pays alpha per bucket; too big exposes the last bucket", fontsize=10)
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
