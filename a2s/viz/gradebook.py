"""Class statistics of a grading run (``a2s report --by-student --stats-png``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["OUTCOMES", "plot_exercise_outcomes"]

# outcome -> colour; "not submitted" are students without a graded copy of the lab
OUTCOMES: dict[str, str] = {
    "passed": "tab:green",
    "failed": "tab:red",
    "error": "tab:orange",
    "timeout": "tab:purple",
    "missing": "0.55",
    "tampered": "black",
    "not submitted": "0.85",
}


def plot_exercise_outcomes(rows: list[tuple[str, dict[str, int]]], title: str) -> Figure:
    """One horizontal bar per exercise: the share of students in each outcome, in percent.

    rows: ``(label, {outcome: students})`` in display order (top first); outcomes as in
    :data:`OUTCOMES`. Each bar adds up to the whole class.
    """
    fig, ax = plt.subplots(figsize=(8.0, 1.6 + 0.32 * max(1, len(rows))), layout="constrained")
    labels = [label for label, _ in rows]
    left = [0.0] * len(rows)
    for outcome, colour in OUTCOMES.items():
        share = []
        for _label, counts in rows:
            total = sum(counts.values())
            share.append(100.0 * counts.get(outcome, 0) / total if total else 0.0)
        ax.barh(labels, share, left=left, color=colour, label=outcome, height=0.7)
        for i, (x, w) in enumerate(zip(left, share, strict=True)):
            if outcome == "passed" and w >= 8:
                ax.text(x + w / 2, i, f"{w:.0f}%", ha="center", va="center", fontsize=8)
        left = [a + b for a, b in zip(left, share, strict=True)]
    ax.invert_yaxis()  # first exercise on top
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the class (%)")
    ax.set_ylabel("exercise")
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize=8)
    fig.legend(loc="outside lower center", ncols=len(OUTCOMES), fontsize=8, frameon=False)
    return fig
