"""Lab 14 tried as a class would: answers written differently, usual mistakes, cheats.

Wrong answers are the passes students write on the way (a DCE that edits its input or sweeps
once, a CSE that ignores attributes or forgets the outputs, a simplifier blind to broadcasting,
folding in float64, a kernel that takes intermediates as arguments, half-open liveness, first
fit); cheats are the reference passes, their private helpers, lab 13's interpreter in a
kernel, torch, and values that decide their own equality.

14.6 (conv-BN folding), tried by a reviewer after the builder: honest answers rebuilt with
Graph()'s builders in a recursive walk from the outputs, a class with the folded constants
first in the node list, the solution behind functools.wraps; wrong ones that scale the input's
W in place, fold a conv read by two BNs (a copy each), check only the statistics for
constants, fold a mean that is an input, fold a conv that is an output, fold in float64;
cheats: onnxruntime's ConvBNFusion on lab 31's ONNX export, lab 31's grader's _scale, the
grader's fold_truth and pair finder, torch's fuse_conv_bn_weights, the input back with the
true count, the input mutated and returned, the grader's graphs rewritten via frames and via
gc, the expected graph looked for in frames, a lying Graph subclass, a lying ndarray subclass.
Found and fixed: the in-place W, the two-BN conv, the unchecked W, onnxruntime, _scale, and the
frame/gc rewrites (cases are now frozen immutable tuples, thawed per call).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from a2s.checks import lab14
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from minitorch.compiler import convbn, fusion, interp, memory, passes
from minitorch.compiler.ir import Graph, Node
from tests.checks.test_lab14 import (
    NUMPY,
    _cse_commutative,
    _cse_keep_last,
    _dce_depth_first,
    _folder,
    cse,
    dce,
    fold_constants,
    fold_conv_bn,
    kernel_source,
    liveness,
    plan,
    simplify,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrapped, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab14


class AnyGraph(Graph):
    def __eq__(self, other):
        return True


# ------------------------------------------------------------------------------------ 14.1
def dce_fixpoint(graph):
    """Remove unread non-output nodes until nothing changes (a worklist, written plainly)."""
    nodes = list(graph.nodes)
    while True:
        read = {i for n in nodes for i in n.inputs} | set(graph.outputs)
        keep = [n for n in nodes if n.name in read or n.op == "placeholder"]
        if len(keep) == len(nodes):
            return Graph(keep, tuple(graph.outputs))
        nodes = keep


def dce_in_place(graph):
    graph.nodes[:] = dce(graph).nodes
    return graph


def dce_once(graph):
    read = {i for n in graph.nodes for i in n.inputs} | set(graph.outputs)
    return Graph([n for n in graph.nodes if n.name in read or n.op == "placeholder"], graph.outputs)


def dce_drop_inputs(graph):
    d = dce(graph)
    read = {i for n in d.nodes for i in n.inputs}
    return Graph([n for n in d.nodes if n.op != "placeholder" or n.name in read], d.outputs)


def dce_ops_only(graph):
    kept = dce(graph)
    dead_consts = [n for n in graph.nodes if n.op == "constant" and n not in kept.nodes]
    return Graph([*dead_consts, *kept.nodes], kept.outputs)


ATTEMPTS = [
    honest("14.1", "a fixed point of sweeps", lambda: lab14.check_dce(dce_fixpoint)),
    honest("14.1", "post-order from the outputs", lambda: lab14.check_dce(_dce_depth_first)),
    wrong(
        "14.1",
        "edits its input",
        lambda: lab14.check_dce(dce_in_place),
        match="changed the graph it was given",
    ),
    wrong("14.1", "one sweep", lambda: lab14.check_dce(dce_once), match="Dead code is left"),
    wrong(
        "14.1",
        "dead constants kept",
        lambda: lab14.check_dce(dce_ops_only),
        match="constant that no live node reads",
    ),
    wrong(
        "14.1",
        "unused inputs dropped",
        lambda: lab14.check_dce(dce_drop_inputs),
        match="keep every input",
    ),
    cheat(
        "14.1",
        "passes.dce",
        lambda: lab14.check_dce(lambda g: passes.dce(g)[0]),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.1",
        "the pass manager",
        lambda: lab14.check_dce(lambda g: passes.PassManager([passes.dce]).run(g)[0]),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.1",
        "a graph that equals anything",
        lambda: lab14.check_dce(lambda g: AnyGraph(list(g.nodes), g.outputs)),
        match="Graph",
    ),
    cheat(
        "14.1",
        "the grader's live set",
        lambda: lab14.check_dce(
            lambda g: Graph([n for n in g.nodes if n.name in lab14._truth.live_names(g)], g.outputs)
        ),
        error=ReferenceCalledError,
    ),
]


# ------------------------------------------------------------------------------------ 14.2
def cse_no_attrs(graph):
    seen, rename, nodes = {}, {}, []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        value = None if n.value is None else n.value.tobytes()
        key = (n.name,) if n.op == "placeholder" else (n.op, n.inputs, value)
        if key in seen:
            rename[n.name] = seen[key]
            continue
        seen[key] = n.name
        nodes.append(n)
    return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))


def cse_stale_outputs(graph):
    return Graph(cse(graph).nodes, graph.outputs)


def cse_sorted_inputs(graph):
    seen, rename, nodes = {}, {}, []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        value = None if n.value is None else n.value.tobytes()
        key = (
            (n.name,) if n.op == "placeholder" else (n.op, n.attrs, tuple(sorted(n.inputs)), value)
        )
        if key in seen:
            rename[n.name] = seen[key]
            continue
        seen[key] = n.name
        nodes.append(n)
    return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))


def cse_reference_key(graph):
    seen, rename, nodes = {}, {}, []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        key = (n.name,) if n.op == "placeholder" else passes._key(n)
        if key in seen:
            rename[n.name] = seen[key]
            continue
        seen[key] = n.name
        nodes.append(n)
    return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))


ATTEMPTS += [
    honest("14.2", "keep the last duplicate", lambda: lab14.check_cse(_cse_keep_last)),
    honest("14.2", "commutative add and mul", lambda: lab14.check_cse(_cse_commutative)),
    honest("14.2", "value numbering", lambda: lab14.check_cse(cse)),
    wrong(
        "14.2",
        "attributes ignored",
        lambda: lab14.check_cse(cse_no_attrs),
        match="different attributes",
    ),
    wrong(
        "14.2",
        "outputs not renamed",
        lambda: lab14.check_cse(cse_stale_outputs),
        match="rename the graph's outputs",
    ),
    wrong(
        "14.2",
        "every op's inputs sorted",
        lambda: lab14.check_cse(cse_sorted_inputs),
        match="x - y and y - x",
    ),
    cheat(
        "14.2",
        "passes.cse",
        lambda: lab14.check_cse(lambda g: passes.cse(g)[0]),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.2",
        "the reference's key",
        lambda: lab14.check_cse(cse_reference_key),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.2",
        "the grader's value count",
        lambda: lab14.check_cse(lambda g: cse(g) if lab14._truth.value_number(g) else g),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.2",
        "a graph that equals anything",
        lambda: lab14.check_cse(lambda g: AnyGraph(list(g.nodes), g.outputs)),
        match="Graph",
    ),
]


# ------------------------------------------------------------------------------------ 14.3
def fold_loop(graph):
    """Folding by repeated passes over the nodes (not one): still float32 via interp.evaluate."""
    out = graph
    while True:
        consts = {n.name: n.value for n in out.nodes if n.op == "constant"}
        changed = False
        nodes = []
        for n in out.nodes:
            if n.op not in ("placeholder", "constant") and all(i in consts for i in n.inputs):
                v = np.asarray(interp.evaluate(n.op, [consts[i] for i in n.inputs], dict(n.attrs)))
                n = Node(n.name, "constant", (), (), v.shape, str(v.dtype), v)
                consts[n.name] = v
                changed = True
            nodes.append(n)
        out = Graph(nodes, out.outputs)
        if not changed:
            return out


def simplify_twice(graph):
    """The notebook's simplifier run to a fixed point of node counts."""
    g = simplify(graph)
    return simplify(g)


def fold_float64(graph):
    g = fold_constants(graph)
    nodes = [
        Node(n.name, n.op, n.inputs, n.attrs, n.shape, "float64", n.value.astype(np.float64))
        if n.op == "constant" and n.name not in {m.name for m in graph.nodes if m.op == "constant"}
        else n
        for n in g.nodes
    ]
    return Graph(nodes, g.outputs)


def simplify_any_transpose(graph):
    for n in graph.nodes:
        if n.op == "transpose":
            src = graph.node(n.inputs[0])
            if src.op == "transpose":
                graph = Graph(
                    [
                        replace(
                            m, inputs=tuple(src.inputs[0] if i == n.name else i for i in m.inputs)
                        )
                        for m in graph.nodes
                    ],
                    tuple(src.inputs[0] if o == n.name else o for o in graph.outputs),
                )
    return simplify(graph)


def simplify_no_shapes(graph):
    for n in graph.nodes:
        if n.op == "mul":
            a, b = n.inputs
            m = graph.node(b)
            if m.op == "constant" and np.all(m.value == 1):
                graph = Graph(
                    [
                        replace(k, inputs=tuple(a if i == n.name else i for i in k.inputs))
                        for k in graph.nodes
                    ],
                    tuple(a if o == n.name else o for o in graph.outputs),
                )
    return simplify(graph)


def _fs(fold, simp):
    return lambda: lab14.check_fold_and_simplify(fold, simp)


ATTEMPTS += [
    honest("14.3", "folding to a fixed point", _fs(fold_loop, simplify)),
    honest("14.3", "simplify run twice", _fs(fold_constants, simplify_twice)),
    wrong("14.3", "folded in float64", _fs(fold_float64, simplify), match="float32"),
    wrong(
        "14.3",
        "any transpose pair cancels",
        _fs(fold_constants, simplify_any_transpose),
        match="same two axes",
    ),
    wrong(
        "14.3",
        "x * 1 whatever the shapes",
        _fs(fold_constants, simplify_no_shapes),
        match="broadcasts",
    ),
    cheat(
        "14.3",
        "passes.fold_constants",
        _fs(lambda g: passes.fold_constants(g)[0], simplify),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.3",
        "passes.simplify",
        _fs(fold_constants, lambda g: passes.simplify(g)[0]),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.3",
        "the reference's identity finder",
        _fs(
            fold_constants,
            lambda g: simplify(g) if [passes._identity_of(g, n) for n in g.nodes] else g,
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.3",
        "graphs that equal anything",
        _fs(lambda g: AnyGraph(list(g.nodes), g.outputs), simplify),
        match="Graph",
    ),
]


# ------------------------------------------------------------------------------------ 14.4
def kernel_lines(graph, names):
    """Argument names from the node names; one assignment per member; expressions inline."""
    inside = set(names)
    ext = list(dict.fromkeys(i for m in names for i in graph.node(m).inputs if i not in inside))
    var = {v: f"in_{k}" for k, v in enumerate(ext)}
    body = []
    for m in names:
        n = graph.node(m)
        a = [var[i] for i in n.inputs]
        if n.op == "sigmoid":
            e = f"0.5 * (1 + np.tanh(0.5 * {a[0]}))"
        elif n.op == "relu":
            e = f"np.maximum({a[0]}, 0)"
        else:
            e = f"{NUMPY[n.op]}({', '.join(a)})"
        var[m] = f"v_{len(body)}"
        body.append(f"    {var[m]} = {e}")
    return "\n".join(
        [f"def kernel({', '.join(var[i] for i in ext)}):", *body, f"    return {var[names[-1]]}"]
    )


def kernel_textbook(graph, names):
    src = kernel_source(graph, names)
    return src.replace("0.5 * (1 + np.tanh(0.5 * ", "1 / (1 + np.exp(-1 * ").replace(
        "np.tanh(0.5 *", "np.exp(-1 *"
    )


def kernel_intermediates(graph, names):
    return kernel_source(graph, names).replace("def kernel(", "def kernel(extra, ", 1)


def kernel_clobber(graph, names):
    head, body = kernel_source(graph, names).split("\n", 1)
    return head + "\n    a0 += 1\n" + body


def kernel_interp(graph, names):
    """Every member computed by lab 13's interpreter, called from inside the kernel."""
    inside = set(names)
    ext = list(dict.fromkeys(i for m in names for i in graph.node(m).inputs if i not in inside))
    var = {v: f"a{k}" for k, v in enumerate(ext)}
    lines = [
        f"def kernel({', '.join(var[i] for i in ext)}):",
        "    from minitorch.compiler import interp",
    ]
    for k, m in enumerate(names):
        n = graph.node(m)
        args = ", ".join(var[i] for i in n.inputs)
        lines.append(f"    t{k} = interp.evaluate({n.op!r}, [{args}], {dict(n.attrs)!r})")
        var[m] = f"t{k}"
    lines.append(f"    return {var[names[-1]]}")
    return "\n".join(lines)


def kernel_torch(graph, names):
    head, body = kernel_source(graph, names).split("\n", 1)
    return head + "\n    import torch; torch.zeros(1)\n" + body


ATTEMPTS += [
    honest("14.4", "names of my own", lambda: lab14.check_kernel_source(kernel_lines)),
    honest("14.4", "a temporary per line", lambda: lab14.check_kernel_source(kernel_source)),
    wrong(
        "14.4",
        "textbook sigmoid",
        lambda: lab14.check_kernel_source(kernel_textbook),
        match="changed the result",
    ),
    wrong(
        "14.4",
        "intermediates as arguments",
        lambda: lab14.check_kernel_source(kernel_intermediates),
        match="external inputs",
    ),
    wrong(
        "14.4",
        "writes into its input",
        lambda: lab14.check_kernel_source(kernel_clobber),
        match="wrote into one of its inputs",
    ),
    cheat(
        "14.4",
        "fusion.kernel_source",
        lambda: lab14.check_kernel_source(lambda g, names: fusion.kernel_source(g, names)[0]),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.4",
        "fusion.compile_kernel",
        lambda: lab14.check_kernel_source(
            lambda g, names: (
                kernel_source(g, names) if fusion.compile_kernel("def kernel(): pass") else ""
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.4",
        "torch inside the kernel",
        lambda: lab14.check_kernel_source(kernel_torch),
        error=ForbiddenCallError,
    ),
    cheat(
        "14.4",
        "the interpreter inside the kernel",
        lambda: lab14.check_kernel_source(kernel_interp),
        error=ReferenceCalledError,
    ),
]


# ------------------------------------------------------------------------------------ 14.5
def liveness_scan(graph):
    last = {}
    for k, n in enumerate(graph.nodes):
        for i in n.inputs:
            last[i] = k
    out = {}
    for k, n in enumerate(graph.nodes):
        if n.op in ("placeholder", "constant"):
            continue
        out[n.name] = (k, len(graph.nodes) if n.name in graph.outputs else last.get(n.name, k))
    return out


def plan_best_fit_list(intervals, sizes):
    """Greedy by size with a list of (lo, hi) holes, written with a while loop."""
    placed = []
    offsets = {}
    for v in sorted(intervals, key=lambda v: (-sizes[v], intervals[v])):
        a, b = intervals[v]
        busy = sorted(
            (o, o + sizes[u]) for u, o in placed if intervals[u][0] <= b and a <= intervals[u][1]
        )
        best = None
        cursor = 0
        k = 0
        while k < len(busy):
            lo, hi = busy[k]
            gap = lo - cursor
            if gap >= sizes[v] and (best is None or gap < best[1]):
                best = (cursor, gap)
            cursor = max(cursor, hi)
            k += 1
        offsets[v] = best[0] if best else cursor
        placed.append((v, offsets[v]))
    return offsets


def liveness_short_outputs(graph):
    out = liveness(graph)
    for o in graph.outputs:
        out[o] = (out[o][0], out[o][0])
    return out


def plan_half_open(intervals, sizes):
    return plan({v: (a, max(a, b - 1)) for v, (a, b) in intervals.items()}, sizes)


def plan_first_fit(intervals, sizes):
    offsets = {}
    for v in sorted(intervals, key=lambda v: intervals[v][0]):
        a, b = intervals[v]
        cursor = 0
        for lo, hi in sorted(
            (offsets[u], offsets[u] + sizes[u])
            for u in offsets
            if intervals[u][0] <= b and a <= intervals[u][1]
        ):
            if lo - cursor >= sizes[v]:
                break
            cursor = max(cursor, hi)
        offsets[v] = cursor
    return offsets


def plan_by_reference(intervals, sizes):
    bufs = [memory.Buffer(v, sizes[v], a, b, (v,)) for v, (a, b) in intervals.items()]
    return memory.greedy_by_size(bufs)


def plan_reference_place(intervals, sizes):
    bufs = [memory.Buffer(v, sizes[v], a, b, (v,)) for v, (a, b) in intervals.items()]
    placed = []
    for buf in sorted(bufs, key=lambda x: -x.size):
        placed.append((buf, memory._place(buf, placed, True)))
    return {b.name: o for b, o in placed}


def _mem(live, pl):
    return lambda: lab14.check_memory_plan(live, pl)


ATTEMPTS += [
    honest("14.5", "last reader by a scan", _mem(liveness_scan, plan)),
    honest("14.5", "holes in a while loop", _mem(liveness, plan_best_fit_list)),
    wrong("14.5", "outputs die early", _mem(liveness_short_outputs, plan), match="live to the end"),
    wrong("14.5", "half-open intervals", _mem(liveness, plan_half_open), match="overlap"),
    wrong("14.5", "first fit", _mem(liveness, plan_first_fit), match="Over budget"),
    cheat(
        "14.5",
        "memory.greedy_by_size",
        _mem(liveness, plan_by_reference),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.5", "memory._place", _mem(liveness, plan_reference_place), error=ReferenceCalledError
    ),
    cheat(
        "14.5",
        "memory.buffers for liveness",
        _mem(
            lambda g: {b.name: (b.first, b.last) for b in memory.buffers(g, in_place=False)}, plan
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.5",
        "one offset for all (no arena)",
        _mem(liveness, lambda iv, s: dict.fromkeys(iv, 0)),
        match="overlap",
    ),
]


# ------------------------------------------------------------------------------------ 14.6
def fold_counted_readers(graph):
    """Readers counted once up front; weights in float64 by einsum, cast back; the folded conv
    written at the BatchNorm's place under a new name, its users renamed."""
    readers = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    by = {n.name: n for n in graph.nodes}
    pairs = {}
    for n in graph.nodes:
        conv = by[n.inputs[0]] if n.op == "batch_norm" else None
        if (
            conv is not None
            and conv.op == "conv2d"
            and readers[conv.name] == 1
            and conv.name not in graph.outputs
            and all(by[i].op == "constant" for i in (*conv.inputs[1:], *n.inputs[1:]))
        ):
            pairs[n.name] = conv
    dropped = {c.name for c in pairs.values()}
    rename, nodes = {}, []
    for n in graph.nodes:
        if n.name in dropped:
            continue
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        if n.name not in pairs:
            nodes.append(n)
            continue
        conv = pairs[n.name]
        x = conv.inputs[0]
        ins = (*conv.inputs[1:], *n.inputs[1:])
        w, b, mu, var, ga, be = (by[i].value.astype(np.float64) for i in ins)
        s = ga / np.sqrt(var + n.attr("eps"))
        w2 = np.einsum("k,kcrs->kcrs", s, w).astype(np.float32)
        b2 = (s * (b - mu) + be).astype(np.float32)
        name = f"folded{len(rename)}"
        nodes += [
            Node(name + "w", "constant", (), (), w2.shape, "float32", w2),
            Node(name + "b", "constant", (), (), b2.shape, "float32", b2),
            Node(name, "conv2d", (rename.get(x, x), name + "w", name + "b"), conv.attrs, n.shape),
        ]
        rename[n.name] = name
    return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs)), len(pairs)


def fold_by_users_of_conv(graph):
    """From the convs' side: each conv whose single reader is a BatchNorm, via Graph.users."""
    folded = graph
    for conv in [n for n in graph.nodes if n.op == "conv2d"]:
        users = folded.users(conv.name)
        if len(users) == 1 and users[0].op == "batch_norm" and conv.name not in graph.outputs:
            one, k = fold_conv_bn(Graph([*folded.nodes], folded.outputs))
            return one, k
    return folded, 0


def _fold(fn):
    return lambda: lab14.check_fold_conv_bn(fn)


def _lab31_fold(graph):
    from a2s.checks.lab31 import _truth as lab31_truth

    g, k = fold_conv_bn(graph)
    nodes = []
    for n in g.nodes:
        if n.op == "constant" and n.value is not None and n.value.ndim == 4:
            n = replace(
                n,
                value=lab31_truth.fold(
                    n.value,
                    *[np.zeros(n.shape[0], np.float32)] * 2,
                    *[np.ones(n.shape[0], np.float32)] * 2,
                    np.zeros(n.shape[0], np.float32),
                    0.0,
                )[0],
            )
        nodes.append(n)
    return Graph(nodes, g.outputs), k


def fold_rebuilt(graph):
    """The graph rebuilt from scratch with Graph()'s own builders, in a topological walk from
    the outputs (depth first, recursive): fresh names everywhere, the folded conv via g.op."""
    by = {n.name: n for n in graph.nodes}
    readers = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    g, made, count = Graph(), {}, [0]
    for n in graph.nodes:  # inputs first, in their order
        if n.op == "placeholder":
            made[n.name] = g.placeholder(n.name, n.shape, n.dtype)

    def build(name):
        if name in made:
            return made[name]
        n = by[name]
        if n.op == "constant":
            made[name] = g.constant(n.value.copy())
            return made[name]
        conv = by.get(n.inputs[0]) if n.op == "batch_norm" else None
        if (
            conv is not None
            and conv.op == "conv2d"
            and readers[conv.name] == 1
            and conv.name not in graph.outputs
            and all(by[i].op == "constant" for i in (*conv.inputs[1:], *n.inputs[1:]))
        ):
            w, b, mu, var, ga, be = (by[i].value for i in (*conv.inputs[1:], *n.inputs[1:]))
            s = (ga / np.sqrt(var + n.attr("eps"))).astype(np.float32)
            x = build(conv.inputs[0])
            wf = g.constant((w * s[:, None, None, None]).astype(np.float32))
            bf = g.constant(((b - mu) * s + be).astype(np.float32))
            made[name] = g.op("conv2d", [x, wf, bf], **dict(conv.attrs))
            count[0] += 1
            return made[name]
        ins = [build(i) for i in n.inputs]
        made[name] = g.op(n.op, ins, **dict(n.attrs))
        return made[name]

    g.outputs = tuple(build(o) for o in graph.outputs)
    return g, count[0]


class ConvBNFolder:
    """A class, the pairs found from the convs' side; the folded constants put first in the
    node list (before the placeholder), the folded conv at the BatchNorm's place."""

    def __init__(self, graph):
        self.graph = graph

    def pairs(self):
        g = self.graph
        for conv in g.nodes:
            users = g.users(conv.name)
            if conv.op != "conv2d" or conv.name in g.outputs or len(users) != 1:
                continue
            bn = users[0]
            if bn.op == "batch_norm" and bn.inputs[0] == conv.name:
                if all(g.node(i).op == "constant" for i in (*conv.inputs[1:], *bn.inputs[1:])):
                    yield conv, bn

    def __call__(self):
        g, front, at, drop = self.graph, [], {}, set()
        for conv, bn in self.pairs():
            w, b = (g.node(i).value.astype(np.float64) for i in conv.inputs[1:])
            mu, var, ga, be = (g.node(i).value.astype(np.float64) for i in bn.inputs[1:])
            s = ga / np.sqrt(var + bn.attr("eps"))
            w2 = np.multiply(w, s.reshape(-1, 1, 1, 1), dtype=np.float64).astype(np.float32)
            b2 = (s * b - s * mu + be).astype(np.float32)
            wn, bn_ = f"__w_{bn.name}", f"__b_{bn.name}"
            front += [
                Node(wn, "constant", (), (), w2.shape, "float32", w2),
                Node(bn_, "constant", (), (), b2.shape, "float32", b2),
            ]
            at[bn.name] = Node(bn.name, "conv2d", (conv.inputs[0], wn, bn_), conv.attrs, bn.shape)
            drop.add(conv.name)
        rest = [at.get(n.name, n) for n in g.nodes if n.name not in drop]
        return Graph(front + rest, g.outputs), len(at)


def fold_input_in_place(graph):
    """The folded graph right, then the input's weights scaled in place (w *= s written on the
    array graph.node(...).value hands out)."""
    g, k = fold_conv_bn(graph)
    for n in graph.nodes:
        if n.op == "constant" and n.value is not None and n.value.ndim == 4:
            np.multiply(n.value, np.float32(1.5), out=n.value)
    return g, k


def fold_all_bn_users(graph):
    """Folds a conv whose users are all BatchNorms, one copy of the conv per BatchNorm."""
    by = {n.name: n for n in graph.nodes}
    fold = {}
    for bn in graph.nodes:
        conv = by[bn.inputs[0]] if bn.op == "batch_norm" else None
        if conv is None or conv.op != "conv2d" or conv.name in graph.outputs:
            continue
        if all(u.op == "batch_norm" for u in graph.users(conv.name)) and all(
            by[i].op == "constant" for i in (*conv.inputs[1:], *bn.inputs[1:])
        ):
            fold[bn.name] = conv
    convs, nodes = {c.name for c in fold.values()}, []
    for n in graph.nodes:
        if n.name in convs:
            continue
        if n.name not in fold:
            nodes.append(n)
            continue
        conv = fold[n.name]
        w, b, mu, var, ga, be = (by[i].value for i in (*conv.inputs[1:], *n.inputs[1:]))
        s = ga / np.sqrt(var + n.attr("eps"))
        w2, b2 = (w * s.reshape(-1, 1, 1, 1)).astype(np.float32), (s * (b - mu) + be)
        nodes += [
            Node(n.name + "_w", "constant", (), (), w2.shape, "float32", w2),
            Node(n.name + "_b", "constant", (), (), b2.shape, "float32", b2.astype(np.float32)),
            replace(conv, name=n.name, inputs=(conv.inputs[0], n.name + "_w", n.name + "_b")),
        ]
    return Graph(nodes, graph.outputs), len(fold)


def fold_stats_only_checked(graph):
    """Checks that the BatchNorm's statistics are constants, not the conv's W and b; a
    placeholder weight is folded as if it were zeros."""
    nodes = [
        replace(n, op="constant", value=np.zeros(n.shape, np.float32))
        if n.op == "placeholder" and len(n.shape) == 4 and n.name != "x"
        else n
        for n in graph.nodes
    ]
    folded, k = fold_conv_bn(Graph(nodes, graph.outputs))
    keep = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    return Graph([keep.get(n.name, n) for n in folded.nodes], folded.outputs), k


def fold_unfrozen_mean(graph):
    """Folds a BatchNorm whose mean is an input (its value taken as zeros)."""
    stats = {n.name: n for n in graph.nodes if n.op == "placeholder" and len(n.shape) == 1}
    nodes = [
        replace(n, op="constant", value=np.zeros(n.shape, np.float32)) if n.name in stats else n
        for n in graph.nodes
    ]
    folded, k = fold_conv_bn(Graph(nodes, graph.outputs))
    return Graph([stats.get(n.name, n) for n in folded.nodes], folded.outputs), k


def fold_by_onnxruntime(graph):
    """Lab 31's ONNX export, onnxruntime's basic optimizations (ConvBNFusion), read back."""
    import os
    import tempfile

    import onnx
    import onnxruntime as ort

    from minitorch.chip import onnx_io

    with tempfile.TemporaryDirectory() as d:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = os.path.join(d, "opt.onnx")
        model = onnx_io.to_onnx(graph).SerializeToString()
        ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        out = onnx_io.from_onnx(onnx.load(opts.optimized_model_filepath))
    bns = lambda g: sum(n.op == "batch_norm" for n in g.nodes)  # noqa: E731
    return out, bns(graph) - bns(out)


def fold_lab31_scale(graph):
    """s from lab 31's grader (its private _scale), the rest written here."""
    from a2s.checks.lab31 import convbn as lab31_convbn

    lab31_convbn._scale(np.ones(2), np.ones(2), 1e-5)
    return fold_conv_bn(graph)


def fold_the_grader_truth(graph):
    return lab14._truth.fold_truth(graph)


def fold_the_grader_pairs(graph):
    g, _ = fold_conv_bn(graph)
    return g, len(lab14._truth.conv_bn_pairs(graph))


def fold_torch_fuse_weights(graph):
    """The solution's pairs, W' and b' from torch.nn.utils.fusion.fuse_conv_bn_weights."""
    import torch
    from torch.nn.utils.fusion import fuse_conv_bn_weights

    g, k = fold_conv_bn(graph)
    by = {n.name: n for n in graph.nodes}
    nodes = []
    for n in g.nodes:
        if n.op == "conv2d" and n.name in by and by[n.name].op == "batch_norm":
            bn = by[n.name]
            conv = by[bn.inputs[0]]
            t = [torch.from_numpy(by[i].value) for i in (*conv.inputs[1:], *bn.inputs[1:])]
            w2, _ = fuse_conv_bn_weights(t[0], t[1], t[2], t[3], bn.attr("eps"), t[4], t[5])
            wn = g.node(n.inputs[1])
            wn = replace(wn, value=w2.detach().numpy())
            nodes = [wn if m.name == wn.name else m for m in (nodes or g.nodes)]
    return (Graph(nodes, g.outputs) if nodes else g), k


class Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), bool)

    def __ne__(self, other):
        return np.zeros(np.shape(self), bool)


def fold_ndarray_subclass(graph):
    """The folded weights as a numpy subclass that says it equals anything (zeros inside)."""
    g, k = fold_conv_bn(graph)
    nodes = [
        replace(n, value=np.zeros_like(n.value).view(Liar))
        if n.op == "constant" and n.name.endswith("_w")
        else n
        for n in g.nodes
    ]
    return Graph(nodes, g.outputs), k


def fold_lying_count(graph):
    """The input back, unchanged, with the true number of pairs (counted honestly)."""
    return Graph(list(graph.nodes), graph.outputs), fold_conv_bn(graph)[1]


def fold_mutate_and_return(graph):
    folded, k = fold_conv_bn(graph)
    graph.nodes[:] = folded.nodes
    return graph, k


def fold_rewrite_grader_graphs(graph):
    """Every Graph in the callers' frames made trivial (x -> x), so the grader's truth folds
    nothing; the answer is the trivial graph and 0 folds."""
    import sys

    trivial = [n for n in graph.nodes if n.op == "placeholder"]
    f = sys._getframe(1)
    while f is not None:
        for v in list(f.f_locals.values()):
            if isinstance(v, Graph):
                v.nodes[:] = trivial
                v.outputs = (trivial[0].name,)
        f = f.f_back
    return Graph(list(trivial), (trivial[0].name,)), 0


def fold_gc_rewrite(graph):
    """The same through gc: every Graph alive made trivial."""
    import gc

    trivial = [n for n in graph.nodes if n.op == "placeholder"]
    for v in gc.get_objects():
        if type(v) is Graph and v.nodes and v.nodes[0].name == trivial[0].name:
            v.nodes[:] = trivial
            v.outputs = (trivial[0].name,)
    return Graph(list(trivial), (trivial[0].name,)), 0


def fold_expected_from_frames(graph):
    """Whatever graph with no batch_norm a caller's frame holds, returned as the answer."""
    import sys

    f = sys._getframe(1)
    while f is not None:
        for v in list(f.f_locals.values()):
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], Graph):
                if not any(n.op == "batch_norm" for n in v[0].nodes):
                    return v
        f = f.f_back
    return graph, 0


class LyingGraph(Graph):
    """A Graph subclass whose comparisons and str say it is the expected graph."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __str__(self):
        return "anything"


ATTEMPTS += [
    honest("14.6", "readers counted first, float64 by einsum", _fold(fold_counted_readers)),
    honest("14.6", "the solution behind a users() pre-check", _fold(fold_by_users_of_conv)),
    wrong("14.6", "folds a conv a relu also reads", _fold(_folder(users=False)), match="ONLY user"),
    wrong("14.6", "eps left out", _fold(_folder(eps=False)), match="inside the square root"),
    wrong("14.6", "s b - mean + beta", _fold(_folder(bias="sb - mu + beta")), match="BEFORE"),
    wrong("14.6", "scaled along input channels", _fold(_folder(axis=1)), match="OUTPUT channel"),
    wrong("14.6", "old conv left behind", _fold(_folder(sweep=False)), match="remove the old"),
    cheat("14.6", "convbn.fold_conv_bn", _fold(convbn.fold_conv_bn), error=ReferenceCalledError),
    cheat("14.6", "lab 31's closed form", _fold(_lab31_fold), error=ReferenceCalledError),
    cheat(
        "14.6",
        "the chip backend's pipeline",
        _fold(
            lambda g: (
                __import__("minitorch.chip.compile_backend", fromlist=["x"]).optimize(
                    g, fuse=False
                )[0],
                1,
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "14.6",
        "a graph that equals anything",
        _fold(lambda g: (AnyGraph(*(lambda r: (r[0].nodes, r[0].outputs))(fold_conv_bn(g))), 1)),
        match="Graph",
    ),
    cheat(
        "14.6",
        "a count equal to anything",
        _fold(lambda g: (fold_conv_bn(g)[0], always_equal(0))),
        match="plain value",
    ),
    honest("14.6", "rebuilt with Graph() in a recursive walk", _fold(fold_rebuilt)),
    honest(
        "14.6", "a class; folded constants first in the list", _fold(lambda g: ConvBNFolder(g)())
    ),
    honest("14.6", "the solution behind functools.wraps", _fold(wrapped(fold_conv_bn))),
    wrong(
        "14.6",
        "W *= s on the input's arrays",
        _fold(fold_input_in_place),
        match="changed the graph it was given",
    ),
    wrong(
        "14.6", "a conv read by two BNs folded twice", _fold(fold_all_bn_users), match="ONLY user"
    ),
    wrong(
        "14.6",
        "W not checked to be a constant",
        _fold(fold_stats_only_checked),
        match="conv whose W or b",
    ),
    wrong(
        "14.6", "a mean that is an input folded", _fold(fold_unfrozen_mean), match="not constants"
    ),
    wrong(
        "14.6",
        "folds a conv that is an output",
        _fold(_folder(outputs=False)),
        match="graph output",
    ),
    wrong("14.6", "folded in float64", _fold(_folder(dtype=np.float64)), match="stay float32"),
    cheat(
        "14.6", "onnxruntime's ConvBNFusion", _fold(fold_by_onnxruntime), error=ForbiddenCallError
    ),
    cheat("14.6", "lab 31's grader's _scale", _fold(fold_lab31_scale), error=ReferenceCalledError),
    cheat(
        "14.6", "the grader's fold_truth", _fold(fold_the_grader_truth), error=ReferenceCalledError
    ),
    cheat(
        "14.6", "the grader's pair finder", _fold(fold_the_grader_pairs), error=ReferenceCalledError
    ),
    cheat(
        "14.6",
        "torch's fuse_conv_bn_weights",
        _fold(fold_torch_fuse_weights),
        error=ForbiddenCallError,
    ),
    cheat(
        "14.6",
        "the input back, the count true",
        _fold(fold_lying_count),
        match="differs from the expected",
    ),
    cheat(
        "14.6",
        "the input mutated and returned",
        _fold(fold_mutate_and_return),
        match="changed the graph it was given",
    ),
    cheat(
        "14.6",
        "the grader's graphs rewritten via frames",
        _fold(fold_rewrite_grader_graphs),
        match="changed the graph it was given",
    ),
    cheat(
        "14.6",
        "the grader's graphs rewritten via gc",
        _fold(fold_gc_rewrite),
        match="changed the graph it was given",
    ),
    cheat(
        "14.6",
        "the expected graph read from frames",
        _fold(fold_expected_from_frames),
        match="the grader counts",
    ),
    cheat(
        "14.6",
        "a Graph subclass whose comparisons lie",
        _fold(lambda g: (LyingGraph(*(lambda r: (r.nodes, r.outputs))(fold_conv_bn(g)[0])), 1)),
        match="return a minitorch.compiler.ir.Graph",
    ),
    cheat(
        "14.6",
        "a numpy subclass for the folded weights",
        _fold(fold_ndarray_subclass),
        match="differ from the unfolded graph",
    ),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
