"""Plot of lab 34: tokens per target pass of speculative decoding, predicted and measured.

Lab: 34_speculative_decoding
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_tokens_per_pass"]


def plot_tokens_per_pass(
    gammas: Sequence[int],
    predicted: Mapping[float, Sequence[float]],
    measured: Mapping[float, Sequence[float]],
    title: str = "tokens per target pass",
) -> Figure:
    """Tokens per target pass against the draft length gamma, one colour per acceptance rate
    alpha: the closed form (lines) and the mean of a measured run (markers), with the
    gamma + 1 ceiling (every draft accepted) dotted."""
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    ax.plot(
        gammas, [g + 1 for g in gammas], ":", color="0.5", lw=1.5, label="gamma + 1 (all accepted)"
    )
    for i, (alpha, pred) in enumerate(predicted.items()):
        color = f"C{i}"
        ax.plot(gammas, pred, "-", color=color, lw=2, label=f"alpha = {alpha:.2f}")
        if alpha in measured:
            label = "measured (markers)" if i == 0 else None
            ax.plot(gammas, measured[alpha], "o", color=color, ms=6, label=label)
    ax.set_xlabel("draft tokens per pass (gamma)")
    ax.set_ylabel("tokens per target pass")
    ax.set_title(title)
    ax.set_xticks(list(gammas))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
