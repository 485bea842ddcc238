"""Integer quantizers: symmetric/asymmetric, per-tensor/channel/group, INT4 packing, RTN.

A weight matrix ``w`` of shape (out, in) (the layer computes ``y = x @ w.T``) is stored as
integers ``q`` with one scale (and, asymmetric, one integer zero point) per *group*: the
whole tensor, one output channel (a row), or ``group_size`` consecutive input columns of a
row. Dequantization is ``(q - zero) * scale``; the round trip errs by at most ``scale / 2``
per element, since ``q`` is ``x / scale`` rounded to nearest and never clipped.

    qt = quantize(w, bits=4, granularity=128)          # INT4, groups of 128, asymmetric
    w_hat = dequantize(qt)                             # |w - w_hat| <= qt.scale / 2
    packed = pack_int4(qt.q)                           # two values per byte

Lab: 11_quantization
Paper: Jacob et al., "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference", CVPR 2018 (affine scheme); Nagel et al., "A White Paper on
Neural Network Quantization", 2021 (granularities, round-to-nearest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Quantized",
    "dequant_matmul",
    "dequantize",
    "pack_int4",
    "qrange",
    "quantize",
    "quantize_groups",
    "rtn",
    "unpack_int4",
]

Granularity = str | int  # "tensor", "channel", or a group size along the input axis


@dataclass(frozen=True, slots=True)
class Quantized:
    """Integers ``q`` (shape of the weight), and per-group ``scale`` and ``zero`` (out, groups)."""

    q: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    bits: int
    group_size: int  # columns per group (the whole row for per-channel and per-tensor)

    def nbytes(self, scale_bytes: int = 2) -> int:
        """Storage: ``bits`` per weight plus a scale (and zero) per group (FP16 by default)."""
        per_group = scale_bytes + (1 if np.any(self.zero) else 0)
        groups = 1 if np.all(self.scale == self.scale.flat[0]) else self.scale.size
        return int(np.ceil(self.q.size * self.bits / 8)) + groups * per_group


def qrange(bits: int, symmetric: bool) -> tuple[int, int]:
    """The integer range: symmetric ``[-(2^(b-1) - 1), 2^(b-1) - 1]``, else ``[0, 2^b - 1]``."""
    if symmetric:
        return -(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def _groups(w: np.ndarray, granularity: Granularity) -> tuple[np.ndarray, int]:
    """View ``w`` (out, in) as (out, groups, g), or (1, 1, size) per tensor."""
    out, cols = w.shape
    if granularity == "tensor":
        return w.reshape(1, 1, -1), cols
    g = cols if granularity == "channel" else int(granularity)
    if cols % g:
        raise ValueError(f"group size {g} does not divide {cols} columns")
    return w.reshape(out, cols // g, g), g


def quantize(
    w: np.ndarray, bits: int = 8, *, symmetric: bool = False, granularity: Granularity = "channel"
) -> Quantized:
    """Round-to-nearest quantization of ``w`` (out, in) with one scale per group.

    Symmetric: ``scale = max|w| / qmax``, zero 0. Asymmetric: ``scale = (max - min) /
    (2^b - 1)`` and ``zero = round(-min / scale)``, so ``min`` and ``max`` both land in range.
    """
    w = np.asarray(w, dtype=np.float64)
    grouped, g = _groups(w, granularity)
    lo, hi = qrange(bits, symmetric)
    if symmetric:
        scale = np.abs(grouped).max(axis=-1) / hi
        zero = np.zeros(scale.shape)
    else:
        mn = np.minimum(grouped.min(axis=-1), 0.0)
        mx = np.maximum(grouped.max(axis=-1), 0.0)
        scale = (mx - mn) / hi
    scale = np.where(scale > 0, scale, 1.0)
    if not symmetric:
        zero = np.round(-mn / scale)
    q = np.clip(np.round(grouped / scale[..., None]) + zero[..., None], lo, hi)
    if granularity == "tensor":  # one scale, stored once per row so every layout is (out, groups)
        scale, zero = np.full((w.shape[0], 1), scale.item()), np.full((w.shape[0], 1), zero.item())
    dtype = np.int32 if bits > 8 else np.int8 if symmetric else np.uint8
    return Quantized(q.reshape(w.shape).astype(dtype), scale, zero.astype(np.int32), bits, g)


def quantize_groups(
    w: np.ndarray, bits: int, group_size: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exercise 11.1's interface to :func:`quantize`: ``(q, scale, zero)``, scale (out, groups)."""
    qt = quantize(w, bits, symmetric=symmetric, granularity=group_size)
    return qt.q, qt.scale, qt.zero


def dequantize(qt: Quantized) -> np.ndarray:
    """``(q - zero) * scale``, group by group, back to the weight's shape."""
    out, cols = qt.q.shape
    q = qt.q.astype(np.float64).reshape(out, cols // qt.group_size, qt.group_size)
    return ((q - qt.zero[..., None]) * qt.scale[..., None]).reshape(qt.q.shape)


def rtn(
    w: np.ndarray, bits: int = 4, *, symmetric: bool = False, granularity: Granularity = 128
) -> np.ndarray:
    """Round-to-nearest: quantize then dequantize (the baseline GPTQ and AWQ improve on)."""
    return dequantize(quantize(w, bits, symmetric=symmetric, granularity=granularity))


def pack_int4(q: np.ndarray) -> np.ndarray:
    """Pack signed or unsigned 4-bit integers (..., n), n even, into bytes (..., n/2).

    Element ``2k`` goes in the low nibble of byte ``k``, element ``2k + 1`` in the high one
    (the order of llama.cpp's and AWQ's CPU layouts is a convention; this one is the lab's).
    """
    q = np.asarray(q)
    if q.shape[-1] % 2:
        raise ValueError("pack_int4 needs an even number of values per row")
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8)
    return (nib[..., 0::2] | (nib[..., 1::2] << 4)).astype(np.uint8)


def unpack_int4(packed: np.ndarray, signed: bool = True) -> np.ndarray:
    """Inverse of :func:`pack_int4`: bytes (..., m) to int8 values (..., 2m), sign-extended."""
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty((*p.shape[:-1], 2 * p.shape[-1]), dtype=np.int8)
    lo, hi = (p & 0xF).astype(np.int8), (p >> 4).astype(np.int8)
    if signed:  # a nibble of 8..15 is -8..-1
        lo, hi = np.where(lo > 7, lo - 16, lo), np.where(hi > 7, hi - 16, hi)
    out[..., 0::2], out[..., 1::2] = lo, hi
    return out


def dequant_matmul(x: np.ndarray, qt: Quantized, block: int = 256) -> np.ndarray:
    """``x @ dequantize(qt).T``, dequantizing ``block`` output rows at a time.

    A real kernel (Marlin, the AWQ GEMM) dequantizes tiles in registers; the full-precision
    weight never exists in memory. Here at most ``block`` rows of it do at once.
    """
    out = qt.q.shape[0]
    y = np.empty((*x.shape[:-1], out))
    for r in range(0, out, block):
        rows = slice(r, min(r + block, out))
        part = Quantized(qt.q[rows], qt.scale[rows], qt.zero[rows], qt.bits, qt.group_size)
        y[..., rows] = x @ dequantize(part).T
    return y
