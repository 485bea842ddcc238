"""Quantization-aware training: fake quantization with a straight-through estimator (STE).

Forward, a fake-quant op rounds its input to the integer grid and back (the values a
quantized kernel would see); backward, rounding has zero gradient almost everywhere, so the
STE passes the gradient through unchanged wherever the input lies inside the clip range
and blocks it outside (the rounded value decides, as in torch's
``fake_quantize_per_tensor_affine``):

$$\\hat x = s\\,(\\mathrm{clip}(\\lfloor x/s \\rceil + z, q_{lo}, q_{hi}) - z), \\qquad
\\frac{\\partial L}{\\partial x} = \\frac{\\partial L}{\\partial \\hat x}\\,
\\mathbf{1}[q_{lo} \\le \\lfloor x/s \\rceil + z \\le q_{hi}] .$$

Weights use lab 11's quantizer (:func:`minitorch.model.quant.quantize`: per group, min/max
scale and zero, recomputed from the current weight each step, so nothing is clipped and the
STE is the identity); :func:`fake_quant_range` takes an explicit range ``[lo, hi]`` (an
activation's calibrated range), where the clip mask matters. QAT fine-tunes the trained
tiny GPT with every linear weight fake-quantized (:func:`fake_quantized`), then deploys the
same RTN quantization as post-training quantization (PTQ) does; only the weights differ.

    with fake_quantized(model, bits=3, group_size=16):
        model.loss(x, y, ignore=IGNORE).backward()        # STE gradients on the FP32 weights
    q = qat_finetune(model, bits=3, steps=60)              # then quantized_model(q, "rtn", 3)

Lab: 33_sparsity_distillation_qat
Paper: Bengio, Léonard & Courville 2013, "Estimating or Propagating Gradients Through
Stochastic Neurons for Conditional Computation" (arXiv:1308.3432): the straight-through
estimator; Jacob et al. 2018 (CVPR), "Quantization and Training of Neural Networks for
Efficient Integer-Arithmetic-Only Inference": simulated quantization in training.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from minitorch.autograd import Node, Tensor, backward_rule, linear, make
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.quant import dequantize, qrange, quantize
from minitorch.model.quant_model import linear_layers, map_linear_weights
from minitorch.model.train import TASKS_TRAINED, Adam

__all__ = ["fake_quant", "fake_quant_range", "fake_quantized", "qat_finetune"]


def _ste(x: Tensor, value: np.ndarray, inside: np.ndarray) -> Tensor:
    return make("fake_quant", value.astype(x.dtype), (x,), inside)


@backward_rule("fake_quant")
def fake_quant_backward(node: Node, g: np.ndarray) -> tuple[np.ndarray]:
    (inside,) = node.saved
    return ((g * inside).astype(node.parents[0].dtype, copy=False),)


def fake_quant(
    w: Tensor, bits: int = 4, group_size: int | str = 16, symmetric: bool = False
) -> Tensor:
    """``w`` (out, in) quantized and dequantized by lab 11's quantizer; STE identity backward."""
    qt = quantize(w.data, bits, symmetric=symmetric, granularity=group_size)
    return _ste(w, dequantize(qt), np.ones(w.shape, dtype=bool))


def fake_quant_range(
    x: Tensor, lo: float, hi: float, bits: int = 8, symmetric: bool = False
) -> Tensor:
    """``x`` on the ``bits``-bit grid of the range ``[lo, hi]`` (symmetric: ``[-hi, hi]``);
    the gradient passes where ``x`` is inside the range and is 0 where it was clipped."""
    qlo, qhi = qrange(bits, symmetric)
    if symmetric:
        scale, zero = max(abs(lo), abs(hi)) / qhi, 0.0
    else:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = (hi - lo) / qhi
        zero = float(np.round(-lo / scale)) if scale > 0 else 0.0
    scale = scale if scale > 0 else 1.0
    u = np.asarray(x.data, dtype=np.float64) / scale + zero
    r = np.round(u)
    q = np.clip(r, qlo, qhi)
    inside = (r >= qlo) & (r <= qhi)  # torch.fake_quantize_*'s mask: the rounded value in range
    return _ste(x, (q - zero) * scale, inside)


@contextmanager
def fake_quantized(
    model: GPT, bits: int = 4, group_size: int | str = 16, symmetric: bool = False
) -> Iterator[GPT]:
    """Inside the block every ``Linear`` of ``model`` multiplies by its fake-quantized weight."""
    layers = linear_layers(model)

    def forward_of(layer: Any) -> Any:
        def forward(x: Tensor) -> Tensor:
            return linear(x, fake_quant(layer.weight, bits, group_size, symmetric), layer.bias)

        return forward

    try:
        for layer in layers.values():
            object.__setattr__(layer, "forward", forward_of(layer))
        yield model
    finally:
        for layer in layers.values():
            layer.__dict__.pop("forward", None)


def qat_finetune(
    model: GPT,
    bits: int = 4,
    group_size: int | str = 16,
    steps: int = 60,
    batch: int = 32,
    lr: float = 3e-4,
    seed: int = 0,
) -> GPT:
    """A copy of ``model`` fine-tuned for ``steps`` Adam steps with fake-quantized weights
    (cosine learning rate, batches of the bundled tasks from ``seed``)."""
    student = map_linear_weights(model, lambda name, w: w)
    opt = Adam(student.parameters(), lr=lr)
    with fake_quantized(student, bits, group_size):
        for step in range(steps):
            opt.lr = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
            x, y = task_batch(TASKS_TRAINED, batch, seed=5_000_000 + 1000 * seed + step)
            loss = student.loss(x, y, ignore=IGNORE)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return student
