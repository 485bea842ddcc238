"""Grader of exercise 02.5: backward functions that leave no reference cycles.

The student's node class keeps micrograd's interface (a ``_backward`` function per node) but
the function receives ``out.grad`` as an argument instead of capturing ``out``. Checked:
values and gradients against torch float64, then, with the cyclic collector paused, that a
dropped graph leaves nothing for ``gc.collect()`` (built with and without a backward pass).
When it does, the message shows the reference path from a node back to itself.
"""

from __future__ import annotations

import functools
import gc
import tracemalloc
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_close, fresh_rng, grader, guarded, plain, rng
from a2s.checks.graphs import Instr, random_program, run_on_class, run_on_torch
from a2s.checks.lab02.backward import modelled_hint as backward_hint

__all__ = ["check_no_cycles"]

BLOCKS = ("minitorch.autograd.scalar:Value", "minitorch.autograd.engine:backward")
OPS = ("add", "mul", "tanh")
_NAMED: dict[str, list[Instr]] = {
    "a * b": [("input", 1.5), ("input", -2.0), ("mul", 0, 1)],
    "a + b": [("input", 1.5), ("input", -2.0), ("add", 0, 1)],
    "tanh(a)": [("input", 0.8), ("tanh", 0)],
    "x * x + tanh(x)": [("input", 0.6), ("mul", 0, 0), ("tanh", 0), ("add", 1, 2)],
}


def _edges(obj: Any) -> Iterator[tuple[str, Any]]:
    """Outgoing references worth showing: attributes, closure variables, items."""
    if isinstance(obj, types.FunctionType):
        code = obj.__code__
        for name, cell in zip(code.co_freevars, obj.__closure__ or (), strict=False):
            try:
                yield f"function {code.co_name}, closure variable '{name}'", cell.cell_contents
            except ValueError:  # an empty cell
                continue
    elif hasattr(obj, "__self__") and hasattr(obj, "__func__"):  # a bound method
        yield f"bound method {obj.__func__.__name__}, self", obj.__self__
    elif isinstance(obj, (tuple, list)):
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))
    elif isinstance(obj, dict):
        yield from ((f"[{k!r}]", v) for k, v in obj.items())
    elif not isinstance(obj, type):
        yield from ((f".{k}", v) for k, v in getattr(obj, "__dict__", {}).items())
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                yield f".{name}", getattr(obj, name)
        if isinstance(obj, functools.partial):
            yield "partial.func", obj.func
            yield "partial.args", obj.args


def _cycle_path(start: Any, max_depth: int = 6) -> str | None:
    """Breadth-first search from ``start`` back to itself; the path, or None."""
    frontier: list[tuple[Any, list[str]]] = [(start, [])]
    seen = {id(start)}
    for _ in range(max_depth):
        nxt = []
        for obj, path in frontier:
            for label, ref in _edges(obj):
                if ref is start:
                    return " -> ".join(["out", *path, label, "out"])
                if id(ref) not in seen and not isinstance(ref, (int, float, str, type)):
                    seen.add(id(ref))
                    nxt.append((ref, [*path, label]))
        frontier = nxt
    return None


def _cyclic_garbage(build: Callable[[], None]) -> int:
    """Objects ``gc.collect()`` finds after ``build`` ran and dropped its graph (gc paused)."""
    was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        build()
        return gc.collect()
    finally:
        if was_on:
            gc.enable()


def _values_and_grads(cls: type, guard: Callable[..., Any], prog: list, case: str) -> None:
    def run() -> tuple[list[float], list[float]]:
        nodes = run_on_class(prog, cls)
        nodes[-1].backward()
        return [float(v.data) for v in nodes], [float(v.grad) for v in nodes]

    data, grads = plain(guard(run), what="values and gradients", case=case)
    want = np.array(run_on_torch(prog))
    ref = [v.data for v in run_on_class(prog, _FloatNode)]
    assert_close(np.array(data), np.array(ref), case=case, rtol=1e-12, atol=1e-12, what="values")
    assert_close(
        np.array(grads),
        want,
        case=case,
        rtol=1e-9,
        atol=1e-12,
        what="gradients",
        hint=lambda got, _want: backward_hint(prog, [float(g) for g in got]),
    )


class _FloatNode:
    """Plain floats with the same op interface: the forward values, computed independently."""

    def __init__(self, data: float) -> None:
        self.data = data

    def __add__(self, o: _FloatNode) -> _FloatNode:
        return _FloatNode(self.data + o.data)

    def __mul__(self, o: _FloatNode) -> _FloatNode:
        return _FloatNode(self.data * o.data)

    def tanh(self) -> _FloatNode:
        return _FloatNode(float(np.tanh(self.data)))


@grader("02.5", blocks=BLOCKS, hand="budget")
def check_no_cycles(student) -> str:
    """Values and grads vs torch, then zero cyclic garbage from a dropped 3,000-node graph."""
    cls = student.fn
    if not isinstance(cls, type):
        raise CheckFailure("Exercise 02.5: pass your class itself, e.g. check_no_cycles(FnValue).")

    def guard(fn: Callable[..., Any], *args: Any) -> Any:
        return guarded(fn, student.exercise, student.blocks, student.forbid)(*args)

    for case, prog in _NAMED.items():
        _values_and_grads(cls, guard, prog, case)
    g = rng(25)
    for k in range(10):
        prog = random_program(g, int(g.integers(1, 6)), int(g.integers(3, 200)), OPS)
        _values_and_grads(cls, guard, prog, f"random graph {k}")
    new = fresh_rng("02.5")
    for k in range(2):
        prog = random_program(new, int(new.integers(1, 6)), int(new.integers(3, 200)), OPS)
        _values_and_grads(cls, guard, prog, fresh(f"graph {k}"))

    big = random_program(g, 50, 3000, OPS)
    for backward in (True, False):

        def build(backward: bool = backward) -> None:
            nodes = run_on_class(big, cls)
            if backward:
                nodes[-1].backward()

        found = _cyclic_garbage(functools.partial(guard, build))
        if found:
            outs = guard(lambda: [(a := cls(1.5)) * (b := cls(-2.0)), a + b, a.tanh()])
            paths = [p for p in map(_cycle_path, outs) if p]
            path = paths[0] if paths else "(no short path found)"
            raise CheckFailure(
                f"[{len(big):,}-node graph, {'after' if backward else 'without'} backward] "
                f"gc.collect() found {found:,} objects in reference cycles after the graph was "
                f"dropped. The cycle: {path}. A backward function that captures `out` makes "
                "every node reachable from itself, so reference counting never frees it and "
                "the cyclic collector has to walk every node. Take the output gradient as the "
                "argument (the engine calls v._backward(v.grad)) and capture only the inputs."
            )
    was_tracing = tracemalloc.is_tracing()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        nodes = guard(run_on_class, big, cls)
        per_node = (tracemalloc.get_traced_memory()[0] - before) / len(nodes)
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return (
        f"16 graphs (2 fresh) match torch; a {len(big):,}-node graph leaves 0 cyclic objects; "
        + (f"{per_node:,.0f} bytes/node")
    )
