"""Grader of exercise 19.3: the engine's batched step.

The learner's ``engine_step(runner, work)`` runs inside the course's engine (its scheduler,
block manager and paged cache), serving the tiny GPT under chunked prefill, without it, and
with so few KV blocks that sequences are preempted and recomputed. Ground truth: every
request generated alone by the model's own ``generate`` (no cache, no batching); the tokens
must be identical. The learner's step runs in a child process (:mod:`a2s.checks.harness`)
whose runner only sends requests; the model runs here and the forward calls and tokens are
counted here, out of the learner's reach. **Budget:** one ``runner.forward`` per engine
step, whatever the batch, computing exactly the step's tokens (the n of each sequence), and
the logits returned are rows of that forward's answer: a loop of one forward per sequence, a
chunk of the whole rest of a prompt, or logits computed some other way give the same tokens
and fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader
from a2s.checks.harness import request, run_apart
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.gpt import GPT
from minitorch.runtime.engine import Engine
from minitorch.runtime.paged_model import Chunk
from minitorch.runtime.workload import Request, tiny_workload

__all__ = ["check_engine_step"]


class _Runner:
    """The runner in the learner's process: ``forward`` sends the chunks, as plain lists, to
    the grader's process, which runs the model and counts the call and its tokens. It holds
    nothing (no runner, no counter): rewriting what it can reach changes nothing here."""

    __slots__ = ()

    def forward(self, chunks: Sequence[Any], all_logits: bool = False) -> np.ndarray:
        try:
            sent = [
                ([int(t) for t in c.tokens], int(c.start), [int(b) for b in c.block_table])
                for c in chunks
            ]
        except (AttributeError, TypeError, ValueError):
            raise CheckFailure(
                "runner.forward takes a list of Chunk(tokens, start, block_table)"
            ) from None
        return request("runner.forward", sent, bool(all_logits))  # type: ignore[no-any-return]


def _serve(
    student: Callable[..., Any], model: GPT, label: str, reqs: list[Request], **config: Any
) -> tuple[Any, int]:
    """Serve ``reqs`` with the student's step; each step runs in a child process (the
    harness) whose runner is :class:`_Runner`; forwards and tokens are counted here."""
    steps = 0
    engine = Engine(model, **config)
    runner = engine.runner
    assert runner is not None
    counts = [0, 0]  # forward calls, tokens computed: in this process only
    answered: list[np.ndarray] = []  # what the forwards of this step returned

    def forward(chunks: Any, all_logits: Any) -> np.ndarray:
        try:
            real = [Chunk(list(t), int(s), list(b)) for t, s, b in chunks]
            size = sum(len(c.tokens) for c in real)
        except (TypeError, ValueError):
            raise CheckFailure(
                f"[{label}] runner.forward takes a list of Chunk(tokens, start, block_table)"
            ) from None
        counts[0] += 1
        counts[1] += size
        logits = runner.forward(real, bool(all_logits))
        answered.append(logits)
        return logits

    def step(_: Any, work: Sequence[Any]) -> list[Any]:
        nonlocal steps
        steps += 1
        before = list(counts)
        answered.clear()
        out = run_apart(
            student,
            _Runner(),
            [(list(t), d, n, list(b)) for t, d, n, b in work],
            serve={"runner.forward": forward},
            timeout=30.0,
        )
        calls, tokens = counts[0] - before[0], counts[1] - before[1]
        asked = sum(n for _, _, n, _ in work)
        assert_true(
            calls == 1,
            f"[{label}] step {steps}: {calls} runner.forward calls for one engine step of "
            f"{len(work)} sequences: run the whole batch in ONE forward (a list of Chunks); "
            "that is what batching is.",
        )
        assert_true(
            tokens == asked,
            f"[{label}] step {steps}: the forward computed {tokens} tokens, the step asks for "
            f"{asked} (n per sequence): each chunk is exactly tokens[num_computed : "
            "num_computed + n], no more (a chunked prefill computes only its chunk).",
        )
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
        rows = [None if r is None else np.asarray(r, dtype=np.float64) for r in out]
        given = [np.asarray(row, np.float64) for a in answered for row in a]
        for i, row in enumerate(rows):
            assert_true(
                row is None or any(np.array_equal(row, g) for g in given),
                f"[{label}] step {steps}: the logits of sequence {i} are not a row of what "
                "runner.forward returned: return the forward's rows, not logits computed "
                "another way.",
            )
        return rows

    engine.step_fn = step
    result = engine.run(reqs)
    return result, steps


def _expected(model: GPT, reqs: list[Request]) -> list[list[int]]:
    return [
        model.generate(np.array([r.prompt]), r.max_new_tokens)[0, len(r.prompt) :].tolist()
        for r in reqs
    ]


@grader(
    "19.3",
    blocks=(
        "minitorch.runtime.engine:batched_step",
        "minitorch.runtime.engine:Engine",
    ),
    hand="object",
)
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
        result, _ = _serve(engine_step, model, label, reqs, **config)
        for i, (got, exp) in enumerate(zip(result.outputs, want, strict=True)):
            if got != exp:
                raise CheckFailure(
                    f"[{label}] request {i} generated {got}, one-at-a-time greedy gives {exp}. "
                    "Each sequence's chunk is tokens[num_computed : num_computed + n], at "
                    "positions starting at num_computed, with its own block table."
                )
        tokens += sum(map(len, want))
        preempted += result.preemptions
    return (
        f"{tokens} tokens over {len(runs)} engine runs (1 fresh) identical to one-at-a-time "
        f"greedy decoding, {preempted} preemptions recomputed, one forward per step"
    )
