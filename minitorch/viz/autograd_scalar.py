"""Plots of lab 02: a drawn computation graph, training on a 2-D set, and the GC trap.

``draw_graph`` lays a scalar graph out in columns by depth (leaves left, root right) with
matplotlib boxes and arrows; no graphviz binary needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from minitorch.autograd.scalar import Value

__all__ = ["draw_graph", "plot_gc_trap", "plot_training"]


def _layout(order: list[Value]) -> dict[int, tuple[float, float]]:
    """(column, row) per node id: column = longest path from a leaf, each leaf one column
    left of its first consumer; rows follow the parents' rows (fewer crossings)."""
    depth: dict[int, int] = {}
    for v in order:  # parents come first
        depth[id(v)] = 1 + max((depth[id(p)] for p in v.parents), default=-1)
    for v in order:  # pull leaves next to the node that uses them
        for p in v.parents:
            if not p.parents:
                depth[id(p)] = max(depth[id(p)], depth[id(v)] - 1)
    columns: dict[int, list[Value]] = {}
    for v in order:
        columns.setdefault(depth[id(v)], []).append(v)
    pos: dict[int, tuple[float, float]] = {}
    for col in sorted(columns):
        nodes = columns[col]  # barycentre of the parents; leaves of later columns on top
        nodes.sort(key=lambda v: np.mean([pos[id(p)][1] for p in v.parents]) if v.parents else 1e9)
        offset = (len(nodes) - 1) / 2
        for row, v in enumerate(nodes):
            pos[id(v)] = (float(col), row - offset)
    return pos


def draw_graph(
    root: Value, labels: Mapping[Value, str] | None = None, title: str = "computation graph"
) -> Figure:
    """Draw every node root depends on: name or op, data, grad; edges carry local grads."""
    labels = labels or {}
    order = root.topo_order()
    pos = _layout(order)
    n_cols = 1 + max(int(x) for x, _ in pos.values())
    n_rows = max(sum(1 for x, _ in pos.values() if x == c) for c in range(n_cols))
    fig, ax = plt.subplots(figsize=(max(6.0, 2.0 * n_cols), max(3.0, 1.1 * n_rows + 1)))
    for v in order:
        x1, y1 = pos[id(v)]
        for p, local in zip(v.parents, v.local_grads, strict=True):
            x0, y0 = pos[id(p)]
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "->", "color": "0.4", "shrinkA": 28, "shrinkB": 28},
            )
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2 + 0.08,
                f"∂={local:.3g}",
                fontsize=7,
                ha="center",
                color="tab:red",
            )
    for v in order:
        name = labels.get(v, v.op if v.parents else "leaf")
        leaf = not v.parents
        ax.text(
            *pos[id(v)],
            f"{name}\ndata {v.data:.4g}\ngrad {v.grad:.4g}",
            ha="center",
            va="center",
            fontsize=8,
            family="monospace",
            bbox={"boxstyle": "round", "fc": "#dbe9f6" if leaf else "#fdf0c2", "ec": "0.3"},
        )
    ax.set_xlim(-0.6, n_cols - 0.4)
    ax.set_ylim(-n_rows / 2 - 0.2, n_rows / 2 + 0.2)
    ax.set_title(f"{title} (leaves blue, ops yellow; ∂ = local derivative on each edge)")
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_training(
    losses: Sequence[float],
    predict: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    title: str = "scalar MLP",
    grid: int = 30,
) -> Figure:
    """Loss per step (left); decision boundary ``predict(points) = 0`` over the data (right).

    ``predict`` maps points ``(N, 2)`` to scores ``(N,)``; ``y`` holds labels {0, 1}.
    """
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax0.plot(np.arange(1, len(losses) + 1), losses, color="tab:blue")
    ax0.set_yscale("log")
    ax0.set_xlabel("step (full batch)")
    ax0.set_ylabel("mean logistic loss")
    ax0.set_title(f"{title}: training loss")
    ax0.grid(True, alpha=0.3)
    lo, hi = x.min(0) - 0.5, x.max(0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], grid), np.linspace(lo[1], hi[1], grid))
    scores = np.asarray(predict(np.stack([gx.ravel(), gy.ravel()], 1))).reshape(gx.shape)
    lim = float(np.abs(scores).max()) or 1.0
    ax1.contourf(gx, gy, scores, levels=20, cmap="RdBu", vmin=-lim, vmax=lim, alpha=0.6)
    ax1.contour(gx, gy, scores, levels=[0.0], colors="k", linewidths=1.5)
    for cls, color in ((0, "tab:red"), (1, "tab:blue")):
        pts = x[y == cls]
        ax1.scatter(pts[:, 0], pts[:, 1], s=18, c=color, edgecolors="k", label=f"class {cls}")
    ax1.set_xlabel("$x_1$")
    ax1.set_ylabel("$x_2$")
    ax1.set_title(f"{title}: decision boundary (score = 0, black)")
    ax1.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_gc_trap(per_node_us: Mapping[str, tuple[float, float]], nodes: int) -> Figure:
    """Grouped bars: microseconds per node (build + backward) with the cyclic GC on and off."""
    names = list(per_node_us)
    on = [per_node_us[n][0] for n in names]
    off = [per_node_us[n][1] for n in names]
    xs = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 4))
    for shift, vals, label, color in (
        (-0.2, on, "gc on", "tab:red"),
        (0.2, off, "gc off", "tab:green"),
    ):
        bars = ax.bar(xs + shift, vals, width=0.4, label=label, color=color)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(xs, names)
    ax.set_xlabel("engine (node design)")
    ax.set_ylabel("µs per node (build + backward)")
    ax.set_title(f"The GC trap: graphs of {nodes:,} nodes, built and dropped repeatedly")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
