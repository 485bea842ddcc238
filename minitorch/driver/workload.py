"""Workload traces shaped like the tiny GPT's training and decode steps, as power phases.

A transformer step is a sequence of phases (:class:`~minitorch.driver.power.Phase`), each
with core cycles ``N_c``, clock-independent memory time ``t_m`` and an activity factor:

* **prefill and training GEMMs** are compute-bound: ``2·P·T`` FLOPs for ``P`` parameters
  and ``T`` tokens (``6·P·T`` for forward + backward), at ``flops_per_cycle`` per cycle, the
  weights read once (``t_m`` small); activity high;
* **decode** is memory-bound: every step reads all ``2·P`` bytes of bf16 weights at
  ``hbm_gbps`` (the KV cache of a tiny model is left out), ``t_m = bytes / B`` dominates and
  the ``2·P·B_s`` FLOPs of a batch ``B_s`` take few cycles; activity low;
* after each training step an **optimizer** phase (memory-bound, elementwise: ``P`` cycles,
  16 bytes read and written per parameter, an assumption).

Sizes are jittered by a seeded generator (``±jitter``) so traces are small, deterministic
and not all alike. Defaults: H100-like ``flops_per_cycle = 989e12 / 1.98e9 ≈ 5e5`` (dense
bf16 tensor cores), ``hbm_gbps = 3350`` (HBM3, SXM5).

    trace = decode_trace(params=10e6, steps=16, batch=8, seed=0)

Lab: 30_telemetry_power_and_faults
Reference: Kaplan et al., "Scaling Laws for Neural Language Models", 2020 (6·P·T FLOPs);
NVIDIA H100 Tensor Core GPU datasheet (989 TFLOPS dense BF16, 3.35 TB/s HBM3).
"""

from __future__ import annotations

import numpy as np

from minitorch.driver.power import Phase

__all__ = ["FLOPS_PER_CYCLE", "HBM_GBPS", "decode_trace", "training_trace"]

FLOPS_PER_CYCLE = 989e12 / 1.98e9  # dense BF16 FLOPs per core cycle, H100 SXM
HBM_GBPS = 3350.0  # bytes per ns


def _jit(rng: np.random.Generator, x: float, jitter: float) -> float:
    return float(x * (1.0 + rng.uniform(-jitter, jitter)))


def training_trace(
    params: float = 10e6,
    tokens_per_step: int = 8192,
    steps: int = 4,
    seed: int = 0,
    jitter: float = 0.1,
) -> list[Phase]:
    """``steps`` × (forward+backward GEMMs, compute-bound; optimizer, memory-bound): the
    GEMMs do ``6·P·T`` FLOPs; AdamW reads and writes ~16 bytes per parameter."""
    rng = np.random.default_rng(seed)
    out: list[Phase] = []
    for _ in range(steps):
        flops = _jit(rng, 6.0 * params * tokens_per_step, jitter)
        out.append(
            Phase("fwd_bwd", flops / FLOPS_PER_CYCLE, 2 * params / HBM_GBPS, 0.8, tokens_per_step)
        )
        out.append(Phase("optimizer", params, _jit(rng, 16 * params, jitter) / HBM_GBPS, 0.3))
    return out


def decode_trace(
    params: float = 10e6,
    steps: int = 16,
    batch: int = 8,
    prompt: int = 512,
    seed: int = 0,
    jitter: float = 0.1,
) -> list[Phase]:
    """One prefill of ``batch × prompt`` tokens (compute-bound), then ``steps`` decode steps
    of one token per sequence, each reading the ``2·P`` bytes of weights (memory-bound)."""
    rng = np.random.default_rng(seed)
    out = [
        Phase(
            "prefill",
            _jit(rng, 2.0 * params * batch * prompt, jitter) / FLOPS_PER_CYCLE,
            2 * params / HBM_GBPS,
            0.8,
            batch * prompt,
        )
    ]
    for _ in range(steps):
        flops = 2.0 * params * batch
        mem = _jit(rng, 2.0 * params, jitter) / HBM_GBPS
        out.append(Phase("decode", flops / FLOPS_PER_CYCLE, mem, 0.3, batch))
    return out
