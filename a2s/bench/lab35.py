"""Lab 35 experiments: where a GRPO step's time goes, and what a weight sync moves.

1. Wall clock, one thread: the colocated loop of ``minitorch.rl.trainer.run_grpo`` (the
   tiny GPT, the lab's default config), its per-step seconds generating, training and syncing
   (in-place copy into the engine's own arrays), as shares of the step (medians over the
   steps; the shares of one run, so the machine's drift cancels).
2. Counted: the bytes a sync moves, every parameter against the LoRA adapters only (r = 4 on
   every projection, as the lab's), from the ``VersionedSync`` of each run. In one process the
   copy takes well under a millisecond either way: the bytes are what a trainer on another
   device would send.

Lab: 35_rl_systems
"""

from __future__ import annotations

import copy
import statistics

import numpy as np

from a2s.bench import Figure, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.lora import apply_lora
from minitorch.rl.trainer import History, RLConfig, run_grpo


def _shares(h: History) -> tuple[float, dict[str, float]]:
    parts = {k: statistics.median(v) for k, v in (("generate", h.t_gen), ("train", h.t_train))}
    parts["sync"] = statistics.median(h.t_sync)
    total = sum(parts.values())
    return total, {k: v / total for k, v in parts.items()}


@register
def grpo_step_split(steps: int = 5, cfg: RLConfig | None = None) -> list[Figure]:
    cfg = cfg or RLConfig()
    with one_thread():
        hist = run_grpo(cfg, steps=steps, eval_samples=0)
    total, share = _shares(hist)
    batch = cfg.prompts_per_step * cfg.group_size
    return [
        Figure(
            f"GRPO step share: {part}",
            100 * frac,
            "%",
            f"step {total * 1e3:.0f} ms (median of {steps}), {batch} rollouts x "
            f"{cfg.max_new_tokens} tokens",
        )
        for part, frac in share.items()
    ]


@register
def sync_bytes(steps: int = 2, cfg: RLConfig | None = None, r: int = 4) -> list[Figure]:
    cfg = cfg or RLConfig()
    base = load_pretrained()
    lora = copy.deepcopy(base)
    apply_lora(lora, r=r, alpha=2 * r, rng=np.random.default_rng(0))  # in place, returns it
    with one_thread():
        full = run_grpo(cfg, steps=steps, policy=copy.deepcopy(base), eval_samples=0)
        adapters = run_grpo(cfg, steps=steps, policy=lora, lora_only=True, eval_samples=0)
    b_full, b_lora = full.bytes_synced[-1], adapters.bytes_synced[-1]
    t_full, t_lora = (1e3 * statistics.median(h.t_sync) for h in (full, adapters))
    return [
        Figure(
            "bytes per sync, full model (in place)",
            b_full / 1024,
            "KiB",
            f"every parameter of the tiny GPT ({b_full:,} B), {len(full.bytes_synced)} syncs",
        ),
        Figure(
            f"LoRA (r = {r}) / full bytes per sync",
            b_lora / b_full,
            "x",
            f"{b_lora:,} of {b_full:,} B; in-process sync {t_lora:.2f} vs {t_full:.2f} ms"
            " (per-tensor overhead, not bytes, at this size)",
        ),
    ]
