"""Graders of lab 14: correct answers pass, realistic wrong ones and reference calls fail."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from a2s.checks import lab14
from a2s.checks.core import CheckFailure, ForbiddenCallError, ReferenceCalledError
from minitorch.compiler import convbn, fusion, interp, memory, passes
from minitorch.compiler.ir import Graph, Node
from tests.helpers.graders import rejects, unblocked_in

pytestmark = pytest.mark.lab14


# --------------------------------------------------------------------------- correct answers
MUSTS = [
    ("14.1", "placeholders always stay", "test_attempt"),
    ("14.1", "Do not modify `graph`.", "test_dce_modifying_its_input_is_rejected"),
    (
        "14.1",
        "A node is **live** when an output names it or a live node reads it",
        "test_dce_removing_an_op_with_a_used_output_is_rejected",
    ),
    (
        "14.1",
        "`dce(dce(g))` has as many nodes as `dce(g)`",
        "test_dce_removing_only_unused_nodes_once_is_rejected",
    ),
    (
        "14.2",
        "same op, same **attributes**, same inputs (after earlier merges)",
        "test_cse_merging_ops_with_different_attributes_is_rejected",
    ),
    ("14.2", "Placeholders are never merged.", "test_cse_merging_placeholders_is_rejected"),
    ("14.2", "`cse(g)` never has more nodes than `g`", "test_attempt"),
    (
        "14.3",
        "computed exactly as the interpreter would, so in float32",
        "test_folding_in_float64_is_rejected",
    ),
    (
        "14.3",
        "Each holds only when the result has $x$'s **shape and dtype**",
        "test_simplify_ignoring_broadcasting_is_rejected",
    ),
    (
        "14.3",
        "A transpose pair cancels only when both swap the same two axes.",
        "test_simplify_cancelling_any_transpose_pair_is_rejected",
    ),
    ("14.4", "the inputs left untouched", "test_kernel_writing_into_its_input_is_rejected"),
    (
        "14.4",
        "exactly the external inputs as arguments",
        "test_kernel_taking_intermediates_as_arguments_is_rejected",
    ),
    ("14.4", "requires the same bits", "test_kernel_with_a_textbook_sigmoid_is_rejected"),
    ("14.4", "inside your generated kernels too", "test_kernel_calling_torch_is_rejected"),
    (
        "14.5",
        "the arena's peak must be **at most 1.10 times the lower bound** $L$",
        "test_first_fit_plan_breaks_the_budget",
    ),
    (
        "14.5",
        "(intervals inclusive at both ends) may overlap",
        "test_plan_with_half_open_intervals_overlaps_live_buffers",
    ),
    ("14.5", "or `len(graph.nodes)` for an output", "test_liveness_forgetting_outputs_is_rejected"),
    ("14.5", "`max(o + sizes[v]) >= L` always", "test_attempt"),
    (
        "14.6",
        "the conv's output must have the BatchNorm as its **only** user",
        "test_folding_a_conv_with_other_users_is_rejected",
    ),
    ("14.6", "must not be a graph output", "test_folding_a_conv_that_is_an_output_is_rejected"),
    ("14.6", "must be **constants**", "test_folding_on_a_mean_that_is_an_input_is_rejected"),
    (
        "14.6",
        "the old `conv2d` and `batch_norm` nodes are gone",
        "test_leaving_the_old_conv_behind_is_rejected",
    ),
    ("14.6", "(float32, as $W$ is)", "test_folded_weights_in_float64_are_rejected"),
    ("14.6", "`folds` is the number of pairs folded", "test_a_wrong_fold_count_is_rejected"),
    (
        "14.6",
        "within $10^{-5}$ of each output's largest magnitude",
        "test_folding_without_eps_is_rejected",
    ),
    (
        "14.6",
        "b'_k = s_k (b_k - \\mu_k) + \\beta_k",
        "test_folding_with_the_mean_outside_the_scale_is_rejected",
    ),
    ("14.6", "output channel } k", "test_scaling_the_input_channels_is_rejected"),
    (
        "14.6",
        "stride and padding are the conv's",
        "test_fold_conv_bn_dropping_the_stride_is_rejected",
    ),
    ("14.6", "Do not modify `graph`.", "test_fold_conv_bn_modifying_its_input_is_rejected"),
]


def dce(graph: Graph) -> Graph:
    """``graph`` without the nodes no output depends on (placeholders always stay)."""
    live = set(graph.outputs)
    for n in reversed(graph.nodes):
        if n.name in live:
            live.update(n.inputs)
    keep = [n for n in graph.nodes if n.name in live or n.op == "placeholder"]
    return Graph(keep, graph.outputs)


def cse(graph: Graph) -> Graph:
    """``graph`` with every repeated computation (same op, attrs, inputs, value) done once."""
    seen, rename, nodes = {}, {}, []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        if n.op == "placeholder":
            nodes.append(n)
            continue
        value = None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes())
        key = (n.op, n.attrs, n.inputs, value)
        if key in seen:
            rename[n.name] = seen[key]
            continue
        seen[key] = n.name
        nodes.append(n)
    return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))


def fold_constants(graph: Graph) -> Graph:
    """Every op whose inputs are all constants replaced by a constant holding its value."""
    values, nodes = {}, []
    for n in graph.nodes:
        if n.op == "constant":
            values[n.name] = n.value
        elif n.op != "placeholder" and all(i in values for i in n.inputs):
            v = np.asarray(interp.evaluate(n.op, [values[i] for i in n.inputs], dict(n.attrs)))
            values[n.name] = v
            n = Node(n.name, "constant", (), (), v.shape, str(v.dtype), v)
        nodes.append(n)
    return Graph(nodes, graph.outputs)


def redirect(graph: Graph, old: str, new: str) -> Graph:
    """Every use of ``old`` (inputs and outputs) now reads ``new``."""
    nodes = [
        replace(n, inputs=tuple(new if i == old else i for i in n.inputs)) for n in graph.nodes
    ]
    return Graph(nodes, tuple(new if o == old else o for o in graph.outputs))


def simplify(graph: Graph) -> Graph:
    """x*1, 1*x, x+0, 0+x, x-0, x/1, transpose of transpose and reshape chains removed."""

    def is_const(name, v):
        m = graph.node(name)
        return m.op == "constant" and bool(np.all(m.value == v))

    for name in [n.name for n in graph.nodes]:
        n = graph.node(name)
        same = lambda i, n=n, g=graph: (g.node(i).shape, g.node(i).dtype) == (n.shape, n.dtype)  # noqa: E731
        target = None
        if n.op in ("mul", "add"):
            unit = 1.0 if n.op == "mul" else 0.0
            a, b = n.inputs
            target = (
                a if is_const(b, unit) and same(a) else b if is_const(a, unit) and same(b) else None
            )
        elif n.op in ("sub", "div"):
            a, b = n.inputs
            target = a if is_const(b, 0.0 if n.op == "sub" else 1.0) and same(a) else None
        elif n.op == "reshape":
            src = graph.node(n.inputs[0])
            if src.shape == n.shape:
                target = src.name
            elif src.op == "reshape":
                nodes = [
                    replace(m, inputs=src.inputs) if m.name == name else m for m in graph.nodes
                ]
                graph = Graph(nodes, graph.outputs)
        elif n.op == "transpose":
            src = graph.node(n.inputs[0])
            if src.op == "transpose" and src.attrs == n.attrs:
                target = src.inputs[0]
        if target is not None:
            graph = redirect(graph, name, target)
    return graph


NUMPY = {
    "add": "np.add",
    "sub": "np.subtract",
    "mul": "np.multiply",
    "div": "np.divide",
    "pow": "np.power",
    "neg": "np.negative",
    "exp": "np.exp",
    "log": "np.log",
    "tanh": "np.tanh",
    "matmul": "np.matmul",
}


def kernel_source(graph: Graph, names: list[str]) -> str:
    """Source of ``def kernel(a0, a1, ...)`` computing the group ``names``; returns the last."""
    inside, ext = set(names), []
    for m in names:
        for i in graph.node(m).inputs:
            if i not in inside and i not in ext:
                ext.append(i)
    var = {name: f"a{k}" for k, name in enumerate(ext)}
    lines = [f"def kernel({', '.join(var[i] for i in ext)}):"]
    for k, m in enumerate(names):
        n = graph.node(m)
        args = [var[i] for i in n.inputs]
        if n.op == "sigmoid":
            expr = f"0.5 * (1 + np.tanh(0.5 * {args[0]}))"
        elif n.op == "relu":
            expr = f"np.maximum({args[0]}, 0)"
        else:
            expr = f"{NUMPY[n.op]}({', '.join(args)})"
        var[m] = f"t{k}"
        lines.append(f"    t{k} = {expr}")
    lines.append(f"    return {var[names[-1]]}")
    return "\n".join(lines)


def liveness(graph: Graph) -> dict[str, tuple[int, int]]:
    """(first, last) step of every op node's value; outputs live to len(graph.nodes)."""
    step = {n.name: k for k, n in enumerate(graph.nodes)}
    out = {
        n.name: (k, k) for k, n in enumerate(graph.nodes) if n.op not in ("placeholder", "constant")
    }
    for n in graph.nodes:
        for i in n.inputs:
            if i in out:
                out[i] = (out[i][0], max(out[i][1], step[n.name]))
    for o in graph.outputs:
        out[o] = (out[o][0], len(graph.nodes))
    return out


def plan(intervals: dict[str, tuple[int, int]], sizes: dict[str, int]) -> dict[str, int]:
    """Arena offsets, greedy by size: no two buffers live at one step share a byte."""
    offsets = {}
    for v in sorted(intervals, key=lambda v: (-sizes[v], intervals[v][0])):
        first, last = intervals[v]
        busy = sorted(
            (offsets[u], offsets[u] + sizes[u])
            for u in offsets
            if intervals[u][0] <= last and first <= intervals[u][1]
        )
        best, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            if lo - cursor >= sizes[v] and (best_gap is None or lo - cursor < best_gap):
                best, best_gap = cursor, lo - cursor
            cursor = max(cursor, hi)
        offsets[v] = cursor if best is None else best
    return offsets


def fold_conv_bn(graph: Graph) -> tuple[Graph, int]:
    """Every frozen conv2d -> batch_norm pair folded into one conv2d; (graph, folds)."""
    return _folder()(graph)


def _folder(
    *,
    users: bool = True,
    outputs: bool = True,
    eps: bool = True,
    bias: str = "s(b - mu) + beta",
    axis: int = 0,
    sweep: bool = True,
    dtype: type = np.float32,
) -> Any:
    """The notebook's solution, with one of its rules switched off (a modelled mistake)."""

    def fold(graph: Graph) -> tuple[Graph, int]:
        pairs = {}
        for bn in graph.nodes:
            if bn.op != "batch_norm":
                continue
            conv = graph.node(bn.inputs[0])
            if conv.op != "conv2d" or (outputs and conv.name in graph.outputs):
                continue
            if users and len(graph.users(conv.name)) != 1:
                continue
            if all(graph.node(i).op == "constant" for i in (*conv.inputs[1:], *bn.inputs[1:])):
                pairs[conv.name] = bn
        gone = {bn.name for bn in pairs.values()}
        nodes = []
        for n in graph.nodes:
            if n.name in pairs:
                bn = pairs[n.name]
                ins = (*n.inputs[1:], *bn.inputs[1:])
                w, b, mean, var, gamma, beta = (graph.node(i).value for i in ins)
                s = gamma / np.sqrt(var.astype(dtype) + (bn.attr("eps") if eps else 0.0))
                shape = [1, 1, 1, 1]
                shape[axis] = -1
                w2 = (w * s.reshape(shape)).astype(dtype)
                b2 = {
                    "s(b - mu) + beta": (b - mean) * s + beta,
                    "sb - mu + beta": s * b - mean + beta,
                }[bias].astype(dtype)
                wf, bf = f"{bn.name}_w", f"{bn.name}_b"
                nodes += [
                    Node(wf, "constant", (), (), w2.shape, str(w2.dtype), w2),
                    Node(bf, "constant", (), (), b2.shape, str(b2.dtype), b2),
                ]
                if not sweep:
                    nodes.append(n)
                nodes.append(
                    replace(n, name=bn.name, inputs=(n.inputs[0], wf, bf), dtype=str(w2.dtype))
                )
            elif n.name not in gone:
                nodes.append(n)
        return Graph(nodes, graph.outputs), len(pairs)

    return fold


def test_correct_answers_pass(capsys: pytest.CaptureFixture[str]) -> None:
    lab14.check_dce(dce)
    lab14.check_cse(cse)
    lab14.check_fold_and_simplify(fold_constants, simplify)
    lab14.check_kernel_source(kernel_source)
    lab14.check_memory_plan(liveness, plan)
    lab14.check_fold_conv_bn(fold_conv_bn)
    assert capsys.readouterr().out.count("passed") == 6


# --------------------------------------------------------------------------- other correct answers
def _dce_depth_first(graph: Graph) -> Graph:
    """Inputs first, then a post-order from the outputs: another valid topological order."""
    by_name, order, seen = {n.name: n for n in graph.nodes}, [], set()

    def visit(v: str) -> None:
        if v not in seen:
            seen.add(v)
            for i in by_name[v].inputs:
                visit(i)
            order.append(by_name[v])

    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    seen.update(n.name for n in inputs)
    for o in graph.outputs:
        visit(o)
    return Graph(inputs + order, tuple(graph.outputs))


def _cse_keep_last(graph: Graph) -> Graph:
    """Keeps the LAST of each set of duplicates, then re-sorts the nodes topologically."""
    first: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    seen: dict[object, str] = {}
    for n in graph.nodes:
        ins = tuple(first.get(i, i) for i in n.inputs)
        value = None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes())
        key = (n.name,) if n.op == "placeholder" else (n.op, n.attrs, ins, value)
        first[n.name] = seen.setdefault(key, n.name)
        members.setdefault(first[n.name], []).append(n.name)
    keep = {f: names[-1] for f, names in members.items()}
    canon = {v: keep[f] for v, f in first.items()}
    by_name = {
        canon[n.name]: replace(n, inputs=tuple(canon[i] for i in n.inputs))
        for n in graph.nodes
        if canon[n.name] == n.name
    }
    order: list[Node] = []

    def visit(v: str) -> None:
        if all(m.name != v for m in order):
            for i in by_name[v].inputs:
                visit(i)
            order.append(by_name[v])

    for n in graph.nodes:
        visit(canon[n.name])
    return Graph(order, tuple(canon[o] for o in graph.outputs))


def _cse_commutative(graph: Graph) -> Graph:
    """Also merges x + y with y + x (exact in IEEE arithmetic), then sweeps dead code."""
    seen, rename, nodes = {}, {}, []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        if n.op == "placeholder":
            nodes.append(n)
            continue
        value = None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes())
        ins = tuple(sorted(n.inputs)) if n.op in ("add", "mul") else n.inputs
        key = (n.op, n.attrs, ins, value)
        if key in seen:
            rename[n.name] = seen[key]
            continue
        seen[key] = n.name
        nodes.append(n)
    return dce(Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs)))


def test_other_correct_answers_pass() -> None:
    lab14.check_dce(_dce_depth_first)
    lab14.check_cse(_cse_keep_last)
    lab14.check_cse(_cse_commutative)
    lab14.check_cse(lambda g: dce(cse(g)))
    lab14.check_memory_plan(
        lambda g: {v: [np.int64(a), np.int64(b)] for v, (a, b) in liveness(g).items()},
        lambda iv, sz: {v: np.int64(o) for v, o in plan(iv, sz).items()},
    )


def test_the_reference_passes_its_own_graders() -> None:
    ref = unblocked_in("minitorch.compiler")
    dce_, cse_ = ref(passes.dce), ref(passes.cse)
    fold_, simplify_ = ref(passes.fold_constants), ref(passes.simplify)
    lab14.check_dce(lambda g: dce_(g)[0])
    lab14.check_cse(lambda g: cse_(g)[0])
    lab14.check_fold_and_simplify(lambda g: fold_(g)[0], lambda g: simplify_(g)[0])
    source = ref(fusion.kernel_source)
    lab14.check_kernel_source(lambda g, names: source(g, names)[0])
    lab14.check_fold_conv_bn(ref(convbn.fold_conv_bn))


# --------------------------------------------------------------------------- 14.1 DCE
def test_dce_modifying_its_input_is_rejected() -> None:
    def in_place(graph: Graph) -> Graph:
        graph.nodes[:] = dce(graph).nodes
        return graph

    rejects(lab14.check_dce, in_place, match="changed the graph it was given")


def test_dce_removing_only_unused_nodes_once_is_rejected() -> None:
    def once(graph: Graph) -> Graph:
        used = {i for n in graph.nodes for i in n.inputs} | set(graph.outputs)
        return Graph(
            [n for n in graph.nodes if n.name in used or n.op == "placeholder"], graph.outputs
        )

    rejects(lab14.check_dce, once, match="Dead code is left")


def test_dce_removing_an_op_with_a_used_output_is_rejected() -> None:
    def shallow(graph: Graph) -> Graph:  # keeps the outputs and their direct inputs only
        keep = set(graph.outputs) | {
            i for n in graph.nodes if n.name in graph.outputs for i in n.inputs
        }
        return Graph(
            [n for n in graph.nodes if n.name in keep or n.op == "placeholder"], graph.outputs
        )

    rejects(lab14.check_dce, shallow, match="still used")


def test_dce_keeping_dead_constants_is_rejected() -> None:
    def ops_only(graph: Graph) -> Graph:
        kept = dce(graph)
        names = {n.name for n in kept.nodes}
        return Graph(
            [n for n in graph.nodes if n.name in names or n.op == "constant"], graph.outputs
        )

    rejects(lab14.check_dce, ops_only, match="constant that no live node reads")


def test_dce_calling_the_reference_is_rejected() -> None:
    rejects(
        lab14.check_dce, lambda g: passes.dce(g)[0], match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 14.2 CSE
def test_cse_merging_ops_with_different_attributes_is_rejected() -> None:
    def no_attrs(graph: Graph) -> Graph:
        seen, rename, nodes = {}, {}, []
        for n in graph.nodes:
            n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
            value = None if n.value is None else n.value.tobytes()
            key = (n.op, n.inputs, value)  # the mistake: attributes left out of the key
            if n.op != "placeholder" and key in seen:
                rename[n.name] = seen[key]
                continue
            seen[key] = n.name
            nodes.append(n)
        return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))

    rejects(lab14.check_cse, no_attrs, match="different attributes")


def test_cse_without_renaming_first_is_rejected() -> None:
    def stale(graph: Graph) -> Graph:
        seen, rename, nodes = {}, {}, []
        for n in graph.nodes:
            value = None if n.value is None else n.value.tobytes()
            key = (n.op, n.attrs, n.inputs, value)  # looked up before renaming the inputs
            n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
            if n.op != "placeholder" and key in seen:
                rename[n.name] = seen[key]
                continue
            seen[key] = n.name
            nodes.append(n)
        return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))

    rejects(lab14.check_cse, stale, match="Duplicates are left")


def test_cse_forgetting_to_rename_the_outputs_is_rejected() -> None:
    def stale_outputs(graph: Graph) -> Graph:
        return Graph(cse(graph).nodes, graph.outputs)

    rejects(lab14.check_cse, stale_outputs, match="rename the graph's outputs")


def test_cse_merging_placeholders_is_rejected() -> None:
    def inputs_too(graph: Graph) -> Graph:
        seen, rename, nodes = {}, {}, []
        for n in graph.nodes:
            n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
            value = None if n.value is None else n.value.tobytes()
            key = (n.op, n.attrs, n.inputs, n.shape, value)  # two (3, 4) inputs look equal
            if key in seen:
                rename[n.name] = seen[key]
                continue
            seen[key] = n.name
            nodes.append(n)
        return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))

    rejects(lab14.check_cse, inputs_too, match="Two placeholders are two different inputs")


def test_cse_sorting_the_inputs_of_every_op_is_rejected() -> None:
    def sorted_inputs(graph: Graph) -> Graph:
        seen, rename, nodes = {}, {}, []
        for n in graph.nodes:
            n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
            value = None if n.value is None else n.value.tobytes()
            key = (n.op, n.attrs, tuple(sorted(n.inputs)), value)  # the mistake: sub too
            if n.op != "placeholder" and key in seen:
                rename[n.name] = seen[key]
                continue
            seen[key] = n.name
            nodes.append(n)
        return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))

    rejects(lab14.check_cse, sorted_inputs, match="x - y and y - x are different values")


def test_cse_calling_the_reference_key_is_rejected() -> None:
    def borrowed(graph: Graph) -> Graph:
        seen, rename, nodes = {}, {}, []
        for n in graph.nodes:
            n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
            key = passes._key(n)
            if key is not None and key in seen:
                rename[n.name] = seen[key]
                continue
            seen[key] = n.name
            nodes.append(n)
        return Graph(nodes, tuple(rename.get(o, o) for o in graph.outputs))

    rejects(lab14.check_cse, borrowed, match="reference", error=ReferenceCalledError)


def test_cse_calling_the_reference_is_rejected() -> None:
    rejects(
        lab14.check_cse, lambda g: passes.cse(g)[0], match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 14.3 fold, simplify
def test_simplify_ignoring_broadcasting_is_rejected() -> None:
    def eager(graph: Graph) -> Graph:
        for n in list(graph.nodes):
            if n.op == "mul":
                c = graph.node(n.inputs[1])
                if c.op == "constant" and np.all(c.value == 1.0):  # the mistake: no shape check
                    graph = redirect(graph, n.name, n.inputs[0])
        return simplify(graph)

    rejects(lab14.check_fold_and_simplify, fold_constants, eager, match="broadcasts")


def test_simplify_cancelling_any_transpose_pair_is_rejected() -> None:
    def any_pair(graph: Graph) -> Graph:
        for n in list(graph.nodes):
            src = graph.node(n.inputs[0]) if n.inputs else None
            if n.op == "transpose" and src is not None and src.op == "transpose":
                graph = redirect(graph, n.name, src.inputs[0])
        return simplify(graph)

    rejects(lab14.check_fold_and_simplify, fold_constants, any_pair, match="same two axes")


def test_folding_in_float64_is_rejected() -> None:
    def wide(graph: Graph) -> Graph:
        g = fold_constants(graph)
        nodes = [
            Node(n.name, "constant", (), (), n.shape, "float64", n.value.astype(np.float64))
            if n.op == "constant"
            and n.name not in {m.name for m in graph.nodes if m.op == "constant"}
            else n
            for n in g.nodes
        ]
        return Graph(nodes, g.outputs)

    rejects(lab14.check_fold_and_simplify, wide, simplify, match="float32")


def test_fold_and_simplify_calling_the_reference_is_rejected() -> None:
    rejects(
        lab14.check_fold_and_simplify,
        lambda g: passes.fold_constants(g)[0],
        simplify,
        match="reference",
        error=ReferenceCalledError,
    )


def test_simplify_calling_the_reference_identity_finder_is_rejected() -> None:
    def borrowed(graph: Graph) -> Graph:
        for n in list(graph.nodes):
            target = passes._identity_of(graph, graph.node(n.name))
            if target is not None:
                graph = redirect(graph, n.name, target)
        return graph

    rejects(
        lab14.check_fold_and_simplify,
        fold_constants,
        borrowed,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 14.4 fused kernels
def test_kernel_reusing_a_live_temporary_is_rejected() -> None:
    def eager_out(graph: Graph, names: list[str]) -> str:
        lines = kernel_source(graph, names).split("\n")
        for k in range(2, len(lines) - 1):  # out= into the previous temporary, dead or not
            line = lines[k]
            same = graph.node(names[k - 1]).shape == graph.node(names[k - 2]).shape
            if same and line.startswith("    t") and "= np." in line and "maximum" not in line:
                lines[k] = line[:-1] + f", out=t{k - 2})"
        return "\n".join(lines)

    rejects(lab14.check_kernel_source, eager_out, match="must be dead")


def test_kernel_with_a_textbook_sigmoid_is_rejected() -> None:
    def textbook(graph: Graph, names: list[str]) -> str:
        src = kernel_source(graph, names)
        return src.replace("0.5 * (1 + np.tanh(0.5 * ", "1 / (1 + np.exp(-1 * ").replace(
            "))\n", "))\n"
        )

    rejects(lab14.check_kernel_source, textbook, match="changed the result")


def test_kernel_writing_into_its_input_is_rejected() -> None:
    def clobber(graph: Graph, names: list[str]) -> str:
        src = kernel_source(graph, names)
        head, _, body = src.partition("\n")
        return head + "\n    a0 += 1\n" + body

    rejects(lab14.check_kernel_source, clobber, match="wrote into one of its inputs")


def test_kernel_taking_intermediates_as_arguments_is_rejected() -> None:
    def leaky(graph: Graph, names: list[str]) -> str:
        src = kernel_source(graph, names)
        return src.replace("def kernel(", "def kernel(extra, ", 1)

    rejects(lab14.check_kernel_source, leaky, match="external inputs")


def test_kernel_calling_torch_is_rejected() -> None:
    def torchy(graph: Graph, names: list[str]) -> str:
        src = kernel_source(graph, names)
        head, _, body = src.partition("\n")
        return head + "\n    import torch; torch.zeros(1)\n" + body

    rejects(lab14.check_kernel_source, torchy, match="torch", error=ForbiddenCallError)


def test_kernel_source_calling_the_reference_is_rejected() -> None:
    rejects(
        lab14.check_kernel_source,
        lambda g, names: fusion.kernel_source(g, names)[0],
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 14.5 memory plan
def test_liveness_forgetting_outputs_is_rejected() -> None:
    def short(graph: Graph) -> dict[str, tuple[int, int]]:
        out = liveness(graph)
        for o in graph.outputs:
            out[o] = (out[o][0], out[o][0])
        return out

    rejects(lab14.check_memory_plan, short, plan, match="live to the end")


def test_liveness_hints_name_the_first_reader_only_when_it_was_taken() -> None:
    """Ending at the first reader gets "the LAST node"; ending one step late gets the rule."""

    def first_reader(graph: Graph) -> dict[str, tuple[int, int]]:
        step = {n.name: k for k, n in enumerate(graph.nodes)}
        out = {}
        for k, n in enumerate(graph.nodes):
            if n.op in ("placeholder", "constant"):
                continue
            readers = [step[m.name] for m in graph.nodes if n.name in m.inputs]
            out[n.name] = (k, min(readers, default=k))
        for o in graph.outputs:
            out[o] = (out[o][0], len(graph.nodes))
        return out

    def one_late(graph: Graph) -> dict[str, tuple[int, int]]:
        out = liveness(graph)
        return {v: (a, b if v in graph.outputs else b + 1) for v, (a, b) in out.items()}

    rejects(lab14.check_memory_plan, first_reader, plan, match="LAST node that reads it")
    rejects(lab14.check_memory_plan, one_late, plan, match=r"to the last reader's\.$")


def test_plan_with_half_open_intervals_overlaps_live_buffers() -> None:
    def half_open(intervals: dict[str, tuple[int, int]], sizes: dict[str, int]) -> dict[str, int]:
        return plan({v: (a, max(a, b - 1)) for v, (a, b) in intervals.items()}, sizes)

    rejects(lab14.check_memory_plan, liveness, half_open, match="overlap")


def test_first_fit_plan_breaks_the_budget() -> None:
    def first_fit(intervals: dict[str, tuple[int, int]], sizes: dict[str, int]) -> dict[str, int]:
        offsets: dict[str, int] = {}
        for v in sorted(intervals, key=lambda v: intervals[v][0]):  # correct, but not greedy
            first, last = intervals[v]
            cursor = 0
            for lo, hi in sorted(
                (offsets[u], offsets[u] + sizes[u])
                for u in offsets
                if intervals[u][0] <= last and first <= intervals[u][1]
            ):
                if lo - cursor >= sizes[v]:
                    break
                cursor = max(cursor, hi)
            offsets[v] = cursor
        return offsets

    rejects(lab14.check_memory_plan, liveness, first_fit, match="Over budget")


def test_plan_calling_the_reference_is_rejected() -> None:
    def ref(intervals: dict[str, tuple[int, int]], sizes: dict[str, int]) -> dict[str, int]:
        bufs = [memory.Buffer(v, sizes[v], a, b, (v,)) for v, (a, b) in intervals.items()]
        return memory.greedy_by_size(bufs)

    rejects(lab14.check_memory_plan, liveness, ref, match="reference", error=ReferenceCalledError)


def test_interpreter_runs_fused_graphs() -> None:
    assert "fused" in interp.EXTENSIONS


# --------------------------------------------------------------------------- 14.6 conv-BN folding
def test_folding_a_conv_with_other_users_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(users=False), match="ONLY user")


def test_folding_a_conv_that_is_an_output_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(outputs=False), match="is a graph output")


def test_folding_on_a_mean_that_is_an_input_is_rejected() -> None:
    def unfrozen(graph: Graph) -> tuple[Graph, int]:
        stats = {n.name: n for n in graph.nodes if n.op == "placeholder" and n.shape == (4,)}
        if not stats:
            return fold_conv_bn(graph)
        nodes = [
            replace(n, op="constant", value=np.zeros(n.shape, np.float32)) if n.name in stats else n
            for n in graph.nodes
        ]
        folded, count = fold_conv_bn(Graph(nodes, graph.outputs))
        return Graph([stats.get(n.name, n) for n in folded.nodes], folded.outputs), count

    rejects(lab14.check_fold_conv_bn, unfrozen, match="not constants")


def test_folding_without_eps_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(eps=False), match="inside the square root")


def test_folding_with_the_mean_outside_the_scale_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(bias="sb - mu + beta"), match="BEFORE scaling")


def test_scaling_the_input_channels_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(axis=1), match="OUTPUT channel")


def test_leaving_the_old_conv_behind_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(sweep=False), match="remove the old conv2d")


def test_folded_weights_in_float64_are_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, _folder(dtype=np.float64), match="stay float32")


def test_a_wrong_fold_count_is_rejected() -> None:
    rejects(lab14.check_fold_conv_bn, lambda g: (fold_conv_bn(g)[0], 0), match="the grader counts")


def test_conv_bn_hints_name_a_mistake_only_when_the_answer_is_it() -> None:
    def off_by_a_bit(graph: Graph) -> tuple[Graph, int]:
        folded, count = fold_conv_bn(graph)
        nodes = [
            replace(n, value=n.value * np.float32(1.01)) if n.name.endswith("_b") else n
            for n in folded.nodes
        ]
        return Graph(nodes, folded.outputs), count

    with pytest.raises(CheckFailure) as info:
        lab14.check_fold_conv_bn(off_by_a_bit)
    message = str(info.value)
    assert "differ from the unfolded graph" in message
    assert not any(w in message for w in ("square root", "BEFORE scaling", "OUTPUT channel"))
    rejects(lab14.check_fold_conv_bn, lambda g: (g, 0), match="the grader counts")


def test_fold_conv_bn_calling_the_reference_is_rejected() -> None:
    rejects(
        lab14.check_fold_conv_bn,
        convbn.fold_conv_bn,
        match="reference",
        error=ReferenceCalledError,
    )


def test_fold_conv_bn_calling_lab31s_truth_is_rejected() -> None:
    from a2s.checks.lab31 import _truth as lab31_truth

    def borrowed(graph: Graph) -> tuple[Graph, int]:
        lab31_truth.fold(*[np.ones(2, np.float32)] * 6, 1e-5)
        return fold_conv_bn(graph)

    rejects(lab14.check_fold_conv_bn, borrowed, match="reference", error=ReferenceCalledError)


def test_fold_conv_bn_dropping_the_stride_is_rejected() -> None:
    def unit_stride(graph: Graph) -> tuple[Graph, int]:
        folded, count = fold_conv_bn(graph)
        nodes = [
            replace(n, attrs=(("padding", n.attr("padding")), ("stride", (1, 1))))
            if n.op == "conv2d" and n.attr("stride") != (1, 1)
            else n
            for n in folded.nodes
        ]
        return Graph(nodes, folded.outputs), count

    rejects(lab14.check_fold_conv_bn, unit_stride, match="stride, padding")


def test_fold_conv_bn_modifying_its_input_is_rejected() -> None:
    def in_place(graph: Graph) -> tuple[Graph, int]:
        folded, count = fold_conv_bn(graph)
        graph.nodes[:] = folded.nodes
        return graph, count

    rejects(lab14.check_fold_conv_bn, in_place, match="changed the graph it was given")
