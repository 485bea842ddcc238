"""Graders of exercises 09.3 (RoPE) and 09.4 (ALiBi slopes).

RoPE's ground truth is the complex-rotation formula in torch (``torch.polar``,
``view_as_complex``), plus its relative-position property checked on the student's own
function: the score of a query at m and a key at n is unchanged when both move by s.
ALiBi's slopes are the closed form of Press et al. 2022, written out here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import Mistake, fresh
from a2s.checks.compare import float_array
from a2s.checks.core import assert_true, fresh_rng, grader, rng
from a2s.checks.lab09._truth import array_table, torch_rope

__all__ = ["check_alibi_slopes", "check_rope"]

_P = "minitorch.model.positions"


def _truth(x: np.ndarray) -> np.ndarray:
    return torch_rope(torch.from_numpy(x)).numpy()


def _rope_np(x: np.ndarray, exponent: float, half: bool, sign: float, first: int = 0) -> np.ndarray:
    t, d = x.shape[-2:]
    theta = 10000.0 ** (-np.arange(d // 2) * exponent / d)
    ang = np.arange(first, first + t)[:, None] * theta[None]
    c, s = np.cos(ang), sign * np.sin(ang)
    if half:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(x.shape)


_ROPE_MISTAKES = (
    Mistake(
        "Rotate adjacent pairs (x[2i], x[2i+1]), the complex number x[2i] + j x[2i+1]; "
        "splitting the vector into halves is a different (GPT-NeoX) layout.",
        lambda x: _rope_np(x, 2.0, True, 1.0),
    ),
    Mistake(
        "theta_i = base^(-2i/d) for pair i: the exponent counts dimensions, two per pair.",
        lambda x: _rope_np(x, 1.0, False, 1.0),
    ),
    Mistake(
        "Multiply by exp(+j m theta): (a + jb)(cos + j sin) = (a cos - b sin) + j(a sin + b cos).",
        lambda x: _rope_np(x, 2.0, False, -1.0),
    ),
    Mistake(
        "Positions start at 0: the first row (m = 0) is not rotated.",
        lambda x: _rope_np(x, 2.0, False, 1.0, first=1),
    ),
)


_TWIN = "a2s.checks.lab09._truth"


def _random(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    return "random case", (
        g.standard_normal((2, int(g.integers(2, 20)), 2 * int(g.integers(1, 17)))),
    )


_R = rng(93)
ROPE = array_table(
    "09.3",
    "rotated x",
    truth=_truth,
    named=[
        ("T=4, d=2 (one pair)", (_R.standard_normal((4, 2)),)),
        ("T=6, d=8", (_R.standard_normal((6, 8)),)),
        ("(2, 3, 5, 16): batch and heads", (_R.standard_normal((2, 3, 5, 16)),)),
    ],
    draw=_random,
    fresh=1,
    mistakes=_ROPE_MISTAKES,
)


@grader(
    "09.3",
    blocks=(
        f"{_P}:apply_rope",
        f"{_P}:rope_tables",
        "minitorch.runtime.paged_model:_rope",
        f"{__name__}:_rope_np",  # the grader's mistake model is the rotation at (2.0, False, 1.0)
        f"{_TWIN}:torch_rope",
    ),
    hand="property",
)
def check_rope(rope: Callable[..., object]) -> str:
    """Exercise 09.3: rope(x) for x (..., T, d), positions 0..T-1, base 10000."""
    n = ROPE.grade(rope)
    f = fresh_rng("09.3")
    _random(f, 0)  # the table's fresh case came first from this stream
    d, t, s = 16, 12, int(f.integers(1, 5))
    q, k = f.standard_normal(d), f.standard_normal(d)
    x = np.zeros((2, t, d))
    m, k_pos = 3, 1
    x[0, m], x[1, k_pos] = q, k
    x[0, m + s], x[1, k_pos + s] = q, k
    y = float_array(rope(x), "relative position", "rotated x")
    before, after = y[0, m] @ y[1, k_pos], y[0, m + s] @ y[1, k_pos + s]
    assert_true(
        abs(before - after) <= 1e-9 * (1 + abs(before)),
        f"[{fresh('relative position')}] q at {m}, k at {k_pos} scores {before:.6g}; "
        f"both moved by {s} score {after:.6g}: RoPE scores depend on m - n only.",
    )
    return f"{n} cases equal the complex rotation; scores unchanged under a shift of {s} positions"


def _slopes(n: int) -> list[float]:
    def geo(m: int) -> list[float]:
        return [2.0 ** (-8.0 * k / m) for k in range(1, m + 1)]

    p = 1 << (n.bit_length() - 1)
    return geo(p) if p == n else geo(p) + geo(2 * p)[0::2][: n - p]


def _odd_wrong(n: int) -> list[float]:
    p = 1 << (n.bit_length() - 1)
    more = [2.0 ** (-8.0 * k / (2 * p)) for k in range(1, 2 * p + 1)][1::2]
    return [2.0 ** (-8.0 * k / p) for k in range(1, p + 1)] + more[: n - p]


_ALIBI_MISTAKES = (
    Mistake(
        "For n heads that is not a power of two, take the slopes of the closest power of two "
        "below n, then every other slope of twice that many heads (Press et al. 2022, 3.1).",
        lambda n: np.array([2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]),
    ),
    Mistake(
        "The extra slopes are every other slope of 2p heads starting with the first "
        "([0::2]): 2^(-8 (2k - 1) / (2p)) for k = 1, 2, ...",
        lambda n: np.array(_odd_wrong(n)),
    ),
    Mistake(
        "The first slope is 2^(-8/n), not 1: the sequence starts at its ratio.",
        lambda n: np.array([2.0 ** (-8.0 * k / n) for k in range(n)]),
    ),
)


SLOPES = array_table(
    "09.4",
    "slopes",
    "Press et al.'s closed form",
    truth=lambda n: np.array(_slopes(n)),
    named=[(f"{n} heads", (n,)) for n in (1, 2, 8, 16, 6, 12, 3)],
    draw=lambda g, i: (f"{(n := int(g.integers(17, 64)))} heads", (n,)),
    fresh=1,
    mistakes=_ALIBI_MISTAKES,
)


@grader(
    "09.4",
    blocks=(
        f"{_P}:alibi_slopes",
        f"{_P}:alibi_bias",
        f"{__name__}:_slopes",
        f"{__name__}:_odd_wrong",
        f"{_TWIN}:torch_alibi_slopes",
    ),
)
def check_alibi_slopes(alibi_slopes: Callable[..., object]) -> str:
    """Exercise 09.4: the per-head slopes of ALiBi, (n,) array."""
    count = SLOPES.grade(alibi_slopes)
    return f"{count} head counts match Press et al.'s slopes (8 heads: 1/2 ... 1/256)"
