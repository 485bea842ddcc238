"""Lab 14 experiments: fused vs unfused numpy, and arena planning on the captured models.

1. The GELU + LayerNorm chain (T = 4096, d = 512), the attention block (T = 1024, d = 256,
   4 heads) and a 2-layer transformer (T = 512, d = 128; the largest model here), after
   folding, simplification, CSE and DCE, run by the interpreter unfused and fused (generated
   numpy kernels): bytes moved (every node's inputs + output) and time, alternated on one
   thread, at sizes where the arrays are far larger than the caches.
2. Arena planning on the same graphs (unfused and fused, in-place reuse on): greedy by size
   and first fit against the lower bound, and the naive sum of every buffer against the arena.

Lab: 14_graph_passes_memory_planning
"""

from __future__ import annotations

from functools import partial

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.compiler import capture, fusion, interp, memory, models, passes
from minitorch.compiler.ir import Graph

__all__ = ["arena_planning", "fused_vs_unfused"]

CLEAN = passes.PassManager([passes.fold_constants, passes.simplify, passes.cse, passes.dce])


def _models() -> list[tuple[str, Graph, np.ndarray]]:
    out = []
    for label, (fn, _), shape in [
        ("GELU+LayerNorm T=4096 d=512", models.gelu_layernorm(512), (4096, 512)),
        ("attention T=1024 d=256", models.attention_block(256, 4), (1024, 256)),
        ("transformer 2 layers T=512 d=128", models.transformer(128, 4, 2), (512, 128)),
    ]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        out.append((label, CLEAN.run(capture.trace(fn, [x]))[0], x))
    return out


@register
def fused_vs_unfused() -> list[Figure]:
    figures = []
    with one_thread():
        for label, g, x in _models():
            f = fusion.fuse(g)
            before, after = fusion.bytes_moved(g), fusion.bytes_moved(f)
            t_plain, t_fused = alternate(partial(interp.run, g, x), partial(interp.run, f, x), 5)
            figures += [
                Figure(
                    f"{label}: bytes moved unfused",
                    before / 2**20,
                    "MiB",
                    "sum of inputs + outputs",
                ),
                Figure(
                    f"{label}: bytes moved fused", after / 2**20, "MiB", "sum of inputs + outputs"
                ),
                Figure(
                    f"{label}: bytes moved, unfused / fused", before / after, "x", "fused = 1.0"
                ),
                Figure(f"{label}: time, unfused / fused", t_plain / t_fused, "x", "fused = 1.0"),
            ]
    return figures


@register
def arena_planning() -> list[Figure]:
    figures = []
    for label, g, _ in _models():
        for kind, graph in (("unfused", g), ("fused", fusion.fuse(g))):
            bufs = memory.buffers(graph)
            bound = memory.lower_bound(bufs)
            greedy = memory.peak_bytes(bufs, memory.greedy_by_size(bufs))
            first = memory.peak_bytes(bufs, memory.first_fit(bufs))
            figures += [
                Figure(
                    f"{label} {kind}: greedy peak / lower bound",
                    greedy / bound,
                    "x",
                    "goal <= 1.10",
                ),
                Figure(
                    f"{label} {kind}: first-fit peak / lower bound",
                    first / bound,
                    "x",
                    "goal <= 1.10",
                ),
                Figure(
                    f"{label} {kind}: naive sum / greedy arena",
                    memory.naive_bytes(bufs) / greedy,
                    "x",
                    "no planning = 1.0",
                ),
            ]
    return figures
