"""Lab 13 tried as a class would: answers written differently, usual mistakes, cheats.

Wrong answers are the ones students write on the way (a verifier that accepts a use before
its definition, left-aligned broadcasting, a constant per read of a weight, a ReLU that gives
-0.0, a float64 mean, fx's names not translated); cheats are the reference (``ir.verify``,
``capture.trace``, ``interp.run``, ``ir.op_counts``), a clone of it, the grader's own expected
graphs and fx counts, numpy's broadcasting helper, the eager ops, torch, and values that decide
their own equality.
"""

from __future__ import annotations

import types
from collections import Counter

import numpy as np
import pytest

from a2s.checks import lab13
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab13 import _truth
from minitorch.autograd import Tensor
from minitorch.compiler import capture, fusion, interp, ir
from minitorch.compiler.ir import Graph, Node
from tests.checks.test_lab13 import (
    MyProxy,
    MyTracer,
    _fx_with_counters,
    _infer_shape_lists,
    _run_with_other_idioms,
    compare_with_fx,
    infer_shape,
    run,
    textbook_sigmoid,
    verify,
    verify_any_order,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab13


# ------------------------------------------------------------------------------------ 13.1
def verify_positions(graph):
    """Positions first (first definition of each name), then one check per node."""
    first = {}
    problems = []
    for k, n in enumerate(graph.nodes):
        if n.name in first:
            problems.append(f"{n.name} redefined")
        first.setdefault(n.name, k)
    for k, n in enumerate(graph.nodes):
        bad = [i for i in n.inputs if first.get(i, k) >= k]
        problems += [f"{n.name} reads {i} too early" for i in bad]
        if bad or n.op in ("placeholder", "constant"):
            continue
        ins = [graph.nodes[first[i]] for i in n.inputs]
        try:
            shape = ir.infer_shape(n.op, [m.shape for m in ins], dict(n.attrs))
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if (
            tuple(shape) != tuple(n.shape)
            or str(np.result_type(*[m.dtype for m in ins])) != n.dtype
        ):
            problems.append(f"{n.name} has the wrong type")
    return problems + [o for o in graph.outputs if o not in first]


def _drop(word):
    return lambda graph: [p for p in verify(graph) if word not in p]


def verify_no_dtype(graph):
    """Shapes compared, dtypes never."""
    out = []
    for p in verify(graph):
        if (
            "stated" in p
            and p.split("stated ")[1].split(")")[0] == p.split("op gives ")[1].split(")")[0]
        ):
            continue
        out.append(p)
    return out


class AlwaysEmpty(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


def verify_clone(graph):
    clone = types.FunctionType(ir.verify.__code__, ir.verify.__globals__)
    return clone(graph)


def verify_torch(graph):
    import torch

    torch.tensor([len(graph.nodes)])  # counting with a tensor
    return verify(graph)


ATTEMPTS = [
    honest("13.1", "positions first", lambda: lab13.check_verify(verify_positions)),
    honest("13.1", "one pass, dict of definitions", lambda: lab13.check_verify(verify)),
    wrong(
        "13.1",
        "no SSA check",
        lambda: lab13.check_verify(_drop("twice")),
        match="defined exactly once",
    ),
    wrong(
        "13.1",
        "a use anywhere counts",
        lambda: lab13.check_verify(verify_any_order),
        match="defined only \\*later\\*",
    ),
    wrong(
        "13.1",
        "outputs never checked",
        lambda: lab13.check_verify(_drop("output")),
        match="outputs must name defined values",
    ),
    wrong(
        "13.1",
        "dtypes never compared",
        lambda: lab13.check_verify(verify_no_dtype),
        match="stated dtype",
    ),
    wrong(
        "13.1",
        "flags every graph",
        lambda: lab13.check_verify(lambda g: ["looks odd"]),
        match="well-formed graph was rejected",
    ),
    cheat(
        "13.1",
        "calls ir.verify",
        lambda: lab13.check_verify(lambda g: ir.verify(g)),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.1",
        "a clone of ir.verify",
        lambda: lab13.check_verify(verify_clone),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.1",
        "a list that equals anything",
        lambda: lab13.check_verify(lambda g: AlwaysEmpty()),
        match="AlwaysEmpty",
    ),
    cheat("13.1", "torch.fx", lambda: lab13.check_verify(verify_torch), error=ForbiddenCallError),
]


# ------------------------------------------------------------------------------------ 13.2
def shape_recursive(op, shapes, attrs):
    """Broadcasting by recursion on the last axis."""

    def bc(a, b):
        if not a or not b:
            return tuple(a) or tuple(b)
        x, y = a[-1], b[-1]
        if x != y and 1 not in (x, y):
            raise ValueError(f"{x} vs {y}")
        return (*bc(a[:-1], b[:-1]), y if x == 1 else x)

    if op == "matmul":
        a, b = shapes
        if min(len(a), len(b)) < 2 or a[-1] != b[-2]:
            raise ValueError("matmul")
        return (*bc(tuple(a[:-2]), tuple(b[:-2])), a[-2], b[-1])
    if op in ("add", "sub", "mul", "div", "pow"):
        return bc(tuple(shapes[0]), tuple(shapes[1]))
    return infer_shape(op, shapes, attrs)


def shape_left(op, shapes, attrs):
    if op in ("add", "sub", "mul", "div", "pow"):
        a, b = shapes
        n = max(len(a), len(b))
        return infer_shape(op, [tuple(a) + (1,) * (n - len(a)), tuple(b) + (1,) * (n - len(b))], {})
    return infer_shape(op, shapes, attrs)


def shape_no_batch_broadcast(op, shapes, attrs):
    if op == "matmul":
        a, b = shapes
        if min(len(a), len(b)) < 2 or a[-1] != b[-2]:
            raise ValueError("matmul")
        return (*max(a[:-2], b[:-2], key=len), a[-2], b[-1])  # the longer batch, not broadcast
    return infer_shape(op, shapes, attrs)


def shape_keepdims_ignored(op, shapes, attrs):
    if op in ("sum", "mean", "max"):
        return tuple(n for i, n in enumerate(shapes[0]) if i not in attrs["axes"])
    return infer_shape(op, shapes, attrs)


def shape_reshape_unchecked(op, shapes, attrs):
    if op == "reshape":
        return tuple(attrs["shape"])
    return infer_shape(op, shapes, attrs)


def shape_numpy(op, shapes, attrs):
    if op in ("add", "sub", "mul", "div", "pow"):
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise
    return infer_shape(op, shapes, attrs)


def shape_memorised(op, shapes, attrs):
    table = {("sub", ((2, 1, 3), (5, 1))): (2, 5, 3), ("add", ((4, 3), (3,))): (4, 3)}
    key = (op, tuple(tuple(s) for s in shapes))
    return table.get(key, tuple(shapes[0]))


ATTEMPTS += [
    honest("13.2", "recursive broadcasting", lambda: lab13.check_infer_shape(shape_recursive)),
    honest("13.2", "lists, zip, math.prod", lambda: lab13.check_infer_shape(_infer_shape_lists)),
    wrong(
        "13.2",
        "left-aligned broadcasting",
        lambda: lab13.check_infer_shape(shape_left),
        match="on the \\*right\\*",
    ),
    wrong(
        "13.2",
        "batch axes not broadcast",
        lambda: lab13.check_infer_shape(shape_no_batch_broadcast),
        match="batch axes broadcast",
    ),
    wrong(
        "13.2",
        "keepdims ignored",
        lambda: lab13.check_infer_shape(shape_keepdims_ignored),
        match="keeps them as size 1",
    ),
    wrong(
        "13.2",
        "reshape count unchecked",
        lambda: lab13.check_infer_shape(shape_reshape_unchecked),
        match="element count",
    ),
    cheat(
        "13.2",
        "calls ir.infer_shape",
        lambda: lab13.check_infer_shape(lambda op, s, a: ir.infer_shape(op, s, a)),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.2",
        "calls ir.broadcast_shape",
        lambda: lab13.check_infer_shape(
            lambda op, s, a: ir.broadcast_shape(*s) if op == "add" else infer_shape(op, s, a)
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.2",
        "np.broadcast_shapes",
        lambda: lab13.check_infer_shape(shape_numpy),
        error=ForbiddenCallError,
    ),
    cheat(
        "13.2",
        "a memorised table",
        lambda: lab13.check_infer_shape(shape_memorised),
        match="expected|illegal",
    ),
    cheat(
        "13.2",
        "ints that equal anything",
        lambda: lab13.check_infer_shape(lambda op, s, a: tuple(always_equal(1) for _ in range(4))),
    ),
]


# ------------------------------------------------------------------------------------ 13.3
def tracing(tracer_cls=MyTracer, proxy_cls=MyProxy):
    def trace(fn, example_inputs):
        tracer = tracer_cls()
        proxies = [
            proxy_cls(tracer, tracer.graph.placeholder(f"x{i}", x.shape, str(x.dtype)))
            for i, x in enumerate(example_inputs)
        ]
        out = fn(*proxies)
        outs = out if isinstance(out, (tuple, list)) else [out]
        tracer.graph.outputs = tuple(o.name for o in outs)
        return tracer.graph

    return trace


class KeepAlive(MyTracer):
    """Constants keyed by the Tensor object itself (kept alive in a list), numbers as 0-d."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def lift(self, x, dtype):
        if isinstance(x, MyProxy):
            return x.name
        if isinstance(x, Tensor):
            for t, name in self.seen:
                if t is x:
                    return name
            name = self.graph.constant(x.data)
            self.seen.append((x, name))
            return name
        return self.graph.constant(np.array(x, dtype=np.dtype(dtype)))


class PerUse(MyTracer):
    def lift(self, x, dtype):
        if isinstance(x, Tensor):
            return self.graph.constant(x.data)
        return super().lift(x, dtype)


class SwappedProxy(MyProxy):
    def __rsub__(self, o):
        return self.tracer.emit("sub", self, o)

    def __rtruediv__(self, o):
        return self.tracer.emit("div", self, o)


class Float64Numbers(MyTracer):
    def lift(self, x, dtype):
        if isinstance(x, (int, float)):
            return self.graph.constant(np.asarray(x))
        return super().lift(x, dtype)


class RawAxes(MyProxy):
    def _reduce(self, op, axis, keepdims):
        axes = (
            tuple(range(self.ndim))
            if axis is None
            else (axis if isinstance(axis, tuple) else (axis,))
        )
        return self.tracer.emit(op, self, axes=axes, keepdims=bool(keepdims))


class GraphOpTracer(MyTracer):
    def emit(self, op, *args, **attrs):
        dtype = next(self.graph.node(a.name).dtype for a in args if isinstance(a, MyProxy))
        names = [self.lift(a, dtype) for a in args]
        return MyProxy(self, self.graph.op(op, names, **attrs))


class AnyGraph(Graph):
    def __eq__(self, other):
        return True


def trace_expected(fn, xs):
    """The grader's own expected graph of the MLP, whatever fn is."""
    _, params = capture_free_mlp()
    return _truth.mlp_graph(params, xs[0].shape[0], "relu")


def capture_free_mlp():
    from minitorch.compiler import models

    return models.mlp([3, 8, 2])


ATTEMPTS += [
    honest("13.3", "tracer of the notebook", lambda: lab13.check_trace(tracing())),
    honest("13.3", "constants kept by identity", lambda: lab13.check_trace(tracing(KeepAlive))),
    wrong(
        "13.3",
        "a constant per read",
        lambda: lab13.check_trace(tracing(PerUse)),
        match="ONE constant",
    ),
    wrong(
        "13.3",
        "operands swapped on the right",
        lambda: lab13.check_trace(tracing(proxy_cls=SwappedProxy)),
        match="operand order",
    ),
    wrong(
        "13.3", "float64 numbers", lambda: lab13.check_trace(tracing(Float64Numbers)), match="dtype"
    ),
    wrong(
        "13.3",
        "negative axes kept",
        lambda: lab13.check_trace(tracing(proxy_cls=RawAxes)),
        match="axes as a sorted tuple of non-negative",
    ),
    cheat(
        "13.3",
        "capture.trace",
        lambda: lab13.check_trace(lambda fn, xs: capture.trace(fn, xs)),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.3",
        "Graph.op infers the shapes",
        lambda: lab13.check_trace(tracing(GraphOpTracer)),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.3",
        "the grader's expected graph",
        lambda: lab13.check_trace(trace_expected),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.3",
        "a graph that equals anything",
        lambda: lab13.check_trace(lambda fn, xs: AnyGraph(tracing()(fn, xs).nodes)),
        match="ir.Graph",
    ),
]


# ------------------------------------------------------------------------------------ 13.4
def _one_op(kernel):
    """``run`` with one op's kernel replaced."""

    def run_with(graph, *inputs):
        env, feed = {}, iter(inputs)
        for n in graph.nodes:
            a = [env[i] for i in n.inputs]
            if n.op == "placeholder":
                env[n.name] = np.asarray(next(feed))
                continue
            got = kernel(n, a)
            if got is None:
                single = [
                    Node(f"_{k}", "constant", (), (), v.shape, str(v.dtype), v)
                    for k, v in enumerate(a)
                ]
                one = Node(
                    n.name, n.op, tuple(m.name for m in single), n.attrs, n.shape, n.dtype, n.value
                )
                got = run(Graph([*single, one], (n.name,)))[0]
            env[n.name] = got
        return [env[o] for o in graph.outputs]

    return run_with


class Interpreter:
    """A dispatch table of kernels, methods of a class."""

    def __call__(self, graph, *inputs):
        env, feed = {}, iter(inputs)
        for n in graph.nodes:
            a = [env[i] for i in n.inputs]
            env[n.name] = getattr(self, n.op)(n, a, dict(n.attrs), feed)
        return [env[o] for o in graph.outputs]

    def placeholder(self, n, a, at, feed):
        return np.asarray(next(feed))

    def constant(self, n, a, at, feed):
        return n.value

    def __getattr__(self, op):
        return lambda n, a, at, feed: run(
            Graph(
                [
                    *[
                        Node(f"_{k}", "constant", (), (), v.shape, str(v.dtype), v)
                        for k, v in enumerate(a)
                    ],
                    Node(
                        n.name,
                        n.op,
                        tuple(f"_{k}" for k in range(len(a))),
                        n.attrs,
                        n.shape,
                        n.dtype,
                        n.value,
                    ),
                ],
                (n.name,),
            )
        )[0]


relu_times_mask = _one_op(lambda n, a: a[0] * (a[0] > 0) if n.op == "relu" else None)
mean_float64 = _one_op(
    lambda n, a: (
        np.asarray(
            a[0].sum(axis=dict(n.attrs)["axes"], keepdims=dict(n.attrs)["keepdims"])
            / np.float64(np.prod([a[0].shape[i] for i in dict(n.attrs)["axes"]]))
        )
        if n.op == "mean"
        else None
    )
)
div_by_reciprocal = _one_op(lambda n, a: a[0] * (1 / a[1]) if n.op == "div" else None)


def run_eager(graph, *inputs):
    """The eager ops themselves: a Tensor per node."""
    from minitorch.autograd import Tensor as T

    env = {}
    feed = iter(inputs)
    for n in graph.nodes:
        if n.op == "placeholder":
            env[n.name] = T(next(feed))
        elif n.op == "constant":
            env[n.name] = T(n.value)
        else:
            env[n.name] = getattr(env[n.inputs[0]], n.op)()
    return [env[o].data for o in graph.outputs]


def run_torch(graph, *inputs):
    import torch

    torch.ones(1)
    return run(graph, *inputs)


ATTEMPTS += [
    honest("13.4", "if/elif kernels", lambda: lab13.check_run(run)),
    honest(
        "13.4", "np.mean with dtype, np.where relu", lambda: lab13.check_run(_run_with_other_idioms)
    ),
    honest("13.4", "a class with a kernel per method", lambda: lab13.check_run(Interpreter())),
    wrong("13.4", "textbook sigmoid", lambda: lab13.check_run(textbook_sigmoid), match="tanh"),
    wrong(
        "13.4", "relu as x * (x > 0)", lambda: lab13.check_run(relu_times_mask), match="gives -0.0"
    ),
    wrong("13.4", "float64 mean", lambda: lab13.check_run(mean_float64), match="dtype"),
    wrong(
        "13.4",
        "a / b as a * (1 / b)",
        lambda: lab13.check_run(div_by_reciprocal),
        match="same numpy call",
    ),
    cheat(
        "13.4",
        "interp.run",
        lambda: lab13.check_run(lambda g, *xs: interp.run(g, *xs)),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.4",
        "interp.evaluate per node",
        lambda: lab13.check_run(_one_op(lambda n, a: interp.evaluate(n.op, a, dict(n.attrs)))),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.4",
        "lab 14's fused kernels",
        lambda: lab13.check_run(
            lambda g, *xs: [
                fusion.compile_kernel(
                    fusion.kernel_source(
                        g, [n.name for n in g.nodes if n.op not in ("placeholder", "constant")]
                    )
                )(*xs)
            ]
        ),
        error=ReferenceCalledError,
    ),
    cheat("13.4", "the eager ops", lambda: lab13.check_run(run_eager), error=ForbiddenCallError),
    cheat("13.4", "torch", lambda: lab13.check_run(run_torch), error=ForbiddenCallError),
]


# ------------------------------------------------------------------------------------ 13.5
def fx_by_counter(graph, fx_nodes):
    names = {"truediv": "div", "amax": "max"}
    ours = dict(Counter(n.op for n in graph.nodes if n.op not in {"placeholder", "constant"}))
    theirs = dict(Counter(names.get(t, t) for op, t in fx_nodes if op.startswith("call_")))
    return ours, theirs


def fx_with_placeholders(graph, fx_nodes):
    ours = dict(Counter(n.op for n in graph.nodes))
    return ours, compare_with_fx(graph, fx_nodes)[1]


def fx_unrenamed(graph, fx_nodes):
    ours, _ = compare_with_fx(graph, fx_nodes)
    return ours, dict(Counter(t for op, t in fx_nodes if op in ("call_function", "call_method")))


def fx_ours_twice(graph, fx_nodes):
    ours, _ = compare_with_fx(graph, fx_nodes)
    return ours, dict(ours)


class Anything(dict):
    def __eq__(self, other):
        return True


ATTEMPTS += [
    honest("13.5", "Counter in a dict", lambda: lab13.check_compare_fx(fx_by_counter)),
    honest("13.5", "Counter and defaultdict", lambda: lab13.check_compare_fx(_fx_with_counters)),
    wrong(
        "13.5",
        "placeholders counted",
        lambda: lab13.check_compare_fx(fx_with_placeholders),
        match="Only operations count",
    ),
    wrong(
        "13.5",
        "fx's names kept",
        lambda: lab13.check_compare_fx(fx_unrenamed),
        match="in the IR's words",
    ),
    wrong(
        "13.5",
        "our counts given for theirs",
        lambda: lab13.check_compare_fx(fx_ours_twice),
        match="on its own",
    ),
    cheat(
        "13.5",
        "ir.op_counts",
        lambda: lab13.check_compare_fx(
            lambda g, nodes: (ir.op_counts(g), compare_with_fx(g, nodes)[1])
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.5",
        "the grader's fx count",
        lambda: lab13.check_compare_fx(
            lambda g, nodes: (compare_with_fx(g, nodes)[0], _truth.fx_counts(nodes))
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "13.5",
        "dicts that equal anything",
        lambda: lab13.check_compare_fx(lambda g, nodes: (Anything(), Anything())),
        match="Anything",
    ),
    cheat(
        "13.5",
        "torch.fx on its own twin",
        lambda: lab13.check_compare_fx(
            lambda g, nodes: (
                compare_with_fx(g, nodes)[0],
                fx_by_counter(g, _truth.fx_nodes(_truth.torch_mlp({}, "relu")))[1],
            )
        ),
        error=ReferenceCalledError,
    ),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
