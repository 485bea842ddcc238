"""Lab 19 experiments: continuous vs static batching, by the cost model and on the real engine;
the engine's tokens/s against the model's no-cache generation; chunked prefill and the p99
inter-token latency.

1. Cost model (a 7B model on one GPU), 600 ShareGPT-like requests at 12/s, 64 seats:
   throughput of continuous / static batching (anchor: Orca, vLLM: 2-4x and more).
2. The real engine (tiny GPT, paged cache), 32 requests arriving at once, 8 seats, one
   thread, alternated: wall-clock throughput continuous / static.
3. The engine (paged KV cache, continuous batching) against ``GPT.generate`` run request by
   request (no cache, the window recomputed per token), same 32 requests: tokens/s ratio.
4. Cost model, long prompts (median 1,000 tokens) at 4/s: p99 inter-token latency with whole
   prompts / with chunks of 256 tokens (anchor: Sarathi-Serve, several-fold lower tail).

Lab: 19_continuous_batching
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.engine import CostModel, Engine
from minitorch.runtime.workload import poisson_workload, tiny_workload


def _sim(workload: list, **kw: object) -> dict[str, float]:
    engine = Engine(None, num_blocks=20000, block_size=16, max_num_seqs=64, cost=CostModel(), **kw)  # type: ignore[arg-type]
    return engine.run(workload).metrics()


@register
def continuous_vs_static_modelled() -> list[Figure]:
    wl = poisson_workload(600, rate=12.0, seed=0)
    s = _sim(wl, policy="static", chunked_prefill=False, token_budget=8192)
    c = _sim(wl, chunked_prefill=False, token_budget=8192)
    return [
        Figure(
            "continuous / static throughput (cost model, 600 req)",
            c["throughput"] / s["throughput"],
            "x",
            "Orca, vLLM: 2-4x",
            "19",
        ),
        Figure(
            "static / continuous mean TTFT (cost model)",
            s["ttft"] / c["ttft"],
            "x",
            "queues drain under continuous batching",
            "19",
        ),
    ]


@register
def continuous_vs_static_real() -> list[Figure]:
    model, reqs = load_pretrained(), tiny_workload(32, rate=float("inf"), seed=0)

    def serve(policy: str) -> None:
        Engine(model, 128, 4, 256, 8, chunked_prefill=False, policy=policy).run(reqs)

    with one_thread():
        t_s, t_c = alternate(lambda: serve("static"), lambda: serve("continuous"), repeats=5)
    return [
        Figure(
            "real engine: static / continuous wall time",
            t_s / t_c,
            "x",
            "1.34x fewer steps; a CPU step grows with its batch",
            "19",
        )
    ]


@register
def engine_vs_generate() -> list[Figure]:
    model, reqs = load_pretrained(), tiny_workload(32, rate=float("inf"), seed=0)
    n_tokens = sum(r.max_new_tokens for r in reqs)

    def no_cache() -> None:
        for r in reqs:
            model.generate(np.array([r.prompt]), r.max_new_tokens)

    def engine() -> None:
        Engine(model, num_blocks=128, block_size=4, token_budget=256, max_num_seqs=8).run(reqs)

    with one_thread():
        t_e, t_g = alternate(engine, no_cache, repeats=3)
    return [
        Figure(
            "engine tokens/s (paged KV, continuous batching)",
            n_tokens / t_e,
            "tokens/s",
            "tiny GPT, 32 requests, one thread",
            "19",
        ),
        Figure(
            "no-cache generate / engine time",
            t_g / t_e,
            "x",
            "KV cache + batching vs recompute, one at a time",
            "19",
        ),
    ]


@register
def chunked_prefill_tail() -> list[Figure]:
    wl = poisson_workload(
        300, rate=4.0, seed=0, prompt_median=1000, output_median=150, max_len=4096
    )
    whole = _sim(wl, chunked_prefill=False, token_budget=8192)
    chunk = _sim(wl, token_budget=256)
    return [
        Figure(
            "p99 inter-token latency, whole / chunked-256 prefill",
            whole["itl_p99"] / chunk["itl_p99"],
            "x",
            "Sarathi-Serve: bounded stalls",
            "19",
        ),
        Figure(
            "mean TTFT, chunked-256 / whole prefill",
            chunk["ttft"] / whole["ttft"],
            "x",
            "the price: later first tokens",
            "19",
        ),
    ]
