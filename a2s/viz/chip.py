"""Plot of lab 31: where one decode step goes on the chip, and what compiling saves.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_backend"]


def plot_backend(
    steps: Mapping[str, Mapping[str, int]],
    kernels: Sequence[tuple[str, int]],
    title: str = "the tiny GPT on the chip",
) -> Figure:
    """Left: per model variant, ATen calls of one decode step run on the chip and by the CPU
    fallback, with the fallback's bytes across the host link written on each bar (``steps``:
    variant -> {"on_chip": calls, "fallbacks": calls, "bytes": bytes}). Right: kernel
    launches per forward after each stage of the compile backend (``kernels``: (stage, n))."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.8, 3.8))
    names = list(steps)
    chip = [steps[n]["on_chip"] for n in names]
    fell = [steps[n]["fallbacks"] for n in names]
    left.bar(names, chip, color="C0", label="on the chip")
    left.bar(names, fell, bottom=chip, color="C3", label="CPU fallback")
    for i, n in enumerate(names):
        left.text(
            i,
            chip[i] + fell[i],
            f"{fell[i]} fallbacks\n{steps[n]['bytes']:,} B copied",
            ha="center",
            va="bottom",
            fontsize=9,
        )
    left.set_ylabel("ATen calls in one decode step")
    left.set_ylim(0, 1.3 * max(c + f for c, f in zip(chip, fell, strict=True)))
    left.set_title("eager, op by op")
    left.legend(fontsize=9, loc="lower right")
    stages = [s for s, _ in kernels]
    counts = [k for _, k in kernels]
    right.bar(stages, counts, color=["C7", "C1", "C2"][: len(stages)])
    for i, k in enumerate(counts):
        right.text(i, k, str(k), ha="center", va="bottom", fontsize=10)
    right.set_ylabel("kernel launches per forward")
    right.set_ylim(0, 1.2 * max(counts))
    right.set_title("torch.compile backend")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
