"""Grader of exercise 33.5: fake quantization with a straight-through gradient.

``fake_quant(x, lo, hi, bits, g)`` returns ``(x_hat, grad)``: ``x`` on the unsigned
``bits``-bit affine grid of ``[lo, hi]`` (widened to hold 0, zero point rounded) and back,
and the gradient the straight-through estimator passes for an upstream gradient ``g``:
``g`` where the rounded value ``round(x / s + z)`` lies in ``[0, 2^bits - 1]``, 0 where it was
clipped (torch's ``fake_quantize_per_tensor_affine``). The truth is a loop over the elements
(``_truth.fake_quant_loop``); the named cases put values just outside the range, where the
rounded value is still inside (gradient passes) and where it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import run_apart
from a2s.checks.lab33._truth import fake_quant_loop, grid
from a2s.checks.table import Table

__all__ = ["FAKE_QUANT", "check_fake_quant"]

_QAT, _Q = "minitorch.model.qat", "minitorch.model.quant"
_BLOCKS = (
    *(f"{_QAT}:{f}" for f in ("fake_quant", "fake_quant_range", "qat_finetune")),
    *(f"{_Q}:{f}" for f in ("quantize", "dequantize", "rtn", "qrange", "quantize_groups")),
    "minitorch.model.quant_calib:quantize_symmetric",
)


def _truth(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return fake_quant_loop(x, lo, hi, bits, g)


def _raw_mask(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    out, _ = _truth(x, lo, hi, bits, g)
    return out, np.where((x >= lo) & (x <= hi), g, 0.0)


def _zero_grad(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return _truth(x, lo, hi, bits, g)[0], np.zeros_like(g)


def _no_clip(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return _truth(x, lo, hi, bits, g)[0], g.astype(np.float64)


def _two_pow(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    """scale (hi - lo) / 2^bits: one level too many."""
    lo2, hi2 = min(lo, 0.0), max(hi, 0.0)
    s = (hi2 - lo2) / 2**bits
    z = round(-lo2 / s)
    r = np.round(x / s + z)
    q = np.clip(r, 0, 2**bits - 1)
    return (q - z) * s, np.where((r >= 0) & (r <= 2**bits - 1), g, 0.0)


def _not_widened(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    """The grid over [lo, hi] itself, when the range does not hold 0."""
    s = (hi - lo) / (2**bits - 1)
    z = round(-lo / s)
    r = np.round(x / s + z)
    q = np.clip(r, 0, 2**bits - 1)
    return (q - z) * s, np.where((r >= 0) & (r <= 2**bits - 1), g, 0.0)


def _variant(how: str, x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    """The grid of [lo, hi] (widened) with one step done another way (``how``)."""
    s, z, qmax = grid(lo, hi, bits)
    qlo = 0
    if how == "float z":  # the zero point -lo / s left unrounded
        z = -min(lo, 0.0) / s
    if how == "signed":  # the signed grid [-2^(b-1), 2^(b-1) - 1], no zero point
        z, qlo, qmax = 0.0, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    r = np.floor(x / s + z) if how == "floor" else np.round(x / s + z)
    return (np.clip(r, qlo, qmax) - z) * s, np.where((r >= qlo) & (r <= qmax), g, 0.0)


def _float_zero(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return _variant("float z", x, lo, hi, bits, g)


def _floor(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return _variant("floor", x, lo, hi, bits, g)


def _signed_grid(x: np.ndarray, lo: float, hi: float, bits: int, g: np.ndarray) -> Any:
    return _variant("signed", x, lo, hi, bits, g)


_MISTAKES = (
    Mistake(
        "The clip mask is decided by the ROUNDED value round(x / s + z) in [0, 2^b - 1]: a "
        "value just outside [lo, hi] that rounds onto the grid still passes its gradient.",
        answer=_raw_mask,
    ),
    Mistake(
        "Rounding has zero derivative almost everywhere; the straight-through estimator "
        "passes g unchanged instead (where nothing was clipped).",
        answer=_zero_grad,
    ),
    Mistake(
        "Block the gradient where the value was clipped: it is 0 outside the grid.",
        answer=_no_clip,
    ),
    Mistake(
        "Widen the range to hold 0 first (lo = min(lo, 0), hi = max(hi, 0)): 0 must be exactly "
        "on the grid (the zero point), as padding and ReLU outputs need.",
        answer=_not_widened,
    ),
    Mistake(
        "b bits give 2^b - 1 steps: s = (hi - lo) / (2^b - 1), not / 2^b.",
        answer=_two_pow,
    ),
    Mistake(
        "Round the zero point: z = round(-lo / s) is an integer of the grid, so 0 is exactly "
        "representable; -lo / s unrounded shifts every value.",
        answer=_float_zero,
    ),
    Mistake(
        "Round to the nearest level (np.round), not down: floor (or int()) moves values up to "
        "a whole step and shifts the clip mask.",
        answer=_floor,
    ),
    Mistake(
        "The grid is the unsigned one, 0 .. 2^b - 1 with the zero point z, not the signed "
        "-2^(b-1) .. 2^(b-1) - 1 of a symmetric quantizer.",
        answer=_signed_grid,
    ),
)


def _read(got: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{label}] return the pair (x_hat, grad), got {type(got).__name__}.")
    try:
        return np.asarray(got[0], dtype=np.float64), np.asarray(got[1], dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(f"[{label}] x_hat and grad must be arrays of numbers.") from None


def _same(got: Any, want: Any) -> bool:
    return all(
        a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))
        for a, b in zip(got, want, strict=True)
    )


def _message(case: Any, got: Any, want: Any, hint: str) -> str:
    (xh, gr), (wx, wg) = got, want
    for name, a, b in (("x_hat", xh, wx), ("grad", gr, wg)):
        if a.shape != b.shape:
            return f"[{case.label}] {name} has shape {a.shape}, expected {b.shape} (x's shape)."
    x = case.args[0]
    if not np.allclose(xh, wx, rtol=1e-9, atol=1e-12):
        i = int(np.argmax(np.abs(xh - wx)))
        return (
            f"[{case.label}] x_hat is wrong at x = {x.ravel()[i]:.6g}: {xh.ravel()[i]:.6g}, "
            f"expected {wx.ravel()[i]:.6g}. {hint}"
        )
    i = int(np.argmax(np.abs(gr - wg)))
    return (
        f"[{case.label}] the forward is right; grad is wrong at x = {x.ravel()[i]:.6g}: "
        f"{gr.ravel()[i]:.6g}, expected {wg.ravel()[i]:.6g}. {hint}"
    )


def _untied(x: np.ndarray, lo: float, hi: float, bits: int) -> np.ndarray:
    """``x`` moved off the rounding ties (x / s + z within 1e-6 of a half-integer)."""
    s, z, _ = grid(lo, hi, bits)
    u = x / s + z
    near = np.abs(u - np.floor(u) - 0.5) < 1e-6
    return np.where(near, x + 1e-3 * s, x)


def _case(x: np.ndarray, lo: float, hi: float, bits: int, seed: int) -> tuple[Any, ...]:
    x = _untied(np.asarray(x, np.float64), lo, hi, bits)
    g = np.random.default_rng(seed).standard_normal(x.shape)
    return x, lo, hi, bits, g


def _edges(lo: float, hi: float, bits: int) -> np.ndarray:
    s, z, qmax = grid(lo, hi, bits)
    a, b = (0 - z) * s, (qmax - z) * s  # the grid's ends
    pts = [a - 0.3 * s, a - 0.7 * s, b + 0.3 * s, b + 0.7 * s, a, b, 0.0, lo - 0.2 * s]
    return np.array(pts + list(np.linspace(lo - s, hi + s, 9)))


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    lo, hi = float(-g.uniform(0.1, 3)), float(g.uniform(0.1, 3))
    bits = int(g.choice([2, 3, 4, 8]))
    x = np.concatenate([g.uniform(lo * 1.5, hi * 1.5, 30), _edges(lo, hi, bits)])
    return f"[{lo:.3f}, {hi:.3f}], {bits} bits", _case(x, lo, hi, bits, i)


_X = np.random.default_rng(3305).uniform(-2, 3, (4, 6))
FAKE_QUANT = Table(
    "33.5",
    truth=_truth,
    named=[
        ("[-1, 1.5], 4 bits, values past both ends", _case(_edges(-1.0, 1.5, 4), -1.0, 1.5, 4, 1)),
        ("[-2, 2], 3 bits, a (4, 6) array", _case(_X, -2.0, 2.0, 3, 2)),
        ("[0.5, 2] (widened to hold 0), 8 bits", _case(_edges(0.5, 2.0, 8), 0.5, 2.0, 8, 3)),
        ("[-1, 1], 2 bits", _case(np.linspace(-1.6, 1.6, 23), -1.0, 1.0, 2, 4)),
    ],
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    hint="s = (hi - lo) / (2^b - 1) with lo <= 0 <= hi, z = round(-lo / s); "
    "x_hat = s (clip(round(x / s + z), 0, 2^b - 1) - z); grad = g where round(x / s + z) "
    "is in [0, 2^b - 1], else 0.",
    same=_same,
    read=_read,
    what="fake_quant",
    message=_message,
    # apart: the learner's function runs in a forked child; the case runner's frames stay here
    prepare=lambda f: lambda *args: run_apart(f, *args),
)


@grader("33.5", blocks=_BLOCKS)
def check_fake_quant(fake_quant: Callable[..., Any]) -> str:
    """Exercise 33.5: fake_quant(x, lo, hi, bits, g) -> (x_hat, grad)."""
    n = FAKE_QUANT.grade(fake_quant)
    return (
        f"{n} cases: forward on the grid and the straight-through gradient (identity inside, "
        "0 where clipped) equal an element-by-element loop"
    )
