"""Lab 13's trusted side, shared by its graders: a student's graph read back as plain data (lab
14's graders read graphs with :func:`read_graph` too), the expected graphs written out node by
node, and the torch twins of the course's models.

The expected graphs are built here by hand (one ``Graph.op`` per primitive, in the order the
model's code runs), never by the reference tracer; the twins are ``torch.nn.Module`` s with
the same weights and the same primitive ops, for ``torch.fx.symbolic_trace``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.core import CheckFailure, StudentError, assert_true, plain
from minitorch.compiler.ir import Graph, Node

__all__ = [
    "assert_same_bits",
    "attention_graph",
    "call",
    "fx_counts",
    "fx_nodes",
    "mlp_graph",
    "read_graph",
    "torch_attention",
    "torch_mlp",
]


def call(student: Callable[..., Any], case: str, *args: Any) -> Any:
    """``student(*args)``; an exception the student's code raises names the case."""
    try:
        return student(*args)
    except StudentError as exc:
        named = StudentError(f"[{case}] {exc}")
        raise named from exc.__cause__


def assert_same_bits(got: Any, want: np.ndarray, *, case: str, what: str, hint: str = "") -> None:
    """Bit for bit: the same dtype and shape, and the same bit patterns (so -0.0 is not 0.0
    and a NaN must be the same NaN), the first mismatch shown with its bits."""
    out = plain(got, what=what, case=case)
    out = np.asarray(out)
    if out.dtype != want.dtype or out.shape != want.shape:
        raise CheckFailure(
            f"[{case}] {what}: {out.dtype}{list(out.shape)}, expected {want.dtype}"
            f"{list(want.shape)}." + (f" {hint}" if hint else "")
        )
    floats = want.dtype.kind == "f"
    a = np.ascontiguousarray(out)
    e = np.ascontiguousarray(want)
    bad = a.view(f"u{e.dtype.itemsize}") != e.view(f"u{e.dtype.itemsize}") if floats else a != e
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])

        def show(v: Any) -> str:
            if not floats:
                return repr(v.item())
            return f"{v.item()!r} (bits 0x{int(np.asarray(v).view(f'u{e.dtype.itemsize}')):x})"

        raise CheckFailure(
            f"[{case}] {what} differ in {int(bad.sum())} of {bad.size} entries; first at "
            f"{list(idx)}: got {show(a[idx])}, expected {show(e[idx])}."
            + (f" {hint}" if hint else "")
        )


def _str(x: Any, what: str, case: str) -> str:
    x = plain(x, what=what, case=case)
    assert_true(isinstance(x, str), f"[{case}] {what} must be a str, got {type(x).__name__}")
    return x


def read_graph(got: Any, case: str) -> Graph:
    """The student's graph copied field by field into plain values (no objects of theirs)."""
    assert_true(
        type(got) is Graph,
        f"[{case}] return a minitorch.compiler.ir.Graph, got {type(got).__name__}",
    )
    nodes = []
    for n in list(got.nodes):
        assert_true(
            type(n) is Node, f"[{case}] every node must be an ir.Node, got {type(n).__name__}"
        )
        attrs = tuple(
            (_str(k, "an attribute name", case), plain(v, what=f"attribute {k}", case=case))
            for k, v in tuple(n.attrs)
        )
        for k, v in attrs:
            try:
                hash(v)
            except TypeError:
                assert_true(
                    False,
                    f"[{case}] %{n.name}: attribute {k}={v!r} is a {type(v).__name__}; "
                    "attribute values must be hashable (a tuple, not a list), so that equal "
                    "nodes compare and hash equal",
                )
        value = None if n.value is None else plain(np.asarray(n.value), case=case)
        shape = tuple(int(s) for s in plain(tuple(n.shape), what="a shape", case=case))
        inputs = tuple(_str(i, "an input name", case) for i in tuple(n.inputs))
        nodes.append(
            Node(
                _str(n.name, "a name", case),
                _str(n.op, "an op", case),
                inputs,
                attrs,
                shape,
                _str(n.dtype, "a dtype", case),
                value,
            )
        )
    outputs = tuple(_str(o, "an output name", case) for o in tuple(got.outputs))
    return Graph(nodes, outputs)


def mlp_graph(params: dict[str, np.ndarray], n: int, act: str) -> Graph:
    """The graph of ``models.mlp``: ``x @ w_i + b_i`` and ``act`` between layers."""
    layers = len(params) // 2
    g = Graph()
    h = g.placeholder("x", (n, params["w0"].shape[0]))
    for i in range(layers):
        h = g.op(
            "add", [g.op("matmul", [h, g.constant(params[f"w{i}"])]), g.constant(params[f"b{i}"])]
        )
        if i < layers - 1:
            h = g.op(act, [h])
    g.outputs = (h,)
    return g


def attention_graph(params: dict[str, np.ndarray], n: int, heads: int) -> Graph:
    """The graph of ``models.attention_block`` on x: (n, d)."""
    d = params["wq"].shape[0]
    dh = d // heads
    g = Graph()
    x = g.placeholder("x", (n, d))
    qkv = []
    for w in ("wq", "wk", "wv"):
        h = g.op("reshape", [g.op("matmul", [x, g.constant(params[w])])], shape=(n, heads, dh))
        qkv.append(g.op("transpose", [h], dim0=0, dim1=1))
    q, k, v = qkv
    s = g.op("matmul", [q, g.op("transpose", [k], dim0=1, dim1=2)])
    s = g.op("mul", [s, g.constant(np.asarray(1.0 / float(np.sqrt(dh)), np.float32))])
    top = g.op("max", [s], axes=(2,), keepdims=True)
    e = g.op("exp", [g.op("sub", [s, top])])
    p = g.op("div", [e, g.op("sum", [e], axes=(2,), keepdims=True)])
    o = g.op("reshape", [g.op("transpose", [g.op("matmul", [p, v])], dim0=0, dim1=1)], shape=(n, d))
    g.outputs = (g.op("add", [x, g.op("matmul", [o, g.constant(params["wo"])])]),)
    return g


class _Twin(torch.nn.Module):
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        for k, v in params.items():
            self.register_buffer(k, torch.from_numpy(v.copy()))


class _MLP(_Twin):
    def __init__(self, params: dict[str, np.ndarray], act: str) -> None:
        super().__init__(params)
        self.layers, self.act = len(params) // 2, act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.layers):
            x = x @ getattr(self, f"w{i}") + getattr(self, f"b{i}")
            if i < self.layers - 1:
                x = getattr(x, self.act)()
        return x


class _Attention(_Twin):
    def __init__(self, params: dict[str, np.ndarray], n: int, heads: int) -> None:
        super().__init__(params)
        self.n, self.heads, self.d = n, heads, params["wq"].shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, h, d = self.n, self.heads, self.d
        q = (x @ self.wq).reshape(n, h, d // h).transpose(0, 1)
        k = (x @ self.wk).reshape(n, h, d // h).transpose(0, 1)
        v = (x @ self.wv).reshape(n, h, d // h).transpose(0, 1)
        s = q @ k.transpose(1, 2) * (1.0 / float(np.sqrt(d // h)))
        e = (s - s.amax(dim=-1, keepdim=True)).exp()
        p = e / e.sum(dim=-1, keepdim=True)
        return x + (p @ v).transpose(0, 1).reshape(n, d) @ self.wo


def torch_mlp(params: dict[str, np.ndarray], act: str) -> torch.nn.Module:
    """The torch twin of ``models.mlp``."""
    return _MLP(params, act)


def torch_attention(params: dict[str, np.ndarray], n: int, heads: int) -> torch.nn.Module:
    """The torch twin of ``models.attention_block`` for x: (n, d)."""
    return _Attention(params, n, heads)


_FX_NAMES = {"truediv": "div", "amax": "max"}


def fx_nodes(module: torch.nn.Module) -> list[tuple[str, str]]:
    """``(opcode, target name)`` of every node of ``torch.fx.symbolic_trace(module)``."""
    gm = torch.fx.symbolic_trace(module)
    out = []
    for node in gm.graph.nodes:
        target = node.target if isinstance(node.target, str) else node.target.__name__
        out.append((str(node.op), str(target)))
    return out


def fx_counts(nodes: list[tuple[str, str]]) -> dict[str, int]:
    """Ground truth: fx's call nodes counted by kind, in the course's op names."""
    calls = [t for op, t in nodes if op in ("call_function", "call_method")]
    counts: dict[str, int] = {}
    for t in calls:
        name = _FX_NAMES.get(t, t)
        counts[name] = counts.get(name, 0) + 1
    return counts
