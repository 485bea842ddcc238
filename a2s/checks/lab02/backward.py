"""Grader of exercise 02.3: the backward pass over a given topological order.

The order comes from the grader's own Kahn's algorithm (so a wrong 02.2 does not fail
02.3). Every node's gradient, leaves and intermediates, is compared with torch.autograd in
float64 (``retain_grad``) on named graphs (a node used twice, a diamond) and random ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_close, fresh_rng, grader, plain, rng
from a2s.checks.graphs import kahn_order, random_program, run_on_torch, run_on_values
from minitorch.autograd.scalar import Value

__all__ = ["check_backward"]

_S = "minitorch.autograd.scalar:Value"
BLOCKS = (f"{_S}.backward", f"{_S}.topo_order", "minitorch.autograd.engine:backward")

_NAMED = {  # (program, what it catches)
    "y = x * x (x used twice by one node)": [("input", 1.5), ("mul", 0, 0)],
    "diamond: y = (x * w) * tanh(x)": [
        ("input", 0.7),
        ("input", -1.2),
        ("mul", 0, 1),
        ("tanh", 0),
        ("mul", 2, 3),
    ],
    "chain: y = tanh(tanh(3 x))": [("input", 0.4), ("scale", 0, 3.0), ("tanh", 1), ("tanh", 2)],
    "a neuron: tanh(w1 x1 + w2 x2 + b)": [
        ("input", 2.0),
        ("input", -3.0),
        ("input", 0.0),
        ("input", 1.0),
        ("input", 6.88),
        ("mul", 0, 2),
        ("mul", 1, 3),
        ("add", 5, 6),
        ("add", 7, 4),
        ("tanh", 8),
    ],
}


def _forward_order(root: Value, order: list[Value]) -> None:
    root.grad = 1.0
    for v in order:
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local * v.grad


def _assign(root: Value, order: list[Value]) -> None:
    root.grad = 1.0
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad = local * v.grad


def _no_chain(root: Value, order: list[Value]) -> None:
    root.grad = 1.0
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local


_WRONG = (  # known mistakes, run on a twin graph to name the one the student made
    (
        _forward_order,
        "You walked the order parents-first: walk it *reversed* (root first), so "
        "a node's gradient is complete before you pass it on to its parents.",
    ),
    (
        _assign,
        "A node used twice gets two contributions: accumulate with p.grad += ..., never "
        "p.grad = ... (the multivariable chain rule sums over paths).",
    ),
    (_no_chain, "Each parent gets local_grad * v.grad (the chain rule), not the local grad alone."),
)


def _kept_one_path(prog: list, got: list[float]) -> bool:
    """Whether some node used more than once holds a single use's contribution (local grad
    times its consumer's true gradient) instead of their sum: ``=`` in place of ``+=``, in
    whatever order the learner walked the graph."""
    nodes = run_on_values(prog)
    want = run_on_torch(prog)
    index = {id(v): i for i, v in enumerate(nodes)}
    uses: dict[int, list[float]] = {}
    for i, v in enumerate(nodes):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            if id(p) in index:
                uses.setdefault(index[id(p)], []).append(local * want[i])
    return any(
        len(parts) > 1
        and not np.isclose(got[i], want[i], rtol=1e-9, atol=1e-12)
        and any(np.isclose(got[i], part, rtol=1e-9, atol=1e-12) for part in parts)
        for i, parts in uses.items()
    )


def modelled_hint(prog: list, got: list[float]) -> str:
    """The message of the known backward mistake whose twin graph gets ``got``, else the rule."""
    if got[-1] != 1.0:
        return "The root's gradient must be seeded: dL/dL = 1 (set root.grad = 1.0 first)."
    for wrong, hint in _WRONG:
        twin = run_on_values(prog)
        wrong(twin[-1], kahn_order(twin[-1]))
        if np.allclose([v.grad for v in twin], got, rtol=1e-9, atol=1e-12):
            return hint
    if _kept_one_path(prog, got):
        return _WRONG[1][1]
    return (
        "Each parent gets local_grad * v.grad, added to what it already has "
        "(p.grad += local * v.grad), with v taken in reverse topological order."
    )


def _check_program(student: Callable[..., Any], prog: list, case: str) -> int:
    nodes = run_on_values(prog)
    root = nodes[-1]
    order = kahn_order(root)
    data = [v.data for v in nodes]
    want = run_on_torch(prog)
    out = student(root, order)
    if out is not None and not isinstance(out, (list, tuple, Value, float)):
        raise CheckFailure(f"[{case}] backward returns None (it fills v.grad); got {out!r}.")
    if [plain(v.data, what="v.data", case=case) for v in nodes] != data:
        raise CheckFailure(f"[{case}] backward changed some v.data: it must only write v.grad.")
    got = [plain(v.grad, what="v.grad", case=case) for v in nodes]
    assert_close(
        np.array(got, dtype=np.float64),
        np.array(want),
        case=case,
        rtol=1e-9,
        atol=1e-12,
        what="gradients of every node (dL/dv)",
        hint=lambda _got, _want: modelled_hint(prog, got),
    )
    return len(order)


@grader("02.3", blocks=BLOCKS, hand="object")
def check_backward(student) -> str:
    """Compare every node's gradient with torch.autograd on named and random graphs."""
    for case, prog in _NAMED.items():
        _check_program(student, prog, case)
    g, new, total = rng(23), fresh_rng("02.3"), 0
    for k in range(27):  # 24 random graphs, one of 10,000 ops, then 2 fresh ones
        gen = g if k < 25 else new
        n_ops = int(gen.integers(3, 300)) if k != 24 else 10_000
        prog = random_program(gen, int(gen.integers(1, 6)), n_ops, ("add", "mul", "tanh", "scale"))
        label = f"random graph {k} ({n_ops} ops)"
        total += _check_program(student, prog, fresh(label) if k >= 25 else label)
    return f"{len(_NAMED) + 27} graphs, {total:,} nodes: every grad = torch.autograd (float64)"
