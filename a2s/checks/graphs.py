"""Expression graphs for the autograd graders: random programs run three ways, and a
ground-truth topological order written here (Kahn's algorithm), not taken from minitorch.

A program is a list of instructions over earlier results, executed on reference ``Value`` s,
on float64 torch tensors (the ground truth for gradients), or on a student's node class:

    ("input", 0.3)   ("add", i, j)   ("mul", i, j)   ("tanh", i)   ("scale", i, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.core import CheckFailure
from minitorch.autograd.scalar import Value

__all__ = [
    "kahn_order",
    "order_problem",
    "random_program",
    "run_on_class",
    "run_on_torch",
    "run_on_values",
]

Instr = tuple[Any, ...]


def random_program(
    g: np.random.Generator, n_inputs: int, n_ops: int, ops: tuple[str, ...]
) -> list[Instr]:
    """Inputs, then ``n_ops`` random ops on earlier results; the last result is the root.

    Operands favour recent results (deep graphs) but reach back (shared nodes, diamonds);
    a result above 4 in magnitude goes through tanh, so values stay tame. The root adds up
    every result no op used, so the whole program is reachable from it.
    """
    prog: list[Instr] = [("input", float(v)) for v in g.uniform(-1.5, 1.5, n_inputs)]
    vals = [p[1] for p in prog]

    def pick() -> int:
        k = len(vals)
        return (
            int(k - 1 - min(k - 1, int(g.exponential(4.0))))
            if g.random() < 0.7
            else int(g.integers(0, k))
        )

    for _ in range(n_ops):
        op = ops[int(g.integers(0, len(ops)))]
        i, j = pick(), pick()
        if op == "add":
            prog.append(("add", i, j))
            vals.append(vals[i] + vals[j])
        elif op == "mul":
            prog.append(("mul", i, j))
            vals.append(vals[i] * vals[j])
        elif op == "scale":
            c = float(g.choice([-2.0, -0.5, 0.5, 3.0]))
            prog.append(("scale", i, c))
            vals.append(vals[i] * c)
        else:
            prog.append(("tanh", i))
            vals.append(math.tanh(vals[i]))
        if abs(vals[-1]) > 4.0:
            prog.append(("tanh", len(vals) - 1))
            vals.append(math.tanh(vals[-1]))
    # the root adds up every result nothing else used, so it depends on the whole graph
    used = {k for ins in prog[n_inputs:] for k in ins[1:] if isinstance(k, int)}
    unused = [k for k in range(len(prog)) if k not in used]
    acc = unused[-1]
    for k in reversed(unused[:-1]):
        prog.append(("add", acc, k))
        acc = len(prog) - 1
    return prog


def _run(prog: list[Instr], leaf: Callable[[float], Any], tanh: Callable[[Any], Any]) -> list:
    out: list[Any] = []
    for ins in prog:
        if ins[0] == "input":
            out.append(leaf(ins[1]))
        elif ins[0] == "add":
            out.append(out[ins[1]] + out[ins[2]])
        elif ins[0] == "mul":
            out.append(out[ins[1]] * out[ins[2]])
        elif ins[0] == "scale":
            out.append(out[ins[1]] * ins[2])
        else:
            out.append(tanh(out[ins[1]]))
    return out


def run_on_values(prog: list[Instr]) -> list[Value]:
    """Every result of ``prog`` as a reference ``Value`` (the last one is the root)."""
    return _run(prog, Value, lambda v: v.tanh())


def run_on_class(prog: list[Instr], cls: type) -> list[Any]:
    """Every result of ``prog`` built with a student's node class (add, mul, tanh only)."""
    return _run(prog, cls, lambda v: v.tanh())


def run_on_torch(prog: list[Instr]) -> list[float]:
    """d(root)/d(result) for every result of ``prog``, by torch.autograd in float64."""

    def leaf(x: float) -> torch.Tensor:
        return torch.tensor(x, dtype=torch.float64, requires_grad=True)

    ts = _run(prog, leaf, torch.tanh)
    for t in ts:
        if not t.is_leaf:
            t.retain_grad()
    ts[-1].backward()
    return [0.0 if t.grad is None else float(t.grad) for t in ts]


def kahn_order(root: Any) -> list[Any]:
    """Parents-first order of everything ``root`` depends on (Kahn's algorithm)."""
    nodes, stack, seen = [], [root], {id(root)}
    while stack:  # collect the reachable nodes
        v = stack.pop()
        nodes.append(v)
        for p in v.parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    waiting = {id(v): len({id(p) for p in v.parents}) for v in nodes}
    children: dict[int, list[Any]] = {id(v): [] for v in nodes}
    for v in nodes:
        for pid in {id(p) for p in v.parents}:
            children[pid].append(v)
    ready = [v for v in nodes if waiting[id(v)] == 0]
    order = []
    while ready:
        v = ready.pop()
        order.append(v)
        for c in children[id(v)]:
            waiting[id(c)] -= 1
            if waiting[id(c)] == 0:
                ready.append(c)
    return order


def order_problem(order: Any, root: Any, case: str) -> None:
    """Raise CheckFailure unless ``order`` holds each node reachable from ``root`` once,
    every parent before its child."""
    if not isinstance(order, (list, tuple)):
        raise CheckFailure(f"[{case}] return a list of nodes, got {type(order).__name__}.")
    want = kahn_order(root)
    pos: dict[int, int] = {}
    for k, v in enumerate(order):
        if id(v) in pos:
            raise CheckFailure(
                f"[{case}] a node appears twice in your order (positions {pos[id(v)]} and {k}). "
                "A node reached along two paths (a diamond, or x * x) must be visited once: "
                "keep a `visited` set."
            )
        pos[id(v)] = k
    missing = [v for v in want if id(v) not in pos]
    if missing or len(order) != len(want):
        raise CheckFailure(
            f"[{case}] your order has {len(order)} nodes; {len(want)} are reachable from the "
            f"root ({len(missing)} of them missing). Include every ancestor of the root and "
            "nothing else."
        )
    for v in want:
        for p in v.parents:
            if pos[id(p)] > pos[id(v)]:
                raise CheckFailure(
                    f"[{case}] node {pos[id(v)]} ({v.op or 'leaf'}) comes before its parent "
                    f"at position {pos[id(p)]} ({p.op or 'leaf'}). A topological order puts "
                    "every parent first: append a node only after all its parents are in."
                )
