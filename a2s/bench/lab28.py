"""Lab 28 experiments: the quantized tiny GPT served end to end against no-cache decoding.

1. The capstone's report on the lab's workload (24 requests, Poisson 100/s, mixed lengths):
   modelled tokens/s, TTFT/TPOT p99, and the deterministic proxies (forward passes and token
   positions, served vs the no-cache one-at-a-time baseline), KV peak vs max-length reservation.
2. Wall clock, one thread, alternated: the INT8 server (paged INT8 KV, continuous batching) vs
   the FP32 model's own no-cache ``generate`` request by request, and vs the FP32 engine of
   lab 19 (what the INT8 cache's dequantization costs on a CPU).

Lab: 28_capstone
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.engine import Engine
from minitorch.runtime.quant_serving import (
    LAB_SERVING,
    capstone_report,
    capstone_workload,
    quant_engine,
)


@register
def capstone_figures() -> list[Figure]:
    r = capstone_report(load_pretrained(), seed=0)
    return [
        Figure(
            "served tokens/s (modelled clock)",
            r["throughput"],
            "tokens/s",
            "lab 19 cost model: 7B-class step on one GPU",
            "28",
        ),
        Figure("TTFT p99 (modelled)", 1e3 * r["ttft_p99"], "ms", "24 req at 100/s", "28"),
        Figure("TPOT p99 (modelled)", 1e3 * r["tpot_p99"], "ms", "9 ms weight read per step", "28"),
        Figure("no-cache / served forward passes", r["pass_speedup"], "x", "bar: >= 3x", "28"),
        Figure("no-cache / served token positions", r["token_speedup"], "x", "bar: >= 3x", "28"),
        Figure(
            "max-length reservation / KV peak held",
            r["kv_reserved_blocks"] / r["kv_peak_blocks"],
            "x",
            "paging holds sum ceil(len / B)",
            "28",
        ),
    ]


@register
def capstone_wall_clock() -> list[Figure]:
    model = load_pretrained()
    reqs, _ = capstone_workload(24, float("inf"), seed=0)
    n_tokens = sum(r.max_new_tokens for r in reqs)

    def int8() -> None:
        quant_engine(model, **LAB_SERVING).run(reqs)

    def fp32() -> None:
        Engine(model, **LAB_SERVING).run(reqs)

    def no_cache() -> None:
        for r in reqs:
            model.generate(np.array([r.prompt]), r.max_new_tokens)

    with one_thread():
        t_q, t_g = alternate(int8, no_cache, repeats=3)
        t_q2, t_f = alternate(int8, fp32, repeats=3)
    return [
        Figure(
            "INT8 server tokens/s (wall clock, CPU)",
            n_tokens / t_q,
            "tokens/s",
            "tiny GPT, 24 requests, one thread",
            "28",
        ),
        Figure(
            "no-cache generate / INT8 server time",
            t_g / t_q,
            "x",
            "KV cache + batching vs recompute, one at a time",
            "28",
        ),
        Figure(
            "INT8 / FP32 server time",
            t_q2 / t_f,
            "x",
            "dequantizing K/V on read costs time on a CPU",
            "28",
        ),
    ]
