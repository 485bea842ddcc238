"""Quantize every linear weight of the tiny GPT: FP32, INT8, INT4 by RTN, GPTQ and AWQ.

Calibration runs the FP32 model once on a batch of prompts and records the input of each
``Linear`` (all layers from the same FP32 pass, rather than GPTQ's layer-by-layer pass on
already quantized inputs: simpler, and at this size the difference is small). The embedding
(tied with the output head) and the norms stay FP32, as in GPTQ's and AWQ's releases.

    model = load_pretrained()
    calib = calibration_inputs(model, x_calib)
    q = quantized_model(model, "gptq", bits=4, group_size=16, calib=calib)
    q.loss(x_test, y_test, ignore=IGNORE)

Lab: 11_quantization
Paper: Frantar et al. 2022 (GPTQ, arXiv:2210.17323); Lin et al. 2023 (AWQ, arXiv:2306.00978).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.autograd import no_grad
from minitorch.model.gpt import GPT
from minitorch.model.quant import quantize, rtn
from minitorch.model.quant_awq import awq
from minitorch.model.quant_gptq import gptq
from minitorch.nn import Linear

__all__ = [
    "METHODS",
    "calibration_inputs",
    "linear_layers",
    "map_linear_weights",
    "quantized_model",
    "weight_bytes",
]

METHODS = ("fp32", "int8", "rtn", "gptq", "awq")


def linear_layers(model: GPT) -> dict[str, Linear]:
    """Every ``Linear`` of the model by dotted name (``blocks.0.attn.q_proj``, ...)."""
    return {name.rstrip("."): m for name, m in model.named_modules() if isinstance(m, Linear)}


def calibration_inputs(model: GPT, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The input rows (n, in) each linear layer sees when the model runs on ``idx``."""
    seen: dict[str, list[np.ndarray]] = {}
    layers = linear_layers(model)

    def recorder(name: str, layer: Linear) -> Any:
        forward = type(layer).forward

        def record(x: Any) -> Any:
            seen.setdefault(name, []).append(np.asarray(x.data).reshape(-1, layer.in_features))
            return forward(layer, x)

        return record

    try:
        for name, layer in layers.items():
            object.__setattr__(layer, "forward", recorder(name, layer))
        with no_grad():
            model(idx)
    finally:
        for layer in layers.values():
            layer.__dict__.pop("forward", None)
    return {name: np.concatenate(v).astype(np.float64) for name, v in seen.items()}


def _quantized_weight(
    w: np.ndarray, x: np.ndarray, method: str, bits: int, group_size: int
) -> np.ndarray:
    if method == "int8":
        return rtn(w, 8, symmetric=True, granularity="channel")
    if method == "rtn":
        return rtn(w, bits, granularity=group_size)
    if method == "gptq":
        return gptq(w, x, bits, group_size)
    if method == "awq":
        return awq(w, x, bits, group_size)
    raise ValueError(f"unknown method {method!r}; one of {METHODS}")


def map_linear_weights(model: GPT, fn: Callable[[str, np.ndarray], np.ndarray]) -> GPT:
    """A copy of ``model`` with each linear weight ``w`` replaced by ``fn(name, w)``."""
    copy = GPT(model.config)
    copy.load_state_dict(model.state_dict())
    for name, layer in linear_layers(copy).items():
        layer.weight.data[...] = fn(name, layer.weight.data.astype(np.float64))
    return copy


def quantized_model(
    model: GPT,
    method: str,
    bits: int = 4,
    group_size: int = 16,
    calib: dict[str, np.ndarray] | None = None,
) -> GPT:
    """A copy of ``model`` whose linear weights are quantized (stored dequantized)."""
    if method == "fp32":
        return map_linear_weights(model, lambda name, w: w)
    inputs = calib or {}
    return map_linear_weights(
        model,
        lambda name, w: _quantized_weight(
            w, inputs.get(name, np.eye(w.shape[1])), method, bits, group_size
        ),
    )


def weight_bytes(model: GPT, method: str, bits: int = 4, group_size: int = 16) -> int:
    """Bytes of the linear weights as stored: FP32, or integers plus FP16 scales (and zeros)."""
    total = 0
    for layer in linear_layers(model).values():
        w = layer.weight.data
        if method == "fp32":
            total += w.size * 4
        elif method == "int8":
            total += quantize(w, 8, symmetric=True, granularity="channel").nbytes()
        else:
            total += quantize(w, bits, granularity=group_size).nbytes()
    return total
