"""Graders of exercises 08.4 and 08.5: FlashAttention forward and backward.

Ground truth: ``F.scaled_dot_product_attention`` and its autograd in float64 (and
``torch.logsumexp`` of the masked scaled scores for L), causal and not, lengths that are not a
multiple of the blocks, a custom scale. Budgets, all enforced: every load and store fits its
SRAM tile (``HBM.limits``); the bytes read and written equal the IO model's count, computed
here by a plain loop over the tile pairs; the kernel's extra memory (tracemalloc) stays within
a few tiles, so a kernel that builds the n x n matrix in Python memory fails.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from a2s.checks.cases import fresh
from a2s.checks.core import assert_close, fmt_bytes, fresh_rng, grader, rng
from a2s.checks.lab08._truth import (
    _BUG_HINTS,
    _GRAD_HINT,
    _GRAD_HINTS,
    _L_HINTS,
    _MEM_HINT,
    _O_HINT,
    assert_peak,
    assert_traffic,
    run_kernel,
)
from minitorch.kernels.io_model import HBM, Traffic

__all__ = ["check_flash_backward", "check_flash_forward"]

_REF = tuple(
    f"minitorch.kernels.{m}:{f}"
    for m, f in (
        ("flash", "flash_attention_forward"),
        ("flash", "flash_attention_backward"),
        ("flash", "flash_attention"),
        ("flash", "_scores"),
        ("attention", "naive_attention"),
        ("attention", "naive_attention_hbm"),
    )
)
Spec = tuple[str, int, int, int, int, bool, float | None]
_NAMED: list[Spec] = [
    ("n = 16, blocks of 4", 16, 4, 4, 4, False, None),
    ("n = 16, causal", 16, 4, 4, 4, True, None),
    ("n = 37 (not a multiple), causal, bq < bk", 37, 8, 8, 16, True, None),
    ("n = 37, bq > bk", 37, 8, 16, 8, False, None),
    ("n = 5 < one block, causal", 5, 4, 8, 8, True, None),
    ("scale 0.5, causal", 24, 8, 8, 8, True, 0.5),
]
_MEMORY: Spec = ("memory: n = 1024, d = 16, blocks of 64", 1024, 16, 64, 64, True, None)


def _cases(exercise: str) -> list[Spec]:
    g = fresh_rng(exercise)
    new = []
    for i in range(3):
        n, d = int(g.integers(1, 70)), int(g.integers(1, 17))
        bq, bk, causal = int(g.integers(8, 20)), int(g.integers(8, 20)), bool(g.integers(0, 2))
        label = fresh(f"random case {i}: n = {n}, d = {d}, blocks {bq}/{bk}, causal {causal}")
        new.append((label, n, d, bq, bk, causal, None))
    return _NAMED + new


def _limits(bq: int, bk: int, d: int) -> dict[str, int]:
    rows = {"Q": bq, "O": bq, "dO": bq, "dQ": bq, "K": bk, "V": bk, "dK": bk, "dV": bk}
    return {**{k: r * d for k, r in rows.items()}, "L": bq, "D": bq}


def _budget(n: int, d: int, bq: int, bk: int) -> int:
    """Extra bytes allowed: 192 KiB of slack (the interpreter, the watch and the harness's
    request buffers, about 100 KiB measured), 4 copies of one step's tiles (S and P: bq x bk;
    Q_i, K_j, V_j and the accumulator; the row statistics), 8 values a row."""
    return 192 * 1024 + 4 * 8 * (bq * bk + (bq + 2 * bk) * d + 4 * bq) + 8 * 8 * n


def _truth(q, k, v, causal: bool, scale: float | None, do: np.ndarray | None = None):
    tq, tk, tv = (torch.tensor(a, requires_grad=do is not None) for a in (q, k, v))
    o = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)
    s = (tq @ tk.T) * (scale if scale is not None else 1 / np.sqrt(q.shape[1]))
    if causal:
        s = s.masked_fill(torch.ones(len(q), len(q), dtype=torch.bool).triu(1), -torch.inf)
    lse = torch.logsumexp(s, dim=1)
    if do is None:
        return o.detach().numpy(), lse.detach().numpy()
    o.backward(torch.from_numpy(do))
    return o.detach().numpy(), lse.detach().numpy(), [t.grad.numpy() for t in (tq, tk, tv)]


def _model(q, k, v, bq: int, bk: int, causal: bool, scale: float | None, bug: str):
    """(O, L) of a plain tile loop with one known mistake ``bug`` (the hints' models)."""
    n, d = q.shape
    s_ = (1 / np.sqrt(d)) if scale is None or bug == "default scale" else scale
    o, lse = np.zeros((n, d)), np.zeros(n)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i0 in range(0, n, bq):
            i1 = min(i0 + bq, n)
            m, l, acc = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0), np.zeros((i1 - i0, d))
            for j0 in range(0, n, bk):
                if causal and j0 >= i1:
                    break
                j1 = min(j0 + bk, n)
                s = s_ * (q[i0:i1] @ k[j0:j1].T)
                if causal and bug != "no mask":
                    cols, rows = np.arange(j0, j1)[None], np.arange(i0, i1)[:, None]
                    future = cols >= rows if bug == "diagonal masked" else cols > rows
                    s = np.where(future, -np.inf, s)
                m_new = np.maximum(m, s.max(axis=1))
                p = np.nan_to_num(np.exp(s - m_new[:, None]))
                alpha = np.nan_to_num(np.exp(m - m_new))
                one = np.ones_like(alpha)
                a_l = one if bug in ("no rescale", "l not rescaled") else alpha
                a_o = one if bug in ("no rescale", "acc not rescaled") else alpha
                l, acc, m = a_l * l + p.sum(axis=1), a_o[:, None] * acc + p @ v[j0:j1], m_new
            o[i0:i1], lse[i0:i1] = acc / l[:, None], m + np.log(l)
    return o, lse


def _near(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and bool(
        np.allclose(got, want, rtol=1e-9, atol=1e-11, equal_nan=True)
    )


def _o_hint(got, q, k, v, bq, bk, causal, scale) -> str:
    for bug, hint in _BUG_HINTS.items():
        if _near(got, _model(q, k, v, bq, bk, causal, scale, bug)[0]):
            return hint
    return _O_HINT


def _l_hint(got, lse, m) -> str:
    for want, key in ((lse - m, "log l"), (m, "m")):
        if _near(got, want):
            return _L_HINTS[key]
    return "L_i = m_i + log(l_i): the logsumexp of the row's scaled (and masked) scores."


def _grad_model(q, k, v, do, lse, causal: bool, scale: float | None, bug: str):
    """Dense dQ, dK, dV with one known mistake ``bug`` (run only on a failing case)."""
    n, d = q.shape
    sc = (1 / np.sqrt(d)) if scale is None or bug == "default scale" else scale
    s = sc * (q @ k.T)
    if causal and bug != "no mask":
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(s - lse[:, None])
    o = p @ v
    dp = do @ v.T
    ds = p * dp if bug == "no D" else p * (dp - (do * o).sum(axis=1)[:, None])
    g = 1.0 if bug == "unscaled grads" else sc
    return g * ds @ k, g * ds.T @ q, p.T @ do


def _grad_hint(got: list[np.ndarray], q, k, v, do, lse, causal, scale) -> str:
    for bug, hint in _GRAD_HINTS.items():
        model = _grad_model(q, k, v, do, lse, causal, scale, bug)
        if all(_near(a, b) for a, b in zip(got, model, strict=True)):
            return hint
    return _GRAD_HINT


def _row_max(q, k, causal: bool, scale: float | None) -> np.ndarray:
    n, d = q.shape
    s = (q @ k.T) * ((1 / np.sqrt(d)) if scale is None else scale)
    if causal:
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    return s.max(axis=1) if n else np.zeros(0)


TRUTH_BLOCKS = tuple(f"{__name__}:{f}" for f in ("_model", "_truth", "_row_max", "_grad_model"))


def _pairs(n: int, bq: int, bk: int, causal: bool) -> list[tuple[int, int, int, int]]:
    """(i0, i1, j0, j1) of every tile pair attention visits: causal skips j0 >= i1."""
    return [
        (i0, min(i0 + bq, n), j0, min(j0 + bk, n))
        for i0 in range(0, n, bq)
        for j0 in range(0, n, bk)
        if not causal or j0 < min(i0 + bq, n)
    ]


def _forward_model(n: int, d: int, bq: int, bk: int, causal: bool) -> Traffic:
    kv = sum(2 * (j1 - j0) * d for _, _, j0, j1 in _pairs(n, bq, bk, causal))
    return Traffic(8 * (n * d + kv), 8 * (n * d + n))


def _backward_model(n: int, d: int, bq: int, bk: int, causal: bool) -> Traffic:
    pairs = _pairs(n, bq, bk, causal)
    reads = 2 * n * d + 2 * n * d + sum((3 * d + 2) * (i1 - i0) for i0, i1, _, _ in pairs)
    writes = n + sum(d * (i1 - i0) for i0, i1, _, _ in pairs) + 2 * n * d
    return Traffic(8 * reads, 8 * writes)


@grader("08.4", blocks=(*_REF, *TRUTH_BLOCKS), hand="kernel")
def check_flash_forward(flash_forward: Callable[..., object]) -> str:
    """Exercise 08.4: FlashAttention forward, O and L in HBM, traffic and memory in budget."""
    cases = [*_cases("08.4"), _MEMORY]
    for idx, (case, n, d, bq, bk, causal, scale) in enumerate(cases):
        q, k, v = (rng(840 + idx).standard_normal((n, d)) for _ in range(3))
        hbm = HBM(
            {"Q": q, "K": k, "V": v, "O": np.zeros((n, d)), "L": np.zeros(n)}, _limits(bq, bk, d)
        )
        measure = case == _MEMORY[0]
        peak = run_kernel(flash_forward, hbm, bq, bk, causal, scale, case=case, measure=measure)
        o, lse = _truth(q, k, v, causal, scale)
        got_o, got_l = hbm.array("O"), hbm.array("L")
        if not _near(got_o, o):
            hint = _o_hint(got_o, q, k, v, bq, bk, causal, scale)
            assert_close(got_o, o, case=case, rtol=1e-9, atol=1e-11, what="O", hint=hint)
        if not _near(got_l, lse):
            hint = _l_hint(got_l, lse, _row_max(q, k, causal, scale))
            assert_close(got_l, lse, case=case, rtol=1e-9, atol=1e-11, what="L", hint=hint)
        if case == _MEMORY[0]:  # after the small cases: the interpreter is warm by then
            assert_peak(peak, _budget(n, d, bq, bk), case=case, hint=_MEM_HINT)
        model = _forward_model(n, d, bq, bk, causal)
        full = _forward_model(n, d, bq, bk, False)
        assert_traffic(
            hbm.traffic(),
            model,
            case=case,
            other=(
                "Read Q_i once per query block, K_j and V_j once per tile pair, and write O_i and "
                "L_i once, after the inner loop."
            ),
            hints=[
                (
                    Traffic(full.reads - model.reads, 0),
                    "Causal: skip the key blocks that start at or after the query block's end.",
                )
            ],
        )
    n = _MEMORY[1]
    return (
        f"{len(cases)} cases match torch SDPA with the IO model's traffic; at n = {n} the "
        f"kernel peaked at {fmt_bytes(peak)}, the n x n scores alone are "
        f"{fmt_bytes(8 * n * n)}"
    )


@grader("08.5", blocks=(*_REF, *TRUTH_BLOCKS), hand="kernel")
def check_flash_backward(flash_backward: Callable[..., object]) -> str:
    """Exercise 08.5: FlashAttention backward with recomputation, traffic and memory in budget."""
    cases = [*_cases("08.5"), _MEMORY]
    for idx, (case, n, d, bq, bk, causal, scale) in enumerate(cases):
        q, k, v, do = (rng(850 + idx).standard_normal((n, d)) for _ in range(4))
        o, lse = _truth(q, k, v, causal, scale)  # the gradients only after the kernel ran
        z = np.zeros((n, d))
        hbm = HBM(
            {
                "Q": q,
                "K": k,
                "V": v,
                "O": o,
                "L": lse,
                "dO": do,
                "dQ": z,
                "dK": z,
                "dV": z,
                "D": np.zeros(n),
            },
            _limits(bq, bk, d),
        )
        measure = case == _MEMORY[0]
        peak = run_kernel(flash_backward, hbm, bq, bk, causal, scale, case=case, measure=measure)
        grads = _truth(q, k, v, causal, scale, do)[2]
        got = [hbm.array(name) for name in ("dQ", "dK", "dV")]
        if not all(_near(a, b) for a, b in zip(got, grads, strict=True)):
            hint = _grad_hint(got, q, k, v, do, lse, causal, scale)
            for name, a, want in zip(("dQ", "dK", "dV"), got, grads, strict=True):
                assert_close(a, want, case=case, rtol=1e-9, atol=1e-11, what=name, hint=hint)
        if case == _MEMORY[0]:  # after the small cases: the interpreter is warm by then
            assert_peak(peak, _budget(n, d, bq, bk), case=case, hint=_MEM_HINT)
        assert_traffic(
            hbm.traffic(),
            _backward_model(n, d, bq, bk, causal),
            case=case,
            hints=[],
            other="The model: one pass for D (read O, dO; write D); per key block "
            "read K_j, V_j, write dK_j, dV_j once; per visited tile pair read Q_i, "
            "dO_i, L_i, D_i, dQ_i and write dQ_i. Nothing of size n x n in HBM.",
        )
    return (
        f"{len(cases)} cases match torch autograd with the IO model's traffic; P recomputed "
        f"from L, peak {fmt_bytes(peak)} at n = {_MEMORY[1]}"
    )
