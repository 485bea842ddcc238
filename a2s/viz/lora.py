"""Plots of lab 12: fine-tuning curves (full vs LoRA) and AdamW state bytes against the rank.

Lab: 12_lora_peft
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_adaptation"]


def plot_adaptation(
    steps: Sequence[int],
    curves: Mapping[str, Sequence[float]],
    before: float,
    ranks: Sequence[int],
    lora_bytes: Sequence[float],
    full_bytes: float,
    task: str = "the new task",
    marks: Mapping[str, float] | None = None,
) -> Figure:
    """Left: held-out accuracy on the new task per step, one line per method, the pretrained model
    dotted. Right: AdamW state (KiB) of LoRA at each rank against full fine-tuning, and of each
    method in ``marks`` (name -> bytes, e.g. a prefix) as a dotted line."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for (name, acc), style in zip(curves.items(), ("-", "--", "-.", ":"), strict=False):
        ax.plot(steps, 100 * np.asarray(acc), style, lw=2, label=name)
    ax.axhline(100 * before, color="k", ls=":", lw=1, label="pretrained, no fine-tuning")
    ax.set_ylim(-42 - 16 * max(0, len(curves) - 2), 105)  # room under 0 % for the legend
    ax.set_yticks(range(0, 101, 20))
    ax.set_xlabel("fine-tuning step")
    ax.set_ylabel("held-out exact match (%)")
    ax.set_title(f"adapting to {task}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    kib = np.asarray(lora_bytes, dtype=np.float64) / 1024
    bx.plot(ranks, kib, "o-", lw=2, label="LoRA: 2 moments x 4 B x trainable")
    bx.axhline(full_bytes / 1024, color="C3", ls="--", lw=1.5, label="full fine-tuning")
    for (name, nbytes), color in zip((marks or {}).items(), ("C2", "C4", "C5"), strict=False):
        bx.axhline(nbytes / 1024, color=color, ls=":", lw=1.5, label=name)
    bx.set_xticks(list(ranks), [str(r) for r in ranks])
    bx.set_xlabel("LoRA rank r")
    bx.set_ylabel("AdamW state (KiB)")
    bx.set_title("AdamW state, FP32")
    bx.set_ylim(0, 1.15 * max(full_bytes / 1024, float(kib.max())))
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    return fig
