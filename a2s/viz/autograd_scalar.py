"""Plots of lab 02: a drawn computation graph, training on a 2-D set, and the GC trap.

``draw_graph`` lays a scalar graph out in columns by depth (leaves left, root right) with
matplotlib boxes and arrows, wrapping a deep graph onto bands like lines of text so that it
stays readable at a notebook's width; no graphviz binary needed.
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


_COL_IN, _ROW_IN, _MAX_WIDTH_IN = 1.7, 0.95, 8.7  # inches per column / row; the lab's width
_BAND_GAP = 0.4  # rows of space between two bands of a wrapped graph

Key = tuple[int, int]  # (node id, band): a node, or its repeat at the head of a later band


def _wrap(
    order: list[Value], pos: dict[int, tuple[float, float]], per_band: int
) -> tuple[dict[Key, tuple[float, float]], list[tuple[Key, Key, float]]]:
    """Wrap the columns into bands stacked top to bottom, like lines of text.

    Band 0 holds columns 0 .. per_band - 1; every later band starts with a carry column, then
    per_band - 1 further columns. The carry column holds the leaves first used in that band
    and a dashed repeat of every earlier node the band consumes, so no edge crosses a gap.
    Returns {key: (x, y)} and the edges (parent key, child key, local grad).
    """

    def place(col: int) -> tuple[int, int]:  # (band, x in band)
        if col < per_band:
            return 0, col
        band, x = divmod(col - per_band, per_band - 1)
        return band + 1, x + 1

    band_x = {id(v): place(int(pos[id(v)][0])) for v in order}
    first_use: dict[int, int] = {}  # a leaf's earliest consuming band
    for v in order:
        for p in v.parents:
            if not p.parents:
                first_use[id(p)] = min(first_use.get(id(p), 1 << 30), band_x[id(v)][0])
    for leaf, band in first_use.items():  # it sits in that band's carry column
        if band_x[leaf][0] < band:
            band_x[leaf] = (band, 0)
    spots = {(id(v), band_x[id(v)][0]): (band_x[id(v)][1], pos[id(v)][1]) for v in order}
    edges: list[tuple[Key, Key, float]] = []
    carry: dict[int, dict[Key, float]] = {}  # band -> repeats there, keyed to a consumer's row
    for v in order:
        band = band_x[id(v)][0]
        for p, local in zip(v.parents, v.local_grads, strict=True):
            src = (id(p), band)
            if band_x[id(p)][0] < band:  # a repeat of p at the head of this band
                carry.setdefault(band, {}).setdefault(src, spots[(id(v), band)][1])
            edges.append((src, (id(v), band), local))
    for band, keys in carry.items():  # stack the carry column: repeats and moved leaves
        column = [k for k, (x, _) in spots.items() if k[1] == band and x == 0] + list(keys)
        column.sort(key=lambda k: keys.get(k, spots.get(k, (0, 0))[1]))
        for row, k in enumerate(column):
            spots[k] = (0, row - (len(column) - 1) / 2)
    out: dict[Key, tuple[float, float]] = {}
    top = 0.0
    for band in sorted({b for _, b in spots}):
        rows = [y for (_, b), (_, y) in spots.items() if b == band]
        half = max(abs(y) for y in rows) + 0.5
        out.update({k: (float(x), top - half + y) for k, (x, y) in spots.items() if k[1] == band})
        top -= 2 * half + _BAND_GAP
    return out, edges


def draw_graph(
    root: Value, labels: Mapping[Value, str] | None = None, title: str = "computation graph"
) -> Figure:
    """Draw every node root depends on: name or op, data, grad; edges carry local grads.

    Leaves are blue, ops yellow; columns run left to right by depth. A graph wider than a
    notebook's output area (about 900 px) wraps onto bands below, each band starting with
    dashed repeats of the nodes it takes from the band above.
    """
    labels = labels or {}
    order = root.topo_order()
    nodes = {id(v): v for v in order}
    pos = _layout(order)
    per_band = max(2, int(_MAX_WIDTH_IN // _COL_IN))
    spots, edges = _wrap(order, pos, per_band)
    width = 1 + max(x for x, _ in spots.values())
    ys = [y for _, y in spots.values()]
    top, bottom = max(ys) + 0.6, min(ys) - 0.6
    fig, ax = plt.subplots(figsize=(max(5.0, _COL_IN * width), _ROW_IN * (top - bottom) + 0.6))
    for src, dst, local in edges:
        (x0, y0), (x1, y1) = spots[src], spots[dst]
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={"arrowstyle": "->", "color": "0.4", "shrinkA": 30, "shrinkB": 30},
        )
        ax.text(
            (x0 + x1) / 2,
            (y0 + y1) / 2 + 0.1,
            f"∂={local:.3g}",
            fontsize=8,
            ha="center",
            color="tab:red",
        )
    wrapped = False
    for (node, band), (x, y) in spots.items():
        v = nodes[node]
        leaf = not v.parents
        repeat = any((node, b) in spots for b in range(band))  # drawn in full above
        wrapped |= repeat
        fill = "white" if repeat else "#dbe9f6" if leaf else "#fdf0c2"
        ax.text(
            x,
            y,
            f"{labels.get(v, v.op if v.parents else 'leaf')}\ndata {v.data:.4g}\ngrad {v.grad:.4g}",
            ha="center",
            va="center",
            fontsize=8.5,
            family="monospace",
            bbox={"boxstyle": "round", "fc": fill, "ec": "0.3", "ls": "--" if repeat else "-"},
        )
    ax.set_xlim(-0.55, width - 0.45)
    ax.set_ylim(bottom, top)
    key = "leaves blue, ops yellow" + (", dashed: repeated from above" if wrapped else "")
    ax.set_title(f"{title}\n({key}; ∂ = local derivative on each edge)", fontsize=10)
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
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(8.7, 3.8))
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
    ax1.set_title(f"{title}: decision boundary (black)")
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
