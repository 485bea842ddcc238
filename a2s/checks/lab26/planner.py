"""Grader of exercise 26.4: a 3-D parallelism planner on published setups.

The learner's ``plan(model, cluster, batch)`` returns feasible layouts, fastest first, using
the course's cost model (:func:`~minitorch.parallel.planner_cost.memory_per_gpu`,
:func:`~minitorch.parallel.planner_cost.step_time`, ``USABLE``). Checked:

* every layout returned fits: memory per GPU <= USABLE x the GPU's memory (a layout that does
  not fit is rejected, however fast);
* the first is the fastest feasible layout (the grader's own brute force over tp | heads,
  tp aligned with nodes, pp | layers, dp | batch);
* on the published setups (Narayanan et al. 2021's Table 1 rows and their GPT-3 175B
  configuration, :data:`~minitorch.parallel.planner.PUBLISHED`) the chosen layout is within
  tolerance of theirs (TP equal, PP and DP within a factor 2) and the estimated percentage of
  peak within 5 points of the reported one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from minitorch.parallel.planner import PUBLISHED, selene
from minitorch.parallel.planner_cost import (
    USABLE,
    Cluster,
    Layout,
    Model,
    memory_per_gpu,
    step_time,
    utilisation,
)

__all__ = ["TOLERANCE", "check_plan"]

REFERENCE = (
    "minitorch.parallel.planner:plan",
    "minitorch.parallel.planner:enumerate_layouts",
    "minitorch.parallel.planner:estimate",
    "minitorch.parallel.planner:plan_layouts",
    "a2s.checks.lab26.planner:_feasible",  # the grader's own brute force
)
TOLERANCE = 0.05  # absolute, on the fraction of peak


def _feasible(m: Model, c: Cluster, batch: int) -> dict[tuple[int, int, int], float]:
    """Every feasible (tp, pp, dp) with its step time: the grader's own brute force."""
    found = {}
    for tp in range(1, c.gpus + 1):
        ok_tp = (
            c.gpus % tp == 0
            and m.heads % tp == 0
            and (c.per_node % tp == 0 or tp % c.per_node == 0)
        )
        for pp in range(1, c.gpus // tp + 1) if ok_tp else ():
            if (c.gpus // tp) % pp or m.layers % pp or batch % (c.gpus // (tp * pp)):
                continue
            lay = Layout(tp, pp, c.gpus // (tp * pp))
            if memory_per_gpu(m, lay, batch) <= USABLE * c.memory:
                found[(tp, pp, lay.dp)] = step_time(m, c, lay, batch)["total"]
    return found


def _rules(lay: Layout, m: Model, c: Cluster, batch: int) -> str:
    """Which divisibility rule of the task ``lay`` breaks ('' when none)."""
    if m.heads % lay.tp:
        return f"tp = {lay.tp} does not divide the {m.heads} heads"
    if c.per_node % lay.tp and lay.tp % c.per_node:
        return f"tp = {lay.tp} is not aligned with the {c.per_node}-GPU nodes"
    if m.layers % lay.pp:
        return f"pp = {lay.pp} does not divide the {m.layers} layers"
    if batch % lay.dp:
        return f"dp = {lay.dp} does not divide the batch of {batch}"
    return ""


def _read(got: Any, tag: str) -> list[Layout]:
    if not isinstance(got, (list, tuple)) or not got:
        raise CheckFailure(
            f"{tag} return a non-empty list of Layout, fastest first (got {type(got).__name__})."
        )
    out = []
    for lay in got:
        if not isinstance(lay, Layout):
            raise CheckFailure(
                f"{tag} return Layout objects (minitorch.parallel.planner_cost.Layout), "
                f"got {type(lay).__name__}."
            )
        fields = (plain(getattr(lay, f), what=f, case=tag) for f in ("tp", "pp", "dp", "cp", "ep"))
        out.append(Layout(*(int(v) for v in fields)))  # plain ints, a fresh Layout
    return out


def _judge(student: Callable[..., Any], m: Model, c: Cluster, batch: int, tag: str) -> Layout:
    ranked = _read(student(m, c, batch), tag)
    for lay in ranked:
        if lay.tp * lay.pp * lay.dp * lay.cp != c.gpus:
            raise CheckFailure(f"{tag} {lay} does not use the {c.gpus} GPUs (tp pp dp = GPUs).")
        mem = memory_per_gpu(m, lay, batch)
        if mem > USABLE * c.memory:
            raise CheckFailure(
                f"{tag} {lay} needs {mem / 1e9:.1f} GB per GPU, more than the "
                f"{USABLE * c.memory / 1e9:.0f} GB usable: a layout that does not fit is no "
                "answer, however fast. Filter with memory_per_gpu first."
            )
        broken = _rules(lay, m, c, batch)
        if broken:
            raise CheckFailure(
                f"{tag} {lay} is not a valid layout: {broken}. Keep only tp dividing the heads "
                "and aligned with the nodes, pp dividing the layers, dp dividing the batch."
            )
    times = [step_time(m, c, lay, batch)["total"] for lay in ranked]
    if any(b < a * (1 - 1e-9) for a, b in itertools.pairwise(times)):
        raise CheckFailure(f"{tag} the layouts are not sorted by step time, fastest first.")
    feasible = _feasible(m, c, batch)
    best = min(feasible.values())
    if times[0] > best * (1 + 1e-9):
        raise CheckFailure(
            f"{tag} your best {ranked[0]} takes {times[0]:.3f} s per step; a feasible layout "
            f"takes {best:.3f} s. Try every tp dividing the heads (and 8 | tp or tp | 8), pp "
            "dividing the layers, dp = GPUs / (tp pp) dividing the batch."
        )
    got = [(lay.tp, lay.pp, lay.dp) for lay in ranked]
    if len(set(got)) != len(got) or set(got) != set(feasible):
        missing = sorted(set(feasible) - set(got), key=feasible.__getitem__)
        extra = "" if missing else " (some more than once)"
        first = f", e.g. {Layout(*missing[0])}" if missing else ""
        raise CheckFailure(
            f"{tag} you returned {len(got)} layout(s){extra}; there are {len(feasible)} feasible "
            f"ones{first}. Return every feasible layout once, fastest first."
        )
    return ranked[0]


@grader("26.4", blocks=REFERENCE, hand="property")
def check_plan(plan: Callable[..., Any]) -> str:
    """Exercise 26.4: feasible, optimal under the cost model, and near the published layouts."""
    lines = []
    for key, pub in PUBLISHED.items():
        tag = f"[{pub.model.name} on {pub.cluster.gpus} GPUs]"
        lay = _judge(plan, pub.model, pub.cluster, pub.batch, tag)
        t = step_time(pub.model, pub.cluster, lay, pub.batch)["total"]
        util = utilisation(pub.model, pub.cluster, lay, pub.batch, t)["paper"]
        ok = lay.tp == pub.layout.tp and abs(util - pub.util) <= TOLERANCE
        ok = ok and all(
            w / 2 <= g <= 2 * w for g, w in [(lay.pp, pub.layout.pp), (lay.dp, pub.layout.dp)]
        )
        if not ok:
            raise CheckFailure(
                f"{tag} {lay} at {util:.0%} of peak is not within tolerance of {pub.source}."
            )
        lines.append(f"{key}: {lay} at {util:.0%} (reported {pub.util:.0%})")
    small = Model("small", 24, 2048, 16, 2048, 51200)  # batch 40: dp = 32 or 16 does not divide
    _judge(plan, small, selene(32), 40, "[L=24, h=2048 on 32 GPUs, batch 40]")
    gen = fresh_rng("26.4")
    for _ in range(2):
        h = 1024 * int(gen.integers(2, 9))
        m = Model("fresh", 8 * int(gen.integers(2, 7)), h, h // 128, 2048, 51200)
        gpus = 8 * int(gen.choice([4, 8, 16]))
        batch = gpus * int(gen.choice([2, 5, 3])) // 4
        label = fresh(f"L={m.layers}, h={h}, {gpus} GPUs, batch {batch}")
        _judge(plan, m, selene(gpus), batch, f"[{label}]")
    return "; ".join(lines) + " (tolerance: TP equal, PP and DP x2, 5 points of peak)"
