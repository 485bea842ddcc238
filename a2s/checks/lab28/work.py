"""Grader of exercise 28.2: the throughput proxy, served vs the no-cache baseline.

``work_counts(requests, result)`` returns the forward passes and token positions of the
served run (read from the engine's step log) and of no-cache, one-at-a-time greedy decoding
(from the workload: a pass per output token over its whole prefix). Ground truth: the step
log read here and a token-by-token loop. **The bar:** on the lab's workload (24 requests,
Poisson arrivals, mixed lengths, served with the lab's configuration) the served run must
need at most a third of the baseline's passes and token positions, as the learner's own
counts show. Wall-clock time is never asserted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain
from a2s.checks.lab28._truth import no_cache_work
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.engine import CostModel
from minitorch.runtime.quant_serving import LAB_SERVING, capstone_workload, quant_engine

__all__ = ["check_work_counts"]

KEYS = ("baseline_passes", "baseline_tokens", "served_passes", "served_tokens")


def _truth(reqs: list[Any], result: Any) -> dict[str, int]:
    passes, tokens = no_cache_work([len(r.prompt) for r in reqs], [r.max_new_tokens for r in reqs])
    served = [s.tokens for s in result.steps]
    return dict(zip(KEYS, (passes, tokens, len(served), sum(served)), strict=True))


def _hint(key: str, got: int, reqs: list[Any], result: Any) -> str:
    outs = sum(r.max_new_tokens for r in reqs)
    if key == "baseline_tokens" and got == sum(len(r.prompt) + r.max_new_tokens for r in reqs):
        return (
            "That is the work WITH a KV cache. Without one, the i-th output token of a prompt "
            "of p tokens is a forward pass over all p + i tokens of its prefix."
        )
    if key == "baseline_passes" and got == len(reqs):
        return "Without a cache every output token needs its own forward pass: sum of outputs."
    if key == "served_passes" and got == outs:
        return "Served, one forward pass runs a whole batch: count the engine's steps."
    if key == "served_tokens" and got == outs:
        return "Served tokens include the prompts (prefill) and recomputed tokens: sum step tokens."
    return "Count from the workload (baseline) and from result.steps (served)."


@grader(
    "28.2",
    blocks=(
        "minitorch.runtime.quant_serving:work_counts",
        "minitorch.runtime.quant_serving:baseline_work",
        "minitorch.runtime.quant_serving:served_work",
    ),
    hand="parts",
)
def check_work_counts(work_counts: Callable[..., Any]) -> str:
    """Exercise 28.2: work_counts(requests, result) -> dict of four counts."""
    f, model = fresh_rng("28.2"), load_pretrained()
    seed = int(f.integers(1, 10_000))
    runs = [
        ("the lab's workload (24 requests, 100/s)", (24, 100.0, 0), LAB_SERVING),
        ("6 requests at once, one seat", (6, float("inf"), 3), dict(LAB_SERVING, max_num_seqs=1)),
        ("12 requests, 16 blocks", (12, float("inf"), 4), dict(LAB_SERVING, num_blocks=16)),
        (fresh(f"24 requests, seed {seed}"), (24, 100.0, seed), LAB_SERVING),
    ]
    lab = None
    for label, (n, rate, wseed), config in runs:
        reqs, _ = capstone_workload(n, rate, wseed)
        result = quant_engine(model, cost=CostModel(), **config).run(reqs)
        want = _truth(reqs, result)
        got = plain(work_counts(list(reqs), result), what="counts", case=label)
        assert_true(
            isinstance(got, dict) and set(KEYS) <= set(got),
            f"[{label}] return a dict with the keys {KEYS}",
        )
        for key in KEYS:
            if got[key] != want[key]:
                raise CheckFailure(
                    f"[{label}] {key} = {got[key]!r}, expected {want[key]}. "
                    f"{_hint(key, got[key], reqs, result)}"
                )
        lab = lab or got
    assert lab is not None
    passes = lab["baseline_passes"] / lab["served_passes"]
    tokens = lab["baseline_tokens"] / lab["served_tokens"]
    assert_true(
        passes >= 3 and tokens >= 3,
        f"On the lab's workload the served run needs {passes:.2f}x fewer passes and {tokens:.2f}x "
        "fewer token positions than the baseline: the bar is 3x for both.",
    )
    return (
        f"counts exact on {len(runs)} runs (1 fresh); on the lab's workload the server needs "
        f"{passes:.1f}x fewer forward passes and {tokens:.1f}x fewer token positions"
    )
