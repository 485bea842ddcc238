"""Placement: colocated vs disaggregated roles, step time on a cost model, memory per process.

    c = StepCosts(t_gen=8.0, t_train=4.0, t_sync=0.5)          # seconds on ONE device
    step_time("colocated", c, devices=8)                        # G/N + T/N + sync
    step_time("disaggregated", c, devices=8, gen_devices=6)     # G/n_g + sync + T/n_t
    step_time("one_step_off", c, devices=8, gen_devices=6)      # max(G/n_g, T/n_t + sync)
    spans = timeline("disaggregated", c, 8, 6, steps=3)         # who is busy when
    idle_fraction(spans, "rollout")

The model's assumption, stated: generation and training scale linearly with the devices they
get (t / n), and a sync costs ``t_sync`` (colocated: a local reshard, ``t_reshard``). Colocated
(veRL's HybridEngine): every device generates, then every device trains; nobody idles, but
each device holds the actor, the reference, the optimizer state and the KV cache
(:func:`colocated_memory`). Disaggregated (OpenRLHF's Ray placement): n_g devices generate,
n_t = N - n_g train; synchronous, each side idles while the other works. One step off policy:
generation of batch k+1 runs while batch k trains, so the step is the longer of the two and
the rollouts are one policy version old (staleness 1).

Lab: 35_rl_systems
Paper: Sheng et al. 2024, "HybridFlow" (arXiv:2409.19256; colocated hybrid engine, placement);
Hu et al. 2024, "OpenRLHF" (arXiv:2405.11143; Ray-based disaggregated placement)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minitorch.model.gpt import GPT
from minitorch.optim import Optimizer
from minitorch.runtime.engine import Engine

__all__ = [
    "MODES",
    "Span",
    "StepCosts",
    "best_split",
    "colocated_memory",
    "idle_fraction",
    "measured_costs",
    "step_time",
    "timeline",
]

MODES = ("colocated", "disaggregated", "one_step_off")


@dataclass(frozen=True)
class StepCosts:
    """Seconds of one RL step's generation and training on one device, and of a weight sync."""

    t_gen: float
    t_train: float
    t_sync: float = 0.0
    t_reshard: float = 0.0  # colocated: switching the same devices from training to serving


@dataclass(frozen=True)
class Span:
    role: str
    kind: str  # "generate", "train", "sync"
    start: float
    end: float
    step: int


def _split(mode: str, devices: int, gen_devices: int | None) -> tuple[int, int]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if mode == "colocated":
        return devices, devices
    if gen_devices is None or not 0 < gen_devices < devices:
        raise ValueError(f"{mode} needs 0 < gen_devices < devices, got {gen_devices}/{devices}")
    return gen_devices, devices - gen_devices


def step_time(mode: str, c: StepCosts, devices: int, gen_devices: int | None = None) -> float:
    """Seconds per RL step in steady state."""
    ng, nt = _split(mode, devices, gen_devices)
    g, t = c.t_gen / ng, c.t_train / nt
    if mode == "colocated":
        return g + t + c.t_reshard
    if mode == "disaggregated":
        return g + c.t_sync + t
    return max(g, t + c.t_sync)


def best_split(mode: str, c: StepCosts, devices: int) -> tuple[int, float]:
    """The generation device count with the shortest step, and that step time."""
    times = [(step_time(mode, c, devices, n), n) for n in range(1, devices)]
    t, n = min(times)
    return n, t


def timeline(
    mode: str, c: StepCosts, devices: int, gen_devices: int | None = None, steps: int = 3
) -> list[Span]:
    """Busy spans of each role ("rollout", "trainer") over ``steps`` RL steps."""
    ng, nt = _split(mode, devices, gen_devices)
    g, t = c.t_gen / ng, c.t_train / nt
    spans: list[Span] = []
    now = 0.0
    if mode == "colocated":
        for k in range(steps):
            spans.append(Span("rollout", "generate", now, now + g, k))
            spans.append(Span("trainer", "train", now + g, now + g + t, k))
            spans.append(Span("trainer", "sync", now + g + t, now + g + t + c.t_reshard, k))
            now += g + t + c.t_reshard
        return spans
    gen_free = train_free = 0.0
    weights_ready = 0.0  # when the weights the next generation needs have arrived
    for k in range(steps):
        start = max(gen_free, weights_ready if mode == "disaggregated" else gen_free)
        if mode == "one_step_off" and k >= 2:
            start = max(start, _end(spans, "sync", k - 2))
        spans.append(Span("rollout", "generate", start, start + g, k))
        gen_free = start + g
        t0 = max(gen_free, train_free)
        spans.append(Span("trainer", "train", t0, t0 + t, k))
        spans.append(Span("trainer", "sync", t0 + t, t0 + t + c.t_sync, k))
        train_free = weights_ready = t0 + t + c.t_sync
    return spans


def _end(spans: list[Span], kind: str, step: int) -> float:
    return next(s.end for s in spans if s.kind == kind and s.step == step)


def idle_fraction(spans: list[Span], role: str | None = None) -> float:
    """1 - (busy time of ``role``) / (makespan); ``None``: of the devices all roles share
    (colocated: 0, the same devices do everything one after the other)."""
    end = max(s.end for s in spans)
    busy = sum(s.end - s.start for s in spans if role is None or s.role == role)
    return 1.0 - busy / end if end else 0.0


def measured_costs(
    t_gen: list[float], t_train: list[float], t_sync: list[float], devices: int = 1
) -> StepCosts:
    """StepCosts from measured seconds per step (medians) on ``devices`` devices: the cost
    model's inputs taken from a run (the prediction), to compare with a measured step."""
    med = [float(np.median(x)) * devices for x in (t_gen, t_train)]
    return StepCosts(med[0], med[1], float(np.median(t_sync)), float(np.median(t_sync)))


def colocated_memory(
    policy: GPT, reference: GPT, optimizer: Optimizer, engine: Engine
) -> dict[str, int]:
    """Bytes one colocated process holds: actor, reference, gradients, optimizer, KV cache."""
    grads = sum(p.data.nbytes for p in optimizer.params)
    state = sum(v.nbytes for s in optimizer.state for v in s.values() if isinstance(v, np.ndarray))
    kv = 0 if engine.runner is None else engine.runner.cache.k.nbytes * 2
    parts = {
        "actor": sum(p.data.nbytes for p in policy.parameters()),
        "reference": sum(p.data.nbytes for p in reference.parameters()),
        "gradients": grads,
        "optimizer": state,
        "kv_cache": kv,
    }
    parts["total"] = sum(parts.values())
    return parts
