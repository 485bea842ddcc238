"""Static memory planning: liveness intervals, in-place reuse, and offsets in one arena.

    bufs = buffers(graph)                       # one per op output: size, first and last step
    offsets = greedy_by_size(bufs)              # TFLite's / XLA's heap-simulator order
    peak_bytes(bufs, offsets), lower_bound(bufs), naive_bytes(bufs)

A buffer is **live** from the step of the node that writes it to the last step that reads it
(graph outputs stay live to the end); two buffers may share bytes only if their intervals
are disjoint. The **in-place rule**: an elementwise op whose operand dies at that op, with
the same size and dtype as its result, writes into the operand's buffer (one buffer, the
union of both intervals). The lower bound on any plan is the most bytes live at one step;
greedy by size (largest first, each into the best-fitting gap among the buffers live at the
same time) usually comes within a few percent of it, first fit in definition order less so.

Lab: 14_graph_passes_memory_planning
Paper: Pisarchyk & Lee 2020, Efficient Memory Management for Deep Neural Net Inference
(TFLite's greedy-by-size); Sekiyama et al. 2018, Profile-guided memory optimization for deep
neural networks
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.compiler.ir import BINARY, UNARY, Graph

__all__ = [
    "Buffer",
    "buffers",
    "first_fit",
    "greedy_by_size",
    "lower_bound",
    "naive_bytes",
    "overlaps",
    "peak_bytes",
]

ALIGN = 64  # bytes: every buffer starts on a cache line


@dataclass(frozen=True)
class Buffer:
    """Bytes written at step ``first`` and last read at step ``last``; ``values`` it holds."""

    name: str
    size: int
    first: int
    last: int
    values: tuple[str, ...]


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def buffers(graph: Graph, in_place: bool = True) -> list[Buffer]:
    """One buffer per op output (inputs and constants live elsewhere), in-place ops merged."""
    step = {n.name: k for k, n in enumerate(graph.nodes)}
    end = len(graph.nodes)
    last = {n.name: step[n.name] for n in graph.nodes}
    for n in graph.nodes:
        for i in n.inputs:
            last[i] = max(last[i], step[n.name])
    for o in graph.outputs:
        last[o] = end
    owner: dict[str, str] = {}  # value -> the value whose buffer holds it
    spans: dict[str, list[int]] = {}
    held: dict[str, list[str]] = {}
    for n in graph.nodes:
        if n.op in ("placeholder", "constant"):
            continue
        size = _aligned(int(np.prod(n.shape)) * np.dtype(n.dtype).itemsize)
        host = None
        if in_place and n.op in BINARY + UNARY:
            for i in n.inputs:
                src = graph.node(i)
                if (
                    i in owner
                    and last[i] == step[n.name]
                    and src.dtype == n.dtype
                    and src.shape == n.shape
                    and spans[owner[i]][1] == step[n.name]
                ):
                    host = owner[i]
                    break
        if host is None:
            host = n.name
            spans[host] = [step[n.name], last[n.name], size]
            held[host] = []
        spans[host][1] = max(spans[host][1], last[n.name])
        owner[n.name] = host
        held[host].append(n.name)
    return [Buffer(h, s[2], s[0], s[1], tuple(held[h])) for h, s in spans.items()]


def _live_together(a: Buffer, b: Buffer) -> bool:
    return a.first <= b.last and b.first <= a.last


def _place(buf: Buffer, placed: list[tuple[Buffer, int]], best_fit: bool) -> int:
    """The offset for ``buf`` among ``placed``: the best-fitting (or first) gap, else the top."""
    busy = sorted((off, off + b.size) for b, off in placed if _live_together(b, buf))
    best, best_gap, cursor = None, None, 0
    for lo, hi in busy:
        gap = lo - cursor
        if gap >= buf.size and (best_gap is None or gap < best_gap):
            best, best_gap = cursor, gap
            if not best_fit:
                return best
        cursor = max(cursor, hi)
    return cursor if best is None else best


def greedy_by_size(bufs: Sequence[Buffer]) -> dict[str, int]:
    """Offsets: largest buffer first, each into the smallest gap that fits (TFLite, XLA)."""
    placed: list[tuple[Buffer, int]] = []
    for b in sorted(bufs, key=lambda b: (-b.size, b.first)):
        placed.append((b, _place(b, placed, best_fit=True)))
    return {b.name: off for b, off in placed}


def first_fit(bufs: Sequence[Buffer]) -> dict[str, int]:
    """Offsets: buffers in the order they are written, each at the lowest offset that fits."""
    placed: list[tuple[Buffer, int]] = []
    for b in sorted(bufs, key=lambda b: b.first):
        placed.append((b, _place(b, placed, best_fit=False)))
    return {b.name: off for b, off in placed}


def peak_bytes(bufs: Sequence[Buffer], offsets: dict[str, int]) -> int:
    """The arena size a plan needs: the highest byte any buffer reaches."""
    return max((offsets[b.name] + b.size for b in bufs), default=0)


def lower_bound(bufs: Sequence[Buffer]) -> int:
    """The most bytes live at one step: no plan can use less."""
    steps = {b.first for b in bufs}
    return max((sum(b.size for b in bufs if b.first <= t <= b.last) for t in steps), default=0)


def naive_bytes(bufs: Sequence[Buffer]) -> int:
    """Every buffer its own bytes: what no planning costs."""
    return sum(b.size for b in bufs)


def overlaps(bufs: Sequence[Buffer], offsets: dict[str, int]) -> list[tuple[str, str]]:
    """Pairs of buffers live at the same step whose bytes overlap (empty for a valid plan)."""
    bad = []
    for i, a in enumerate(bufs):
        for b in bufs[i + 1 :]:
            oa, ob = offsets[a.name], offsets[b.name]
            if _live_together(a, b) and oa < ob + b.size and ob < oa + a.size:
                bad.append((a.name, b.name))
    return bad
