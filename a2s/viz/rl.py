"""Plot of lab 35: a seeded GRPO run, the reward per step and where each step's time went.

Lab: 35_rl_systems
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_grpo_run"]


def plot_grpo_run(
    rewards: Sequence[float],
    t_gen: Sequence[float],
    t_train: Sequence[float],
    t_sync: Sequence[float],
    title: str = "a seeded GRPO run",
) -> Figure:
    """Left: the mean reward of each step's rollouts (markers) and its running mean (line).
    Right: the seconds of each step spent generating, training and syncing, stacked."""
    steps = np.arange(1, len(rewards) + 1)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    r = np.asarray(rewards, np.float64)
    ax.plot(steps, r, "o", color="C0", ms=5, label="mean reward of the step")
    ax.plot(steps, np.cumsum(r) / steps, "-", color="C1", lw=2, label="running mean")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("reward (exact answer = 1)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    bottom = np.zeros(len(steps))
    for part, label, color in (
        (t_gen, "generate", "C0"),
        (t_train, "train", "C2"),
        (t_sync, "sync", "C3"),
    ):
        v = np.asarray(part, np.float64) * 1e3
        bx.bar(steps, v, bottom=bottom, color=color, label=label)
        bottom += v
    bx.set_xlabel("GRPO step")
    bx.set_ylabel("milliseconds")
    bx.set_title("time per step")
    bx.grid(alpha=0.3, axis="y")
    bx.set_ylim(0, float(bottom.max()) * 1.3 if bottom.max() > 0 else 1.0)
    bx.set_xticks(steps)
    bx.legend(fontsize=8, loc="upper left", ncol=3)
    fig.tight_layout()
    return fig
