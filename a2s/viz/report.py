"""The radar chart of the skill report (``a2s report --png``).

A subject with no graded exercise is a gap, never a 0: its sector is hatched and labelled
"not assessed", and the outline skips it, so one perfect lab does not look like a complete
profile.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

__all__ = ["plot_profiles_radar", "plot_skill_radar"]

_LEVELS = ((2, "C 2"), (4, "B 4"), (6, "A 6"), (8, "S 8"), (10, "10"))


def _runs(values: list[float | None]) -> list[list[int]]:
    """Maximal runs of neighbouring assessed axes, going round the circle."""
    n = len(values)
    if all(v is not None for v in values):
        return [[*range(n), 0]]
    start = next(i for i, v in enumerate(values) if v is None)  # begin just after a gap
    runs: list[list[int]] = [[]]
    for k in range(1, n + 1):
        i = (start + k) % n
        if values[i] is None:
            runs.append([])
        else:
            runs[-1].append(i)
    return [r for r in runs if r]


def _label(ax, angle: float, text: str, assessed: bool) -> None:
    """Put an axis label just outside the circle, aligned away from it."""
    x, y = math.sin(angle), math.cos(angle)  # theta 0 at the top, clockwise
    ha = "center" if abs(x) < 0.2 else ("left" if x > 0 else "right")
    va = "center" if abs(y) < 0.2 else ("bottom" if y > 0 else "top")
    ax.text(angle, 11.0, text, ha=ha, va=va, fontsize=9, color="black" if assessed else "0.45")


def plot_skill_radar(
    scores: dict[str, float | None],
    title: str,
    *,
    weights: dict[str, float] | None = None,
    summary: str | None = None,
) -> Figure:
    """Draw one axis per subject, scores out of 10; unassessed subjects (None) as gaps.

    ``weights`` (subject -> share of the course) are printed under the labels; ``summary``
    (the score, level and share assessed) goes under the title.
    """
    labels, values = list(scores), [None if v is None else float(v) for v in scores.values()]
    n = len(labels)
    angles = [2 * math.pi * i / n for i in range(n)]
    fig = plt.figure(figsize=(7.0, 7.4))
    ax: Any = fig.add_axes((0.22, 0.165, 0.56, 0.56), projection="polar")  # a PolarAxes
    ax.set_theta_offset(math.pi / 2)
    ax.set_theta_direction(-1)
    width = 2 * math.pi / n
    for a, v in zip(angles, values, strict=True):
        if v is None:
            ax.bar(a, 10, width=width, color="0.94", edgecolor="0.78", hatch="//", linewidth=0)
        else:
            ax.bar(a, v, width=width * 0.6, color="tab:blue", alpha=0.25, linewidth=0)
    for run in _runs(values):
        ax.plot(
            [angles[i] for i in run],
            [values[i] for i in run],
            "o-",
            color="tab:blue",
            linewidth=2,
            markersize=6,
        )
    ax.set_xticks(angles)
    ax.set_xticklabels([])
    for a, label, v in zip(angles, labels, values, strict=True):
        text = "\n".join(textwrap.wrap(label, 18))
        if weights and label in weights:
            text += f"\n(weight {weights[label]:.0%})"
        _label(ax, a, text + ("\nnot assessed" if v is None else f"\n{v:.1f} / 10"), v is not None)
    ax.set_ylim(0, 10)
    ax.set_yticks([r for r, _ in _LEVELS])
    ax.set_yticklabels([t for _, t in _LEVELS], fontsize=8, color="0.35")
    ax.set_rlabel_position(180 / n)  # between the first two axes, clear of the labels
    fig.suptitle(title, fontsize=13, y=0.975)
    if summary:
        fig.text(
            0.5, 0.93, "\n".join(textwrap.wrap(summary, 72)), ha="center", va="top", fontsize=10
        )
    fig.text(
        0.5,
        0.02,
        "hatched: no graded exercise yet (a gap, not a 0); rings mark the levels C, B, A, S",
        ha="center",
        fontsize=8,
        color="0.35",
    )
    return fig


_STYLES: tuple[tuple[str, str, Any], ...] = (
    ("tab:blue", "o", "-"),
    ("tab:orange", "s", "--"),
    ("tab:green", "^", ":"),
    ("tab:red", "D", "-."),
)


def plot_profiles_radar(
    series: dict[str, dict[str, float | None]], title: str, *, summary: str | None = None
) -> Figure:
    """Overlay several outlines (name -> subject -> score out of 10) on one radar.

    A subject that no series has a score for is a hatched gap labelled "not assessed", as in
    :func:`plot_skill_radar`; each outline joins only neighbouring assessed subjects. The
    names go in a key under the chart (one line each), so they may carry a verdict.
    """
    labels = list(next(iter(series.values()), {}))
    n = len(labels)
    angles = [2 * math.pi * i / n for i in range(n)]
    fig = plt.figure(figsize=(7.0, 7.4))
    ax: Any = fig.add_axes((0.24, 0.255, 0.52, 0.52), projection="polar")  # a PolarAxes
    ax.set_theta_offset(math.pi / 2)
    ax.set_theta_direction(-1)
    gaps = [all(s.get(label) is None for s in series.values()) for label in labels]
    for a, gap in zip(angles, gaps, strict=True):
        if gap:
            ax.bar(
                a,
                10,
                width=2 * math.pi / n,
                color="0.94",
                edgecolor="0.78",
                hatch="//",
                linewidth=0,
            )
    fig.text(
        0.5,
        0.175,
        "each profile's subject scores, its dimension weights applied",
        ha="center",
        va="center",
        fontsize=9,
    )
    for k, (name, scores) in enumerate(series.items()):
        color, marker, style = _STYLES[k % len(_STYLES)]
        values = [None if (v := scores.get(label)) is None else float(v) for label in labels]
        runs = _runs(values) if any(v is not None for v in values) else []
        for run in runs:
            ax.plot(
                [angles[i] for i in run],
                [values[i] for i in run],
                marker=marker,
                linestyle=style,
                color=color,
                linewidth=2,
                markersize=6,
            )
        y = 0.14 - 0.032 * k  # the key, drawn by hand: a Legend's cached offsets mislead checks
        fig.add_artist(
            Line2D(
                [0.1, 0.14, 0.18],
                [y, y, y],
                transform=fig.transFigure,
                color=color,
                marker=marker,
                markevery=[1],
                linestyle=style,
                linewidth=2,
                markersize=6,
            )
        )
        fig.text(0.2, y, name, va="center", fontsize=9)
    ax.set_xticks(angles)
    ax.set_xticklabels([])
    for a, label, gap in zip(angles, labels, gaps, strict=True):
        text = "\n".join(textwrap.wrap(label, 18)) + ("\nnot assessed" if gap else "")
        x, y = math.sin(a), math.cos(a)  # as _label, but a figure text: outside the circle
        fig.text(
            a,
            11.0,
            text,
            transform=ax.transData,
            fontsize=9,
            ha="center" if abs(x) < 0.2 else ("left" if x > 0 else "right"),
            va="center" if abs(y) < 0.2 else ("bottom" if y > 0 else "top"),
            color="0.45" if gap else "black",
        )
    ax.set_ylim(0, 10)
    ax.set_yticks([r for r, _ in _LEVELS])
    ax.set_yticklabels([t for _, t in _LEVELS], fontsize=8, color="0.35")
    ax.set_rlabel_position(180 / max(n, 1))
    fig.suptitle(title, fontsize=13, y=0.975)
    if summary:
        fig.text(
            0.5, 0.93, "\n".join(textwrap.wrap(summary, 72)), ha="center", va="top", fontsize=10
        )
    fig.text(
        0.5,
        0.015,
        "hatched: no graded exercise yet (a gap, not a 0); rings mark the levels C, B, A, S",
        ha="center",
        fontsize=8,
        color="0.35",
    )
    return fig
