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

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, guarded
from a2s.checks.lab28._truth import direct_generate
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.gpt import GPT
from minitorch.runtime.block_manager import BlockManager
from minitorch.runtime.engine import CostModel, Engine, batched_step
from minitorch.runtime.paged_model import PagedGPT
from minitorch.runtime.quant_serving import Int8PagedKVCache, capstone_workload
from minitorch.runtime.scheduler import Scheduler

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


def _the_course_engine(engine: Any, cost: Any, label: str) -> None:
    """The engine and what runs inside it are the course's own classes: serving then runs no
    learner code outside the check's guard (a subclass's ``run`` or a custom step would)."""
    parts = [
        ("the engine", engine, Engine),
        ("engine.runner", getattr(engine, "runner", None), PagedGPT),
        ("engine.runner.model", getattr(getattr(engine, "runner", None), "model", None), GPT),
        (
            "engine.runner.cache",
            getattr(getattr(engine, "runner", None), "cache", None),
            Int8PagedKVCache,
        ),
        ("engine.scheduler", getattr(engine, "scheduler", None), Scheduler),
        ("engine.blocks", getattr(engine, "blocks", None), BlockManager),
    ]
    for what, obj, cls in parts:
        if type(obj) is not cls:
            raise CheckFailure(
                f"[{label}] {what} is a {type(obj).__name__}, not lab 19's {cls.__name__}: "
                "return the course's Engine, its runner a PagedGPT of the INT8 model over an "
                "Int8PagedKVCache (no subclasses: their code would run outside the check)."
            )
    assert_true(
        engine.step_fn is batched_step and engine.cost is cost,
        f"[{label}] leave the Engine's step function as it is (lab 19's batched_step) and "
        "give it the cost model passed to build_server.",
    )


def _weights_are_int8(engine: Any, fp32: dict[str, np.ndarray], label: str) -> None:
    runner = getattr(engine, "runner", None)
    served: Any = getattr(runner, "model", None)
    assert_true(
        served is not None and hasattr(served, "state_dict"),
        f"[{label}] return the Engine itself: its .runner.model is the model it serves",
    )
    state = served.state_dict()
    for name in [k for k in fp32 if k.endswith("_proj.weight") or ".mlp.w" in k]:
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


def serve_recording(
    engine: Any,
    reqs: Sequence[Any],
    work_log: list[tuple[int, int, int]] | None = None,
    run: Callable[..., Any] | None = None,
) -> tuple[Any, dict[tuple, np.ndarray]]:
    """Run ``engine`` on ``reqs``, recording the logits row of every sampled token (and, in
    ``work_log``, each step's sequences, tokens computed and context read)."""
    rows: dict[tuple, np.ndarray] = {}
    inner = engine.step_fn

    def step(runner: Any, work: Sequence[Any]) -> Sequence[Any]:
        if work_log is not None:
            work_log.append(
                (
                    len(work),
                    sum(int(n) for _, _, n, _ in work),
                    sum(int(d) + int(n) for _, d, n, _ in work),
                )
            )
        out = inner(runner, work)
        for (toks, _, _, _), row in zip(work, out, strict=True):
            if row is not None:
                rows[tuple(toks)] = np.asarray(row, np.float64)
        return out

    engine.step_fn = step
    return (run or engine.run)(reqs), rows


def _schedule(
    label: str,
    result: Any,
    log: list[tuple[int, int, int]],
    reqs: Sequence[Any],
    config: dict,
    cost: Any,
) -> None:
    """The engine ran under the asked token budget, seats and clock, and scheduled as lab 19's
    Engine does with them (the schedule does not depend on the weights: greedy, fixed lengths)."""
    budget, seats = config["token_budget"], config["max_num_seqs"]
    steps = list(result.steps)
    assert_true(
        len(steps) == len(log),
        f"[{label}] {len(steps)} steps logged for {len(log)} forward passes: return the Engine "
        "whose step function ran",
    )
    for i, (batch, tokens, _) in enumerate(log):
        if tokens > budget:
            raise CheckFailure(
                f"[{label}] step {i + 1} computed {tokens} tokens, over the token budget of "
                f"{budget}: pass token_budget to the Engine (its default is 64)."
            )
        if batch > seats:
            raise CheckFailure(
                f"[{label}] step {i + 1} ran {batch} sequences, over max_num_seqs = {seats}: "
                "pass max_num_seqs to the Engine (its default is 16)."
            )
    now = 0.0  # every request arrives at 0: the modelled clock is the sum of step costs
    for i, ((_, tokens, context), s) in enumerate(zip(log, steps, strict=True)):
        now += cost.t_step + cost.t_token * tokens + cost.t_context * context
        if not np.isclose(s.time, now, rtol=1e-9, atol=1e-12):
            raise CheckFailure(
                f"[{label}] step {i + 1} ends at {s.time:.6g} s on the engine's clock; the cost "
                f"model given gives {now:.6g} s: pass cost to the Engine (without it the clock "
                "is the wall clock)."
            )
    sim = Engine(None, cost=cost, **config).run(reqs)
    want = [(s.batch, s.tokens) for s in sim.steps]
    got = [(s.batch, s.tokens) for s in steps]
    if got != want:
        k = next(
            (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
            min(len(got), len(want)),
        )
        raise CheckFailure(
            f"[{label}] step {k + 1}: {len(got)} steps, (sequences, tokens) from there "
            f"{got[k : k + 3]}; lab 19's Engine with num_blocks={config['num_blocks']}, "
            f"block_size={config['block_size']}, token_budget={budget}, max_num_seqs={seats} "
            f"takes {len(want)} steps, {want[k : k + 3]}. Build it with exactly these "
            "(chunked prefill and the continuous policy are its defaults)."
        )


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


_BLOCKS = ("minitorch.runtime.quant_serving:quant_engine",)


@grader("28.1", blocks=_BLOCKS, hand="object")
def check_server(build_server: Callable[..., Any]) -> str:
    """Exercise 28.1: build_server(model, num_blocks, block_size, budget, seats, cost)."""
    f = fresh_rng("28.1")
    seed = int(f.integers(1, 10_000))
    gpu, slow = CostModel(), CostModel(t_step=2e-3, t_token=3e-4, t_context=1e-6)
    runs = [
        (
            "chunked prefill, budget 6, 4 seats",
            0,
            dict(num_blocks=64, block_size=4, token_budget=6, max_num_seqs=4),
            gpu,
        ),
        (
            "whole prompts, budget 32, 3 seats",
            1,
            dict(num_blocks=64, block_size=4, token_budget=32, max_num_seqs=3),
            slow,
        ),
        (
            "10 KV blocks: preemption",
            2,
            dict(num_blocks=10, block_size=4, token_budget=16, max_num_seqs=4),
            gpu,
        ),
        (
            fresh(f"workload seed {seed}"),
            seed,
            dict(
                num_blocks=40,
                block_size=8,
                token_budget=int(f.integers(5, 20)),
                max_num_seqs=int(f.integers(2, 6)),
            ),
            slow,
        ),
    ]
    tokens = preempted = 0
    for label, wseed, config, cost in runs:
        reqs, _ = capstone_workload(6, float("inf"), wseed)
        model = load_pretrained()  # a fresh copy: what the learner does to it stays in this run
        fp32 = {k: np.array(v, np.float64) for k, v in model.state_dict().items()}
        engine = build_server(model, cost=cost, **config)
        _the_course_engine(engine, cost, label)
        _weights_are_int8(engine, fp32, label)
        log: list[tuple[int, int, int]] = []
        # served under the exercise's guard: code of the learner's model, if any, runs watched
        result, rows = serve_recording(engine, reqs, log, guarded(engine.run, "28.1", _BLOCKS))
        _schedule(label, result, log, reqs, config, cost)
        state = engine.runner.model.state_dict()
        truth = [
            direct_generate(state, model.config, list(r.prompt), r.max_new_tokens) for r in reqs
        ]
        tokens += _compare(label, result, rows, reqs, truth)
        preempted += result.preemptions
    return (
        f"{tokens} tokens over {len(runs)} served runs (1 fresh, {preempted} preemptions) equal "
        f"to direct INT8 generation, mean logit error <= {LOGIT_TOL}; every linear weight INT8; "
        "budget, seats and cost clock as asked"
    )
