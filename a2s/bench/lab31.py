"""Lab 31 experiments: what the chip's two routes cost per decode step on this machine.

1. One decode step of the tiny GPT's torch twin (ALiBi, the whole 6-token context) op by op
   through ``__torch_dispatch__`` on the chip, against the same step in CPU torch: the
   Python dispatch and numpy kernels' overhead per ATen call.
2. The same forward captured, lowered and fused by the compile backend's pipeline, run by
   the course interpreter (one launch per fused kernel), against the eager chip step.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import numpy as np
import torch

from a2s.bench import Figure, median_time, one_thread, register
from a2s.checks.lab09._truth import to_torch
from minitorch.chip import compile_backend, fallback
from minitorch.chip.device import Chip
from minitorch.chip.tensor import move_module, to_chip
from minitorch.compiler import interp
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT

_TOKENS = [[3, 1, 4, 1, 5, 9]]


def _twin() -> torch.nn.Module:
    cfg = GPTConfig(
        vocab_size=16,
        block_size=8,
        n_layer=1,
        n_head=2,
        n_kv_head=1,
        d_model=16,
        norm="layernorm",
        mlp="gelu",
        pos="alibi",
        tie_head=False,
    )
    return to_torch(GPT(cfg, seed=0), torch.float32).eval()


@register
def eager_decode_step() -> list[Figure]:
    cpu, chip = _twin(), Chip()
    model, idx = move_module(_twin(), chip), torch.tensor(_TOKENS)
    idx_chip = to_chip(idx, chip)
    with torch.no_grad(), fallback.recording() as rep:
        model(idx_chip)
    calls = sum(rep.on_chip.values())
    with one_thread(), torch.no_grad():
        t_chip = median_time(lambda: model(idx_chip), repeats=5)
        t_cpu = median_time(lambda: cpu(idx), repeats=5)
    return [
        Figure(
            "tiny GPT decode step on the chip, op by op (__torch_dispatch__)",
            t_chip * 1e3,
            "ms",
            f"{calls} ATen calls, {t_chip / calls * 1e6:.0f} us each; "
            f"{t_chip / t_cpu:.1f}x CPU torch",
        )
    ]


@register
def compiled_decode_step() -> list[Figure]:
    chip = Chip()
    model, idx = move_module(_twin(), chip), torch.tensor(_TOKENS)
    idx_chip = to_chip(idx, chip)
    _, fused, rep = compile_backend.optimize(compile_backend.capture(_twin(), idx))
    feed = idx.numpy().astype(np.int64)
    with one_thread(), torch.no_grad():
        t_graph = median_time(lambda: interp.run(fused, feed), repeats=5)
        t_eager = median_time(lambda: model(idx_chip), repeats=5)
    return [
        Figure(
            "tiny GPT forward compiled (lowered, passes, fused), course interpreter",
            t_graph * 1e3,
            "ms",
            f"{rep.kernels_after} launches (from {rep.kernels_before}); "
            f"{t_eager / t_graph:.1f}x faster than eager on the chip",
        )
    ]
