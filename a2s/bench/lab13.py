"""Lab 13 experiments: what capture and interpretation cost against eager execution.

1. Tracing the attention block (d = 256, 4 heads, T = 512) against one eager forward: the
   one-time capture cost as a fraction of a forward pass.
2. The interpreter against eager on the same block: the per-node dispatch overhead of running
   a captured graph (both compute the same numpy kernels, bit for bit).

One thread; both sides alternated in one process; ratios reported.

Lab: 13_graph_capture_ir
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.autograd import Tensor, no_grad
from minitorch.compiler import capture, interp, models

__all__ = ["capture_and_interpret"]

D, HEADS, T = 256, 4, 512


@register
def capture_and_interpret() -> list[Figure]:
    fn, _ = models.attention_block(D, HEADS)
    x = np.random.default_rng(0).standard_normal((T, D)).astype(np.float32)
    graph = capture.trace(fn, [x])
    tx = Tensor(x)

    def eager() -> None:
        with no_grad():
            fn(tx)

    with one_thread():
        t_eager, t_trace = alternate(eager, lambda: capture.trace(fn, [x]), repeats=7)
        t_eager2, t_interp = alternate(eager, lambda: interp.run(graph, x), repeats=7)
    return [
        Figure(
            "attention d=256 T=512: trace time / eager forward",
            t_trace / t_eager,
            "x",
            "eager = 1.0",
        ),
        Figure(
            "attention d=256 T=512: interpreter / eager forward",
            t_interp / t_eager2,
            "x",
            "eager = 1.0",
        ),
        Figure(
            "attention graph size", float(len(graph.nodes)), "nodes", "torch.fx: same op counts"
        ),
    ]
