"""Grader of exercise 34.4: MLA's absorbed matrices, run over the latent cache.

``absorb(w, cfg)`` returns per-head ``A`` (H, d_c, d_c') and ``B`` (H, d, d_c). The grader
itself runs causal attention that reads only the cache (c_KV, k_R) with them (the query
latent c_Q mapped by A_i into the KV latent space, the weighted latent mapped by B_i into the
output; ``_truth.mla_from_latent``) and compares with MLA head by head with K and V
materialised (``_truth.mla_naive_loop``, DeepSeek-V2 section 2.1). The learner never writes
the attention: equal outputs prove the matrices absorb W_UK into the query and W_UV into W_O.
The learner's function runs in a forked child (:func:`~a2s.checks.harness.run_apart`), so a
patch of this module's compare or attention changes only the child's copy; the fresh case
draws its weights from the run's fresh seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import close
from a2s.checks.core import CheckFailure, fresh_rng, grader, plain, rng
from a2s.checks.harness import run_apart
from a2s.checks.lab34._truth import absorbed_truth, mla_from_latent, mla_naive_loop

__all__ = ["check_absorb"]


def _weights(cfg: Any, g: np.random.Generator) -> dict[str, np.ndarray]:
    d, h, dh, dr = cfg.d_model, cfg.n_head, cfg.head_dim, cfg.rope_dim
    shapes = {
        "W_DKV": (cfg.d_c, d),
        "W_UK": (h * dh, cfg.d_c),
        "W_UV": (h * dh, cfg.d_c),
        "W_DQ": (cfg.d_cq, d),
        "W_UQ": (h * dh, cfg.d_cq),
        "W_QR": (h * dr, cfg.d_cq),
        "W_KR": (dr, d),
        "W_O": (d, h * dh),
    }
    return {k: g.standard_normal(s) / np.sqrt(s[1]) for k, s in shapes.items()}


def _cases() -> list[tuple[str, Any, np.random.Generator]]:
    """(label, config, the generator of its weights and inputs): the fresh case draws its
    weights from the run's fresh seed, so answers replayed from an earlier run miss it."""
    from minitorch.model.mla import MLAConfig

    g, f = rng(3404), fresh_rng("34.4")
    dc = int(f.choice([4, 6, 8]))
    return [
        ("4 heads, d_c 8, d_c' 16, RoPE 4", MLAConfig(32, 4, 8, 8, 16, 4), g),
        ("d_c == d_c' (square blocks), no RoPE part", MLAConfig(24, 3, 8, 8, 8, 0), g),
        ("one head", MLAConfig(16, 1, 8, 4, 12, 2), g),
        (fresh(f"2 heads, d_c {dc}"), MLAConfig(16, 2, 6, dc, 10, 2), f),
    ]


def _hint(a: np.ndarray, b: np.ndarray, ta: np.ndarray, tb: np.ndarray) -> str:
    def same(x: np.ndarray, y: np.ndarray) -> bool:
        return x.shape == y.shape and bool(np.allclose(x, y))

    if same(a, ta) and not same(b, tb):
        if same(b, tb.transpose(0, 2, 1)):
            return "B_i is W_O[:, i] @ W_UV,i, not its transpose."
        return "A is right; B_i = W_O[:, head i's d_h columns] @ W_UV[head i's d_h rows]."
    if same(a, ta.transpose(0, 2, 1)):
        return "A_i maps the query latent into the KV latent: W_UK,i^T @ W_UQ,i, not its transpose."
    return (
        "q_C,i . k_C,i = (W_UQ,i c_Q) . (W_UK,i c_KV) = (W_UK,i^T W_UQ,i c_Q) . c_KV: "
        "A_i = W_UK,i^T @ W_UQ,i with head i's d_h rows of each; B_i = W_O[:, i] @ W_UV,i."
    )


@grader("34.4", blocks=("minitorch.model.mla",), allow=("MLAConfig",), hand="replay")
def check_absorb(absorb: Callable[..., Any]) -> str:
    """Exercise 34.4: absorb(w, cfg) -> (A (H, d_c, d_c'), B (H, d, d_c))."""
    for label, cfg, g in _cases():
        w = _weights(cfg, g)
        # apart: a learner's patch of this module, its truth or its compare stays in the child
        got = run_apart(absorb, {k: v.copy() for k, v in w.items()}, cfg)
        got = plain(got, what="(A, B)", case=label)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CheckFailure(f"[{label}] return the pair (A, B).")
        try:
            a, b = (np.asarray(x, np.float64) for x in got)
        except (TypeError, ValueError):
            raise CheckFailure(f"[{label}] A and B must be arrays of numbers.") from None
        ta, tb = absorbed_truth(w, cfg.n_head, cfg.head_dim)
        for name, x, want in (("A", a, ta), ("B", b, tb)):
            if x.shape != want.shape:
                raise CheckFailure(
                    f"[{label}] {name} has shape {x.shape}, expected {want.shape}: one matrix "
                    "per head, A_i (d_c, d_c') and B_i (d_model, d_c)."
                )
        h = g.standard_normal((7, cfg.d_model))
        want = mla_naive_loop(h, w, cfg.n_head, cfg.head_dim, cfg.rope_dim)
        out = mla_from_latent(h, w, a, b, cfg.head_dim, cfg.rope_dim)
        close(
            out,
            want,
            case=label,
            what="MLA output over the latent cache",
            hint=lambda *_, m=(a, b, ta, tb): _hint(*m),
        )
    cfg = _cases()[0][1]
    mha = 2 * cfg.n_head * cfg.head_dim
    return (
        f"4 configurations (1 fresh): attention over the latent cache with your A, B equals MLA "
        f"with K and V materialised; the cache holds d_c + d_R = {cfg.d_c + cfg.rope_dim} "
        f"numbers per token and layer against MHA's {mha}"
    )
