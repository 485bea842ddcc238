"""Grader of exercise 04.7: activation recomputation in about sqrt(N) segments.

The student's function runs a chain of N tanh layers with checkpoints. Checked for N from 4
to 256: the output and every gradient equal a float64 torch run of the same layers; and the
activation bytes at the peak of backward (the tape kept by forward plus the segment being
recomputed, measured by ``backward_peak_bytes``) stay within 6 sqrt(N) + 4 activations,
which the sqrt(N) plan of Chen et al. 2016 meets (about 5 sqrt(N)) and neither keeping
every activation (2N) nor checkpointing every layer (N) nor one big checkpoint (2N) does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call
from a2s.checks.core import assert_close, assert_true, fmt_bytes, fresh_rng, grader, plain, rng
from minitorch.autograd import Tensor, backward_peak_bytes, linear

__all__ = ["check_sqrt_checkpoint", "peak_bound", "tanh_chain"]

WIDTH, BATCH = 16, 4
ACTIVATION = WIDTH * BATCH * 8  # bytes of one (BATCH, WIDTH) float64 activation
SIZES = (4, 10, 16, 64, 100, 256)


def peak_bound(n: int) -> float:
    """The most activations the peak of backward may hold for N layers."""
    return 6 * math.sqrt(n) + 4


def _layer(w: Tensor, h: Tensor) -> Tensor:
    return linear(h, w).tanh()


def tanh_chain(
    n: int, seed: int | np.random.Generator = 0
) -> tuple[list[Tensor], list[Callable[[Tensor], Tensor]]]:
    """N layers h -> tanh(h W^T), float64, (BATCH, WIDTH); returns (weights, layer callables)."""
    g = rng(seed) if isinstance(seed, int) else seed
    ws = [Tensor(g.standard_normal((WIDTH, WIDTH)) / 3, requires_grad=True) for _ in range(n)]
    return ws, [functools.partial(_layer, w) for w in ws]


def _torch_run(ws: list[Tensor], x0: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    tws = [torch.tensor(w.data, requires_grad=True) for w in ws]
    x = torch.tensor(x0, requires_grad=True)
    h = x
    for w in tws:
        h = torch.tanh(h @ w.T)
    (h * h).sum().backward()
    return h.detach().numpy(), [w.grad.numpy() for w in tws], x.grad.numpy()


_SAME_GRADS = (
    "Recomputation changes when activations exist, not their values: every weight's "
    "gradient is the plain chain's."
)


def _atol(want: np.ndarray) -> float:
    # summation order differs from torch's and the difference grows along a deep chain: about
    # 5e-11 of a gradient's largest entry at N = 200, so its small entries need an absolute floor
    return 1e-9 * max(float(np.abs(want).max()), 1e-3)


def _measure(student: Callable[..., Any], n: int, g: np.random.Generator | None = None) -> float:
    ws, layers = tanh_chain(n, seed=n if g is None else g)
    x0 = (rng(1000 + n) if g is None else g).standard_normal((BATCH, WIDTH))
    want_out, want_gw, want_gx = _torch_run(ws, x0)
    x = Tensor(x0, requires_grad=True)
    case = f"N={n} layers" if g is None else fresh(f"N={n} layers")
    out = plain(call(student, list(layers), x), what="the output", case=case)
    assert_true(isinstance(out, Tensor), f"[{case}] return the output Tensor, got {type(out)}.")
    got = plain(out.data, what="the output", case=case)
    assert_close(
        got,
        want_out,
        case=case,
        what="output",
        rtol=1e-12,
        atol=1e-12,
        hint="Run every layer exactly once, in order.",
    )
    peak = backward_peak_bytes((out * out).sum())
    for i, (w, gw) in enumerate(zip(ws, want_gw, strict=True)):
        assert_true(w.grad is not None, f"[{case}] layer {i}'s weight got no gradient.")
        got = plain(w.grad, what=(what := f"grad of layer {i}"), case=case)
        assert_close(got, gw, case=case, what=what, rtol=1e-9, atol=_atol(gw), hint=_SAME_GRADS)
    got = plain(x.grad, what="grad of the input", case=case)
    assert_close(got, want_gx, case=case, what="grad of the input", rtol=1e-9, atol=_atol(want_gx))
    units = peak / ACTIVATION
    assert_true(
        units <= peak_bound(n),
        f"[{case}] the peak of backward holds {units:.0f} activations ({fmt_bytes(peak)}), over "
        f"6·sqrt(N) + 4 = {peak_bound(n):.0f}. Keeping everything holds 2N; checkpointing every "
        "layer keeps N segment inputs; one checkpoint around everything recomputes all 2N at "
        "once. With k segments you keep k inputs and recompute 2N/k: take k ≈ sqrt(N), and "
        "checkpoint each segment (the last may run plainly).",
    )
    return units


@grader("04.7", blocks=("minitorch.autograd.checkpoint:checkpoint_sequential",), hand="budget")
def check_sqrt_checkpoint(sqrt_checkpoint: Callable[..., Any]) -> str:
    """Exercise 04.7: exact gradients, and peak activation bytes within O(sqrt N)."""
    units = {n: _measure(sqrt_checkpoint, n) for n in SIZES}
    new = fresh_rng("04.7")
    _measure(sqrt_checkpoint, int(new.integers(5, 200)), new)
    lo, hi = SIZES[0], SIZES[-1]
    slope = math.log(units[hi] / units[lo]) / math.log(hi / lo)
    return (
        f"gradients exact for N={lo}..{hi} and a fresh N; peak of backward {units[lo]:.0f} -> "
        f"{units[hi]:.0f} activations (~N^{slope:.2f}; keeping all: {2 * hi + 1} at N={hi})"
    )
