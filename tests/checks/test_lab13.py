"""Graders of lab 13: correct answers pass, realistic wrong ones and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab13
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from minitorch.autograd import Tensor
from minitorch.compiler import capture, interp, ir
from minitorch.compiler.ir import Graph, Node
from tests.helpers.graders import rejects

pytestmark = pytest.mark.lab13


MUSTS = [
    ("13.1", "**empty exactly when** the graph is well formed", "test_attempt"),
    ("13.1", "no name is defined twice", "test_verify_without_the_ssa_rule_is_rejected"),
    (
        "13.1",
        "every input of a node is defined by an *earlier* node",
        "test_verify_accepting_use_before_def_is_rejected",
    ),
    ("13.1", "every output names a defined value", "test_attempt"),
    (
        "13.1",
        "an op node's `shape` and `dtype` are what its op gives",
        "test_verify_ignoring_shapes_is_rejected",
    ),
    (
        "13.2",
        "Raise `ValueError` when the op is illegal on those shapes",
        "test_left_aligned_broadcasting_is_rejected",
    ),
    (
        "13.2",
        "Numpy's broadcasting helpers and making arrays to run the op on are not allowed",
        "test_infer_shape_with_numpy_broadcast_is_rejected",
    ),
    ("13.2", "far too large to allocate", "test_infer_shape_running_the_op_on_arrays_is_rejected"),
    (
        "13.2",
        '`infer_shape("sub", [(2, 1, 3), (5, 1)], {}) == (2, 5, 3)`',
        "test_left_aligned_broadcasting_is_rejected",
    ),
    ("13.3", "`Graph.op` (which would infer it for you) is blocked", "test_attempt"),
    (
        "13.3",
        "a `Tensor` the function holds (a weight) becomes **one** constant node",
        "test_trace_with_a_constant_per_use_is_rejected",
    ),
    ("13.3", "the node is `sub(%c, %x)`, order kept", "test_trace_swapping_operands_is_rejected"),
    (
        "13.3",
        "a Python number becomes a 0-d constant in the other operand's dtype",
        "test_trace_with_float64_numbers_is_rejected",
    ),
    ("13.3", "axes sorted and non-negative", "test_attempt"),
    (
        "13.3",
        "they must be made of `ir.Graph` and `ir.Node` objects",
        "test_trace_returning_a_graph_subclass_is_rejected",
    ),
    ("13.4", "compares with eager execution bit for bit, dtype included", "test_attempt"),
    ("13.4", "`relu` is `np.maximum(x, 0)` (so $-0.0$ never appears)", "test_attempt"),
    (
        "13.4",
        "`mean` is `sum / count` cast back to the input dtype",
        "test_run_with_a_float64_mean_is_rejected",
    ),
    (
        "13.4",
        "Calling the autograd package (the eager ops) is not allowed",
        "test_run_calling_eager_ops_is_rejected",
    ),
    (
        "13.5",
        "Count only operations (no placeholders, constants, `get_attr` or `output`)",
        "test_fx_counting_placeholders_is_rejected",
    ),
    ("13.5", "name fx's targets in the IR's words", "test_fx_without_renaming_is_rejected"),
    (
        "13.5",
        "each dict must count its own side",
        "test_fx_copying_our_counts_for_theirs_is_rejected",
    ),
    ("13.5", 'ours["matmul"] == theirs["matmul"] == 6', "test_attempt"),
]


# --------------------------------------------------------------------------- correct answers
def verify(graph: Graph) -> list[str]:
    """Every problem of ``graph``: SSA, topological order, uses defined, shapes consistent."""
    problems, defined = [], {}
    for n in graph.nodes:
        if n.name in defined:
            problems.append(f"%{n.name} defined twice")
        missing = [i for i in n.inputs if i not in defined]
        problems += [f"%{n.name} uses %{i} before any definition" for i in missing]
        if n.op not in ("placeholder", "constant") and not missing:
            ins = [defined[i] for i in n.inputs]
            try:
                shape = ir.infer_shape(n.op, [m.shape for m in ins], dict(n.attrs))
                dtype = str(np.result_type(*[m.dtype for m in ins]))
            except (ValueError, KeyError, IndexError) as exc:
                problems.append(f"%{n.name}: {exc}")
            else:
                if shape != tuple(n.shape) or dtype != n.dtype:
                    problems.append(
                        f"%{n.name}: stated {n.shape} {n.dtype}, op gives {shape} {dtype}"
                    )
        defined.setdefault(n.name, n)
    problems += [f"output %{o} undefined" for o in graph.outputs if o not in defined]
    return problems


def infer_shape(op: str, shapes: list[tuple[int, ...]], attrs: dict) -> tuple[int, ...]:
    """The output shape of ``op`` on inputs of ``shapes``; ValueError when the op is illegal."""

    def broadcast(a, b):
        out = []
        for i in range(1, max(len(a), len(b)) + 1):
            x = a[-i] if i <= len(a) else 1
            y = b[-i] if i <= len(b) else 1
            if x != y and x != 1 and y != 1:
                raise ValueError(f"{a} and {b} do not broadcast")
            out.append(y if x == 1 else x)
        return tuple(reversed(out))

    if op in ("add", "sub", "mul", "div", "pow"):
        return broadcast(shapes[0], shapes[1])
    if op in ("neg", "exp", "log", "tanh", "sigmoid", "relu"):
        return tuple(shapes[0])
    if op == "matmul":
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise ValueError(f"matmul of {a} and {b}")
        return (*broadcast(a[:-2], b[:-2]), a[-2], b[-1])
    if op in ("sum", "mean", "max"):
        axes, x = attrs["axes"], shapes[0]
        if attrs.get("keepdims"):
            return tuple(1 if i in axes else n for i, n in enumerate(x))
        return tuple(n for i, n in enumerate(x) if i not in axes)
    if op == "reshape":
        size = 1
        for n in shapes[0]:
            size *= n
        new = tuple(attrs["shape"])
        count = 1
        for n in new:
            count *= n
        if count != size or min(new, default=0) < 0:
            raise ValueError(f"cannot reshape {shapes[0]} to {new}")
        return new
    if op == "transpose":
        x = list(shapes[0])
        i, j = attrs["dim0"], attrs["dim1"]
        x[i], x[j] = x[j], x[i]
        return tuple(x)
    if op == "permute":
        return tuple(shapes[0][d] for d in attrs["dims"])
    raise ValueError(f"unknown op {op}")


class MyProxy:
    """Stands for a Tensor while ``fn`` runs: each operator or method appends one node."""

    def __init__(self, tracer: MyTracer, name: str) -> None:
        self.tracer, self.name = tracer, name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tracer.graph.node(self.name).shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __add__(self, o):
        return self.tracer.emit("add", self, o)

    def __radd__(self, o):
        return self.tracer.emit("add", o, self)

    def __sub__(self, o):
        return self.tracer.emit("sub", self, o)

    def __rsub__(self, o):
        return self.tracer.emit("sub", o, self)

    def __mul__(self, o):
        return self.tracer.emit("mul", self, o)

    def __rmul__(self, o):
        return self.tracer.emit("mul", o, self)

    def __truediv__(self, o):
        return self.tracer.emit("div", self, o)

    def __rtruediv__(self, o):
        return self.tracer.emit("div", o, self)

    def __pow__(self, o):
        return self.tracer.emit("pow", self, o)

    def __matmul__(self, o):
        return self.tracer.emit("matmul", self, o)

    def __neg__(self):
        return self.tracer.emit("neg", self)

    def exp(self):
        return self.tracer.emit("exp", self)

    def log(self):
        return self.tracer.emit("log", self)

    def tanh(self):
        return self.tracer.emit("tanh", self)

    def sigmoid(self):
        return self.tracer.emit("sigmoid", self)

    def relu(self):
        return self.tracer.emit("relu", self)

    def _reduce(self, op, axis, keepdims):
        axes = range(self.ndim) if axis is None else ([axis] if isinstance(axis, int) else axis)
        axes = tuple(sorted(a % self.ndim for a in axes))
        return self.tracer.emit(op, self, axes=axes, keepdims=bool(keepdims))

    def sum(self, axis=None, keepdims=False):
        return self._reduce("sum", axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return self._reduce("mean", axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return self._reduce("max", axis, keepdims)

    def reshape(self, *shape):
        new = list(shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        if -1 in new:
            known = int(np.prod([n for n in new if n != -1]))
            new[new.index(-1)] = int(np.prod(self.shape)) // known
        return self.tracer.emit("reshape", self, shape=tuple(int(n) for n in new))

    def transpose(self, dim0, dim1):
        i, j = sorted((dim0 % self.ndim, dim1 % self.ndim))
        return self.tracer.emit("transpose", self, dim0=i, dim1=j)

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
        return self.tracer.emit("permute", self, dims=tuple(d % self.ndim for d in dims))


class MyTracer:
    """The graph being recorded and the constant node made for each Tensor seen."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.constants: dict[int, str] = {}  # id(tensor) -> its constant node

    def lift(self, x, dtype) -> str:
        """The node name of an operand: a proxy's own; a Tensor or number becomes a constant."""
        if isinstance(x, MyProxy):
            return x.name
        if isinstance(x, Tensor):
            if id(x) not in self.constants:
                self.constants[id(x)] = self.graph.constant(x.data)
            return self.constants[id(x)]
        return self.graph.constant(np.asarray(x, dtype=dtype))

    def emit(self, op: str, *args, **attrs) -> MyProxy:
        """Append ``op(*args, **attrs)`` with its inferred shape and dtype; return its proxy."""
        dtype = next(self.graph.node(a.name).dtype for a in args if isinstance(a, MyProxy))
        names = tuple(self.lift(a, dtype) for a in args)
        ins = [self.graph.node(i) for i in names]
        items = tuple(sorted(attrs.items()))
        shape = infer_shape(op, [n.shape for n in ins], dict(items))
        node = Node(self.graph.fresh(), op, names, items, shape, dtype)
        self.graph.nodes.append(node)
        return MyProxy(self, node.name)


def trace(fn, example_inputs: list[np.ndarray]) -> Graph:
    """Run ``fn`` once on proxies shaped like ``example_inputs``; return the recorded graph."""
    tracer = MyTracer()
    proxies = [
        MyProxy(tracer, tracer.graph.placeholder(f"x{i}", x.shape, str(x.dtype)))
        for i, x in enumerate(example_inputs)
    ]
    out = fn(*proxies)
    tracer.graph.outputs = tuple(o.name for o in (out if isinstance(out, (tuple, list)) else [out]))
    return tracer.graph


def run(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
    """Evaluate ``graph`` on numpy, one kernel per op, bit-exact with eager Tensors."""
    env, feed = {}, iter(inputs)
    for n in graph.nodes:
        a = [env[i] for i in n.inputs]
        at = dict(n.attrs)
        if n.op == "placeholder":
            v = np.asarray(next(feed))
        elif n.op == "constant":
            v = n.value
        elif n.op in ("add", "sub", "mul", "div"):
            v = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[n.op](*a)
        elif n.op == "pow":
            v = a[0] ** a[1]
        elif n.op == "neg":
            v = -a[0]
        elif n.op in ("exp", "log", "tanh"):
            v = getattr(np, n.op)(a[0])
        elif n.op == "sigmoid":
            v = 0.5 * (1 + np.tanh(0.5 * a[0]))
        elif n.op == "relu":
            v = np.maximum(a[0], 0)
        elif n.op == "matmul":
            v = a[0] @ a[1]
        elif n.op in ("sum", "max"):
            v = np.asarray(getattr(a[0], n.op)(axis=at["axes"], keepdims=at["keepdims"]))
        elif n.op == "mean":
            count = int(np.prod([a[0].shape[i] for i in at["axes"]]))
            total = np.asarray(a[0].sum(axis=at["axes"], keepdims=at["keepdims"]))
            v = np.asarray(total / count, dtype=a[0].dtype)
        elif n.op == "reshape":
            v = a[0].reshape(at["shape"])
        elif n.op == "transpose":
            v = np.swapaxes(a[0], at["dim0"], at["dim1"])
        elif n.op == "permute":
            v = a[0].transpose(at["dims"])
        else:
            raise ValueError(n.op)
        env[n.name] = v
    return [env[o] for o in graph.outputs]


def compare_with_fx(graph: Graph, fx_nodes: list[tuple[str, str]]) -> tuple[dict, dict]:
    """(our op counts by kind, fx's op counts by kind), both in the IR's op names."""
    ours, theirs = {}, {}
    for n in graph.nodes:
        if n.op not in ("placeholder", "constant"):
            ours[n.op] = ours.get(n.op, 0) + 1
    rename = {"truediv": "div", "amax": "max"}
    for opcode, target in fx_nodes:
        if opcode in ("call_function", "call_method"):
            kind = rename.get(target, target)
            theirs[kind] = theirs.get(kind, 0) + 1
    return ours, theirs


# --------------------------------------------------------------------------- the right answers pass
def test_correct_answers_pass(capsys: pytest.CaptureFixture[str]) -> None:
    lab13.check_verify(verify)
    lab13.check_infer_shape(infer_shape)
    lab13.check_trace(trace)
    lab13.check_run(run)
    lab13.check_compare_fx(compare_with_fx)
    assert capsys.readouterr().out.count("passed") == 5


# --------------------------------------------------------------------------- other correct answers
def _infer_shape_lists(op: str, shapes: list[tuple[int, ...]], attrs: dict) -> list[int]:
    """Lists instead of tuples, zip over left-padded shapes, math.prod for reshape."""
    import math

    if op in ("add", "sub", "mul", "div", "pow"):
        a, b = shapes
        width = max(len(a), len(b))
        a, b = (1,) * (width - len(a)) + tuple(a), (1,) * (width - len(b)) + tuple(b)
        if any(x != y and 1 not in (x, y) for x, y in zip(a, b, strict=True)):
            raise ValueError(f"{a} and {b} do not broadcast")
        return [max(x, y) if 1 in (x, y) else x for x, y in zip(a, b, strict=True)]
    if op == "matmul":
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise ValueError("inner sizes differ")
        return [*_infer_shape_lists("add", [a[:-2], b[:-2]], {}), a[-2], b[-1]]
    if op in ("sum", "mean", "max"):
        axes = set(attrs["axes"])
        keep = attrs["keepdims"]
        return [1 if i in axes else n for i, n in enumerate(shapes[0]) if keep or i not in axes]
    if op == "reshape":
        if math.prod(attrs["shape"]) != math.prod(shapes[0]) or min(attrs["shape"]) < 0:
            raise ValueError("the element count changes")
        return list(attrs["shape"])
    return list(infer_shape(op, shapes, attrs))


def _fx_with_counters(graph: Graph, fx_nodes: list[tuple[str, str]]) -> tuple[dict, dict]:
    from collections import Counter, defaultdict

    ours = Counter(n.op for n in graph.nodes if n.op not in ("placeholder", "constant"))
    theirs: defaultdict[str, int] = defaultdict(int)
    for opcode, target in fx_nodes:
        if opcode in ("call_function", "call_method"):
            theirs[{"truediv": "div", "amax": "max"}.get(target, target)] += 1
    return ours, theirs  # type: ignore[return-value]


def _run_with_other_idioms(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
    """np.mean with the input's dtype, np.where for relu, np.power, np.negative; every other
    op through ``run`` on a one-node graph."""
    env, feed = {}, iter(inputs)
    for n in graph.nodes:
        a, at = [env[i] for i in n.inputs], dict(n.attrs)
        if n.op == "placeholder":
            env[n.name] = np.asarray(next(feed))
        elif n.op == "mean":
            env[n.name] = np.asarray(
                np.mean(a[0], axis=at["axes"], keepdims=at["keepdims"], dtype=a[0].dtype)
            )
        elif n.op == "relu":
            env[n.name] = np.where(a[0] > 0, a[0], 0)
        elif n.op == "pow":
            env[n.name] = np.power(a[0], a[1])
        elif n.op == "neg":
            env[n.name] = np.negative(a[0])
        else:
            args = [
                Node(f"_{k}", "constant", (), (), v.shape, str(v.dtype), v) for k, v in enumerate(a)
            ]
            one = Node(
                n.name, n.op, tuple(m.name for m in args), n.attrs, n.shape, n.dtype, n.value
            )
            env[n.name] = run(Graph([*args, one], (n.name,)))[0]
    return [env[o] for o in graph.outputs]


def test_other_correct_answers_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    lab13.check_infer_shape(_infer_shape_lists)
    lab13.check_compare_fx(_fx_with_counters)
    lab13.check_compare_fx(lambda g, nodes: list(compare_with_fx(g, nodes)))
    lab13.check_run(_run_with_other_idioms)

    def lift_by_data(self, x, dtype):  # constants keyed by the Tensor's array, numbers as scalars
        if isinstance(x, MyProxy):
            return x.name
        if isinstance(x, Tensor):
            key = id(x.data)
            if key not in self.constants:
                self.constants[key] = self.graph.constant(x.data, name=f"w{len(self.constants)}")
            return self.constants[key]
        return self.graph.constant(np.float32(x))

    monkeypatch.setattr(MyTracer, "lift", lift_by_data)
    lab13.check_trace(trace)


# --------------------------------------------------------------------------- 13.1 verifier
def test_verify_without_the_ssa_rule_is_rejected() -> None:
    def no_ssa(graph: Graph) -> list[str]:
        return [p for p in verify(graph) if "twice" not in p]

    rejects(lab13.check_verify, no_ssa, match="defined exactly once")


def verify_any_order(graph: Graph) -> list[str]:
    names = {n.name for n in graph.nodes}  # the mistake: a use anywhere counts as defined
    problems = [f"%{i}" for n in graph.nodes for i in n.inputs if i not in names]
    seen: set[str] = set()
    for n in graph.nodes:
        problems += [n.name] if n.name in seen else []
        seen.add(n.name)
    problems += [o for o in graph.outputs if o not in names]
    return problems + _shape_problems(graph)


def _shape_problems(graph: Graph) -> list[str]:
    out, defined = [], {n.name: n for n in graph.nodes}
    for n in graph.nodes:
        if n.op in ("placeholder", "constant") or any(i not in defined for i in n.inputs):
            continue
        ins = [defined[i] for i in n.inputs]
        try:
            shape = ir.infer_shape(n.op, [m.shape for m in ins], dict(n.attrs))
        except ValueError:
            out.append(n.name)
            continue
        dtype = str(np.result_type(*[m.dtype for m in ins]))
        out += [n.name] if (shape, dtype) != (n.shape, n.dtype) else []
    return out


def test_verify_accepting_use_before_def_is_rejected() -> None:
    rejects(lab13.check_verify, verify_any_order, match="defined only \\*later\\*")


def test_verify_ignoring_shapes_is_rejected() -> None:
    def no_shapes(graph: Graph) -> list[str]:
        return [p for p in verify(graph) if "stated" not in p and "do not" not in p]

    rejects(lab13.check_verify, no_shapes, match="Recompute each op's shape|broadcast|matmul")


def test_verify_calling_the_reference_is_rejected() -> None:
    rejects(
        lab13.check_verify, lambda g: ir.verify(g), match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 13.2 shapes
def test_left_aligned_broadcasting_is_rejected() -> None:
    def left(op, shapes, attrs):
        if op in ("add", "sub", "mul", "div", "pow") and len(shapes[0]) != len(shapes[1]):
            a, b = shapes
            n = max(len(a), len(b))
            a, b = tuple(a) + (1,) * (n - len(a)), tuple(b) + (1,) * (n - len(b))
            return infer_shape(op, [a, b], attrs)
        return infer_shape(op, shapes, attrs)

    rejects(lab13.check_infer_shape, left, match="on the \\*right\\*")


def test_broadcasting_equal_sizes_only_is_rejected() -> None:
    def strict(op, shapes, attrs):
        if op in ("add", "mul") and len(shapes[0]) == len(shapes[1]) and shapes[0] != shapes[1]:
            raise ValueError("sizes differ")
        return infer_shape(op, shapes, attrs)

    rejects(lab13.check_infer_shape, strict, match="is legal .* but you raised ValueError")


def test_infer_shape_with_numpy_broadcast_is_rejected() -> None:
    def lazy(op, shapes, attrs):
        if op == "add":
            return tuple(np.broadcast_shapes(*shapes))
        return infer_shape(op, shapes, attrs)

    rejects(lab13.check_infer_shape, lazy, match="broadcast_shapes", error=ForbiddenCallError)


def test_infer_shape_running_the_op_on_arrays_is_rejected() -> None:
    def probe(op: str, shapes: list[tuple[int, ...]], attrs: dict) -> tuple[int, ...]:
        a, *b = [np.ndarray(s, np.float32) for s in shapes]  # np.empty/zeros are forbidden
        if op in ("add", "sub", "mul", "div", "pow"):
            return (a + b[0]).shape
        return infer_shape(op, shapes, attrs)

    rejects(lab13.check_infer_shape, probe, match="too many to allocate")


def test_infer_shape_calling_the_reference_is_rejected() -> None:
    rejects(
        lab13.check_infer_shape,
        lambda op, s, a: ir.infer_shape(op, s, a),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 13.3 tracer
def test_trace_with_a_constant_per_use_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    def lift(self, x, dtype):
        if isinstance(x, MyProxy):
            return x.name
        return self.graph.constant(np.asarray(x.data if isinstance(x, Tensor) else x, dtype=dtype))

    monkeypatch.setattr(MyTracer, "lift", lift)
    rejects(lab13.check_trace, trace, match="ONE constant")


def test_trace_swapping_operands_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MyProxy, "__rsub__", lambda self, o: self.tracer.emit("sub", self, o))
    rejects(lab13.check_trace, trace, match="operand order")


def test_trace_with_list_attributes_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    emit = MyTracer.emit

    def listy(self, op, *args, **attrs):
        return emit(
            self, op, *args, **{k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()}
        )

    monkeypatch.setattr(MyTracer, "emit", listy)
    rejects(lab13.check_trace, trace, match="hashable")


def test_trace_with_float64_numbers_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    lift = MyTracer.lift

    def wide(self, x, dtype):  # the mistake: np.asarray(0.5) is float64
        return lift(self, x, dtype) if isinstance(x, (MyProxy, Tensor)) else lift(self, x, None)

    monkeypatch.setattr(MyTracer, "lift", wide)
    rejects(lab13.check_trace, trace, match="other dtypes")


def test_trace_calling_the_reference_is_rejected() -> None:
    rejects(
        lab13.check_trace,
        lambda fn, xs: capture.trace(fn, xs),
        match="reference",
        error=ReferenceCalledError,
    )


def test_trace_returning_a_graph_subclass_is_rejected() -> None:
    class Anything(Graph):
        pass

    rejects(lab13.check_trace, lambda fn, xs: Anything(trace(fn, xs).nodes), match="ir.Graph")


# --------------------------------------------------------------------------- 13.4 interpreter
def textbook_sigmoid(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
    g = Graph()
    for n in graph.nodes:
        if n.op == "sigmoid":  # the mistake: 1 / (1 + exp(-x)), not eager's tanh form
            one = g.constant(np.asarray(1.0, n.dtype))
            e = g.op("exp", [g.op("neg", [n.inputs[0]])])
            g.op("div", [one, g.op("add", [one, e])], name=n.name)
        else:
            g.nodes.append(n)
    g.outputs = graph.outputs
    return run(g, *inputs)


def test_run_with_a_textbook_sigmoid_is_rejected() -> None:
    rejects(lab13.check_run, textbook_sigmoid, match="tanh")


def test_run_with_float64_constants_is_rejected() -> None:
    def upcast(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
        nodes = [
            Node(n.name, n.op, n.inputs, n.attrs, n.shape, n.dtype, np.asarray(n.value, np.float64))
            if n.op == "constant" and n.value.ndim == 0
            else n
            for n in graph.nodes
        ]
        return run(Graph(nodes, graph.outputs), *inputs)

    rejects(lab13.check_run, upcast, match="dtype")


def test_run_with_einsum_or_a_reciprocal_is_rejected() -> None:
    def reciprocal(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
        g = Graph()
        for n in graph.nodes:
            if n.op == "div":  # the mistake: a * (1 / b) rounds twice
                one = g.constant(np.asarray(1.0, n.dtype))
                inv = g.op("div", [one, n.inputs[1]])
                g.op("mul", [n.inputs[0], inv], name=n.name)
            else:
                g.nodes.append(n)
        g.outputs = graph.outputs
        return run(g, *inputs)

    rejects(lab13.check_run, reciprocal, match="same numpy call")


def test_run_with_a_float64_mean_is_rejected() -> None:
    def mean64(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
        env = dict(zip([n.name for n in graph.nodes if n.op == "placeholder"], inputs, strict=True))
        for n in graph.nodes:
            if n.op == "mean":  # the mistake: sum / count, never cast back
                (x,) = [env[i] for i in n.inputs]
                at = dict(n.attrs)
                count = np.prod([x.shape[i] for i in at["axes"]])
                return [x.sum(axis=at["axes"], keepdims=at["keepdims"]) / count]
            if n.op != "placeholder":
                env[n.name] = run(
                    Graph(graph.nodes[: graph.nodes.index(n) + 1], (n.name,)), *inputs
                )[0]
        return run(graph, *inputs)

    rejects(lab13.check_run, mean64, match="cast back")


def test_run_calling_eager_ops_is_rejected() -> None:
    def eager(graph: Graph, *inputs: np.ndarray) -> list[np.ndarray]:
        Tensor(inputs[0]).exp()
        return run(graph, *inputs)

    rejects(lab13.check_run, eager, match="minitorch.autograd", error=ForbiddenCallError)


def test_run_calling_the_reference_is_rejected() -> None:
    rejects(
        lab13.check_run,
        lambda g, *xs: interp.run(g, *xs),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 13.5 torch.fx
def test_fx_counting_placeholders_is_rejected() -> None:
    def counts_all(graph, fx_nodes):
        ours, _ = compare_with_fx(graph, fx_nodes)
        theirs: dict[str, int] = {}
        for op, _target in fx_nodes:
            theirs[op] = theirs.get(op, 0) + 1
        return ours, theirs

    rejects(lab13.check_compare_fx, counts_all, match="Only operations")


def test_fx_without_renaming_is_rejected() -> None:
    def raw(graph, fx_nodes):
        ours, _ = compare_with_fx(graph, fx_nodes)
        theirs: dict[str, int] = {}
        for op, target in fx_nodes:
            if op.startswith("call"):
                theirs[target] = theirs.get(target, 0) + 1
        return ours, theirs

    rejects(lab13.check_compare_fx, raw, match="truediv")


def test_fx_copying_our_counts_for_theirs_is_rejected() -> None:
    def ours_twice(graph, fx_nodes):
        ours, _ = compare_with_fx(graph, fx_nodes)
        return ours, dict(ours)

    rejects(lab13.check_compare_fx, ours_twice, match="Count each graph on its own")


def test_fx_calling_the_reference_is_rejected() -> None:
    rejects(
        lab13.check_compare_fx,
        lambda g, nodes: (ir.op_counts(g), compare_with_fx(g, nodes)[1]),
        match="reference",
        error=ReferenceCalledError,
    )
