"""Grader of exercise 14.4: numpy source of a fused kernel, compiled with ``exec``.

For each fusion group (found by ``minitorch.compiler.fusion.groups``, as the lab explains) the
student returns the source of ``def kernel(a0, a1, ...)``; the grader compiles it, runs it
guarded (no torch, no reference, inside the kernel too) on the values the unfused graph
computes, and requires: exactly the group's external inputs as arguments (its intermediates
never leave the kernel), the output bit-identical to the unfused graph's, and the inputs left
untouched. Ground truth: the reference interpreter on the unfused graph.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import (
    assert_bits_equal,
    assert_true,
    fresh_rng,
    grader,
    guarded,
    plain,
    rng,
)
from a2s.checks.lab14._truth import random_graph
from minitorch.compiler import capture, interp, models, passes
from minitorch.compiler.fusion import bytes_moved, fuse, groups
from minitorch.compiler.ir import Graph

__all__ = ["check_kernel_source"]

_BLOCKS = (
    "minitorch.compiler.fusion:kernel_source",
    "minitorch.compiler.fusion:compile_kernel",
    "minitorch.compiler.fusion:fuse",
    "minitorch.compiler.interp:evaluate",
    "minitorch.compiler.interp:run",
)
_ARGS = (
    "The kernel's arguments must be exactly the group's external inputs, in order of first "
    "use: values computed inside the group stay inside the kernel (that is the point of fusion)."
)
_BITS = (
    "The fused kernel changed the result: compute each member with the same numpy call, in the "
    "same order, as the interpreter (sigmoid is 0.5 * (1 + tanh(0.5 x)), relu np.maximum(x, 0)); "
    "a temporary reused with out= must be dead (no later member reads it)."
)
_INPUTS = (
    "The kernel wrote into one of its inputs (out= on an argument): only temporaries may be reused."
)


def _external(graph: Graph, names: list[str]) -> list[str]:
    inside, ext = set(names), []
    for m in names:
        for i in graph.node(m).inputs:
            if i not in inside and i not in ext:
                ext.append(i)
    return ext


def _values(graph: Graph, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
    every = Graph(list(graph.nodes), tuple(n.name for n in graph.nodes))
    return dict(zip(every.outputs, interp.run(every, *xs), strict=True))


def _one(
    student: Callable[..., Any], graph: Graph, case: str, gen: np.random.Generator
) -> tuple[int, int]:
    xs = [
        gen.standard_normal(n.shape).astype(np.float32)
        for n in graph.nodes
        if n.op == "placeholder"
    ]
    env = _values(graph, xs)
    found = groups(graph)
    assert_true(bool(found), f"[{case}] (grader) no group to fuse")
    for names in found:
        where = f"{case}, group {'+'.join(graph.node(m).op for m in names)}"
        src = plain(
            student(copy.deepcopy(graph), list(names)), what="the kernel source", case=where
        )
        assert_true(isinstance(src, str), f"[{where}] return the source as a str")
        scope: dict[str, Any] = {"np": np}
        try:
            exec(compile(src, "<your fused kernel>", "exec"), scope)
        except SyntaxError as exc:
            assert_true(False, f"[{where}] the source does not compile: {exc}\n{src}")
        kernel: Any = scope.get("kernel")
        assert_true(callable(kernel), f"[{where}] the source must define `def kernel(...)`")
        ext = _external(graph, names)
        arity = len(inspect.signature(kernel).parameters)
        assert_true(
            arity == len(ext),
            f"[{where}] kernel takes {arity} arguments, the group has {len(ext)} external "
            f"inputs. {_ARGS}",
        )
        args = [env[i].copy() for i in ext]
        out = plain(guarded(kernel, "14.4", _BLOCKS)(*args), what="the kernel's output", case=where)
        for a, i in zip(args, ext, strict=True):
            assert_true(np.array_equal(a, env[i], equal_nan=True), f"[{where}] {_INPUTS}")
        want = env[names[-1]]
        assert_true(
            np.shape(out) == want.shape and np.asarray(out).dtype == want.dtype,
            f"[{where}] kernel returned {np.shape(out)} {np.asarray(out).dtype}, "
            f"expected {want.shape} {want.dtype}",
        )
        assert_bits_equal(out, want, case=where, what="fused vs unfused", hint=_BITS)
    return len(found), sum(len(m) for m in found)


def _cleaned(fn: Callable[..., Any], d: int, n: int) -> Graph:
    g = capture.trace(fn, [np.zeros((n, d), np.float32)])
    return passes.PassManager([passes.fold_constants, passes.simplify, passes.cse, passes.dce]).run(
        g
    )[0]


@grader("14.4", blocks=_BLOCKS, hand="object")
def check_kernel_source(kernel_source: Callable[..., Any]) -> str:
    """Exercise 14.4: ``kernel_source(graph, names) -> str`` of a bit-exact fused kernel."""
    gen, kernels, ops = rng(1404), 0, 0
    graphs = [
        ("MLP 8-16-16-4 (sigmoid)", _cleaned(models.mlp([8, 16, 16, 4], act="sigmoid")[0], 8, 5)),
        ("MLP 8-16-4 (relu)", _cleaned(models.mlp([8, 16, 4])[0], 8, 5)),
        ("GELU + LayerNorm", _cleaned(models.gelu_layernorm(16)[0], 16, 5)),
        ("attention block", _cleaned(models.attention_block(16, 2)[0], 16, 5)),
    ]
    new = fresh_rng("14.4")
    graphs += [(fresh(f"random graph {i}"), passes.dce(random_graph(new))[0]) for i in range(2)]
    before = after = 0
    for label, g in graphs:
        if not groups(g):
            continue
        k, o = _one(kernel_source, g, label, gen if "fresh" not in label else new)
        kernels, ops = kernels + k, ops + o
        before, after = before + bytes_moved(g), after + bytes_moved(fuse(g))
    return (
        f"{kernels} fused kernels ({ops} ops) bit-exact with the unfused graphs; bytes moved "
        f"{before:,} -> {after:,} ({before / after:.2f}x less)"
    )
