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

__all__ = ["plot_skill_radar"]

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
        ax.plot([angles[i] for i in run], [values[i] for i in run], "o-", color="tab:blue",
                linewidth=2, markersize=6)  # fmt: skip
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
        fig.text(0.5, 0.93, "\n".join(textwrap.wrap(summary, 72)), ha="center", va="top",
                 fontsize=10)  # fmt: skip
    fig.text(0.5, 0.02, "hatched: no graded exercise yet (a gap, not a 0); "
             "rings mark the levels C, B, A, S", ha="center", fontsize=8, color="0.35")  # fmt: skip
    return fig
