"""Closed-form costs of a GEMM: floating-point operations, bytes moved, arithmetic intensity.

For ``C = A @ B`` with ``A: (m, k)`` and ``B: (k, n)``, each of the ``m n`` outputs is a dot
product of length ``k``: ``k`` multiplies and ``k`` adds (counting the first add into zero), so

$$\\text{FLOPs} = 2 m n k .$$

A kernel that touches each operand exactly once (the ideal the tiling labs chase) reads ``A``
and ``B`` and writes ``C``:

$$\\text{bytes} = s\\,(m k + k n + m n), \\qquad I = \\frac{2 m n k}{s\\,(mk + kn + mn)}$$

with ``s`` bytes per element. ``I`` (FLOP/byte) places the GEMM on the roofline.

Lab: 00_orientation, 05_roofline
Paper: Williams, Waterman, Patterson 2009, "Roofline: an insightful visual performance model"
"""

from __future__ import annotations

__all__ = ["arithmetic_intensity", "matmul_bytes", "matmul_flops"]


def matmul_flops(m: int, n: int, k: int) -> int:
    """Return the floating-point operations of an ``(m, k) @ (k, n)`` matmul: ``2 m n k``."""
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, bytes_per_element: int = 4) -> int:
    """Return the minimum bytes moved: read ``A`` and ``B`` once, write ``C`` once."""
    return bytes_per_element * (m * k + k * n + m * n)


def arithmetic_intensity(m: int, n: int, k: int, bytes_per_element: int = 4) -> float:
    """Return FLOPs per byte of the ideal GEMM kernel (see the module docstring)."""
    return matmul_flops(m, n, k) / matmul_bytes(m, n, k, bytes_per_element)
