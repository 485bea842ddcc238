"""Convolution and BatchNorm in the graph IR, and the pass that folds one into the other.

    g.op("conv2d", [x, w, b], stride=(1, 1), padding=(1, 1))
    g.op("batch_norm", [y, mean, var, gamma, beta], eps=1e-5)
    folded, changes = fold_conv_bn(graph)      # conv -> bn pairs on constants: one conv

At inference BatchNorm is an affine map per channel with frozen statistics,
$y = \\gamma (z - \\mu) / \\sqrt{\\sigma^2 + \\epsilon} + \\beta$, and it follows a
convolution $z = W * x + b$, which is linear in $W$ and $b$. So with
$s = \\gamma / \\sqrt{\\sigma^2 + \\epsilon}$ per output channel the pair is one convolution with
$W' = s W$ and $b' = s (b - \\mu) + \\beta$: one kernel instead of two, and the normalised
activations are never written. Inference compilers (TensorRT, ONNX Runtime, TVM,
``torch.fx``'s ``fuse`` example) do this fold; it needs the weights and statistics as
constants (a frozen graph) and a conv whose only user is the BatchNorm.

The kernels (NCHW, groups 1, any stride and zero padding) are numpy: the convolution as
sliding windows and one ``einsum``. They register themselves with the interpreter and the
shape rules, as lab 14's ``fused`` op does.

Lab: 14_graph_passes_memory_planning, 31_pytorch_backend
Paper: Ioffe & Szegedy 2015, Batch Normalization (the inference-time affine form)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from minitorch.compiler import interp, ir
from minitorch.compiler.ir import Graph

__all__ = ["batch_norm", "conv2d", "fold_conv_bn"]


def conv2d(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: Sequence[int], padding: Sequence[int]
) -> np.ndarray:
    """``x`` (N, C, H, W) convolved with ``w`` (K, C, R, S) plus ``b`` (K,); zero padding."""
    (sh, sw), (ph, pw) = stride, padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    win = win[:, :, ::sh, ::sw]  # (N, C, Ho, Wo, R, S)
    out = np.einsum("nchwrs,kcrs->nkhw", win, w, optimize=True)
    return (out + b.reshape(1, -1, 1, 1)).astype(np.result_type(x, w))


def batch_norm(
    x: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    eps: float,
) -> np.ndarray:
    """Inference BatchNorm over channel axis 1 with frozen statistics."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma / np.sqrt(var + eps)
    return ((x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)).astype(x.dtype)


def _conv_shape(shapes: Sequence[tuple[int, ...]], attrs: dict[str, Any]) -> tuple[int, ...]:
    (n, c, h, w), (k, c2, r, s) = shapes[0], shapes[1]
    if c != c2:
        raise ValueError(f"conv2d: input has {c} channels, weight expects {c2}")
    (sh, sw), (ph, pw) = attrs["stride"], attrs["padding"]
    return (n, k, (h + 2 * ph - r) // sh + 1, (w + 2 * pw - s) // sw + 1)


ir.SHAPE_RULES["conv2d"] = _conv_shape
ir.SHAPE_RULES["batch_norm"] = lambda shapes, attrs: tuple(shapes[0])
interp.EXTENSIONS["conv2d"] = lambda a, attrs: conv2d(
    a[0], a[1], a[2], attrs["stride"], attrs["padding"]
)
interp.EXTENSIONS["batch_norm"] = lambda a, attrs: batch_norm(
    a[0], a[1], a[2], a[3], a[4], attrs["eps"]
)


def fold_conv_bn(graph: Graph) -> tuple[Graph, int]:
    """Every ``batch_norm(conv2d(x, W, b), ...)`` on constants folded into one ``conv2d``."""
    nodes = list(graph.nodes)
    changes = 0
    for bn in [n for n in graph.nodes if n.op == "batch_norm"]:
        conv = graph.node(bn.inputs[0])
        consts = [graph.node(i) for i in (*conv.inputs[1:], *bn.inputs[1:])]
        if conv.op != "conv2d" or any(c.op != "constant" for c in consts):
            continue
        if len(graph.users(conv.name)) != 1 or conv.name in graph.outputs:
            continue
        w, b, mean, var, gamma, beta = (c.value for c in consts)
        assert w is not None and b is not None and mean is not None
        scale = gamma / np.sqrt(var + bn.attr("eps"))
        w2 = (w * scale.reshape(-1, 1, 1, 1)).astype(w.dtype)
        b2 = ((b - mean) * scale + beta).astype(b.dtype)
        names = {n.name for n in nodes}
        wn = next(f"wfold{i}" for i in range(len(names) + 1) if f"wfold{i}" not in names)
        bn_ = next(f"bfold{i}" for i in range(len(names) + 1) if f"bfold{i}" not in names)
        new_w = ir.Node(wn, "constant", (), (), w2.shape, str(w2.dtype), w2)
        new_b = ir.Node(bn_, "constant", (), (), b2.shape, str(b2.dtype), b2)
        folded = replace(conv, name=bn.name, inputs=(conv.inputs[0], wn, bn_))
        at = nodes.index(conv)
        nodes = [n for n in nodes if n.name not in (conv.name, bn.name)]
        nodes[at:at] = [new_w, new_b, folded]
        changes += 1
    return Graph(nodes, graph.outputs), changes
