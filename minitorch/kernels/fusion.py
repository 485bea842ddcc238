"""Kernel fusion: one pass over HBM instead of one per op, for bias+GELU and add+RMSNorm.

An elementwise op does a few FLOPs per element and moves 2 x itemsize bytes, so on any GPU it
is memory-bound: its time is its bytes divided by the bandwidth. Run as separate kernels, each
op reads its input from HBM and writes its output back; fused, the intermediate stays in SRAM
(registers) and the chain reads its inputs once and writes its outputs once.

* bias + GELU, x: (n, d), b: (d,): unfused reads x, b, then h; writes h, then y.
  Fused reads x and b, writes y: it saves the write and the read of h, 2 nd elements.
* residual add + RMSNorm, x, r: (n, d), g: (d,): h = x + r, y = g * h / sqrt(mean(h^2) + eps).
  Both kernels write h (the residual stream the next layer needs); fused, y is computed
  from h still in SRAM, saving the read of h, nd elements (vLLM's ``fused_add_rms_norm``).

The kernels run row tiles of ``tile_rows`` rows against an
:class:`~minitorch.kernels.io_model.HBM`; b and g are loaded once and kept in SRAM.

Lab: 08_fused_kernels_flash_attention
Paper: Hendrycks & Gimpel 2016, GELU (the tanh form); Zhang & Sennrich 2019, RMSNorm;
Dao et al. 2022, FlashAttention (Section 2.2, kernel fusion).
"""

from __future__ import annotations

import numpy as np

from minitorch.kernels.io_model import HBM, Traffic

__all__ = [
    "add_rmsnorm_fused",
    "add_rmsnorm_traffic",
    "add_rmsnorm_unfused",
    "bias_gelu_fused",
    "bias_gelu_traffic",
    "bias_gelu_unfused",
    "gelu_tanh",
    "rmsnorm",
]


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def rmsnorm(h: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """g * h / sqrt(mean(h^2, last axis) + eps)."""
    return g * h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)


def _tiles(n: int, tile_rows: int) -> list[slice]:
    return [slice(i, min(i + tile_rows, n)) for i in range(0, n, tile_rows)]


def bias_gelu_unfused(hbm: HBM, tile_rows: int) -> None:
    """Two kernels: H = X + B, then Y = gelu(H); H goes through HBM."""
    n, d = hbm.shape("X")
    hbm.alloc("H", (n, d))  # float64, as the rest of the lab
    b = hbm.load("B")
    for rows in _tiles(n, tile_rows):
        hbm.store("H", hbm.load("X", rows) + b, rows)
    for rows in _tiles(n, tile_rows):
        hbm.store("Y", gelu_tanh(hbm.load("H", rows)), rows)


def bias_gelu_fused(hbm: HBM, tile_rows: int) -> None:
    """One kernel: Y = gelu(X + B), reading X and B once and writing Y once."""
    n, _ = hbm.shape("X")
    b = hbm.load("B")  # (d,), kept in SRAM for every tile
    for rows in _tiles(n, tile_rows):
        hbm.store("Y", gelu_tanh(hbm.load("X", rows) + b), rows)


def add_rmsnorm_unfused(hbm: HBM, tile_rows: int, eps: float = 1e-6) -> None:
    """Two kernels: H = X + R, then Y = rmsnorm(H) * G; H is written, then read back."""
    n, _ = hbm.shape("X")
    for rows in _tiles(n, tile_rows):
        hbm.store("H", hbm.load("X", rows) + hbm.load("R", rows), rows)
    g = hbm.load("G")
    for rows in _tiles(n, tile_rows):
        hbm.store("Y", rmsnorm(hbm.load("H", rows), g, eps), rows)


def add_rmsnorm_fused(hbm: HBM, tile_rows: int, eps: float = 1e-6) -> None:
    """One kernel: H = X + R and Y = rmsnorm(H) * G, both written, H never read back."""
    n, _ = hbm.shape("X")
    g = hbm.load("G")
    for rows in _tiles(n, tile_rows):
        h = hbm.load("X", rows) + hbm.load("R", rows)
        hbm.store("H", h, rows)
        hbm.store("Y", rmsnorm(h, g, eps), rows)


def bias_gelu_traffic(n: int, d: int, fused: bool, itemsize: int = 8) -> Traffic:
    """HBM bytes of bias + GELU: fused reads nd + d, writes nd; unfused adds nd of each."""
    extra = 0 if fused else n * d
    return Traffic((n * d + d + extra) * itemsize, (n * d + extra) * itemsize)


def add_rmsnorm_traffic(n: int, d: int, fused: bool, itemsize: int = 8) -> Traffic:
    """HBM bytes of add + RMSNorm: fused reads 2nd + d, writes 2nd; unfused also reads h."""
    extra = 0 if fused else n * d
    return Traffic((2 * n * d + d + extra) * itemsize, 2 * n * d * itemsize)
