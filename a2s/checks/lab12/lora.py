"""Graders of exercises 12.1 (LoRA forward and backward) and 12.2 (merge and unmerge).

Ground truth: torch autograd in float64, ``x W^T + b + s (x A^T) B^T`` with W and b frozen, on
named cases (rank 1, a bias or none, a scale other than 1) and fresh random layers. Exercise
12.1 is also held to a memory budget (tracemalloc): on a 512 x 512 layer the forward and the
backward together may allocate at most a quarter of W's bytes, so building B A (the unmerged
forward's whole point is not to) or a weight gradient dW (W is frozen) fails.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import CheckFailure, assert_true, fmt_bytes, fresh_rng, grader, rng

__all__ = ["check_lora", "check_merge", "peak_bytes", "torch_lora"]

_L = "minitorch.model.lora"
_BLOCKS = tuple(
    f"{_L}:{n}"
    for n in (
        "lora_forward",
        "lora_backward",
        "merge_weight",
        "unmerge_weight",
        "multi_adapter_forward",
        "LoRALinear",
        "LoRAAdapter",
    )
)
# (label, N, d_in, d_out, r, scale, bias)
Layer = tuple[str, int, int, int, int, float, bool]
_NAMED: list[Layer] = [
    ("rank 1, scale 1, no bias", 3, 4, 5, 1, 1.0, False),
    ("rank 2, alpha 16 -> scale 8", 4, 6, 3, 2, 8.0, True),
    ("square, rank 4, scale 0.5", 5, 8, 8, 4, 0.5, True),
    ("one row", 1, 7, 2, 3, 2.0, True),
]
_SCALE = "Multiply the adapter's path by `scale` (alpha / r) -- in the forward and in dA, dB, dx."
_DX = (
    "W is frozen, but it still carries gradient to x: dx = gy W + scale (gy B) A, the base "
    "path plus the adapter path."
)
_T = (
    "Check the transposes: dA = scale (gy B)^T x is (r, d_in), "
    "dB = scale gy^T (x A^T) is (d_out, r)."
)
_BUDGET = (
    "The unmerged path never builds a (d_out, d_in) matrix: compute (x A^T) then (.) B^T, two "
    "thin matmuls, not x (W + s B A)^T; and W is frozen, so there is no dW to compute."
)


def _layers(gen: np.random.Generator, n: int, mark: Callable[[str], str]) -> list[Layer]:
    out = []
    for i in range(n):
        N, di, do, r = (int(v) for v in gen.integers(1, 9, 4))
        s, bias = float(gen.choice([0.5, 1.0, 2.0, 4.0])), bool(gen.integers(0, 2))
        out.append(
            (mark(f"random {i}: N {N}, {di} -> {do}, r {r}, scale {s}"), N, di, do, r, s, bias)
        )
    return out


def torch_lora(x, w, b, a, bb, s, gy):
    """(y, dA, dB, dx) by torch autograd in float64, W and b frozen."""
    t = lambda v, g=False: torch.tensor(v, dtype=torch.float64, requires_grad=g)  # noqa: E731
    xt, at, bt = t(x, True), t(a, True), t(bb, True)
    y = xt @ t(w).T + s * (xt @ at.T) @ bt.T + (0 if b is None else t(b))
    y.backward(t(gy))
    return y.detach().numpy(), at.grad.numpy(), bt.grad.numpy(), xt.grad.numpy()


def peak_bytes(fn: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``fn(*args)`` and the peak bytes it allocated (tracemalloc; numpy reports there)."""
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        out = fn(*args)
    finally:
        peak = tracemalloc.get_traced_memory()[1] - base
        if not was:
            tracemalloc.stop()
    return out, peak


def _draw(
    gen: np.random.Generator, N: int, di: int, do: int, r: int, bias: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    x, w = gen.standard_normal((N, di)), gen.standard_normal((do, di))
    a, bb = gen.standard_normal((r, di)), gen.standard_normal((do, r))
    return x, w, gen.standard_normal(do) if bias else None, a, bb, gen.standard_normal((N, do))


def _one(fwd: Callable, bwd: Callable, layer: Layer, gen: np.random.Generator) -> float:
    case, N, di, do, r, s, bias = layer
    x, w, b, a, bb, gy = _draw(gen, N, di, do, r, bias)
    y, da, db, dx = torch_lora(x, w, b, a, bb, s, gy)
    got = call_pure(fwd, x, w, b, a, bb, s, case=case)
    no_scale = x @ w.T + (x @ a.T) @ bb.T + (0 if b is None else b)
    hint = _SCALE if looks_like(got, no_scale) else "y = x W^T + b + scale (x A^T) B^T."
    err = close(got, y, case=case, what="lora_forward(...)", hint=hint)
    grads = call_pure(bwd, x, w, a, bb, s, gy, case=case)
    assert_true(
        isinstance(grads, (tuple, list)) and len(grads) == 3,
        f"[{case}] lora_backward returns the triple (dA, dB, dx).",
    )
    ga, gb, gx = (np.asarray(g) for g in grads)
    # each hint only for the answer its mistake gives: no scale, a transpose, no base path
    base = gy @ w
    hint_dx = "dx = gy W + scale (gy B) A."
    if looks_like(gx, dx - base):
        hint_dx = _DX
    elif looks_like(gx, base + (dx - base) / s):
        hint_dx = _SCALE
    for what, g_, want_ in (("dA", ga, da), ("dB", gb, db)):
        rule = "dA = scale (gy B)^T x." if what == "dA" else "dB = scale gy^T (x A^T)."
        hint = _SCALE if looks_like(g_, want_ / s) else rule
        hint = _T if g_.shape == want_.T.shape and g_.shape != want_.shape else hint
        err = max(err, close(g_, want_, case=case, what=what, hint=hint))
    return max(err, close(gx, dx, case=case, what="dx", hint=hint_dx))


# the budget is tracemalloc's peak: the learner's code may not reset, stop or restart it
FORBID = ("torch", "tracemalloc", "_tracemalloc")


@grader("12.1", blocks=_BLOCKS, forbid=FORBID, hand="budget")
def check_lora(lora_forward: Callable[..., Any], lora_backward: Callable[..., Any]) -> str:
    """Exercise 12.1: forward and (dA, dB, dx) match torch autograd, without building B A."""
    gen, worst = rng(1201), 0.0
    layers = _NAMED + _layers(rng(1211), 6, str) + _layers(fresh_rng("12.1"), 3, fresh)
    for layer in layers:
        worst = max(worst, _one(lora_forward, lora_backward, layer, gen))
    N, d, r, s = 8, 512, 4, 2.0
    x, w, b, a, bb, gy = _draw(gen, N, d, d, r, True)
    budget = w.nbytes // 4
    _, p_fwd = peak_bytes(lora_forward, x, w, b, a, bb, s)
    _, p_bwd = peak_bytes(lora_backward, x, w, a, bb, s, gy)
    case = f"memory: N {N}, {d} x {d}, r {r}, float64 (W is {fmt_bytes(w.nbytes)})"
    for what, peak in (("lora_forward", p_fwd), ("lora_backward", p_bwd)):
        if peak > budget:
            raise CheckFailure(
                f"[{case}] {what} allocated {fmt_bytes(peak)} at its peak; the budget is "
                f"{fmt_bytes(budget)} (a quarter of W). {_BUDGET}"
            )
    flops = 2 * N * r * (d + d)
    return (
        f"{len(layers)} layers (3 fresh) match torch autograd (max error {worst:.1e}); at "
        f"{d} x {d}, r {r} the adapter adds {flops:,} FLOPs per forward (the base: "
        f"{2 * N * d * d:,}), peak {fmt_bytes(max(p_fwd, p_bwd))} of a {fmt_bytes(budget)} budget"
    )


# --------------------------------------------------------------------------- 12.2 merge
_MERGE_SCALE = "Merged W' = W + scale B A (scale = alpha / r, not alpha, not 1)."
_UNMERGE = "unmerge subtracts what merge added: W = W' - scale B A."
_DTYPE = (
    "Keep W's dtype: the merged weight of a float32 model is float32 (a float64 copy doubles "
    "the bytes the layer reads at inference). Cast scale * (B @ A) to W.dtype."
)


@grader("12.2", blocks=_BLOCKS, hand="parts")
def check_merge(merge: Callable[..., Any], unmerge: Callable[..., Any]) -> str:
    """Exercise 12.2: the merged layer's output equals the unmerged one; unmerge gives W back."""
    gen, worst, rt = rng(1202), 0.0, 0.0
    layers = _NAMED + _layers(fresh_rng("12.2"), 3, fresh)
    for case, N, di, do, r, s, bias in layers:
        x, w, b, a, bb, gy = _draw(gen, N, di, do, r, bias)
        x, w, a, bb, gy = (v.astype(np.float32) for v in (x, w, a, bb, gy))
        b = None if b is None else b.astype(np.float32)
        y = torch_lora(x, w, b, a, bb, s, gy)[0]
        merged = np.asarray(call_pure(merge, w, a, bb, s, case=case))
        hint = _MERGE_SCALE
        assert_true(
            merged.shape == w.shape,
            f"[{case}] merge returned shape {merged.shape}, W is {w.shape}. {hint}",
        )
        assert_true(merged.dtype == w.dtype, f"[{case}] merge returned {merged.dtype}. {_DTYPE}")
        got = x.astype(np.float64) @ merged.T.astype(np.float64) + (0 if b is None else b)
        worst = max(
            worst, close(got, y, case=case, what="x W'^T + b (merged)", hint=hint, rtol=1e-5)
        )
        back = np.asarray(call_pure(unmerge, merged, a, bb, s, case=case))
        assert_true(back.dtype == w.dtype, f"[{case}] unmerge returned {back.dtype}. {_DTYPE}")
        # float32 round trip: exact up to two roundings of |W| + |ΔW|
        # (a merge and an unmerge that round B A differently, e.g. one in float32, differ by
        # up to r roundings of each product b_ij a_jk)
        mag = np.abs(w) + s * (np.abs(bb) @ np.abs(a)) + 1e-30
        bound = (4 + r) * np.finfo(np.float32).eps * mag
        err = np.abs(back.astype(np.float64) - w)
        if back.shape != w.shape or not np.all(err <= bound):
            raise CheckFailure(
                f"[{case}] unmerge(merge(W)) is not W (up to float32 rounding). {_UNMERGE}"
            )
        rt = max(rt, float(err.max()))
    return (
        f"{len(layers)} layers (3 fresh): merged output equals the unmerged one (max error "
        f"{worst:.1e}), unmerge restores W to {rt:.1e} (float32 rounding), dtype kept"
    )
