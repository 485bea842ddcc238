"""Plots of lab 37: minor page faults of a file loaded by read and by mmap against the pages
it spans, and D1 misses of the C++ matmul nests under cachegrind next to lab 06's LRU model.

Lab: 37_python_to_machine_code
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_native"]


def plot_native(
    sizes_mib: Sequence[float],
    faults: Mapping[str, Sequence[int]],
    pages: Sequence[int],
    misses: Mapping[str, tuple[int, int | None]],
    title: str = "",
) -> Figure:
    """Left: minor faults per load method against file size, the pages spanned dashed (log-log).
    Right: D1 misses per kernel, lab 06's LRU model beside cachegrind's (absent: not drawn)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"read": "#3182bd", "mmap": "#e6550d"}
    for name, vals in faults.items():
        left.plot(sizes_mib, vals, "o-", lw=1.8, color=colors.get(name, "#31a354"), label=name)
    left.plot(sizes_mib, pages, "k--", lw=1, label="pages spanned (size / 4 KiB)")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("file size (MiB)")
    left.set_ylabel("minor page faults")
    left.set_title("read copies into fresh pages; mmap maps the page cache")
    left.grid(True, alpha=0.3)
    left.legend(loc="upper left", fontsize=9)
    kernels = list(misses)
    xs = range(len(kernels))
    sim = [misses[k][0] for k in kernels]
    left_bars = [x - 0.2 for x in xs]
    right.bar(left_bars, sim, width=0.4, color="#756bb1", label="LRU model (lab 06)")
    measured = [(x + 0.2, misses[k][1]) for x, k in zip(xs, kernels, strict=True)]
    got = [(x, m) for x, m in measured if m is not None]
    if got:
        right.bar(
            [x for x, _ in got], [m for _, m in got], width=0.4, color="#31a354", label="cachegrind"
        )
    right.set_xticks(list(xs), kernels)
    right.set_ylabel("D1 misses")
    right.set_title("one access pattern, two cache models")
    right.grid(True, axis="y", alpha=0.3)
    right.legend(loc="upper right", fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
