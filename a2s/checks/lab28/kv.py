"""Grader of exercise 28.3: the KV memory of a live engine, within the paging bound.

``kv_usage(engine)`` is called before every forward pass of served runs (the blocks of the
step are reserved by then) and between steps (the tokens just sampled have no slot yet, so
fewer blocks are held than the bound allows) and returns the blocks held, the paging bound
``sum over running sequences of ceil(len(tokens) / block_size)``, the blocks a max-length
reservation would hold (``ceil((prompt + max_new_tokens) / block_size)`` each) and the bytes
of the held blocks in the INT8 cache (per token: K and V, every layer and KV head, ``head_dim``
int8 entries plus a float32 scale). Ground truth: the block tables read here. **The
budget:** at every step the blocks held must stay within the paging bound; an accounting that
holds KV at max length breaks it and fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import (
    CheckFailure,
    StudentError,
    assert_true,
    fresh_rng,
    grader,
    plain,
)
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.engine import CostModel, Engine
from minitorch.runtime.quant_serving import LAB_SERVING, capstone_workload, quant_engine

__all__ = ["check_kv_usage"]

KEYS = ("held", "bound", "reserved", "bytes")


def _truth(engine: Any) -> dict[str, int]:
    bm, cfg = engine.blocks, engine.runner.cfg
    bs, running = bm.block_size, engine.scheduler.running
    held = len({b for table in bm.tables.values() for b in table})
    per_token = 2 * cfg.n_layer * cfg.n_kv_head * (cfg.head_dim + 4)
    return {
        "held": held,
        "bound": sum((len(s.tokens) + bs - 1) // bs for s in running),
        "reserved": sum((len(s.prompt) + s.max_new_tokens + bs - 1) // bs for s in running),
        "bytes": held * bs * per_token,
    }


def _hint(key: str, got: Any, want: dict[str, int], engine: Any) -> str:
    bs, cfg = engine.blocks.block_size, engine.runner.cfg
    if key == "bound" and got == sum(len(s.tokens) // bs for s in engine.scheduler.running):
        return "A sequence of l tokens needs ceil(l / block_size) blocks, not floor."
    if (
        key == "bytes"
        and got == want["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * 4
    ):
        return (
            "Those are FP32 bytes. The cache stores int8 entries (1 byte) plus one float32 "
            "scale per token and KV head, for K and V in every layer."
        )
    if key == "bytes" and got == want["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim:
        return "Add the scales: one float32 per token and KV head, for K and V, every layer."
    if key == "held" and got == want["bound"]:
        return (
            "That is the paging bound, not the blocks held: between steps a sampled token "
            "has no slot yet, so fewer blocks are held. Ask the block manager (engine.blocks)."
        )
    if key == "held" and got == want["reserved"]:
        return (
            "That is KV reserved at max length. A paged cache holds only the blocks the "
            "tokens so far fill: ask the block manager how many are in use."
        )
    return "Read engine.blocks (the block manager) and engine.scheduler.running."


@grader(
    "28.3",
    blocks=(
        "minitorch.runtime.quant_serving:kv_usage",
        "minitorch.runtime.quant_serving:kv_bytes_per_token",
    ),
    hand="object",
)
def check_kv_usage(kv_usage: Callable[..., Any]) -> str:
    """Exercise 28.3: kv_usage(engine) -> dict(held, bound, reserved, bytes)."""
    f, model = fresh_rng("28.3"), load_pretrained()
    seed = int(f.integers(1, 10_000))
    small = dict(LAB_SERVING, block_size=8, num_blocks=20)
    fresh_bs = dict(LAB_SERVING, block_size=int(f.choice([2, 4, 8])))
    runs = [
        ("the lab's workload", (24, 100.0, 0), LAB_SERVING),
        ("blocks of 8, 20 blocks: preemption", (10, float("inf"), 5), small),
        (fresh(f"workload seed {seed}"), (12, 200.0, seed), fresh_bs),
    ]
    steps = peak = peak_reserved = below = 0
    for label, (n, rate, wseed), config in runs:
        reqs, _ = capstone_workload(n, rate, wseed)
        engine = quant_engine(model, cost=CostModel(), **config)
        inner, schedule = engine.step_fn, engine.scheduler.schedule

        def observe(engine: Any, label: str, when: str) -> None:
            want = _truth(engine)
            got = plain(kv_usage(engine), what="KV usage", case=label)
            assert_true(
                isinstance(got, dict) and set(KEYS) <= set(got),
                f"[{label}] return a dict with the keys {KEYS}",
            )
            if got["held"] > got["bound"]:
                key = "bound" if got["bound"] != want["bound"] else "held"
                raise CheckFailure(
                    f"[{label}] {when}: {got['held']} blocks held > paging bound "
                    f"{got['bound']}. {_hint(key, got[key], want, engine)}"
                )
            for key in KEYS:
                if got[key] != want[key]:
                    raise CheckFailure(
                        f"[{label}] {when}: {key} = {got[key]!r}, expected {want[key]}. "
                        f"{_hint(key, got[key], want, engine)}"
                    )

        def step(
            runner: Any,
            work: Sequence[Any],
            engine: Any = engine,
            label: str = label,
            inner: Any = inner,
        ) -> Any:
            nonlocal steps, peak, peak_reserved, below
            want = _truth(engine)
            observe(engine, label, f"before the forward of step {steps + 1}")
            steps += 1
            peak, peak_reserved = max(peak, want["held"]), max(peak_reserved, want["reserved"])
            return inner(runner, work)

        def between(engine: Any = engine, label: str = label, schedule: Any = schedule) -> Any:
            nonlocal below
            want = _truth(engine)
            observe(engine, label, f"between steps {steps} and {steps + 1}")
            below += want["held"] < want["bound"]
            return schedule()

        engine.step_fn = step
        engine.scheduler.schedule = between  # type: ignore[method-assign]
        try:
            result = engine.run(reqs)
        except (CheckFailure, StudentError):
            raise
        except Exception as exc:  # the engine broke between the learner's calls
            raise CheckFailure(
                f"[{label}] the engine failed while serving ({type(exc).__name__}: {exc}): "
                "kv_usage must only read the engine, never change it."
            ) from None
        sim = Engine(None, cost=CostModel(), **config).run(reqs)  # the same schedule, no model
        assert_true(
            len(result.steps) == len(sim.steps)
            and all(len(s.output) == s.max_new_tokens for s in result.seqs),
            f"[{label}] the engine served {len(result.steps)} steps and "
            f"{sum(len(s.output) for s in result.seqs)} tokens, not the {len(sim.steps)} steps "
            f"and {sum(r.max_new_tokens for r in reqs)} tokens of its workload: kv_usage must "
            "only read the engine, never change it.",
        )
    assert below, "the workloads never held fewer blocks than the bound"  # a grader bug
    return (
        f"KV usage exact before and after {steps} engine steps over {len(runs)} runs (1 fresh), "
        f"always within the paging bound ({below} times below it); peak {peak} blocks held vs "
        f"{peak_reserved} at max length"
    )
