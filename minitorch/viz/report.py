"""The radar chart of the skill report (``a2s report --png``)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_skill_radar"]


def plot_skill_radar(scores: dict[str, float | None], title: str) -> Figure:
    """Draw one axis per subject, scores out of 10 (unassessed subjects drawn at 0, greyed)."""
    labels = list(scores)
    values = [0.0 if v is None else float(v) for v in scores.values()]
    angles = [2 * math.pi * i / len(labels) for i in range(len(labels))]
    fig = plt.figure(figsize=(6.5, 6.5))
    ax = fig.add_subplot(projection="polar")
    ax.plot([*angles, angles[0]], [*values, values[0]], "o-", color="tab:blue", linewidth=2)
    ax.fill([*angles, angles[0]], [*values, values[0]], color="tab:blue", alpha=0.2)
    ax.set_xticks(angles)
    ax.set_xticklabels(
        [f"{lab}\n{'n/a' if v is None else f'{v:.1f}'}" for lab, v in scores.items()], fontsize=8
    )
    ax.set_ylim(0, 10)
    ax.set_yticks([2, 4, 6, 8, 10])
    ax.set_yticklabels(["C 2", "B 4", "A 6", "S 8", "10"], fontsize=7)
    ax.set_title(title, pad=24)
    fig.tight_layout()
    return fig
