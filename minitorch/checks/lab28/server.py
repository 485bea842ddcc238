"""Grader of exercise 28.1: the served quantized model.

The learner's ``build_server(model, num_blocks, block_size, token_budget, max_num_seqs,
cost)`` returns an engine. The grader then (1) reads the weights the engine's runner holds:
every linear weight must be the INT8 per-row rounding of the FP32 one (a served model that
silently keeps FP32 weights fails here); (2) serves workloads through it (chunked prefill,
whole prompts, so few KV blocks that sequences are preempted, a fresh one) and records the
logits of every sampled token; (3) compares tokens AND logits with a direct quantized
generation written here: one token at a time, INT8 weights, K/V in lab 11's contiguous
``Int8KVCache``. An FP32 KV cache moves logits by ~0.1 and fails the logits check even when
the greedy tokens happen to agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.checks.cases import fresh
from minitorch.checks.core import CheckFailure, assert_true, fresh_rng, grader
from minitorch.checks.lab28._truth import direct_generate, linear_names
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.gpt import GPT
from minitorch.runtime.quant_serving import capstone_workload

__all__ = ["check_server", "serve_recording"]

# mean over a run of each token's max logit error: served vs direct ~1e-5 (float32 arithmetic,
# now and then an int8 rounding flip), an FP32 KV cache ~0.03
LOGIT_TOL = 2e-3


def _on_int8_grid(w: np.ndarray, fp32: np.ndarray) -> bool:
    """Each row a multiple of its scale max|w| / 127, the nearest one up to float error (a
    float32 division may round a near-tie the other way: still a correct INT8 rounding)."""
    scale = np.abs(fp32).max(axis=1, keepdims=True) / 127.0
    scale = np.where(scale > 0, scale, 1.0)
    k = w / scale
    on_grid = np.abs(k - np.round(k)) <= 1e-3
    nearest = np.abs(w - fp32) <= scale * (0.5 + 1e-3)
    return bool(on_grid.all() and nearest.all() and np.abs(np.round(k)).max() <= 127)


def _weights_are_int8(engine: Any, model: GPT, label: str) -> None:
    runner = getattr(engine, "runner", None)
    served: Any = getattr(runner, "model", None)
    assert_true(
        served is not None and hasattr(served, "state_dict"),
        f"[{label}] return the Engine itself: its .runner.model is the model it serves",
    )
    state, fp32 = served.state_dict(), model.state_dict()
    for name in linear_names(model):
        w = np.asarray(state[name], np.float64)
        if np.allclose(w, fp32[name], rtol=0, atol=1e-9):
            raise CheckFailure(
                f"[{label}] {name} is the FP32 weight: the engine serves the unquantized "
                "model. Quantize every linear weight to INT8 (quantized_model(model, 'int8'))."
            )
        if not _on_int8_grid(w, np.asarray(fp32[name], np.float64)):
            raise CheckFailure(
                f"[{label}] {name} is not the INT8 per-channel rounding of the FP32 weight "
                "(symmetric, one scale max|w| / 127 per output row)."
            )


def serve_recording(engine: Any, reqs: Sequence[Any]) -> tuple[Any, dict[tuple, np.ndarray]]:
    """Run ``engine`` on ``reqs``, recording the logits row of every sampled token."""
    rows: dict[tuple, np.ndarray] = {}
    inner = engine.step_fn

    def step(runner: Any, work: Sequence[Any]) -> Sequence[Any]:
        out = inner(runner, work)
        for (toks, _, _, _), row in zip(work, out, strict=True):
            if row is not None:
                rows[tuple(toks)] = np.asarray(row, np.float64)
        return out

    engine.step_fn = step
    return engine.run(reqs), rows


def _compare(label: str, result: Any, rows: dict, reqs: Sequence[Any], truth: list) -> int:
    errs: list[float] = []
    for i, (req, got, (want, logits)) in enumerate(zip(reqs, result.outputs, truth, strict=True)):
        if got != want:
            raise CheckFailure(
                f"[{label}] request {i}: served {got}, the direct quantized generation gives "
                f"{want}. Serve the INT8 model through an Int8PagedKVCache of num_blocks "
                "blocks of block_size (the engine's runner must use both)."
            )
        for j in range(len(want)):
            row = rows.get(tuple(req.prompt) + tuple(want[:j]))
            errs.append(np.inf if row is None else float(np.abs(row - logits[j]).max()))
    err = float(np.mean(errs))
    if err > LOGIT_TOL:
        raise CheckFailure(
            f"[{label}] the tokens agree, but the logits differ from the direct INT8 generation "
            f"by {err:.3g} on average (> {LOGIT_TOL}): the K/V are not stored as INT8 with a "
            "scale per token and head. Give the runner an Int8PagedKVCache, not the FP32 "
            "PagedKVCache."
        )
    return sum(len(t[0]) for t in truth)


@grader(
    "28.1",
    blocks=(
        "minitorch.runtime.quant_serving:quant_engine",
        "minitorch.checks.lab28._truth:int8_rows",
        "minitorch.checks.lab28._truth:direct_generate",
    ),
)
def check_server(build_server: Callable[..., Any]) -> str:
    """Exercise 28.1: build_server(model, num_blocks, block_size, budget, seats, cost)."""
    f, model = fresh_rng("28.1"), load_pretrained()
    seed = int(f.integers(1, 10_000))
    runs = [
        ("chunked prefill, budget 6", 0, dict(num_blocks=64, block_size=4, token_budget=6)),
        ("whole prompts, budget 32", 1, dict(num_blocks=64, block_size=4, token_budget=32)),
        ("10 KV blocks: preemption", 2, dict(num_blocks=10, block_size=4, token_budget=16)),
        (fresh(f"workload seed {seed}"), seed, dict(num_blocks=40, block_size=8, token_budget=12)),
    ]
    tokens = preempted = 0
    for label, wseed, config in runs:
        reqs, _ = capstone_workload(6, float("inf"), wseed)
        engine = build_server(model, max_num_seqs=4, cost=None, **config)
        _weights_are_int8(engine, model, label)
        result, rows = serve_recording(engine, reqs)
        state = engine.runner.model.state_dict()
        truth = [
            direct_generate(state, model.config, list(r.prompt), r.max_new_tokens) for r in reqs
        ]
        tokens += _compare(label, result, rows, reqs, truth)
        preempted += result.preemptions
    return (
        f"{tokens} tokens over {len(runs)} served runs (1 fresh, {preempted} preemptions) equal "
        f"to direct INT8 generation, mean logit error <= {LOGIT_TOL}; every linear weight INT8"
    )
