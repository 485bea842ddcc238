"""Grader of exercise 14.5: liveness intervals and an arena plan within 10% of the bound.

Ground truth for liveness is a plain loop here (a value is live from the step that computes it
to the last step that reads it; outputs to the end). A plan is checked by the grader's own
pairwise test (no two buffers live at the same step may share a byte) and held to the budget
peak / lower bound <= 1.10, the lower bound being the most bytes live at one step.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab14._truth import random_graph
from minitorch.compiler import capture, fusion, models, passes
from minitorch.compiler.ir import Graph

__all__ = ["check_memory_plan"]

_M = "minitorch.compiler.memory"
BUDGET = 1.10
_OUTPUTS = "A graph output stays live to the end: its last step is len(graph.nodes)."
_LAST = "A value's last step is the position of the LAST node that reads it, not the first."
_OVERLAP = (
    "Two buffers live at the same step share bytes. A buffer is live up to AND including the "
    "step of its last reader: that reader's own output cannot go on top of it."
)
_GREEDY = (
    "Over budget: placing buffers in the order they are computed (first fit) leaves gaps that "
    "later, bigger buffers cannot use. Place the largest first, each into the smallest gap that "
    "fits among the buffers live at the same time (greedy by size, as TFLite does)."
)


def _liveness(g: Graph) -> dict[str, tuple[int, int]]:
    out = {}
    for k, n in enumerate(g.nodes):
        if n.op in ("placeholder", "constant"):
            continue
        readers = [j for j, m in enumerate(g.nodes) if n.name in m.inputs]
        last = len(g.nodes) if n.name in g.outputs else max(readers, default=k)
        out[n.name] = (k, last)
    return out


def _sizes(g: Graph) -> dict[str, int]:
    return {
        n.name: -(-int(np.prod(n.shape)) * np.dtype(n.dtype).itemsize // 64) * 64 for n in g.nodes
    }


def _bound(live: dict[str, tuple[int, int]], size: dict[str, int]) -> int:
    return max(sum(size[v] for v, (a, b) in live.items() if a <= t <= b) for t, _ in live.values())


def _graphs() -> list[tuple[str, Graph]]:
    clean = passes.PassManager([passes.fold_constants, passes.simplify, passes.cse, passes.dce])
    out = []
    for label, (fn, _), d in [
        ("attention block d=64, T=128", models.attention_block(64, 4), 64),
        ("MLP 64-256-256-64", models.mlp([64, 256, 256, 64], act="tanh"), 64),
        ("GELU + LayerNorm d=64", models.gelu_layernorm(64), 64),
        ("transformer, 2 layers d=64", models.transformer(64, 4, 2), 64),
    ]:
        g = clean.run(capture.trace(fn, [np.zeros((128, d), np.float32)]))[0]
        out += [(label, g), (f"{label}, fused", fusion.fuse(g))]
    return out


@grader(
    "14.5",
    blocks=(f"{_M}:buffers", f"{_M}:greedy_by_size", f"{_M}:first_fit", f"{_M}:_place"),
    hand="property",
)
def check_memory_plan(liveness: Callable[..., Any], plan: Callable[..., Any]) -> str:
    """Exercise 14.5: ``liveness(graph)`` intervals and ``plan(intervals, sizes)`` offsets."""
    new = fresh_rng("14.5")
    cases = _graphs() + [
        (fresh(f"random graph {i}"), passes.dce(random_graph(new, 16, 32, 32))[0]) for i in range(2)
    ]
    worst, naive_total, peak_total = 0.0, 0, 0
    for case, g in cases:
        want = _liveness(g)
        got = plain(liveness(copy.deepcopy(g)), what="the intervals", case=case)
        assert_true(
            isinstance(got, dict),
            f"[{case}] return a dict {{value: (first, last)}}, got {type(got).__name__}",
        )
        assert_true(
            set(got) == set(want),
            f"[{case}] return {{value: (first, last)}} for every op node (not inputs or "
            f"constants): missing {sorted(set(want) - set(got))[:4]}, extra "
            f"{sorted(map(str, set(got) - set(want)))[:4]}",
        )
        for v, (a, b) in want.items():
            gv = tuple(got[v]) if isinstance(got[v], (tuple, list)) else got[v]
            readers = [j for j, m in enumerate(g.nodes) if v in m.inputs]
            hint = "An interval runs from the defining node's position to the last reader's."
            if v in g.outputs:
                hint = _OUTPUTS
            elif readers and gv == (a, min(readers)) and min(readers) != b:
                hint = _LAST
            assert_true(gv == (a, b), f"[{case}] %{v}: got {gv}, expected {(a, b)}. {hint}")
        size = _sizes(g)
        sizes = {v: size[v] for v in want}
        offsets = plain(plan(dict(want), dict(sizes)), what="the offsets", case=case)
        missing = sorted(set(want) - set(offsets)) if isinstance(offsets, dict) else list(want)
        assert_true(
            isinstance(offsets, dict) and set(offsets) == set(want),
            f"[{case}] return {{value: offset}} with exactly the keys of the intervals "
            f"(missing: {missing[:4]})",
        )
        bad = next(
            (
                (v, o)
                for v, o in offsets.items()
                if isinstance(o, bool) or not isinstance(o, (int, np.integer)) or o < 0
            ),
            None,
        )
        assert_true(
            bad is None,
            f"[{case}] offsets are non-negative ints (bytes); %{bad and bad[0]} got "
            f"{bad and bad[1]!r}",
        )
        offsets = {v: int(o) for v, o in offsets.items()}
        names = list(want)
        for i, p in enumerate(names):
            for q in names[i + 1 :]:
                (a1, b1), (a2, b2) = want[p], want[q]
                if a1 <= b2 and a2 <= b1:
                    o1, o2 = offsets[p], offsets[q]
                    assert_true(
                        o1 >= o2 + sizes[q] or o2 >= o1 + sizes[p],
                        f"[{case}] %{p} {want[p]} and %{q} {want[q]} are live together "
                        f"and overlap. {_OVERLAP}",
                    )
        peak = max(offsets[v] + sizes[v] for v in names)
        bound = _bound(want, sizes)
        assert_true(
            peak <= BUDGET * bound,
            f"[{case}] arena peak {peak:,} B is {peak / bound:.3f}x the lower bound {bound:,} B "
            f"(budget {BUDGET}). {_GREEDY}",
        )
        worst = max(worst, peak / bound)
        naive_total, peak_total = naive_total + sum(sizes.values()), peak_total + peak
    return (
        f"{len(cases)} graphs (2 fresh): no live overlap; worst peak / lower bound {worst:.3f} "
        f"(budget {BUDGET}); naive sum / arena {naive_total / peak_total:.2f}x"
    )
