"""Grader of exercise 12.4: one batch, one base weight, a different adapter per row.

Ground truth: torch in float64, row by row, ``x_i W^T + b + s_k (x_i A_k^T) B_k^T`` with
``k = ids[i]`` (``-1``: the base alone). Held to a memory budget (tracemalloc): on a 512 x 512
layer with 4 adapters the call may allocate at most a quarter of W's bytes, so merging an
adapter into a copy of W for its rows (a (d_out, d_in) matrix per adapter) fails, as it would
on a server holding one base for hundreds of adapters (S-LoRA, Punica).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close
from a2s.checks.core import CheckFailure, fmt_bytes, fresh_rng, grader, rng
from a2s.checks.lab12.lora import _BLOCKS, FORBID, peak_bytes

__all__ = ["check_multi_adapter"]

_BASE = "Rows with id -1 use the base layer alone (no adapter)."
_ROWS = "Row i uses adapter ids[i]: gather the rows of each adapter, apply it, scatter back."
_BUDGET = (
    "Do not merge an adapter into a copy of W per request: that is a (d_out, d_in) matrix per "
    "adapter. Run the base once on the whole batch, then each adapter's two thin matmuls on "
    "its rows."
)


def _want(x, w, b, adapters, ids):
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    y = t(x) @ t(w).T + (0 if b is None else t(b))
    for i, k in enumerate(ids):
        if k >= 0:
            a, bb, s = adapters[k]
            y[i] += s * (t(bb) @ (t(a) @ t(x[i])))
    return y.numpy()


def _case(gen: np.random.Generator, n: int, di: int, do: int, k: int, base_rows: bool) -> tuple:
    x, w, b = gen.standard_normal((n, di)), gen.standard_normal((do, di)), gen.standard_normal(do)
    adapters = []
    for _ in range(k):
        r = int(gen.integers(1, 5))
        adapters.append(
            (
                gen.standard_normal((r, di)),
                gen.standard_normal((do, r)),
                float(gen.choice([0.5, 2.0])),
            )
        )
    ids = gen.integers(-1 if base_rows else 0, k, n)
    return x, w, b, adapters, ids


def _hint(got: np.ndarray, x, w, b, adapters, ids) -> str:
    if got.shape == (len(ids), w.shape[0]):
        for stand_in in (0, len(adapters) - 1):  # -1 read as the first or (wrapped) last one
            if np.allclose(got, _want(x, w, b, adapters, np.where(ids < 0, stand_in, ids))):
                return _BASE
        if b is not None and np.allclose(got + b, _want(x, w, b, adapters, ids)):
            return "Every row, base or adapter, adds the bias b once (y = x W^T + b + ...)."
    return _ROWS


@grader("12.4", blocks=_BLOCKS, forbid=FORBID, hand="budget")
def check_multi_adapter(multi_adapter_forward: Callable[..., Any]) -> str:
    """Exercise 12.4: per-row adapters match torch; no merged copy of W is built."""
    gen = rng(1204)
    named = [
        ("two adapters, no base rows", 6, 5, 4, 2, False),
        ("base rows (-1) mixed in", 8, 5, 4, 3, True),
        ("one adapter for the whole batch", 4, 3, 6, 1, False),
        ("an adapter no row uses", 3, 4, 4, 5, True),
    ]
    new = fresh_rng("12.4")
    cases = [(c, n, di, do, k, br, gen) for c, n, di, do, k, br in named]
    cases += [
        (
            fresh(f"random {i}"),
            int(new.integers(1, 12)),
            int(new.integers(1, 8)),
            int(new.integers(1, 8)),
            int(new.integers(1, 5)),
            True,
            new,
        )
        for i in range(3)
    ]
    worst = 0.0
    for case, n, di, do, k, br, g in cases:
        x, w, b, adapters, ids = _case(g, n, di, do, k, br)
        got = np.asarray(call_pure(multi_adapter_forward, x, w, b, adapters, ids, case=case))
        hint = _hint(got, x, w, b, adapters, ids)
        worst = max(
            worst,
            close(
                got,
                _want(x, w, b, adapters, ids),
                case=case,
                what="multi_adapter_forward(...)",
                hint=hint,
            ),
        )
    x, w, b, adapters, ids = _case(gen, 16, 512, 512, 4, True)
    budget = w.nbytes // 4
    _, peak = peak_bytes(multi_adapter_forward, x, w, b, adapters, ids)
    if peak > budget:
        raise CheckFailure(
            f"[memory: 16 rows, 512 x 512, 4 adapters, float64] your function allocated "
            f"{fmt_bytes(peak)} at its peak; the budget is {fmt_bytes(budget)} (a quarter of W). "
            + _BUDGET
        )
    return (
        f"{len(cases)} batches (3 fresh) match torch row by row (max error {worst:.1e}); 4 "
        f"adapters on one 512 x 512 base peaked at {fmt_bytes(peak)}, one merged copy of W "
        f"would be {fmt_bytes(w.nbytes)}"
    )
