"""Lab 14's trusted side, shared by its graders: random graphs with dead code, duplicates and
identities; the ground-truth passes written as plain loops here (never the reference's);
semantics checked by running graphs before and after on random inputs; small CNNs and the
conv-BatchNorm fold of 14.6 (its conditions and closed form, each of them relaxable into a
modelled mistake).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np

from a2s.checks.core import assert_true
from minitorch.compiler import convbn as _registers_conv_ops  # noqa: F401  (shape rules, kernels)
from minitorch.compiler import interp
from minitorch.compiler.ir import Graph, Node, same_structure, verify

__all__ = [
    "CONDITIONS",
    "F32",
    "blank",
    "bn_layer",
    "conv_bn_pairs",
    "conv_layer",
    "fold_truth",
    "folded_weights",
    "live_names",
    "random_cnn",
    "random_graph",
    "same_semantics",
    "structural",
    "swept",
    "value_number",
]

F32 = np.float32
CONDITIONS = ("users", "outputs", "constants")  # the fold's conditions a mistake may drop


def random_graph(gen: np.random.Generator, n_ops: int = 14, rows: int = 3, cols: int = 4) -> Graph:
    """Inputs, scalar constants (0, 1, 2), a weight; random ops on earlier values, with
    repeated subexpressions, identities and dead values; one or two outputs."""
    g = Graph()
    x = g.placeholder("x", (rows, cols))
    y = g.placeholder("y", (rows, cols))
    w = g.constant(gen.standard_normal((cols, cols)).astype(np.float32) / 2)
    one, zero, two = (g.constant(np.asarray(v, np.float32)) for v in (1.0, 0.0, 2.0))
    vals = [x, y]
    for _ in range(n_ops):
        a = vals[int(gen.integers(max(0, len(vals) - 4), len(vals)))]
        b = vals[int(gen.integers(0, len(vals)))]
        kind = int(gen.integers(0, 9))
        if kind == 0:
            v = g.op(str(gen.choice(["add", "mul", "sub"])), [a, b])
        elif kind == 1:
            v = g.op("tanh", [a])
        elif kind == 2:
            v = g.op(str(gen.choice(["mul", "div"])), [a, one])
        elif kind == 3:
            v = g.op(str(gen.choice(["add", "sub"])), [a, zero])
        elif kind == 4:
            v = g.op("matmul", [a, w])
        elif kind == 5:
            v = g.op("transpose", [g.op("transpose", [a], dim0=0, dim1=1)], dim0=0, dim1=1)
        elif kind == 6:
            v = g.op("mul", [g.op("add", [two, one]), a])  # a constant subexpression
        elif kind == 7:
            s = g.op("sum", [a], axes=(1,), keepdims=True)
            v = g.op("sub", [a, g.op("div", [s, g.constant(np.asarray(cols, np.float32))])])
        else:
            v = g.op(
                "relu",
                [g.op("reshape", [g.op("reshape", [a], shape=(rows * cols,))], shape=(rows, cols))],
            )
        if gen.random() < 0.3:  # the same expression again
            n = g.node(v)
            g.op(n.op, list(n.inputs), **dict(n.attrs))
        vals.append(g.op("tanh", [v]) if gen.random() < 0.3 else v)
    outs = [vals[-1]] if gen.random() < 0.5 else [vals[-1], vals[len(vals) // 2]]
    g.outputs = tuple(dict.fromkeys(outs))
    return g


def live_names(graph: Graph) -> set[str]:
    """Ground truth of DCE: the values some output depends on, and every placeholder."""
    live = set(graph.outputs)
    changed = True
    while changed:
        changed = False
        for n in graph.nodes:
            if n.name in live and not set(n.inputs) <= live:
                live |= set(n.inputs)
                changed = True
    return live | {n.name for n in graph.nodes if n.op == "placeholder"}


def value_number(graph: Graph, commutative: bool = False) -> int:
    """Ground truth of CSE: how many distinct values the graph computes (a plain loop);
    ``commutative``: ``add`` and ``mul`` with swapped inputs count as one value."""
    number: dict[str, int] = {}
    table: dict[Any, int] = {}
    for n in graph.nodes:
        if n.op == "placeholder":
            key: Any = ("in", n.name)
        else:
            value = (
                None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes())
            )
            ins = [number[i] for i in n.inputs]
            if commutative and n.op in ("add", "mul"):
                ins.sort()
            key = (n.op, n.attrs, tuple(ins), value)
        number[n.name] = table.setdefault(key, len(table))
    return len(table)


def same_semantics(
    before: Graph, after: Graph, case: str, gen: np.random.Generator, what: str
) -> None:
    """The two graphs give equal outputs on two random inputs (values, shapes and dtypes)."""
    shapes = [n.shape for n in before.nodes if n.op == "placeholder"]
    for _ in range(2):
        xs = [gen.standard_normal(s).astype(np.float32) for s in shapes]
        want, got = interp.run(before, *xs), interp.run(after, *xs)
        assert_true(len(got) == len(want), f"[{case}] {what} changed the number of outputs")
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            same = (
                a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
            )
            assert_true(
                same,
                f"[{case}] {what} changed output {k}: the graph no longer computes the same "
                "values.",
            )


def structural(got: Graph, want: Graph, case: str, hint: str) -> None:
    """``got`` is well formed and equals ``want`` up to renaming."""
    problems = verify(got)
    assert_true(
        not problems, f"[{case}] the result is not a well-formed graph: {problems[:2]}. {hint}"
    )
    if same_structure(got, want):
        return
    if max(len(got.nodes), len(want.nodes)) <= 16:
        shown = f"\nExpected:\n{want}\nGot:\n{got}\n"
    else:  # a fresh random graph: what differs, not two long listings
        kinds = lambda g: Counter(n.op for n in g.nodes)  # noqa: E731
        extra, missing = kinds(got) - kinds(want), kinds(want) - kinds(got)
        shown = (
            f" Expected {len(want.nodes)} nodes, got {len(got.nodes)}"
            + (f"; extra: {dict(extra)}" if extra else "")
            + (f"; missing: {dict(missing)}" if missing else "")
            + ". "
        )
    assert_true(False, f"[{case}] the result differs from the expected graph.{shown}{hint}")


def conv_bn_pairs(graph: Graph, relax: str = "") -> list[tuple[str, str]]:
    """The (conv, bn) pairs that fold; ``relax`` drops one condition (a modelled mistake)."""
    by = {n.name: n for n in graph.nodes}
    readers: dict[str, int] = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    pairs = []
    for bn in graph.nodes:
        if bn.op != "batch_norm" or by[bn.inputs[0]].op != "conv2d":
            continue
        conv = by[bn.inputs[0]]
        frozen = all(by[i].op == "constant" for i in (*conv.inputs[1:], *bn.inputs[1:]))
        if not frozen and relax != "constants":
            continue
        if readers[conv.name] != 1 and relax != "users":
            continue
        if conv.name in graph.outputs and relax != "outputs":
            continue
        pairs.append((conv.name, bn.name))
    return pairs


def folded_weights(w: Any, b: Any, st: list[Any], eps: float, mistake: str) -> tuple[Any, Any]:
    mean, var, gamma, beta = (np.asarray(v, np.float64) for v in st)
    w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
    s = gamma / np.sqrt(var + (0.0 if mistake == "eps" else eps))
    if mistake == "axis":
        w2 = w * s.reshape(1, -1, 1, 1)
    else:
        w2 = w * s.reshape(-1, 1, 1, 1)
    b2 = {"bias": s * b - mean + beta, "bias-mean": s * b + beta}.get(
        mistake, s * (b - mean) + beta
    )
    return w2.astype(F32), b2.astype(F32)


def fold_truth(graph: Graph, mistake: str = "") -> tuple[Graph, int]:
    """The grader's own pass: each folding pair becomes one conv2d, named as its BatchNorm, in
    the conv's place; a relaxed condition (a modelled mistake) sends the conv's other readers
    to the folded value."""
    pairs = conv_bn_pairs(graph, mistake if mistake in CONDITIONS else "")
    by = {n.name: n for n in graph.nodes}
    convs, bns = dict(pairs), {b for _, b in pairs}
    nodes: list[Node] = []
    g = Graph(nodes, tuple(convs.get(o, o) for o in graph.outputs))
    for n in graph.nodes:
        if n.name in bns:
            continue
        if n.name not in convs:
            nodes.append(replace(n, inputs=tuple(convs.get(i, i) for i in n.inputs)))
            continue
        bn = by[convs[n.name]]
        # a relaxed "constants" variant reads zeros where a statistic is not a constant
        val = lambda m: m.value if m.value is not None else np.zeros(m.shape)  # noqa: E731
        st = [val(by[i]) for i in bn.inputs[1:]]
        w, b = val(by[n.inputs[1]]), val(by[n.inputs[2]])
        if mistake == "axis" and w.shape[0] != w.shape[1]:
            return graph, -1  # that mistake cannot be made on this case (C != K)
        w2, b2 = folded_weights(w, b, st, bn.attr("eps"), mistake)
        wn, bn_ = g.constant(w2, g.fresh("wfold")), g.constant(b2, g.fresh("bfold"))
        nodes.append(Node(bn.name, "conv2d", (n.inputs[0], wn, bn_), n.attrs, bn.shape, "float32"))
    return g, len(pairs)


def swept(g: Graph) -> Graph:
    """``g`` without constants nobody reads (the old W, b and statistics may stay behind)."""
    read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
    return Graph([n for n in g.nodes if n.op != "constant" or n.name in read], g.outputs)


def blank(g: Graph) -> Graph:
    """Constants compared by shape and dtype only: their values are checked by running."""
    nodes = [
        Node(n.name, n.op, n.inputs, n.attrs, n.shape, n.dtype, np.zeros(n.shape, n.dtype))
        if n.op == "constant"
        else n
        for n in g.nodes
    ]
    return Graph(nodes, g.outputs)


def conv_layer(g: Graph, gen: np.random.Generator, h: str, k: int, r: int = 3, **attrs: Any) -> str:
    c = g.node(h).shape[1]
    w = g.constant((gen.standard_normal((k, c, r, r)) / np.sqrt(c * r * r)).astype(F32))
    b = g.constant(gen.standard_normal(k).astype(F32))
    attrs.setdefault("stride", (1, 1))
    attrs.setdefault("padding", (1, 1) if r == 3 else (0, 0))
    return g.op("conv2d", [h, w, b], **attrs)


def bn_layer(
    g: Graph,
    gen: np.random.Generator,
    h: str,
    eps: float = 1e-5,
    var: tuple[float, float] = (0.05, 2.0),
) -> str:
    k = g.node(h).shape[1]
    st = [
        gen.standard_normal(k),
        gen.uniform(var[0], var[1], k),
        gen.uniform(0.5, 1.5, k),
        gen.standard_normal(k),
    ]
    return g.op("batch_norm", [h, *(g.constant(v.astype(F32)) for v in st)], eps=eps)


def random_cnn(gen: np.random.Generator) -> Graph:
    """Conv blocks (BatchNorm most of the time, a relu now and then, a conv read twice)."""
    g = Graph()
    h = g.placeholder("x", (2, int(gen.integers(2, 5)), 7, 7))
    for _ in range(int(gen.integers(2, 5))):
        c = conv_layer(g, gen, h, int(gen.integers(2, 6)))
        h = bn_layer(g, gen, c) if gen.random() < 0.75 else c
        if gen.random() < 0.25:  # the conv also read by a relu: that pair must stay
            h = g.op("add", [h, g.op("relu", [c])])
        elif gen.random() < 0.5:
            h = g.op("relu", [h])
    g.outputs = (h,)
    return g
