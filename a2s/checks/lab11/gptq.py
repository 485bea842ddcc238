"""Grader of exercise 11.3: GPTQ must beat round-to-nearest on the layer's output error.

The layer: W (64, 128), calibration inputs with correlated channels (a Hessian far from
diagonal, where error feedback pays). The answer must lie on a 2^b-level grid per (row,
group), and its output error ``||XW^T - XQ^T||^2`` must be at most 0.8x that of the grader's
own round-to-nearest at the same bits and groups, on the calibration set and on held-out
inputs from the same distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab11._truth import correlated_inputs, rel_error, rtn

_USES = ("11.1", "quantize_groups", "minitorch.model.quant:quantize_groups")
__all__ = ["check_gptq"]

_BLOCKS = (
    tuple(f"minitorch.model.quant_gptq:{n}" for n in ("gptq", "quantize_on"))
    + tuple(f"minitorch.model.quant:{n}" for n in ("rtn",))
    + tuple(
        f"a2s.checks.lab11._truth:{n}" for n in ("quantize_loop", "dequant", "rtn", "rel_error")
    )
)  # the lab's own ground truth
_FEEDBACK = (
    "Your error is no better than round-to-nearest: after quantizing column i, spread its "
    "error over the columns not yet quantized, W[:, i+1:] -= outer((w_i - q_i) / U[i, i], "
    "U[i, i+1:]), with U the upper Cholesky factor of H^-1 and H = 2 X^T X / n."
)
_GRID = (
    "Each (row, group) must hold at most 2^bits distinct values: quantize every column onto "
    "its group's grid (scale and zero from the group's corrected weights at its first column)."
)
_RATIO = 0.8


def _grid_ok(w_hat: np.ndarray, bits: int, group: int) -> bool:
    out, cols = w_hat.shape
    blocks = w_hat.reshape(out, cols // group, group)
    return all(len(np.unique(np.round(b, 12))) <= 2**bits for row in blocks for b in row)


@grader("11.3", blocks=_BLOCKS, uses=(_USES,), hand="property")
def check_gptq(gptq: Callable[..., Any]) -> str:
    """Exercise 11.3: ``gptq(w, x, bits, group_size) -> W_hat`` beats RTN."""
    g0 = rng(1103)
    f = fresh_rng("11.3")
    cases = [
        ("4 bits, groups of 32", g0, 4, 32),
        ("3 bits, per channel (groups of 128)", g0, 3, 128),
        (fresh("4 bits, groups of 64"), f, 4, 64),
    ]
    lines = []
    for label, g, bits, group in cases:
        w = g.standard_normal((64, 128))
        x = correlated_inputs(g, 512, 128)
        held = x[384:]
        calib = x[:384]
        w_hat = np.asarray(plain(gptq(w.copy(), calib.copy(), bits, group), case=label), float)
        assert_true(
            w_hat.shape == w.shape, f"[{label}] return W_hat of shape {w.shape}, got {w_hat.shape}."
        )
        assert_true(bool(np.all(np.isfinite(w_hat))), f"[{label}] W_hat has NaN or inf.")
        assert_true(_grid_ok(w_hat, bits, group), f"[{label}] {_GRID}")
        base = rtn(w, bits, group)
        for name, xs in (("calibration", calib), ("held-out", held)):
            ours, ref = rel_error(w, w_hat, xs), rel_error(w, base, xs)
            assert_true(
                ours <= _RATIO * ref,
                f"[{label}] {name} output error {ours:.2e} vs RTN {ref:.2e} "
                f"(ratio {ours / ref:.2f}, need <= {_RATIO}). " + _FEEDBACK,
            )
        lines.append(rel_error(w, w_hat, held) / rel_error(w, base, held))
    return (
        f"{len(cases)} layers on the {2**4}-level grid; held-out output error "
        f"{min(lines):.2f}-{max(lines):.2f}x that of round-to-nearest"
    )
