"""Grader of exercise 08.1: fused bias+GELU and add+RMSNorm, one HBM read and one write.

Ground truth: torch's ``F.gelu(approximate="tanh")`` and ``F.rms_norm`` in float64
(:func:`a2s.checks.truths.gelu_torch`, :func:`~a2s.checks.truths.rms_norm_torch`). Budget:
the bytes the fused kernel may move, in closed form: bias+GELU reads x (nd) and b (d) once
and writes y (nd); add+RMSNorm reads x, r (2nd) and g (d), writes h and y (2nd).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_close, fmt_bytes, fresh_rng, grader, rng
from a2s.checks.lab08._truth import assert_traffic, run_kernel
from a2s.checks.truths import gelu_torch, rms_norm_torch
from minitorch.kernels.io_model import HBM, Traffic

__all__ = ["check_fusion"]

_K = "minitorch.kernels.fusion"
_UNFUSED = (
    "That is the unfused traffic: the intermediate h went to HBM and came back. Keep it in "
    "SRAM: compute the whole chain on the tile you loaded, then store only the output."
)
_RELOAD = "You loaded the vector (b or g) once per tile: load it once, before the loop."
_H_READ = "You read h back from HBM after storing it: y = rmsnorm(h) can use the h in SRAM."


_ERF = "That is the exact (erf) GELU: this lab's is the tanh form, 0.5 x (1 + tanh(...))."
_NO_BIAS = "Add the bias first: Y = gelu(X + B), B broadcast over the rows."
_GELU = "Y = 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))) with h = X + B."
_NO_H = "Store h = x + r too: the next layer adds to this residual stream."
_NO_G = "Multiply by the gain: y = g * h / sqrt(mean(h^2) + eps)."
_SUM = "RMS is the *mean* of h^2 over the row (divide the sum by d), not the sum."
_RMS = "y = g * h / sqrt(mean(h^2 over the row) + eps)."


def _limits(tile: int, d: int, names: str, vector: str) -> dict[str, int]:
    return {**{k: tile * d for k in names}, vector: d}


def _cases() -> list[tuple[str, int, int, int]]:
    named = [
        ("8 x 4, tiles of 4", 8, 4, 4),
        ("13 x 6: the last tile is short", 13, 6, 4),
        ("5 x 3, tile larger than n", 5, 3, 8),
        ("one row", 1, 7, 2),
    ]
    g = fresh_rng("08.1")
    new = [
        (
            fresh(f"random case {i}"),
            int(g.integers(1, 40)),
            int(g.integers(1, 12)),
            int(g.integers(1, 9)),
        )
        for i in range(3)
    ]
    return named + new


def _bias_gelu(student: Callable[..., object], n: int, d: int, tile: int, case: str) -> int:
    g = rng(8011 + 997 * n + 31 * d + tile)
    x, b = g.standard_normal((n, d)) * 3, g.standard_normal(d)
    hbm = HBM({"X": x, "B": b, "Y": np.zeros((n, d))}, _limits(tile, d, "XY", "B"))
    run_kernel(student, hbm, tile, case=case)
    want = gelu_torch(x + b)
    got = hbm.array("Y")
    if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
        models = [
            (gelu_torch(x + b, "none"), _ERF),
            (gelu_torch(x), _NO_BIAS),
        ]
        hint = next((h for m, h in models if np.allclose(got, m, rtol=1e-9, atol=1e-12)), _GELU)
        assert_close(got, want, case=case, rtol=1e-10, atol=1e-12, what="Y", hint=hint)
    tiles, nd = -(-n // tile), n * d
    assert_traffic(
        hbm.traffic(),
        Traffic((nd + d) * 8, nd * 8),
        case=case,
        other=_UNFUSED,
        hints=[(Traffic(nd * 8, nd * 8), _UNFUSED), (Traffic((tiles - 1) * d * 8, 0), _RELOAD)],
    )
    return nd * 8 * 2


def _add_rmsnorm(student: Callable[..., object], n: int, d: int, tile: int, case: str) -> int:
    g = rng(8012 + 997 * n + 31 * d + tile)
    x, r, w = g.standard_normal((n, d)), g.standard_normal((n, d)), g.standard_normal(d)
    arrays = {"X": x, "R": r, "G": w, "H": np.zeros((n, d)), "Y": np.zeros((n, d))}
    hbm = HBM(arrays, _limits(tile, d, "XRHY", "G"))
    run_kernel(student, hbm, tile, 1e-6, case=case)
    hn = x + r
    want = rms_norm_torch(hn, w, 1e-6)
    got_h, got_y = hbm.array("H"), hbm.array("Y")
    unstored = not got_h.any() and hn.any()
    assert_close(
        got_h,
        hn,
        case=case,
        what="H (the residual x + r)",
        hint=_NO_H if unstored else "H = X + R, row by row.",
    )
    if not np.allclose(got_y, want, rtol=1e-10, atol=1e-12):
        models = [
            (hn / np.sqrt((hn * hn).mean(axis=1, keepdims=True) + 1e-6), _NO_G),
            (w * hn / np.sqrt((hn * hn).sum(axis=1, keepdims=True) + 1e-6), _SUM),
        ]
        hint = next((t for m, t in models if np.allclose(got_y, m, rtol=1e-9, atol=1e-12)), _RMS)
        assert_close(got_y, want, case=case, rtol=1e-10, atol=1e-12, what="Y", hint=hint)
    tiles, nd = -(-n // tile), n * d
    assert_traffic(
        hbm.traffic(),
        Traffic((2 * nd + d) * 8, 2 * nd * 8),
        case=case,
        other=_UNFUSED,
        hints=[(Traffic(nd * 8, 0), _H_READ), (Traffic((tiles - 1) * d * 8, 0), _RELOAD)],
    )
    return nd * 8


@grader(
    "08.1",
    blocks=tuple(
        f"{_K}:{f}"
        for f in (
            "bias_gelu_fused",
            "bias_gelu_unfused",
            "add_rmsnorm_fused",
            "add_rmsnorm_unfused",
            "gelu_tanh",
            "rmsnorm",
        )
    ),
    hand="kernel",
)
def check_fusion(bias_gelu: Callable[..., object], add_rmsnorm: Callable[..., object]) -> str:
    """Exercise 08.1: bias+GELU and add+RMSNorm, each one pass over HBM."""
    cases = _cases()
    for label, n, d, tile in cases:
        _bias_gelu(bias_gelu, n, d, tile, f"bias+GELU, {label}")
        _add_rmsnorm(add_rmsnorm, n, d, tile, f"add+RMSNorm, {label}")
    n, d = 1024, 768  # one transformer layer's activations, float64
    unfused = (4 * n * d + d + 5 * n * d + d) * 8  # bias+GELU 4nd + d, add+RMSNorm 5nd + d
    fused = (2 * n * d + d + 4 * n * d + d) * 8
    return (
        f"{len(cases)} shapes x 2 kernels match torch with the fused traffic; at 1024 x 768 "
        f"the pair moves {fmt_bytes(fused)} instead of {fmt_bytes(unfused)} "
        f"({1 - fused / unfused:.0%} fewer bytes)"
    )
