"""Grader of exercise 14.6: fold BatchNorm into the convolution before it, as a graph pass.

``fold_conv_bn(graph) -> (graph, folds)`` on the course IR. Truth is this module's own loop
(the fold conditions and the closed form $W' = sW$, $b' = s(b - \\mu) + \\beta$,
$s = \\gamma / \\sqrt{\\sigma^2 + \\epsilon}$ per output channel; Ioffe & Szegedy 2015), never
the reference's pass. Each small CNN is graded three ways: the fold count equals the grader's;
the result, with unread constants swept, equals the grader's folded graph up to renaming and
up to the folded constants' bits (float32 rounding may differ with the order of operations);
and the interpreter's outputs on two random inputs are within 1e-5 of each output's largest
magnitude of the unfolded graph's (float32: folding reassociates one multiply into the sum of
C*R*S products, a few ulps of the largest activation; the smallest modelled mistake moves it
by more than 1e-4). A failing answer is compared with the modelled wrong folds, run here on
the same case, and a hint names a mistake only when the answer is that mistake's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab13._truth import read_graph
from a2s.checks.lab14._truth import (
    CONDITIONS,
    F32,
    blank,
    bn_layer,
    conv_layer,
    fold_truth,
    random_cnn,
    structural,
    swept,
)
from minitorch.compiler import interp
from minitorch.compiler.ir import Graph, Node, verify

__all__ = ["check_fold_conv_bn"]

_TOL = 1e-5
_RULE = (
    "A conv2d -> batch_norm pair folds only when the conv's output has the BatchNorm as its "
    "ONLY user and is not a graph output, and W, b and the BatchNorm's four statistics are all "
    "constants."
)
_FORM = (
    "W' = s W and b' = s (b - mean) + beta, with s = gamma / sqrt(var + eps) per output channel."
)
_FORMULAS = ("eps", "bias", "bias-mean", "axis")
_KEEP = (
    "The folded conv2d reads the conv's input, keeps the conv's attributes (stride, padding) "
    "and takes the BatchNorm's place: its users and the graph's outputs read it."
)
_MISTAKES = {
    "users": (
        "You folded a conv whose output has other users (a relu, a second BatchNorm): they "
        "need the conv's own value, so the conv must stay. Fold only when the BatchNorm is the "
        "conv's ONLY user."
    ),
    "outputs": (
        "You folded a conv that is a graph output: the caller still needs the conv's own value. "
        "A conv named in graph.outputs stays."
    ),
    "constants": (
        "You folded a BatchNorm whose statistics (or a conv whose W or b) are not constants: a "
        "placeholder's value is unknown when the pass runs. Fold only on a frozen graph."
    ),
    "eps": "eps goes inside the square root: s = gamma / sqrt(var + eps), as BatchNorm computes.",
    "bias": (
        "The bias: b' = s (b - mean) + beta. The mean is subtracted BEFORE scaling "
        "(not s b - mean + beta, and not s b + beta)."
    ),
    "axis": (
        "The scale is per OUTPUT channel: W has shape (K, C, R, S) and s has K entries, so "
        "W' = W * s.reshape(-1, 1, 1, 1) (axis 0), not along the input channels (axis 1)."
    ),
    "dead": (
        "The folded pair is ONE conv2d: remove the old conv2d and batch_norm nodes (the unread "
        "constants may stay; the grader sweeps them)."
    ),
    "float64": (
        "The folded W' and b' stay float32, as W and the statistics are: a float64 constant "
        "promotes the conv's output to float64. Cast back with .astype(np.float32)."
    ),
}


# ------------------------------------------------------------------------------ the cases
def _cases() -> list[tuple[str, Graph]]:
    gen, out = rng(1406), []

    def start(c: int = 3, hw: int = 6) -> tuple[Graph, str]:
        g = Graph()
        return g, g.placeholder("x", (2, c, hw, hw))

    g, x = start(c=4)
    g.outputs = (bn_layer(g, gen, conv_layer(g, gen, x, 4)),)
    out.append(("one conv -> bn (4 -> 4 channels)", g))
    g, x = start()
    h = g.op("relu", [bn_layer(g, gen, conv_layer(g, gen, x, 4))])
    g.outputs = (bn_layer(g, gen, conv_layer(g, gen, h, 5)),)
    out.append(("two conv -> bn pairs in a row", g))
    g, x = start()
    c = conv_layer(g, gen, x, 4)
    g.outputs = (g.op("add", [bn_layer(g, gen, c), g.op("relu", [c])]),)
    out.append(("a conv read by a bn and a relu: must not fold", g))
    g, x = start()
    c = conv_layer(g, gen, x, 4)
    g.outputs = (bn_layer(g, gen, c), c)
    out.append(("a conv that is a graph output: must not fold", g))
    g, x = start()
    mu = g.placeholder("mean", (4,))
    c = conv_layer(g, gen, x, 4)
    st = [g.constant(gen.uniform(0.5, 1.5, 4).astype(F32)) for _ in range(3)]
    g.outputs = (g.op("batch_norm", [c, mu, *st], eps=1e-5),)
    out.append(("a bn whose mean is an input: must not fold", g))
    g, x = start()
    g.outputs = (bn_layer(g, gen, g.op("relu", [conv_layer(g, gen, x, 4)])),)
    out.append(("a bn after a relu, not after the conv: must not fold", g))
    g, x = start()
    w = g.constant((gen.standard_normal((4, 3, 3, 3)) / 3).astype(F32))
    cz = g.op("conv2d", [x, w, g.constant(np.zeros(4, F32))], stride=(1, 1), padding=(1, 1))
    g.outputs = (bn_layer(g, gen, cz),)
    out.append(("a conv with a zero bias", g))
    g, x = start(hw=7)
    g.outputs = (bn_layer(g, gen, conv_layer(g, gen, x, 5, stride=(2, 1), padding=(0, 1))),)
    out.append(("stride (2, 1), padding (0, 1)", g))
    g, x = start(c=4)
    g.outputs = (bn_layer(g, gen, conv_layer(g, gen, x, 4), eps=1e-3, var=(1e-4, 1e-3)),)
    out.append(("eps = 1e-3 on variances of 1e-4..1e-3", g))
    g, x = start()
    c = conv_layer(g, gen, x, 4)
    g.outputs = (g.op("add", [bn_layer(g, gen, c), bn_layer(g, gen, c)]),)
    out.append(("a conv read by two bns: must not fold", g))
    g, x = start()
    w = g.placeholder("w", (4, 3, 3, 3))
    cw = g.op("conv2d", [x, w, g.constant(np.zeros(4, F32))], stride=(1, 1), padding=(1, 1))
    g.outputs = (bn_layer(g, gen, cw),)
    out.append(("a conv whose weight is an input: must not fold", g))
    return out


# ------------------------------------------------------------------------------ grading
Frozen = tuple[tuple[Any, ...], tuple[str, ...]]


def _freeze(g: Graph) -> Frozen:
    """``g`` as nested tuples of str, int and bytes: nothing in it can be changed in place (the
    learner's code can reach the grader's frames; a mutable case would be theirs to rewrite)."""
    nodes = tuple(
        (
            n.name,
            n.op,
            tuple(n.inputs),
            tuple(n.attrs),
            tuple(n.shape),
            n.dtype,
            None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes()),
        )
        for n in g.nodes
    )
    return nodes, tuple(g.outputs)


def _thaw(frozen: Frozen) -> Graph:
    nodes = [
        Node(
            name,
            op,
            inputs,
            attrs,
            shape,
            dtype,
            None if v is None else np.frombuffer(v[2], np.dtype(v[0])).reshape(v[1]).copy(),
        )
        for name, op, inputs, attrs, shape, dtype, v in frozen[0]
    ]
    return Graph(nodes, frozen[1])


def _read(got: Any, case: str) -> tuple[Graph, int]:
    got = plain(got, what="fold_conv_bn", case=case)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(f"[{case}] fold_conv_bn returns two values: (graph, folds).")
    try:
        count = operator.index(plain(got[1], what="the number of folds", case=case))
    except TypeError:
        raise CheckFailure(f"[{case}] the number of folds must be an int.") from None
    return read_graph(got[0], case), count


def _outputs(g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o) for o in interp.run(g, *xs)]


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    return len(got) == len(want) and all(
        a.shape == b.shape
        and np.all(np.abs(a.astype(np.float64) - b) <= _TOL * max(float(np.abs(b).max()), 1e-30))
        for a, b in zip(got, want, strict=True)
    )


def _hint(g: Graph, got: Graph, count: int, want_count: int, xs: list[np.ndarray]) -> str:
    """The modelled mistake this answer is, or the rules (when it is none of them)."""
    outs = None if verify(got) else _outputs(got, xs)
    for mistake in (*CONDITIONS, *_FORMULAS):
        wrong, n = fold_truth(g, mistake)
        if n < 0 or (mistake in CONDITIONS and n == want_count):
            continue
        if (mistake in CONDITIONS and count == n) or (
            outs is not None and _close(outs, _outputs(wrong, xs))
        ):
            return _MISTAKES["bias" if mistake == "bias-mean" else mistake]
    return f"{_RULE} {_FORM}"


def _one(student: Callable[..., Any], frozen: Frozen, case: str, gen: np.random.Generator) -> int:
    given = _thaw(frozen)
    got, count = _read(student(given), case)
    g = _thaw(frozen)  # the grader's own copy, made after the call
    assert_true(
        _freeze(given) == frozen,
        f"[{case}] your pass changed the graph it was given (its nodes, its outputs or a "
        "constant's values, e.g. W *= s in place): build a new node list and new arrays, and "
        "return a new Graph(nodes, outputs).",
    )
    want, want_count = fold_truth(g)
    shapes = [n.shape for n in g.nodes if n.op == "placeholder"]
    xs = [gen.standard_normal(s).astype(F32) for s in shapes]
    wide = [n.name for n in got.nodes if n.op == "constant" and n.dtype != "float32"]
    assert_true(not wide, f"[{case}] constant {wide[:1]} is not float32. {_MISTAKES['float64']}")
    if count != want_count:
        hint = _hint(g, got, count, want_count, xs)
        assert_true(
            False,
            f"[{case}] {count} folds reported, the grader counts {want_count}. {hint}",
        )
    mine = swept(got)
    # the old pair left behind: conv2d/batch_norm nodes nobody reads (an answer that folded
    # nothing has none, and gets the rules, not this hint)
    read = {i for n in mine.nodes for i in n.inputs} | set(mine.outputs)
    dead = [n.name for n in mine.nodes if n.op in ("conv2d", "batch_norm") and n.name not in read]
    if dead and not verify(mine) and _close(_outputs(mine, xs), _outputs(want, xs)):
        assert_true(
            False,
            f"[{case}] {len(dead)} conv2d/batch_norm nodes nobody reads. {_MISTAKES['dead']}",
        )
    structural(blank(mine), blank(swept(want)), case, f"{_KEEP} {_RULE}")
    for _ in range(2):
        ref = [o.astype(np.float64) for o in _outputs(g, xs)]
        outs = _outputs(mine, xs)
        dtypes = [str(o.dtype) for o in outs]
        assert_true(
            dtypes == ["float32"] * len(outs), f"[{case}] outputs {dtypes}. {_MISTAKES['float64']}"
        )
        if not _close(outs, ref):
            hint = _hint(g, got, count, want_count, xs)
            assert_true(
                False,
                f"[{case}] the folded graph's outputs differ from the unfolded graph's by more "
                f"than {_TOL:g} of their largest magnitude. {hint}",
            )
        xs = [gen.standard_normal(s).astype(F32) for s in shapes]
    return want_count


@grader(
    "14.6",
    # lab 31's closed form (exercise 31.3) and its grader's scale would answer the weights:
    # another lab's truth is not blocked by default (nor a grader module's private helper)
    blocks=(
        "minitorch.compiler.convbn:fold_conv_bn",
        "a2s.checks.lab31._truth",
        "a2s.checks.lab31.convbn:_scale",
    ),
    # onnxruntime's basic optimizations fold conv -> BatchNorm themselves (ConvBNFusion), on the
    # graph lab 31's onnx_io exports and reads back
    forbid=("torch", "onnxruntime"),
    hand="property",
)
def check_fold_conv_bn(fold_conv_bn: Callable[..., Any]) -> str:
    """Exercise 14.6: ``fold_conv_bn(graph) -> (graph, folds)`` on frozen conv -> BN pairs."""
    gen, new, folds = rng(14061), fresh_rng("14.6"), 0
    # every case drawn and frozen before the learner's first call (immutable: out of reach)
    cases = tuple((label, _freeze(g)) for label, g in _cases())
    drawn = tuple((fresh(f"random CNN {i}"), _freeze(random_cnn(new))) for i in range(3))
    for label, frozen in cases:
        folds += _one(fold_conv_bn, frozen, label, gen)
    for label, frozen in drawn:
        folds += _one(fold_conv_bn, frozen, label, new)
    return (
        f"{len(cases) + len(drawn)} CNN graphs (3 fresh): {folds} conv -> BatchNorm pairs "
        f"folded, every output within {_TOL:g} of the unfolded graph's"
    )
