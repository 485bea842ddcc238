"""Grader of exercise 19.3: the engine's batched step.

The learner's ``engine_step(runner, work)`` runs inside the course's engine (its scheduler,
block manager and paged cache), serving the tiny GPT under chunked prefill, without it, and
with so few KV blocks that sequences are preempted and recomputed. Ground truth: every
request generated alone by the model's own ``generate`` (no cache, no batching); the tokens
must be identical. **Budget:** one ``runner.forward`` per engine step, whatever the batch:
a loop of one forward per sequence gives the same tokens and fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.checks.cases import fresh
from minitorch.checks.core import CheckFailure, assert_true, fresh_rng, grader
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.gpt import GPT
from minitorch.runtime.engine import Engine
from minitorch.runtime.paged_model import PagedGPT
from minitorch.runtime.workload import Request, tiny_workload

__all__ = ["check_engine_step"]


def _counting(runner: PagedGPT) -> tuple[Any, list[int]]:
    """The engine's runner as the student's step sees it: ``forward`` only, each call
    counted (the real runner is not an attribute, so it cannot be called uncounted)."""
    calls = [0]

    class Runner:
        __slots__ = ()

        def forward(self, chunks: Sequence[Any], all_logits: bool = False) -> np.ndarray:
            calls[0] += 1
            return runner.forward(chunks, all_logits)

    return Runner(), calls


def _serve(
    student: Callable[..., Any], model: GPT, label: str, reqs: list[Request], **config: Any
) -> tuple[Any, int, int]:
    steps = 0

    def step(runner: Any, work: Sequence[Any]) -> list[Any]:
        nonlocal steps
        steps += 1
        out = student(runner, [(list(t), d, n, list(b)) for t, d, n, b in work])
        out = list(out) if isinstance(out, (list, tuple)) else out
        assert_true(
            isinstance(out, list) and len(out) == len(work),
            f"[{label}] return one entry per sequence of the batch ({len(work)})",
        )
        for (toks, done, n, _), row in zip(work, out, strict=True):
            complete = done + n == len(toks)
            assert_true(
                complete or row is None,
                f"[{label}] a sequence whose chunk stops before its last token "
                "(num_computed + n < len(tokens), a prefill in progress) must get "
                "None: it has no next token yet.",
            )
            assert_true(
                not complete or row is not None,
                f"[{label}] a sequence whose chunk reaches its last token needs its "
                "logits (the engine samples from them).",
            )
        return [None if r is None else np.asarray(r, dtype=np.float64) for r in out]

    engine = Engine(model, step_fn=step, **config)
    counter, calls = _counting(engine.runner)  # type: ignore[arg-type]
    engine.runner = counter
    result = engine.run(reqs)
    return result, steps, calls[0]


def _expected(model: GPT, reqs: list[Request]) -> list[list[int]]:
    return [
        model.generate(np.array([r.prompt]), r.max_new_tokens)[0, len(r.prompt) :].tolist()
        for r in reqs
    ]


@grader("19.3", blocks=("minitorch.runtime.engine:batched_step", "minitorch.runtime.engine:Engine"))
def check_engine_step(engine_step: Callable[..., Any]) -> str:
    """Exercise 19.3: engine_step(runner, work) -> logits or None per sequence."""
    f, model = fresh_rng("19.3"), load_pretrained()
    seed = int(f.integers(1, 10_000))
    runs = [
        (
            "8 requests, chunked prefill, budget 6",
            tiny_workload(8, float("inf"), 0),
            dict(num_blocks=64, block_size=4, token_budget=6),
        ),
        (
            "8 requests, whole prompts, budget 32",
            tiny_workload(8, float("inf"), 1),
            dict(num_blocks=64, block_size=4, token_budget=32, chunked_prefill=False),
        ),
        (
            "14 KV blocks: preemption and recompute",
            tiny_workload(8, float("inf"), 2),
            dict(num_blocks=14, block_size=4, token_budget=16),
        ),
        (
            fresh(f"6 requests, workload seed {seed}"),
            tiny_workload(6, float("inf"), seed),
            dict(
                num_blocks=int(f.integers(12, 40)),
                block_size=int(f.choice([2, 4, 8])),
                token_budget=int(f.integers(4, 20)),
            ),
        ),
    ]
    tokens = preempted = 0
    for label, reqs, config in runs:
        if config["num_blocks"] * config["block_size"] < 32:
            config["num_blocks"] = -(-32 // config["block_size"])
        want = _expected(model, reqs)
        result, steps, calls = _serve(engine_step, model, label, reqs, **config)
        for i, (got, exp) in enumerate(zip(result.outputs, want, strict=True)):
            if got != exp:
                raise CheckFailure(
                    f"[{label}] request {i} generated {got}, one-at-a-time greedy gives {exp}. "
                    "Each sequence's chunk is tokens[num_computed : num_computed + n], at "
                    "positions starting at num_computed, with its own block table."
                )
        assert_true(
            calls == steps,
            f"[{label}] {calls} runner.forward calls for {steps} engine steps: run the "
            "whole batch in ONE forward (a list of Chunks); that is what batching is.",
        )
        tokens += sum(map(len, want))
        preempted += result.preemptions
    return (
        f"{tokens} tokens over {len(runs)} engine runs (1 fresh) identical to one-at-a-time "
        f"greedy decoding, {preempted} preemptions recomputed, one forward per step"
    )
