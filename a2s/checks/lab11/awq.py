"""Grader of exercise 11.4: AWQ scales must beat round-to-nearest on a layer with outliers.

The layer: W (64, 128) with 4 of its 128 input channels 20-50x larger than the rest. The
student returns per-input-channel scales ``s``; the grader quantizes ``W * s`` itself (plain
loop, INT4 asymmetric, groups of 32) and measures ``||XW^T - X(Q(Ws)/s)^T||^2``. It must be at
most 0.7x the error of round-to-nearest, and the outlier channels must get the larger scales.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.lab11._truth import outlier_inputs, rel_error, rtn

_USES = ("11.1", "quantize_groups", "minitorch.model.quant:quantize_groups")
__all__ = ["check_awq_scales"]

_BLOCKS = tuple(
    f"minitorch.model.quant_awq:{n}" for n in ("awq", "awq_scales", "scaled_rtn")
) + tuple(
    f"a2s.checks.lab11._truth:{n}" for n in ("quantize_loop", "dequant", "rtn", "rel_error")
)  # the lab's own ground truth
_RATIO = 0.7
_SEARCH = (
    "Search s = mean|x_j|^alpha for alpha in [0, 1) (alpha = 0 is plain RTN), quantize W * s, "
    "divide back by s, and keep the alpha with the least output error on the calibration X."
)
_WHICH = (
    "The outlier input channels (largest mean |x_j|) must get the largest scales: scale by "
    "the ACTIVATIONS' magnitude, not the weights'."
)


@grader("11.4", blocks=_BLOCKS, uses=(_USES,), hand="property")
def check_awq_scales(awq_scales: Callable[..., Any]) -> str:
    """Exercise 11.4: ``awq_scales(w, x, bits, group_size) -> s`` (in,)."""
    f = fresh_rng("11.4")
    cases = [
        ("4 outlier channels x30", rng(1104), 30.0),
        ("4 outlier channels x50", rng(1114), 50.0),
        (fresh("4 outlier channels"), f, float(f.uniform(20, 50))),
    ]
    ratios = []
    for label, g, size in cases:
        w = g.standard_normal((64, 128))
        x, idx = outlier_inputs(g, 384, 128, 4, size)
        s = np.asarray(plain(awq_scales(w.copy(), x.copy(), 4, 32), case=label), float)
        assert_true(
            s.shape == (128,),
            f"[{label}] return one scale per input channel, (128,); got {s.shape}.",
        )
        assert_true(
            bool(np.all(np.isfinite(s)) and np.all(s > 0)),
            f"[{label}] scales must be finite and positive.",
        )
        others = np.delete(s, idx)
        w_hat = rtn(w * s, 4, 32) / s
        ours, ref = rel_error(w, w_hat, x), rel_error(w, rtn(w, 4, 32), x)
        if ours > _RATIO * ref:
            flat = np.ptp(s) <= 1e-9 * s.max()
            hint = _WHICH if s[idx].min() <= np.median(others) and not flat else _SEARCH
            raise CheckFailure(
                f"[{label}] output error {ours:.2e} vs RTN {ref:.2e} (ratio "
                f"{ours / ref:.2f}, need <= {_RATIO}). {hint}"
            )
        assert_true(s[idx].min() > np.median(others), f"[{label}] {_WHICH}")
        ratios.append(ours / ref)
    return (
        f"{len(cases)} layers with outlier channels: INT4 output error "
        f"{min(ratios):.2f}-{max(ratios):.2f}x that of round-to-nearest"
    )
