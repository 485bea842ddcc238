"""Lab 03 experiments: the tensor engine's per-op overhead and im2col conv against torch.

1. Per-op overhead: 100 elementwise ops on 4x4 tensors, forward + backward. At this size
   the arithmetic is free, so the time is pure framework cost (Python, dispatch, graph).
2. conv2d by im2col, forward + backward on a small CNN layer, against torch's kernels.

Lab: 03_autograd_tensor
"""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.autograd import Tensor, conv2d

N_OPS = 100


def _chain(x: Any, w: Any) -> Any:
    """N_OPS elementwise ops: (h * w + x).tanh() repeated, 3 ops per round, plus a sum."""
    h = x
    for _ in range(N_OPS // 3):
        h = (h * w + x).tanh()
    return h.sum()


@register
def per_op_overhead() -> list[Figure]:
    import torch

    rng = np.random.default_rng(0)
    xs, ws = (
        rng.standard_normal((4, 4)).astype(np.float32),
        rng.standard_normal((4, 4)).astype(np.float32),
    )
    x, w = Tensor(xs, requires_grad=True), Tensor(ws, requires_grad=True)
    xt, wt = torch.from_numpy(xs).requires_grad_(True), torch.from_numpy(ws).requires_grad_(True)

    def ours() -> None:
        _chain(x, w).backward()

    def theirs() -> None:
        _chain(xt, wt).backward()

    with one_thread():
        a, b = alternate(ours, theirs, repeats=15, warmup=2)
    return [
        Figure("tensor engine per op (4x4, fwd+bwd)", a / N_OPS * 1e6, "us", "ours"),
        Figure("torch per op (4x4, fwd+bwd)", b / N_OPS * 1e6, "us", "torch eager"),
        Figure("per-op overhead, ours / torch", a / b, "x", "torch eager = 1.0"),
    ]


@register
def conv2d_vs_torch() -> list[Figure]:
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((32, 16, 32, 32)).astype(np.float32)  # (N, C, H, W)
    ws = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)  # (O, C, k, k)
    x, w = Tensor(xs, requires_grad=True), Tensor(ws, requires_grad=True)
    xt, wt = torch.from_numpy(xs).requires_grad_(True), torch.from_numpy(ws).requires_grad_(True)

    def ours() -> None:
        conv2d(x, w, padding=1).sum().backward()

    def theirs() -> None:
        F.conv2d(xt, wt, padding=1).sum().backward()

    with one_thread():
        a, b = alternate(ours, theirs, repeats=5)
    return [
        Figure("conv2d 3x3 fwd+bwd, (32,16,32,32)->32 ch", a * 1e3, "ms", "ours, im2col"),
        Figure("conv2d 3x3 fwd+bwd, torch", b * 1e3, "ms", "torch eager"),
        Figure("conv2d im2col / torch", a / b, "x", "torch eager = 1.0"),
    ]
