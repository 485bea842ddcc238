"""A course IR graph sent back as plain values by a learner's process, validated and rebuilt.

A child of ``harness.run_apart`` can return only plain values, so a learner's IR graph (lab 13's
``Graph``) crosses as rows ``(name, op, inputs, attrs, shape, dtype, value)``. The grader
rebuilds it here: every node reads earlier values only, has an allowed op (shapes inferred
again by ``Graph.op``), and a ``fused`` node's generated source (lab 14's fusion, compiled with
``exec`` when run) is parsed first and allowed only numpy ufunc calls on names and numbers, so
no crafted source runs in the grader's process. Used by lab 31's compile-backend grader (31.5).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

from a2s.checks.errors import CheckFailure

__all__ = ["fused_source_ok", "rebuild_graph"]

_UFUNCS = {"add", "subtract", "multiply", "divide", "power", "negative", "exp", "log", "tanh"}
_UFUNCS |= {"matmul", "maximum"}


def fused_source_ok(src: Any) -> bool:
    """A fused kernel's source as kit.fuse (lab 14) writes it: ``def kernel(a0, ...)``,
    assignments of numpy ufunc calls on names and numbers (and sigmoid's
    ``0.5 * (1 + np.tanh(0.5 * a))``), ``out=`` only into the kernel's own temporaries, at most
    one ``np.matmul``, on the kernel's inputs (no prologue), a return."""
    try:
        tree = ast.parse(str(src))
    except SyntaxError:
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return False
    fn = tree.body[0]
    if fn.decorator_list or fn.args.defaults or fn.name != "kernel":
        return False
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
        return False
    params, temps, matmuls = {a.arg for a in fn.args.args}, set[str](), 0

    def expr(e: ast.expr) -> bool:
        if isinstance(e, ast.Name):  # the kernel's inputs and temporaries, nothing global
            return e.id in params or e.id in temps
        if isinstance(e, ast.Constant):
            return type(e.value) in (int, float)
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, (ast.Add, ast.Mult)) and expr(e.left) and expr(e.right)
        if isinstance(e, ast.Call):
            f: Any = e.func
            np_call = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            return (
                np_call
                and f.value.id == "np"
                and f.attr in _UFUNCS
                and all(expr(a) for a in e.args)
                and all(k.arg == "out" and isinstance(k.value, ast.Name) for k in e.keywords)
            )
        return False

    for st in fn.body[:-1]:
        if not isinstance(st, ast.Assign) or len(st.targets) != 1:
            return False
        if not (isinstance(st.targets[0], ast.Name) and expr(st.value)):
            return False
        calls = [c for c in ast.walk(st.value) if isinstance(c, ast.Call)]
        outs = {kw.value.id for c in calls for kw in c.keywords if isinstance(kw.value, ast.Name)}
        if not outs <= temps:  # kit.fuse writes only into its own dead temporaries
            return False
        mms = [c for c in calls if getattr(c.func, "attr", "") == "matmul"]
        matmuls += len(mms)
        if matmuls > 1 or any(getattr(a, "id", "") not in params for c in mms for a in c.args):
            return False  # one matmul per kernel, on the kernel's inputs (no prologue)
        if st.targets[0].id in params:  # type: ignore[attr-defined]
            return False
        temps.add(st.targets[0].id)  # type: ignore[attr-defined]
    last = fn.body[-1]
    return isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and expr(last.value)


def rebuild_graph(label: str, got: Any, ops: Sequence[str]) -> Any:
    """The learner's graph, validated and rebuilt in the grader's process."""
    from minitorch.compiler.ir import Graph, Node

    if not isinstance(got, tuple):
        raise CheckFailure(f"[{label}] lower_aten returned {got}, not the IR graph (kit.graph()).")
    rows, outputs = got
    g, seen = Graph(), set()
    for name, op, inputs, attrs, shape, dtype, value in rows:
        if any(i not in seen for i in inputs) or name in seen:
            raise CheckFailure(f"[{label}] node {name!r} reads a value not defined before it.")
        if op == "placeholder":
            g.placeholder(name, shape, dtype)
        elif op == "constant":
            g.constant(np.asarray(value), name=name)
        elif op == "fused":
            a = dict(attrs)
            if not fused_source_ok(a.get("source")):
                raise CheckFailure(f"[{label}] fused node {name!r} is not one kit.fuse made.")
            g.nodes.append(Node(name, "fused", tuple(inputs), tuple(attrs), tuple(shape), dtype))
        elif op in ops:
            g.op(op, list(inputs), name=name, **dict(attrs))
        else:
            raise CheckFailure(
                f"[{label}] node {name!r} is {op!r}: the chip runs the course IR's ops "
                f"({', '.join(ops)}) and kit.fuse's kernels only."
            )
        seen.add(name)
    if not outputs or any(o not in seen for o in outputs):
        raise CheckFailure(f"[{label}] the graph's outputs {outputs} are not all its values.")
    g.outputs = tuple(outputs)
    return g
