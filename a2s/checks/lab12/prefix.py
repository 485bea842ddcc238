"""Grader of exercise 12.5: attention with a trainable prefix, forward and (dPK, dPV).

Ground truth: torch autograd in float64, q, k, v frozen, the prefix keys and values
``requires_grad``: ``softmax(q [pk; k]^T / sqrt(d) + M) [pv; v]`` with M zero on the prefix
columns and causal on the real ones (the queries are the last Tq of the T real positions).
Named cases: no prefix, a prefix of one, a single query (a decode step over cached keys), one
token, a causal case where the prefix must stay visible to the first query, several heads;
then seeded and fresh ones. Four mistakes are modelled by running the same torch code with the
mistake in it on the failing case: the causal mask laid over prefix and tokens as one sequence
with the queries at its start, the prefix appended after the tokens under the course's causal
mask, the softmax normalised over the real tokens only, and the scale of the wrong dimension.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import assert_true, fresh_rng, grader, rng

__all__ = ["check_prefix_attention", "torch_prefix"]

_P = "minitorch.model.prefix"
_BLOCKS = (
    f"{_P}:prefix_attention_forward",
    f"{_P}:prefix_attention_backward",
    f"{_P}:PrefixSelfAttention",
    "minitorch.model.attention:scaled_dot_product_attention",
)
# the exercise is numpy only, so every minitorch module is refused: the course's other attentions
# answer it through the causal mask of the prefix + tokens sequence with the queries at its end
# (labs 09, 18, 26 the forward, lab 08's FlashAttention backward the gradients), and so does its
# autograd; so are the other labs' graders that hold a numpy attention (lab 09's ``_plain``)
_FORBID = (
    "torch",
    "minitorch",
    *(f"a2s.checks.lab{n}" for n in ("08", "09", "18", "24", "26")),
)
# (label, H, Tq, T, P, d)
Case = tuple[str, int, int, int, int, int]
_NAMED: list[Case] = [
    ("P = 0: plain causal attention", 2, 4, 4, 0, 3),
    ("P = 1", 1, 3, 3, 1, 4),
    ("one query (a decode step) over 5 cached keys, P 3", 2, 1, 5, 3, 4),
    ("one token, P 2", 1, 1, 1, 2, 2),
    ("causal: 6 tokens, P 2, the first query sees the prefix and itself", 1, 6, 6, 2, 4),
    ("four heads, P 3, d 8", 4, 5, 5, 3, 8),
]
_RULE = (
    "out = softmax(q [pk; k]^T / sqrt(d) + M) [pv; v]: M is 0 on the P prefix columns (every "
    "query sees the whole prefix) and causal on the real keys (query i sees real keys j <= i)."
)
_GRAD = (
    "dPK and dPV are the first P rows of dK' = dS^T q / sqrt(d) and dV' = A^T gout, with "
    "A the attention weights and dS = A * (gout V'^T - rowsum(A * gout V'^T)); shapes (H, P, d)."
)
_MISTAKES = {
    "one sequence": (
        "The causal mask is among the real tokens only: laid over prefix + tokens as one "
        "sequence with the queries at its start, query i sees only the first i + 1 keys, so "
        "the prefix is partly hidden and the tokens are offset by P."
    ),
    "appended": (
        "Prepend the prefix: [pk; k], [pv; v]. Appended after the tokens, the causal mask of "
        "the combined sequence no longer matches the real positions (queries see later "
        "tokens); the order matters only because of the mask."
    ),
    "tokens only": (
        "The softmax normalises over every key, prefix and real: the prefix takes part of "
        "the attention mass (that is how it steers the layer)."
    ),
    "d_model": "Scale by 1 / sqrt(d), d the head dimension q.shape[-1], not the model width.",
    "no scale": "Scale the scores by 1 / sqrt(d), d = q.shape[-1].",
}


def torch_prefix(q, k, v, pk, pv, gout, mistake: str = "") -> tuple[np.ndarray, ...]:
    """(out, dPK, dPV) by torch autograd in float64; ``mistake`` runs a modelled wrong rule."""
    t = lambda a, g=False: torch.tensor(a, dtype=torch.float64, requires_grad=g)  # noqa: E731
    qt, kt, vt, pkt, pvt = t(q), t(k), t(v), t(pk, True), t(pv, True)
    h, tq, d = q.shape
    n_real, n_pre = k.shape[1], pk.shape[1]
    if mistake == "appended":
        kk, vv = torch.cat([kt, pkt], 1), torch.cat([vt, pvt], 1)
    else:
        kk, vv = torch.cat([pkt, kt], 1), torch.cat([pvt, vt], 1)
    n = n_pre + n_real
    scale = {"d_model": 1 / math.sqrt(h * d), "no scale": 1.0}.get(mistake, 1 / math.sqrt(d))
    s = qt @ kk.transpose(1, 2) * scale
    query = torch.arange(tq)[:, None] + (n_real - tq)  # the queries' real positions
    key = torch.arange(n)[None, :]
    if mistake == "one sequence":
        hidden = key > torch.arange(tq)[:, None]
    elif mistake == "appended":
        hidden = key > query + n_pre  # the course's causal mask over T + P keys
    else:
        hidden = (key >= n_pre) & (key - n_pre > query)
    s = s.masked_fill(hidden, -math.inf)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    denom = e[..., n_pre:] if mistake == "tokens only" else e
    a = e / denom.sum(-1, keepdim=True)
    out = a @ vv
    out.backward(t(gout))
    return out.detach().numpy(), pkt.grad.numpy(), pvt.grad.numpy()


def _draw(gen: np.random.Generator, h: int, tq: int, n: int, p: int, d: int) -> tuple:
    return (
        gen.standard_normal((h, tq, d)),
        gen.standard_normal((h, n, d)),
        gen.standard_normal((h, n, d)),
        gen.standard_normal((h, p, d)),
        gen.standard_normal((h, p, d)),
        gen.standard_normal((h, tq, d)),
    )


def _random(gen: np.random.Generator, i: int, mark: Callable[[str], str]) -> Case:
    h, n, p, d = (int(v) for v in gen.integers(1, 6, 4))
    tq = int(gen.integers(1, n + 1))
    return mark(f"random {i}: H {h}, Tq {tq}, T {n}, P {p}, d {d}"), h, tq, n, p, d


def _hint(got: Any, args: tuple, which: int, rule: str) -> str:
    """Name a modelled mistake only when the answer is that mistake's (on this case)."""
    want = torch_prefix(*args)[which]
    for mistake, message in _MISTAKES.items():
        q, k, v, pk, pv, gout = args
        wrong = torch_prefix(q, k, v, pk, pv, gout, mistake)[which]
        if not np.allclose(wrong, want) and looks_like(got, wrong):
            return message
    return rule


def _one(fwd: Callable, bwd: Callable, case: Case, gen: np.random.Generator) -> float:
    label, h, tq, n, p, d = case
    args = _draw(gen, h, tq, n, p, d)
    # each truth is computed after the learner's call it judges: no answer sits in this frame
    got = call_pure(fwd, *args[:5], case=label)
    err = close(
        got,
        torch_prefix(*args)[0],
        case=label,
        what="prefix_attention_forward(...)",
        hint=lambda g_, _w: _hint(g_, args, 0, _RULE),
    )
    grads = call_pure(bwd, *args, case=label)
    assert_true(
        isinstance(grads, (tuple, list)) and len(grads) == 2,
        f"[{label}] prefix_attention_backward returns the pair (dPK, dPV).",
    )
    _, dpk, dpv = torch_prefix(*args)
    for what, g, want, which in (("dPK", grads[0], dpk, 1), ("dPV", grads[1], dpv, 2)):

        def hint(got: Any, _want: Any, which: int = which) -> str:
            return _hint(got, args, which, _GRAD)

        err = max(
            err,
            close(
                g,
                want,
                case=label,
                what=what,
                hint=hint,
            ),
        )
    return err


@grader("12.5", blocks=_BLOCKS, forbid=_FORBID, hand="parts")
def check_prefix_attention(
    prefix_attention_forward: Callable[..., Any], prefix_attention_backward: Callable[..., Any]
) -> str:
    """Exercise 12.5: the forward and (dPK, dPV) match torch autograd on every case."""
    gen, seeded = rng(1205), rng(1215)
    cases = _NAMED + [_random(seeded, i, str) for i in range(4)]
    new = fresh_rng("12.5")
    cases += [_random(new, i, fresh) for i in range(3)]
    worst = max(_one(prefix_attention_forward, prefix_attention_backward, c, gen) for c in cases)
    return (
        f"{len(cases)} cases (3 fresh) match torch autograd (max error {worst:.1e}): the prefix "
        f"visible to every query, the causal mask among the real tokens only"
    )
