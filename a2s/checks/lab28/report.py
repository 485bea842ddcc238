"""Grader of exercise 28.4: the capstone's report, every figure produced by code.

``capstone_report(model, seed)`` returns a dict of figures (throughput, TTFT/TPOT percentiles,
speedups in passes and token positions, KV blocks and bytes, losses and accuracies). The
grader recomputes every one with the reference pipeline on the same seed (the lab's seed 0
and a fresh one): a number typed in from an earlier run matches seed 0 and fails the fresh
seed. Known mistakes get their own hint: a report computed from the FP32 model, means in place
of percentiles, KV held at max length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.quant_serving import capstone_report

__all__ = ["KEYS", "check_report"]

KEYS = (
    "throughput",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "tpot_p99",
    "pass_speedup",
    "token_speedup",
    "kv_peak_blocks",
    "kv_peak_bytes",
    "kv_reserved_blocks",
    "loss_fp32",
    "loss_int8",
    "accuracy_fp32",
    "accuracy_served",
)


def _hint(key: str, got: dict[str, Any], want: dict[str, float], first: bool) -> str:
    if not first:
        return (
            "It matched on seed 0 but not on this seed: a figure typed in (or computed from "
            "another workload) instead of from the seed's own run. Compute everything from seed."
        )
    if key == "loss_int8" and np.isclose(got[key], want["loss_fp32"]):
        return "That is the FP32 loss: score the served model (engine.runner.model, INT8)."
    if key.endswith(("_p50", "_p99")) and key[:4] in ("ttft", "tpot"):
        return "Percentiles (np.percentile of the per-request values), on the modelled clock."
    if key == "kv_peak_blocks" and np.isclose(got[key], want["kv_reserved_blocks"]):
        return "That is the max-length reservation; the peak is of the blocks actually held."
    return "See the task: each figure's definition, all from the one served run of seed."


_BLOCKS = ("minitorch.runtime.quant_serving:capstone_report",)


@grader(
    "28.4",
    blocks=_BLOCKS,
    uses=(
        ("28.1", "build_server", "minitorch.runtime.quant_serving:quant_engine"),
        ("28.2", "work_counts", "minitorch.runtime.quant_serving:work_counts"),
        ("28.3", "kv_usage", "minitorch.runtime.quant_serving:kv_usage"),
    ),
    hand="measure",
)
def check_report(report: Callable[..., Any]) -> str:
    """Exercise 28.4: capstone_report(model, seed) -> dict of figures."""
    f, model = fresh_rng("28.4"), load_pretrained()
    seeds = [(0, "seed 0"), (int(f.integers(1, 10_000)), "")]
    seeds[1] = (seeds[1][0], fresh(f"seed {seeds[1][0]}"))
    first: dict[str, float] = {}
    for i, (seed, label) in enumerate(seeds):
        want = capstone_report(model, seed)
        first = first or want
        got = plain(report(model, seed), what="report", case=label)
        assert_true(isinstance(got, dict), f"[{label}] return a dict of figures")
        missing = [k for k in KEYS if k not in got]
        assert_true(not missing, f"[{label}] the report lacks {missing}")
        for key in KEYS:
            value = got[key]
            ok = isinstance(value, (int, float, np.number)) and np.isclose(
                value, want[key], rtol=1e-6
            )
            if not ok:
                raise CheckFailure(
                    f"[{label}] {key} = {value!r}, the pipeline gives {want[key]:.6g}. "
                    f"{_hint(key, got, want, i == 0)}"
                )
    w = first
    return (
        f"{len(KEYS)} figures recomputed on 2 seeds (1 fresh): {w['throughput']:.0f} tok/s "
        f"modelled, {w['pass_speedup']:.1f}x fewer passes, KV peak {w['kv_peak_blocks']:.0f} "
        f"blocks vs {w['kv_reserved_blocks']:.0f} at max length"
    )
