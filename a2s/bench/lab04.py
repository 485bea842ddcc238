"""Lab 04 experiments: one training step against torch, recomputation, emulated BF16.

1. One SGD training step (forward, cross-entropy, backward, update) of an MLP
   784-512-512-10 at batch 256, float32, one thread each: ours vs torch eager.
   Target: within 2x of torch (the matmuls dominate; both sides call a BLAS).
2. Activation recomputation on a 16-layer MLP: bytes held by the tape and step time,
   checkpointing 4 segments vs keeping everything (Chen et al.'s sqrt(n) plan).
3. The cost of emulating BF16 compute (rounding in numpy) relative to plain FP32.

Lab: 04_training_loop
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.autograd import Tensor, checkpoint_sequential, cross_entropy, tape_bytes
from minitorch.nn import MLP, Linear, Module, ReLU, autocast
from minitorch.optim import SGD

SIZES = [784, 512, 512, 10]
BATCH = 256


def _data(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal((BATCH, SIZES[0])).astype(np.float32), rng.integers(0, 10, BATCH)


def _our_step(model: Module, opt: SGD, x: Tensor, y: np.ndarray) -> Callable[[], None]:
    def step() -> None:
        loss = cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _torch_step(x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    import torch

    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(SIZES)):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < len(SIZES) - 2 else [])
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


@register
def mlp_step_vs_torch() -> list[Figure]:
    rng = np.random.default_rng(0)
    x, y = _data(rng)
    model = MLP(SIZES, rng=rng)
    ours = _our_step(model, SGD(model.parameters(), lr=0.01), Tensor(x), y)
    with one_thread():
        a, b = alternate(ours, _torch_step(x, y), repeats=11, warmup=2)
    return [
        Figure("MLP 784-512-512-10 train step, batch 256", a * 1e3, "ms", "ours, float32"),
        Figure("MLP train step, torch eager", b * 1e3, "ms", "torch eager, float32"),
        Figure("MLP train step, ours / torch", a / b, "x", "target <= 2.0"),
    ]


@register
def recomputation_memory() -> list[Figure]:
    rng = np.random.default_rng(0)
    layers = [m for _ in range(16) for m in (Linear(256, 256, rng=rng), ReLU())]
    x = Tensor(rng.standard_normal((BATCH, 256)).astype(np.float32))
    y = rng.integers(0, 256, BATCH)

    def loss_of(segments: int) -> Tensor:
        return cross_entropy(checkpoint_sequential(layers, segments, x), y)

    full, ckpt = tape_bytes(loss_of(1)), tape_bytes(loss_of(4))
    with one_thread():
        a, b = alternate(lambda: loss_of(4).backward(), lambda: loss_of(1).backward(), repeats=9)
    return [
        Figure("tape bytes, 16 layers, no checkpointing", full / 2**20, "MiB", "all activations"),
        Figure("tape bytes, 4 checkpointed segments", ckpt / 2**20, "MiB", "sqrt(n) plan"),
        Figure("tape bytes, checkpointed / full", ckpt / full, "x", "full tape = 1.0"),
        Figure("step time, checkpointed / full", a / b, "x", "one extra forward ~ 1.33"),
    ]


@register
def bf16_emulation_cost() -> list[Figure]:
    rng = np.random.default_rng(0)
    x, y = _data(rng)
    model = MLP(SIZES, rng=rng)
    step = _our_step(model, SGD(model.parameters(), lr=0.01), Tensor(x), y)

    def bf16_step() -> None:
        with autocast("bf16"):
            step()

    with one_thread():
        a, b = alternate(bf16_step, step, repeats=5)
    return [Figure("MLP step, emulated BF16 / FP32", a / b, "x", "FP32 step = 1.0")]
