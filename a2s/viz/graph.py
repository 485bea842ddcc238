"""Plots of lab 13: a captured graph drawn as layers, inputs at the top, outputs at the bottom.

Lab: 13_graph_capture_ir
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from minitorch.compiler.ir import Graph

__all__ = ["plot_graph"]

_COLORS = {"placeholder": "#cde4ff", "constant": "#eeeeee", "matmul": "#ffd8a8"}


def _depths(graph: Graph) -> dict[str, int]:
    """Longest path from an input: a node sits one layer below its deepest operand."""
    depth: dict[str, int] = {}
    for n in graph.nodes:
        ins = [depth[i] for i in n.inputs if graph.node(i).op != "constant"]
        depth[n.name] = 1 + max(ins, default=-1)
    return depth


def plot_graph(graph: Graph, title: str = "", max_width: int = 4) -> Figure:
    """Draw every node as a box ``op`` / ``shape``; arrows from operands to users.

    Layers are ordered by the mean position of each node's operands (fewer crossings);
    constants are drawn grey, just above and right of their first user; an edge that skips
    layers bows outwards, away from the middle. ``max_width`` is the most boxes in one row
    before a layer wraps.
    """
    depth = _depths(graph)
    rows: dict[int, list[str]] = {}
    for n in graph.nodes:
        if n.op != "constant":
            rows.setdefault(depth[n.name], []).append(n.name)
    pos: dict[str, tuple[float, float]] = {}
    y = 0.0
    for d in sorted(rows):
        names = rows[d]
        placed = {k: [pos[i][0] for i in graph.node(k).inputs if i in pos] for k in names}
        names = sorted(names, key=lambda k: sum(placed[k]) / len(placed[k]) if placed[k] else 0.5)
        for start in range(0, len(names), max_width):
            chunk = names[start : start + max_width]
            for k, name in enumerate(chunk):
                pos[name] = ((k + 0.5) / len(chunk), -y)
            y += 1.0
    for n in graph.nodes:
        if n.op == "constant":
            users = graph.users(n.name)
            ux, uy = pos[users[0].name] if users else (0.5, 0.0)
            pos[n.name] = (min(ux + 0.16, 0.97), uy + 0.5)
    height = max(2.5, 0.5 * y + 0.6)
    fig, ax = plt.subplots(figsize=(8.5, height))
    boxes = {}
    for n in graph.nodes:
        x, yy = pos[n.name]
        shape = "x".join(str(s) for s in n.shape) or "scalar"
        label = f"{n.name}: {n.op}" if n.op in ("placeholder", "constant") else n.op
        if n.op == "constant":
            label = f"{n.name} (const)"
        boxes[n.name] = ax.text(
            x,
            yy,
            f"{label}\n{shape}",
            ha="center",
            va="center",
            fontsize=8.5,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.3", "fc": _COLORS.get(n.op, "#d3f9d8"), "ec": "#555555"},
        )
    fig.canvas.draw()  # lay the boxes out, so each arrow can stop at its boxes' edges
    for n in graph.nodes:
        for i in n.inputs:
            (x0, y0), (x1, y1) = pos[i], pos[n.name]
            bend = 0.3 if x0 + x1 <= 1.0 else -0.3  # a long edge bows away from the middle
            ax.annotate(
                "",
                (x1, y1),
                (x0, y0),
                zorder=2,
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": "#888888",
                    "lw": 0.8,
                    "patchA": boxes[i].get_bbox_patch(),
                    "patchB": boxes[n.name].get_bbox_patch(),
                    "shrinkA": 1,
                    "shrinkB": 1,
                    "connectionstyle": f"arc3,rad={bend if y0 - y1 > 2.5 else 0.0}",
                },
            )
    outs = ", ".join(graph.outputs)
    ax.set_title(title or f"{len(graph.nodes)} nodes; output {outs}", fontsize=11)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-y + 0.4, 0.6)
    ax.axis("off")
    fig.tight_layout()
    return fig
