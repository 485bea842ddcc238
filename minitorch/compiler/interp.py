"""Run a graph on numpy: one kernel per op, the same numpy calls as the eager Tensor ops.

    outs = run(graph, x)           # a list of arrays, one per graph output

Each kernel repeats exactly what ``minitorch.autograd``'s forward computes (a scalar operand
is a 0-d constant in the other operand's dtype, ``mean`` is ``sum / count`` cast back,
``max`` reduces with numpy's max), so the interpreter matches eager execution bit for bit.
``evaluate`` is the dispatch: a pass such as lab 14's constant folding reuses it.

Lab: 13_graph_capture_ir
Paper: Reed et al. 2022, torch.fx (its ``Interpreter`` runs a graph node by node)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.compiler.ir import Graph

__all__ = ["EXTENSIONS", "evaluate", "run"]

Kernel = Callable[[Sequence[np.ndarray], dict[str, Any]], np.ndarray]
EXTENSIONS: dict[str, Kernel] = {}


def evaluate(op: str, args: Sequence[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The value of ``op(*args, **attrs)``, computed as the eager Tensor op computes it."""
    if op in EXTENSIONS:  # ops added by a later module (lab 14's fused kernels)
        return EXTENSIONS[op](args, attrs)
    a = args[0]
    b = args[-1]
    simple = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    if op in simple:
        return simple[op](a, b)
    if op == "pow":
        return a**b
    if op == "neg":
        return -a
    if op == "exp":
        return np.exp(a)
    if op == "log":
        return np.log(a)
    if op == "tanh":
        return np.tanh(a)
    if op == "sigmoid":
        return 0.5 * (1 + np.tanh(0.5 * a))
    if op == "relu":
        return np.maximum(a, 0)
    if op == "matmul":
        return a @ b
    axes, keep = attrs.get("axes", ()), bool(attrs.get("keepdims", False))
    if op == "sum":
        return np.asarray(a.sum(axis=axes, keepdims=keep))
    if op == "mean":
        count = int(np.prod([a.shape[i] for i in axes]))
        with np.errstate(invalid="ignore"):
            return np.asarray(np.asarray(a.sum(axis=axes, keepdims=keep)) / count, dtype=a.dtype)
    if op == "max":
        return np.asarray(a.max(axis=axes, keepdims=keep))
    if op == "reshape":
        return a.reshape(attrs["shape"])
    if op == "transpose":
        return np.swapaxes(a, attrs["dim0"], attrs["dim1"])
    if op == "permute":
        return a.transpose(attrs["dims"])
    raise ValueError(f"no kernel for op {op!r}")


def run(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
    """Evaluate ``graph`` on ``inputs`` (one per placeholder, in order); one array per output."""
    env: dict[str, np.ndarray] = {}
    feed = iter(inputs)
    for n in graph.nodes:
        if n.op == "placeholder":
            env[n.name] = np.asarray(next(feed))
        elif n.op == "constant":
            env[n.name] = np.asarray(n.value)
        else:
            env[n.name] = evaluate(n.op, [env[i] for i in n.inputs], dict(n.attrs))
    return [env[o] for o in graph.outputs]
