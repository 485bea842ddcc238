"""Grader of exercise 31.5: ATen lowered to the course IR behind torch.compile, launches counted.

``lower_aten(nodes, kit)`` turns the ATen graph (plain :class:`~a2s.checks.lab31._truth.AtenNode`
records, weights frozen) into lab 13's IR after ``kit.optimize`` and ``kit.fuse``, in a forked
child (torch forbidden) that returns only the graph; :mod:`a2s.checks.irgraph` validates it and
the grader's interpreter runs it, counting launches here (see docs/trust.md). Truth: eager torch
on a seeded input and one drawn from a secret seed after the lowering ran;
budget: the reference pipeline's launches; mistakes modelled by a numpy run of the ATen graph.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, case_label, fresh_rng, grader, rng
from a2s.checks.harness import run_apart
from a2s.checks.irgraph import rebuild_graph
from a2s.checks.lab31._truth import (
    AtenNode,
    LowerKit,
    Ref,
    kernels_per_call,
    launch_budget,
    run_graph,
)

__all__ = ["check_lower_aten"]

_OPS: tuple[str, ...] = ("add", "sub", "mul", "div", "pow", "neg", "exp", "log", "tanh")
_OPS += ("sigmoid", "relu", "sum", "mean", "max", "reshape", "transpose", "permute", "matmul")


# Dynamo reads a forward's bytecode, and the sealed kernel of ``a2s grade`` refuses reads of
# the course's own code: the two hand-written forwards are made from source, outside its files.
_FORWARDS: dict[str, Any] = {"torch": torch}
exec(
    """
def transposed(self, x):  # dropping x.t() keeps the shape; swapping the outputs too
    h = torch.relu(x.t() @ self.w + self.b)
    return h, x + 0.5 * h

def addmm(self, x):
    return torch.tanh(torch.addmm(self.b, x, self.w, beta=0.5, alpha=2.0))
""",
    _FORWARDS,
)


def _net(g: np.random.Generator, w: tuple[int, ...], forward: str) -> torch.nn.Module:
    kind = type(f"_{forward}", (torch.nn.Module,), {"forward": _FORWARDS[forward]})
    net = kind()
    net.w = torch.nn.Parameter(torch.from_numpy(g.standard_normal(w).astype(np.float32)))
    net.b = torch.nn.Parameter(torch.from_numpy(g.standard_normal(w[1]).astype(np.float32)))
    return net


def _mlp(g: np.random.Generator, widths: list[int], act: str) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    kind = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}.get(act, torch.nn.Sigmoid)
    for a, b in itertools.pairwise(widths):
        layers += [torch.nn.Linear(a, b), kind()]
    net = torch.nn.Sequential(*layers[:-1])
    for p in net.parameters():
        p.data = torch.from_numpy(g.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5)
    return net


def _models() -> list[tuple[str, torch.nn.Module, tuple[int, ...]]]:
    g = rng(3105)
    out: list[tuple[str, torch.nn.Module, tuple[int, ...]]] = [
        ("x.t() @ W, two outputs", _net(g, (6, 6), "transposed"), (6, 6)),
        ("addmm, beta 0.5 alpha 2", _net(g, (6, 5), "addmm"), (4, 6)),
        ("the course MLP 8->16->4 (relu)", _mlp(g, [8, 16, 4], "relu"), (5, 8)),
    ]
    for label, gen in (("seeded", rng(3106)), ("fresh", fresh_rng("31.5"))):
        widths = [int(v) for v in gen.integers(3, 9, size=int(gen.integers(3, 5)))]
        act = str(gen.choice(["relu", "tanh", "sigmoid"]))
        shape = (2, int(gen.integers(2, 5)), widths[0])  # 3-D: views around each addmm
        name = f"{label} MLP {'->'.join(map(str, widths))} ({act}), input {shape}"
        out.append((name, _mlp(gen, widths, act), shape))
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


def _why(nodes: list[AtenNode], x: np.ndarray, got: list[np.ndarray], want: list[Any]) -> str:
    """The modelled mistake the learner's outputs are, if any."""

    def close(a: list[Any], b: list[Any]) -> bool:
        pairs = zip(a, b, strict=False)
        return len(a) == len(b) and all(
            np.shape(p) == np.shape(q) and np.allclose(p, q, 1e-4, 1e-4) for p, q in pairs
        )

    def mistaken(**mistake: bool) -> list[Any]:  # [] where the mistake cannot even run
        with np.errstate(all="ignore"):
            try:
                return aten_eval(nodes, x, **mistake)
            except ValueError:  # a dropped transpose of a non-square weight: shapes clash
                return []

    if len(got) == len(want) > 1 and close(got, want[::-1]):
        return " The outputs are in the wrong order: g.outputs follows the output node's args."
    if close(got, mistaken(drop_transpose=True)):
        return " A transpose was dropped: aten::t and aten::transpose.int swap two dimensions."
    if close(got, mistaken(plain_addmm=True)):
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
                graph = rebuild_graph(label, got, _OPS)
                feeds = [int(n.target) for n in nodes if n.op == "placeholder"]
                box.update(nodes=nodes, graph=graph, budget=launch_budget(gm, example))
                box["ops"] = sum(n.op == "call" for n in nodes)
            except BaseException as exc:  # Dynamo would wrap it: raise it after the call
                box["error"] = exc
                return gm.forward

            def runner(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
                ins = [args[i].detach().numpy() for i in feeds]
                outs = run_graph(graph, ins)
                box["launches"] = box.get("launches", 0) + kernels_per_call(graph)
                return tuple(torch.from_numpy(np.array(o, np.float32)) for o in outs)

            return runner

        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, dynamic=False)
        for k in range(2):  # the second input is drawn once the lowering's child is gone,
            # from a seed it never saw: a graph that looks its inputs up cannot know it
            g = rng(3107) if k == 0 else np.random.default_rng(secrets.randbits(128))
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
        used = kernels_per_call(box["graph"])
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


_ACTS: dict[str, Any] = {"aten::relu": lambda t: np.maximum(t, 0), "aten::tanh": np.tanh}
_ACTS["aten::sigmoid"] = lambda t: 1 / (1 + np.exp(-t))


def aten_eval(
    nodes: Sequence[AtenNode],
    x: np.ndarray,
    drop_transpose: bool = False,
    plain_addmm: bool = False,
) -> list[np.ndarray]:
    """The ATen graph run op by op in numpy (one fed input ``x``), optionally with a modelled
    mistake: transposes dropped, or addmm's beta and alpha ignored. For hints only: the truth
    of 31.5 is eager torch."""
    env: dict[str, Any] = {}

    def v(a: Any) -> Any:
        return env[a.name] if isinstance(a, Ref) else a

    for n in nodes:
        a = [v(i) for i in n.args]
        if n.op == "placeholder":
            env[n.name] = x
        elif n.op == "constant":
            env[n.name] = n.value
        elif n.op == "output":
            return [np.asarray(o) for o in a]
        elif n.target == "aten::addmm":
            k = {} if plain_addmm else n.kwargs
            env[n.name] = k.get("beta", 1) * a[0] + k.get("alpha", 1) * (a[1] @ a[2])
        elif n.target in ("aten::mm", "aten::matmul", "aten::bmm"):
            env[n.name] = a[0] @ a[1]
        elif n.target in ("aten::t", "aten::transpose.int"):
            d0, d1 = (a[1], a[2]) if len(a) > 2 else (0, 1)
            env[n.name] = a[0] if drop_transpose else np.swapaxes(a[0], d0, d1)
        elif n.target in ("aten::view", "aten::_unsafe_view", "aten::reshape"):
            env[n.name] = np.reshape(a[0], n.shape)
        elif n.target in ("aten::add.Tensor", "aten::mul.Tensor"):
            y = a[1] * n.kwargs.get("alpha", 1) if n.target == "aten::add.Tensor" else a[1]
            env[n.name] = a[0] + y if n.target == "aten::add.Tensor" else a[0] * y
        elif n.target in _ACTS:
            env[n.name] = _ACTS[n.target](a[0])
        else:
            env[n.name] = np.full(n.shape, np.nan)  # an op this model does not use
    return []
