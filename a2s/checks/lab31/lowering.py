"""Grader of exercise 31.5: lowering to the course IR behind torch.compile, under a launch budget.

The learner writes ``lower_aten(nodes, kit)``: ``nodes`` is the ATen graph ``make_fx`` traced
from the FX graph TorchDynamo captured, as plain records (:class:`~a2s.checks.lab31._truth.
AtenNode`: ``op`` placeholder/constant/call/output, ``target`` such as ``"aten::addmm"``,
``args`` with earlier nodes as :class:`~a2s.checks.lab31._truth.Ref`, ``kwargs``, ``shape``,
``dtype``, a constant's ``value``); the module's weights arrive as constants (frozen). It
builds the course IR of lab 13 (``kit.graph()``), runs lab 14's passes (``kit.optimize``) and
fusion (``kit.fuse``) and returns the graph. The grader is the backend ``torch.compile`` calls:
it traces, runs the learner's lowering in a forked child (``harness.run_apart``) which sends
back only the graph as plain values, validates every node (IR ops only; a fused kernel's source
parsed and allowed only numpy ufunc calls), and returns its own runner: the course interpreter
on the chip's numpy buffers, counting each kernel launch in the grader's record. Nothing the
learner writes runs at run time, so a backend cannot forward to eager torch; torch is forbidden
inside the lowering too. Each compiled model must equal eager torch on two inputs and launch
no more kernels than the reference pipeline (passes + fusion); without fusion every IR op is a
launch and the budget is exceeded. Modelled mistakes (named only when the outputs are that
mistake's): a transpose dropped, ``addmm`` without its ``beta``/``alpha``, outputs swapped.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, case_label, fresh_rng, grader, rng
from a2s.checks.harness import run_apart
from a2s.checks.lab31._truth import AtenNode, LowerKit, Ref, aten_eval

__all__ = ["check_lower_aten"]

_OPS: tuple[str, ...] = ("add", "sub", "mul", "div", "pow", "neg", "exp", "log", "tanh")
_OPS += ("sigmoid", "relu", "sum", "mean", "max", "reshape", "transpose", "permute", "matmul")
_UFUNCS = {"add", "subtract", "multiply", "divide", "power", "negative", "exp", "log", "tanh"}
_UFUNCS |= {"matmul", "maximum"}


class _Mlp(torch.nn.Module):
    def __init__(self, g: np.random.Generator, widths: list[int], act: str) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in itertools.pairwise(widths)
        )
        for p in self.parameters():
            p.data = torch.from_numpy(g.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5)
        self.act = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            x = self.act(x) if i < len(self.layers) - 1 else x
        return x


class _Addmm(torch.nn.Module):
    """tanh(0.5 * b + 2 * (x @ W)): addmm with beta and alpha not 1."""

    def __init__(self, g: np.random.Generator) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.from_numpy(g.standard_normal((6, 5)).astype(np.float32)))
        self.b = torch.nn.Parameter(torch.from_numpy(g.standard_normal(5).astype(np.float32)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.addmm(self.b, x, self.w, beta=0.5, alpha=2.0))


class _Transposed(torch.nn.Module):
    """relu(x^T W + b) and a residual: a transpose of the input (square, so dropping it keeps
    the shape), two outputs of one shape (so swapping them keeps the shapes)."""

    def __init__(self, g: np.random.Generator) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.from_numpy(g.standard_normal((6, 6)).astype(np.float32)))
        self.b = torch.nn.Parameter(torch.from_numpy(g.standard_normal(6).astype(np.float32)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(x.t() @ self.w + self.b)
        return h, x + 0.5 * h


def _models() -> list[tuple[str, torch.nn.Module, tuple[int, ...]]]:
    g = rng(3105)
    out: list[tuple[str, torch.nn.Module, tuple[int, ...]]] = [
        ("x.t() @ W, two outputs", _Transposed(g), (6, 6)),
        ("addmm, beta 0.5 alpha 2", _Addmm(g), (4, 6)),
        ("the course MLP 8->16->4 (relu)", _Mlp(g, [8, 16, 4], "relu"), (5, 8)),
    ]
    for label, gen in (("seeded", rng(3106)), ("fresh", fresh_rng("31.5"))):
        depth = int(gen.integers(2, 4))
        widths = [int(v) for v in gen.integers(3, 9, size=depth + 1)]
        act = str(gen.choice(["relu", "tanh", "sigmoid"]))
        shape = (2, int(gen.integers(2, 5)), widths[0])  # 3-D: views around each addmm
        name = f"{label} MLP {'->'.join(map(str, widths))} ({act}), input {shape}"
        out.append((name, _Mlp(gen, widths, act), shape))
    return out


def _plain_nodes(gm: torch.fx.GraphModule, example: list[Any]) -> list[AtenNode]:
    """The ATen graph of ``gm`` as plain records, parameters and buffers frozen as constants."""
    from torch.fx.experimental.proxy_tensor import make_fx

    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    frozen = {
        i
        for i, (name, x) in enumerate(zip(names, example, strict=False))
        if isinstance(x, torch.nn.Parameter) or "_parameters_" in name or "_buffers_" in name
    }
    with torch._guards.tracing(None):
        aten = make_fx(gm, tracing_mode="fake")(*example)
    out, pos = [], 0
    for node in aten.graph.nodes:

        def ref(a: Any) -> Any:
            return Ref(a.name) if isinstance(a, torch.fx.Node) else a

        args = tuple(torch.fx.node.map_aggregate(node.args, ref))
        kwargs = {k: ref(v) for k, v in node.kwargs.items()}
        val = node.meta.get("val")
        shape = tuple(int(s) for s in val.shape) if isinstance(val, torch.Tensor) else ()
        dtype = str(val.dtype).removeprefix("torch.") if isinstance(val, torch.Tensor) else ""
        if node.op == "placeholder":
            if pos in frozen:
                value = example[pos].detach().numpy().copy()
                out.append(AtenNode(node.name, "constant", "", (), {}, shape, dtype, value))
            else:
                out.append(AtenNode(node.name, "placeholder", str(pos), (), {}, shape, dtype))
            pos += 1
        elif node.op == "output":
            outs = args[0] if isinstance(args[0], (tuple, list)) else (args[0],)
            out.append(AtenNode(node.name, "output", "", tuple(outs), {}, (), ""))
        else:
            target = node.target.name().removesuffix(".default")
            out.append(AtenNode(node.name, "call", target, args, kwargs, shape, dtype))
    return out


def _in_child(student: Callable[..., Any], nodes: list[AtenNode]) -> Any:
    """In the learner's child: its graph as plain values."""
    from minitorch.compiler.ir import Graph

    g = call(student, nodes, LowerKit())
    if type(g) is not Graph:
        return type(g).__name__
    rows = [
        (n.name, n.op, tuple(n.inputs), tuple(n.attrs), tuple(n.shape), n.dtype, n.value)
        for n in g.nodes
    ]
    return (rows, tuple(g.outputs))


def _source_ok(src: Any) -> bool:
    """A fused kernel's source: ``def kernel(a0, ...)``, assignments of numpy ufunc calls on
    names and numbers (and sigmoid's ``0.5 * (1 + np.tanh(0.5 * a))``), a return."""
    try:
        tree = ast.parse(str(src))
    except SyntaxError:
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return False
    fn = tree.body[0]
    if fn.decorator_list or fn.args.defaults or fn.name != "kernel":
        return False

    def expr(e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id != "np"
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
    last = fn.body[-1]
    return isinstance(last, ast.Return) and isinstance(last.value, ast.Name)


def _rebuild(label: str, got: Any) -> Any:
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
            if not _source_ok(a.get("source")):
                raise CheckFailure(f"[{label}] fused node {name!r} is not one kit.fuse made.")
            g.nodes.append(Node(name, "fused", tuple(inputs), tuple(attrs), tuple(shape), dtype))
        elif op in _OPS:
            g.op(op, list(inputs), name=name, **dict(attrs))
        else:
            raise CheckFailure(
                f"[{label}] node {name!r} is {op!r}: the chip runs the course IR's ops "
                f"({', '.join(_OPS)}) and kit.fuse's kernels only."
            )
        seen.add(name)
    if not outputs or any(o not in seen for o in outputs):
        raise CheckFailure(f"[{label}] the graph's outputs {outputs} are not all its values.")
    g.outputs = tuple(outputs)
    return g


def _kernels(graph: Any) -> int:
    return sum(n.op not in ("placeholder", "constant") for n in graph.nodes)


def _budget(nodes: list[AtenNode], gm: torch.fx.GraphModule, example: list[Any]) -> int:
    """Launches of the reference pipeline (lowering, passes, fusion) on the same graph."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from minitorch.chip.compile_backend import _frozen, optimize
    from minitorch.chip.lower import lower

    with torch._guards.tracing(None):
        aten = make_fx(gm, tracing_mode="fake")(*example)
    return optimize(lower(aten, _frozen(gm, example))[0])[2].kernels_after


def _why(nodes: list[AtenNode], x: np.ndarray, got: list[np.ndarray], want: list[Any]) -> str:
    """The modelled mistake the learner's outputs are, if any."""
    close = lambda a, b: all(  # noqa: E731
        np.shape(p) == np.shape(q) and np.allclose(p, q, rtol=1e-4, atol=1e-4)
        for p, q in zip(a, b, strict=True)
    )
    if len(got) == len(want) > 1 and close(got, want[::-1]):
        return " The outputs are in the wrong order: g.outputs follows the output node's args."
    if close(got, aten_eval(nodes, x, drop_transpose=True)):
        return " A transpose was dropped: aten::t and aten::transpose.int swap two dimensions."
    if close(got, aten_eval(nodes, x, plain_addmm=True)):
        return " addmm is beta * self + alpha * (mat1 @ mat2): its beta and alpha were ignored."
    return ""


@grader(
    "31.5",
    blocks=("minitorch.chip.lower:lower", "minitorch.chip.compile_backend"),
    hand="budget",
)
def check_lower_aten(lower_aten: Callable[..., Any]) -> str:
    """Exercise 31.5: lower_aten(nodes, kit) -> the fused course IR, run by the grader."""
    import torch._dynamo

    launches, budget, ops, n_models = 0, 0, 0, 0
    for label, model, shape in _models():
        model.eval()
        box: dict[str, Any] = {}

        def backend(
            gm: torch.fx.GraphModule, example: list[Any], box: dict = box, label: str = label
        ) -> Any:
            try:
                nodes = _plain_nodes(gm, example)
                with case_label(label):
                    got = run_apart(_in_child, lower_aten, nodes)
                graph = _rebuild(label, got)
                feeds = [int(n.target) for n in nodes if n.op == "placeholder"]
                box.update(nodes=nodes, graph=graph, budget=_budget(nodes, gm, example))
                box["ops"] = sum(n.op == "call" for n in nodes)
            except BaseException as exc:  # Dynamo would wrap it: raise it after the call
                box["error"] = exc
                return gm.forward

            def runner(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
                ins = [args[i].detach().numpy() for i in feeds]
                outs = _run(graph, ins)
                box["launches"] = box.get("launches", 0) + _kernels(graph)
                return tuple(torch.from_numpy(np.array(o, np.float32)) for o in outs)

            return runner

        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, dynamic=False)
        g = rng(3107)
        for _ in range(2):
            x = torch.from_numpy(g.standard_normal(shape).astype(np.float32))
            with torch.no_grad():
                want = model(x)
                got = compiled(x)
            if "error" in box:
                raise box["error"]
            wants = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
            gots = [o.numpy() for o in (got if isinstance(got, tuple) else (got,))]
            same = len(gots) == len(wants) and all(
                a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5)
                for a, b in zip(gots, wants, strict=False)
            )
            if not same:
                why = _why(box["nodes"], x.numpy(), gots, wants)
                raise CheckFailure(
                    f"[{label}] the compiled model's outputs differ from eager torch "
                    f"(shapes {[a.shape for a in gots]} vs {[b.shape for b in wants]}).{why}"
                )
        used = _kernels(box["graph"])
        if used > box["budget"]:
            fused = any(n.op == "fused" for n in box["graph"].nodes)
            why = (
                " No kernel was fused: every IR op is a launch; run kit.fuse on the graph."
                if not fused
                else " Run kit.optimize before kit.fuse (constant folding pre-transposes "
                "the frozen weights, DCE drops what nothing reads)."
            )
            raise CheckFailure(
                f"[{label}] {used} kernel launches per call; the budget is {box['budget']} "
                f"(lowered, optimized, fused).{why}"
            )
        launches, budget = launches + box["launches"], budget + 2 * box["budget"]
        ops, n_models = ops + box["ops"], n_models + 1
    torch._dynamo.reset()
    return (
        f"{n_models} models compiled, equal to eager on 2 inputs each; {ops} ATen ops, "
        f"{launches} launches counted by the grader in {2 * n_models} calls (budget {budget})"
    )


def _run(graph: Any, ins: list[np.ndarray]) -> list[np.ndarray]:
    from minitorch.compiler import fusion, interp

    _ = fusion  # registers the fused kernels with the interpreter
    return interp.run(graph, *ins)
