"""Shared by the lab 24 graders: cases, plain-numpy ground truths, runs on SimWorld, budgets.

Ground truths are plain numpy loops (per head, per token), never the reference package: the
MLP and the projected attention here; GELU, LayerNorm and the attention of one head are the
shared :mod:`a2s.checks.truths`. The backward's ground truth is torch autograd, run by the
graders outside the learner's call. Shards are cut here with ``np.split`` (contiguous equal slices).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.core import guarded, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks as apart
from a2s.checks.truths import attention, gelu_tanh
from minitorch.comm.simworld import SimWorld

_T, _S = "minitorch.parallel.tensor", "minitorch.parallel.sequence"
BLOCKS = tuple(
    f"{_T}:{n}"
    for n in (
        "tp_mlp_forward",
        "tp_mlp_backward",
        "mlp_partial",
        "mlp_partial_backward",
        "tp_attention_forward",
        "tp_attention_backward",
        "attention_partial",
        "vocab_parallel_cross_entropy",
    )
) + tuple(f"{_S}:{n}" for n in ("layer_forward", "korthikanti_bytes", "sp_mlp_forward"))
BLOCKS += (
    "minitorch.parallel.context:attention",  # lab 26's causal attention: 24.2 in a call
    f"{_T}:all_reduce_max",  # 24.3's global max in a call
    f"{_S}:layer_norm",  # 24.4's LayerNorm
    f"{_S}:layer_norm_backward",
    # the graders' own ground truth
    "a2s.checks.lab24._truth:plain_mlp",
    "a2s.checks.truths:layer_norm",
    "a2s.checks.lab24._truth:plain_attention",
    "a2s.checks.lab24.vocab:_truth",
    "a2s.checks.lab24.sequence:_formula",
    "a2s.checks.lab24.sequence:measured_bytes",
    "a2s.checks.lab24.mlp:torch_mlp_grads",
)


def mlp_case(seed: int, s: int, b: int, h: int) -> dict[str, np.ndarray]:
    """Full float64 arrays of an MLP case: x, w1 (h, 4h), b1, w2 (4h, h), b2, dy."""
    gen = np.random.default_rng(seed)
    return {
        "x": gen.standard_normal((s, b, h)),
        "w1": gen.standard_normal((h, 4 * h)) / np.sqrt(h),
        "b1": 0.1 * gen.standard_normal(4 * h),
        "w2": gen.standard_normal((4 * h, h)) / np.sqrt(4 * h),
        "b2": gen.standard_normal(h),
        "dy": gen.standard_normal((s, b, h)),
        "ln_g": 1 + 0.1 * gen.standard_normal(h),
        "ln_b": 0.1 * gen.standard_normal(h),
    }


def mlp_shards(c: dict[str, np.ndarray], t: int, r: int) -> tuple[np.ndarray, ...]:
    """Rank r's ``(w1 columns, b1 slice, w2 rows)``."""
    return (np.split(c["w1"], t, axis=1)[r], np.split(c["b1"], t)[r], np.split(c["w2"], t)[r])


def plain_mlp(c: dict[str, np.ndarray], x: np.ndarray | None = None) -> np.ndarray:
    """The unsharded MLP ``gelu(x W1 + b1) W2 + b2``, token by token."""
    x = c["x"] if x is None else x
    out = np.empty(x.shape)
    for i, j in np.ndindex(x.shape[:2]):
        out[i, j] = gelu_tanh(x[i, j] @ c["w1"] + c["b1"]) @ c["w2"] + c["b2"]
    return out


def plain_attention(
    x: np.ndarray,
    w: Sequence[np.ndarray],
    bo: np.ndarray,
    a: int,
    causal: bool = True,
    scale: float | None = None,
    strict: bool = False,
) -> np.ndarray:
    """Causal multi-head attention, one (batch, head) at a time (the shared
    :func:`~a2s.checks.truths.attention` per head); ``w = (wq, wk, wv, wo)``.
    ``strict``: the wrong mask j < i (a token does not see itself; token 0 still does)."""
    s, b, h = x.shape
    d = h // a
    keep = np.tri(s, dtype=bool) if causal else np.ones((s, s), bool)
    if strict:
        keep[np.arange(1, s), np.arange(1, s)] = False
    out = np.zeros((s, b, h))
    for j in range(b):
        ctx = np.zeros((s, h))
        for n in range(a):
            cols = slice(n * d, (n + 1) * d)
            q, k, v = (x[:, j] @ m[:, cols] for m in w[:3])
            ctx[:, cols] = attention(q, k, v, scale=scale, keep=keep)
        out[:, j] = ctx @ w[3] + bo
    return out


def run_ranks(
    student: Any,
    exercise: str,
    t: int,
    args: list[tuple[Any, ...]],
    label: str,
    what: str = "result",
) -> tuple[list[Any], SimWorld]:
    """``student(comm, *args[r])`` on every rank of a SimWorld(t), each rank in its own
    forked process (:func:`a2s.checks.harness.run_ranks`); plain results, and the
    world whose counters the router kept here (out of every rank's reach)."""
    world = SimWorld(t)
    raw = getattr(student, "fn", student)
    # every rank gets its own copies (a fork copies them anyway; kept for clarity)
    args = [
        tuple(np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in a) for a in args
    ]
    try:
        run = apart(guarded(raw, exercise, BLOCKS), world, args)
    except (StudentError, CheckFailure) as exc:  # name the case
        exc.args = (f"[{label}] {exc}",)
        raise
    return [plain(o, what=what, case=label) for o in run.results], run.world


def close(got: Any, want: np.ndarray, atol: float = 1e-9) -> bool:
    """Same shape, float values within ``atol`` (relative 1e-9); a list of numbers counts."""
    if isinstance(got, list):
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return False
    if not isinstance(got, np.ndarray) or got.shape != want.shape or got.dtype.kind not in "fiu":
        return False
    return bool(np.allclose(got, want, rtol=1e-9, atol=atol))


def show(x: Any) -> str:
    """A short printout of an answer for a failure message."""
    if isinstance(x, np.ndarray):
        return f"array{x.shape} {np.array2string(x.ravel()[:4], precision=4)}..."
    return repr(x)[:80]


def expect(
    label: str,
    r: int,
    got: Any,
    want: np.ndarray,
    hints: Sequence[tuple[Any, str]],
    what: str,
    default: str,
    atol: float = 1e-9,
) -> None:
    """Fail unless ``got`` equals ``want``; name the first known mistake ``got`` matches."""
    if close(got, want, atol):
        return
    hint = next((msg for alt, msg in hints if alt is not None and close(got, alt, atol)), default)
    if isinstance(got, np.ndarray) and got.shape != want.shape:
        hint = f"Expected shape {want.shape}, got {got.shape}. " + hint
    elif isinstance(got, np.ndarray) and got.dtype != want.dtype and close(got, want, 1e-3):
        hint = (
            f"Your {what} is {got.dtype}, close but not to 1e-9: keep float64 throughout "
            "(no casts before the collectives)."
        )
    where = ""
    if isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype.kind in "fiu":
        bad = ~np.isclose(got, want, rtol=1e-9, atol=atol)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            where = f" (first difference at index {idx}: {got[idx]:.6g} vs {want[idx]:.6g})"
    raise CheckFailure(
        f"[{label}] rank {r}: {what} is {show(got)}, expected {show(want)}{where}. {hint}"
    )


def all_reduce_bytes(t: int, nbytes: int) -> int:
    """Bytes all ranks send in ONE all-reduce of ``nbytes`` (naive or ring): ``2 (t-1) n``."""
    return 2 * (t - 1) * nbytes


def budget(label: str, world: SimWorld, want: int, hint: str, at_most: bool = False) -> None:
    """Fail when the ranks together sent other than (or, ``at_most``, more than) ``want``."""
    sent = sum(world.bytes_sent)
    if sent > want or (sent != want and not at_most):
        raise CheckFailure(
            f"[{label}] right values, but the ranks sent {sent:,} bytes in all where "
            f"{'at most ' if at_most else ''}{want:,} are needed. {hint}"
        )


def cases(
    teaching: Sequence[tuple[Any, ...]], fresh: Callable[[], tuple[Any, ...]], count: int
) -> list[tuple[Any, ...]]:
    """Teaching cases then ``count`` fresh ones."""
    return list(teaching) + [fresh() for _ in range(count)]
