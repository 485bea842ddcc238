"""Grader of exercise 13.5: the captured graph against ``torch.fx.symbolic_trace`` of the same
model written in torch, op counts by kind.

The grader traces the torch twin (same weights, same primitive ops) with torch.fx outside the
student's call and hands over its nodes as plain ``(opcode, target)`` strings; ground truth is
the grader's own count of fx's call nodes. Both counts must also agree with each other; one
mismatched pair (the MLP's graph, the attention block's fx nodes) makes sure each side is
counted on its own.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab13._truth import call, fx_counts, fx_nodes, torch_attention, torch_mlp
from minitorch.compiler import capture, models
from minitorch.compiler.ir import op_counts

__all__ = ["check_compare_fx"]

_SKIP = (
    "Only operations count: leave out the inputs (placeholder), the weights (constant / fx's "
    "get_attr) and fx's output node."
)
_MISMATCHED = "a mismatched pair: the MLP's graph with the attention block's fx nodes"
_NAMES = "Name fx's targets in the IR's words: operator.truediv is div, Tensor.amax is max."


def _counts(x: Any) -> Any:
    """A ``Counter``, ``defaultdict`` or ``OrderedDict`` (the standard library's own classes,
    not a subclass of them) read as the plain dict it holds."""
    if type(x) in (Counter, defaultdict, OrderedDict):
        return dict(x.items())
    return x


def _one(
    student: Callable[..., Any],
    label: str,
    fn: Callable[..., Any],
    module: Any,
    n: int,
    d: int,
    agree: bool = True,
) -> int:
    graph = capture.trace(fn, [np.zeros((n, d), np.float32)])
    nodes = fx_nodes(module)
    got = call(student, label, graph, list(nodes))
    if type(got) in (tuple, list) and len(got) == 2:
        got = tuple(_counts(c) for c in got)
    got = plain(got, what="the pair of counts", case=label)
    assert_true(
        isinstance(got, tuple) and len(got) == 2 and all(isinstance(c, dict) for c in got),
        f"[{label}] return (ours, fx's), two dicts",
    )
    ours, theirs = got
    want_ours, want_fx = op_counts(graph), fx_counts(nodes)
    hint = (
        _SKIP
        if any(k in ("placeholder", "constant", "get_attr", "output") for k in {**ours, **theirs})
        else _NAMES
    )
    if not agree and ours == theirs:
        hint = "Count each graph on its own: fx's counts come from fx_nodes, ours from graph."
    assert_true(ours == want_ours, f"[{label}] our graph: got {ours}, expected {want_ours}. {hint}")
    assert_true(
        theirs == want_fx, f"[{label}] fx's graph: got {theirs}, expected {want_fx}. {hint}"
    )
    if agree:
        assert_true(ours == theirs, f"[{label}] the two graphs differ: {ours} vs {theirs}")
    return sum(ours.values())


@grader(
    "13.5",
    blocks=("minitorch.compiler.ir:op_counts", "a2s.checks.lab13._truth:fx_counts"),
    hand="object",
)
def check_compare_fx(compare: Callable[..., Any]) -> str:
    """Exercise 13.5: ``compare(graph, fx_nodes) -> (ours, fx's)`` op counts by kind."""
    ops = 0
    fn, p = models.mlp([8, 16, 4])
    ops += _one(compare, "MLP 8-16-4", fn, torch_mlp(p, "relu"), 4, 8)
    fn, p = models.attention_block(16, 2)
    ops += _one(compare, "attention block d=16, 2 heads", fn, torch_attention(p, 5, 2), 5, 16)
    gen = fresh_rng("13.5")
    sizes = [int(s) for s in gen.integers(1, 9, int(gen.integers(3, 6)))]
    act = str(gen.choice(["relu", "tanh", "sigmoid"]))
    fn, p = models.mlp(sizes, act=act)
    ops += _one(compare, fresh(f"random MLP {sizes} ({act})"), fn, torch_mlp(p, act), 3, sizes[0])
    # each side counted on its own: our MLP's graph with fx's nodes of the attention block
    fn, _ = models.mlp([8, 16, 4])
    _, p = models.attention_block(16, 2)
    _one(compare, _MISMATCHED, fn, torch_attention(p, 5, 2), 4, 8, agree=False)
    return (
        f"3 models (1 fresh): {ops} ops, the same kinds and counts as torch.fx.symbolic_trace; "
        "a mismatched pair counted side by side"
    )
