"""Lab 31 experiments: what the chip's two routes cost per forward on this machine.

The model is a transformer's MLP block in torch (LayerNorm, Linear 16 -> 64, GELU, Linear
64 -> 16, residual) on 6 positions, the shape of the tiny GPT's:

1. its forward op by op through ``__torch_dispatch__`` on the chip, against CPU torch: the
   Python dispatch and numpy kernels' overhead per ATen call;
2. the same forward captured, lowered and fused by the compile backend's pipeline, run by
   the course interpreter (one launch per fused kernel), against the eager chip forward.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import torch

from a2s.bench import Figure, median_time, one_thread, register
from minitorch.chip import compile_backend, fallback
from minitorch.chip.device import Chip
from minitorch.chip.tensor import move_module, to_chip
from minitorch.compiler import interp


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm = torch.nn.LayerNorm(16)
        self.up, self.down = torch.nn.Linear(16, 64), torch.nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def _twin() -> torch.nn.Module:
    return _Block().eval()


def _input() -> torch.Tensor:
    return torch.randn(6, 16, generator=torch.Generator().manual_seed(1))


@register
def eager_decode_step() -> list[Figure]:
    cpu, chip = _twin(), Chip()
    model, idx = move_module(_twin(), chip), _input()
    idx_chip = to_chip(idx, chip)
    with torch.no_grad(), fallback.recording() as rep:
        model(idx_chip)
    calls = sum(rep.on_chip.values())
    with one_thread(), torch.no_grad():
        t_chip = median_time(lambda: model(idx_chip), repeats=5)
        t_cpu = median_time(lambda: cpu(idx), repeats=5)
    return [
        Figure(
            "MLP block forward on the chip, op by op (__torch_dispatch__)",
            t_chip * 1e3,
            "ms",
            f"{calls} ATen calls, {t_chip / calls * 1e6:.0f} us each; "
            f"{t_chip / t_cpu:.1f}x CPU torch",
        )
    ]


@register
def compiled_decode_step() -> list[Figure]:
    chip = Chip()
    model, idx = move_module(_twin(), chip), _input()
    idx_chip = to_chip(idx, chip)
    _, fused, rep = compile_backend.optimize(compile_backend.capture(_twin(), idx))
    feed = idx.numpy()
    with one_thread(), torch.no_grad():
        t_graph = median_time(lambda: interp.run(fused, feed), repeats=5)
        t_eager = median_time(lambda: model(idx_chip), repeats=5)
    return [
        Figure(
            "MLP block forward compiled (lowered, passes, fused), course interpreter",
            t_graph * 1e3,
            "ms",
            f"{rep.kernels_after} launches (from {rep.kernels_before}); "
            f"{t_eager / t_graph:.1f}x faster than eager on the chip",
        )
    ]
