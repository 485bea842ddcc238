"""Lab 12 experiments: what LoRA saves in a training step, and what not merging costs.

1. One training step (forward, loss, backward, AdamW) of the shipped tiny GPT (93,504
   parameters), full fine-tuning vs LoRA r = 4 on every linear layer, one thread, alternated.
   LoRA skips every weight gradient of the frozen base (the embedding's scatter-add
   included) and updates a tenth of the parameters.
2. Inference on one 1024 x 1024 layer at batch 16: the unmerged LoRA forward (base matmul
   plus two thin ones) vs the merged weight (one matmul), the latency merging removes.
3. A batch of 16 rows through 4 adapters on one base: ``multi_adapter_forward`` (one base
   matmul, a gathered low-rank product per adapter) vs merging each adapter into a copy of
   W for its rows.

Lab: 12_lora_peft
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.lora import (
    apply_lora,
    count_parameters,
    lora_forward,
    merge_weight,
    multi_adapter_forward,
)
from minitorch.optim import AdamW


def _step(model: GPT, x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def step() -> None:
        loss = model.loss(x, y, ignore=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


@register
def gpt_step_full_vs_lora() -> list[Figure]:
    x, y = task_batch(["shift"], 32, seed=0)
    full, lora = load_pretrained(), load_pretrained()
    apply_lora(lora, 4, 8, rng=np.random.default_rng(0))
    n_lora, n_total = count_parameters(lora)
    with one_thread():
        a, b = alternate(_step(full, x, y), _step(lora, x, y), repeats=9, warmup=2)
    return [
        Figure("tiny GPT train step, full fine-tuning", a * 1e3, "ms", "batch 32, float32"),
        Figure("tiny GPT train step, LoRA r = 4", b * 1e3, "ms", "batch 32, float32"),
        Figure(
            "tiny GPT train step, LoRA / full",
            b / a,
            "x",
            "full = 1.0; tiny layers: extra small ops",
        ),
        Figure("tiny GPT trainable fraction, LoRA r = 4", n_lora / n_total, "", "full = 1.0"),
    ]


@register
def unmerged_vs_merged_forward() -> list[Figure]:
    g = np.random.default_rng(0)
    d, n, r = 1024, 16, 8
    x, w = g.standard_normal((n, d)), g.standard_normal((d, d))
    a, bb = g.standard_normal((r, d)), g.standard_normal((d, r))
    merged = merge_weight(w, a, bb, 2.0)
    with one_thread():
        t_un, t_m = alternate(
            lambda: lora_forward(x, w, None, a, bb, 2.0), lambda: x @ merged.T, repeats=21
        )
    return [
        Figure("1024 x 1024 layer, batch 16: unmerged / merged", t_un / t_m, "x", "merged = 1.0")
    ]


@register
def multi_adapter_vs_merged_copies() -> list[Figure]:
    g = np.random.default_rng(1)
    d, n, k, r = 1024, 16, 4, 8
    x, w, b = g.standard_normal((n, d)), g.standard_normal((d, d)), g.standard_normal(d)
    adapters = [(g.standard_normal((r, d)), g.standard_normal((d, r)), 2.0) for _ in range(k)]
    ids = g.integers(0, k, n)

    def merged_copies() -> np.ndarray:
        y = np.empty((n, d))
        for j, (a, bb, s) in enumerate(adapters):
            rows = ids == j
            y[rows] = x[rows] @ merge_weight(w, a, bb, s).T + b
        return y

    with one_thread():
        t_multi, t_merge = alternate(
            lambda: multi_adapter_forward(x, w, b, adapters, ids), merged_copies, repeats=11
        )
    return [
        Figure(
            "16 rows, 4 adapters: one base matmul / merged copies",
            t_multi / t_merge,
            "x",
            "merged copies = 1.0",
        ),
    ]
