"""An automatic parallelism planner: enumerate layouts, drop those that do not fit, rank the rest.

    ranked = plan(model, cluster, batch)        # feasible layouts, fastest first
    print(explain(ranked, model, cluster, batch))

Every ``tp * pp * cp * dp = GPUs`` split is tried with ``tp`` dividing the heads and aligned
with the nodes (it divides the GPUs per node, or they divide it), ``pp`` dividing the layers,
``dp`` the batch (whole microbatches), ``cp`` the sequence (only when ``max_cp > 1``) and, for
an MoE, ``ep`` the experts and ``dp * cp``. Each layout gets the memory and step
time of :mod:`minitorch.parallel.planner_cost`; one that needs more than ``USABLE`` of the
GPU's memory is rejected, whatever its speed. This is the search Alpa and similar planners
automate (with real profiles and an ILP/DP over operators instead of a closed form).

``PUBLISHED`` holds runs with their reported layout and utilisation, each with the settings
this cost model leaves out (``beyond``): Narayanan et al. 2021, Table 1 (the 145.6B and 1T
rows, percentage of the 312 TFLOP/s peak; the 145.6B run used micro-batch 2 and the
interleaved schedule with v = 2, which this model, micro-batch 1 and plain 1F1B, does not
have) and the GPT-3 175B configuration the same authors published with Megatron-LM (TP 8,
PP 16, DP 8, micro-batch 1, batch 1536 on 1024 A100s, 138 TFLOP/s = 44 % of peak; the
paper's text rounds it to 140). ``tests/parallel/test_planner.py`` holds the planner to every
row: TP equal, PP and DP within a factor 2, the published layout feasible and within 1 % of
the best step time, and the percentage of peak within 5 points. ``RECIPE_70B`` is a recent
70B layout on 64 H100s that this 2021-style model does not reproduce (see there).

Lab: 26_context_expert_parallel_planner
Paper: Narayanan et al., SC 2021 (Table 1, Sec. 3 takeaways); Zheng et al., "Alpa: Automating
    Inter- and Intra-Operator Parallelism for Distributed Deep Learning", OSDI 2022
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minitorch.hardware.specs import SPECS
from minitorch.parallel.planner_cost import (
    USABLE,
    Cluster,
    Layout,
    Model,
    memory_per_gpu,
    step_time,
    utilisation,
)

__all__ = [
    "PUBLISHED",
    "RECIPE_70B",
    "Estimate",
    "Published",
    "dgx_h100",
    "enumerate_layouts",
    "estimate",
    "explain",
    "plan",
    "plan_layouts",
    "selene",
]


def selene(gpus: int) -> Cluster:
    """DGX A100 80 GB nodes (8 GPUs, NVLink 300 GB/s per direction) and 8 x 200 Gb/s IB."""
    a100 = SPECS["A100"]
    return Cluster(
        f"{gpus} x A100 80GB (Selene)",
        gpus,
        8,
        a100.memory_gb * 1e9,
        a100.peak["fp16"],
        300e9,
        5e-6,
        25e9,
        10e-6,
        a100.bandwidth,
    )


def dgx_h100(gpus: int) -> Cluster:
    """DGX H100 nodes (8 GPUs, NVLink 450 GB/s per direction) and 8 x 400 Gb/s IB."""
    h100 = SPECS["H100"]
    return Cluster(
        f"{gpus} x H100 80GB",
        gpus,
        8,
        h100.memory_gb * 1e9,
        h100.peak["bf16"],
        450e9,
        5e-6,
        50e9,
        10e-6,
        h100.bandwidth,
    )


@dataclass(frozen=True, slots=True)
class Published:
    """A published run: model, cluster, global batch, layout, reported fraction of peak."""

    model: Model
    cluster: Cluster
    batch: int
    layout: Layout
    util: float
    source: str
    beyond: str = ""  # what the run used that this cost model does not (micro-batch, schedule)


PUBLISHED = {
    "1T": Published(
        Model("1T GPT", 128, 25600, 160, 2048, 51200),
        selene(3072),
        3072,
        Layout(8, 64, 6),
        0.52,
        "Narayanan et al. 2021, Table 1 (1008B row)",
    ),
    "145.6B": Published(
        Model("145.6B GPT", 80, 12288, 96, 2048, 51200),
        selene(1536),
        2304,
        Layout(8, 8, 24),
        0.47,
        "Narayanan et al. 2021, Table 1 (145.6B row)",
        "micro-batch 2 and the interleaved schedule (v = 2); this model: micro-batch 1, 1F1B",
    ),
    "GPT-3": Published(
        Model("GPT-3 175B", 96, 12288, 96, 2048, 51200),
        selene(1024),
        1536,
        Layout(8, 16, 8),
        138 / 312,
        "Megatron-LM's published GPT-3 175B configuration (Narayanan et al.; 138 TFLOP/s/GPU)",
        "micro-batch 1, as this model",
    ),
}

# A recent recipe outside this cost model: it relies on the distributed optimizer (Adam states
# sharded over DP), sequence parallelism, FlashAttention and overlapped CP communication. The
# model is Llama 3 70B's shape as a PLAIN GPT (4h MLP, full multi-head K/V: 65.6B parameters
# by model_params, the paper's eq. 2), a stand-in: Llama 3 70B itself has a SwiGLU MLP of
# 28,672, 8 K/V heads and 70.6B parameters. The named Megatron-Bridge recipe dates from
# 2025-26; NeMo's December 2024 performance docs list the same layout (TP 4, PP 4, CP 2 on
# 64 H100s) with batch 128.
RECIPE_70B = Published(
    Model("Llama-3-70B-shaped GPT", 80, 8192, 64, 8192, 128256),
    dgx_h100(64),
    256,
    Layout(4, 4, 2, 2),
    float("nan"),
    "NVIDIA Megatron-Bridge recipe llama3_70b_pretrain_64gpu_h100_bf16 (2025-26)",
    "distributed optimizer, sequence parallelism, FlashAttention, overlapped CP",
)


@dataclass(slots=True)
class Estimate:
    """One layout's cost: bytes per GPU, seconds per step by term, utilisations."""

    layout: Layout
    memory: float
    fits: bool
    time: dict[str, float] = field(default_factory=dict)
    util: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.time["total"]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_layouts(model: Model, cluster: Cluster, batch: int, max_cp: int = 1) -> list[Layout]:
    """Every valid split of the cluster's GPUs (see the module docstring)."""
    out = []
    for tp in _divisors(cluster.gpus):
        if model.heads % tp or (cluster.per_node % tp and tp % cluster.per_node):
            continue
        for pp in _divisors(cluster.gpus // tp):
            if model.layers % pp:
                continue
            for cp in _divisors(cluster.gpus // (tp * pp)):
                dp = cluster.gpus // (tp * pp * cp)
                if cp > max_cp or model.seq % cp or batch % dp:
                    continue
                eps = (
                    [e for e in _divisors(dp * cp) if model.experts % e == 0]
                    if model.experts
                    else [1]
                )
                out += [Layout(tp, pp, dp, cp, ep) for ep in eps]
    return out


def estimate(model: Model, cluster: Cluster, layout: Layout, batch: int) -> Estimate:
    """Memory, fit and step time of one layout."""
    mem = memory_per_gpu(model, layout, batch)
    t = step_time(model, cluster, layout, batch)
    util = utilisation(model, cluster, layout, batch, t["total"])
    return Estimate(layout, mem, mem <= USABLE * cluster.memory, t, util)


def plan(model: Model, cluster: Cluster, batch: int, max_cp: int = 1) -> list[Estimate]:
    """Feasible layouts, fastest first (ties: smaller TP, then smaller PP)."""
    ests = [
        estimate(model, cluster, lay, batch)
        for lay in enumerate_layouts(model, cluster, batch, max_cp)
    ]
    ok = [e for e in ests if e.fits]
    return sorted(ok, key=lambda e: (round(e.seconds, 9), e.layout.tp, e.layout.pp))


def plan_layouts(model: Model, cluster: Cluster, batch: int) -> list[Layout]:
    """The layouts of :func:`plan` alone, fastest first (exercise 26.4's answer)."""
    return [e.layout for e in plan(model, cluster, batch)]


def _terms(e: Estimate) -> str:
    t = e.time
    parts = [
        f"{k} {t[k]:.2f}s"
        for k in ("compute", "elementwise", "bubble", "tp", "pp", "dp", "cp", "ep")
        if t[k]
    ]
    return ", ".join(parts)


def explain(ranked: list[Estimate], model: Model, cluster: Cluster, batch: int) -> str:
    """Why the best layout wins and what the runner-up loses, term by term."""
    if not ranked:
        return f"{model.name} on {cluster.name}: no layout fits in memory"
    best = ranked[0]
    lines = [
        f"{model.name} on {cluster.name}, batch {batch}: best {best.layout}",
        f"  {best.memory / 1e9:.1f} GB/GPU (limit {USABLE * cluster.memory / 1e9:.0f}), "
        f"{best.seconds:.2f} s/step = {_terms(best)}",
        f"  {100 * best.util['paper']:.1f}% of peak (paper's FLOPs), "
        f"MFU {100 * best.util['mfu']:.1f}%",
    ]
    if len(ranked) > 1:
        run = ranked[1]
        diffs = {k: run.time[k] - best.time[k] for k in best.time if k != "total"}
        worst = max(diffs, key=lambda k: diffs[k])
        lines.append(
            f"  runner-up {run.layout}: {run.seconds:.2f} s (+{run.seconds - best.seconds:.2f} s), "
            f"mostly {worst} (+{diffs[worst]:.2f} s)"
        )
    return "\n".join(lines)
