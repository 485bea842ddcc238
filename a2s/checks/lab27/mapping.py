"""Graders of exercises 27.3 (mapping the tiny GPT's GEMMs) and 27.4 (SRAM tiles under a budget).

27.3: cycles of a GEMM tiled onto an ``R x C`` weight-stationary array with double-buffered
weights, and onto a ``16 x 16 x 16`` cube, against the closed forms written here, on every
GEMM of the tiny GPT (prefill and decode) and fresh shapes. 27.4: the tiles must fit the SRAM
(double-buffered operand tiles plus fp32 accumulators, counted here) **and** keep the GEMM's
HBM intensity at or above the ridge point (compute-bound): both are budgets, checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake, fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.table import Table
from minitorch.model.config import GPTConfig
from minitorch.model.train import TINY

__all__ = ["check_choose_tiles", "check_mapped_cycles", "gpt_gemms"]

_S = "minitorch.hardware.systolic"
_M = "minitorch.hardware.memory_hierarchy"


def gpt_gemms(config: GPTConfig, tokens: int, context: int) -> list[tuple[str, int, int, int]]:
    """Every GEMM ``(name, M, K, N)`` of one forward pass of ``config``'s model, one layer's
    worth times ``n_layer`` listed once per layer: ``tokens`` rows (prefill: the prompt; decode:
    1), attention over ``context`` keys, one head's scores shown per head."""
    d, hd = config.d_model, config.d_model // config.n_head
    kv = config.n_kv_head * hd
    d_ff = config.d_ff or int(8 * d / 3 + 7) // 8 * 8
    out: list[tuple[str, int, int, int]] = []
    for layer in range(config.n_layer):
        out += [
            (f"L{layer} q_proj", tokens, d, d),
            (f"L{layer} k_proj", tokens, d, kv),
            (f"L{layer} v_proj", tokens, d, kv),
            (f"L{layer} scores QK^T (per head)", tokens, hd, context),
            (f"L{layer} P V (per head)", tokens, context, hd),
            (f"L{layer} o_proj", tokens, d, d),
            (f"L{layer} mlp w1", tokens, d, d_ff),
            (f"L{layer} mlp w3", tokens, d, d_ff),
            (f"L{layer} mlp w2", tokens, d_ff, d),
        ]
    return [*out, ("lm_head", tokens, d, config.vocab_size)]


def _ceil(x: int, y: int) -> int:
    return -(-x // y)


def _ws(m: int, k: int, n: int, r: int, c: int, double: bool = True, fill: bool = True) -> int:
    folds = _ceil(k, r) * _ceil(n, c)
    one = 2 * r + c + m - 2 if fill else r + m
    return one + (folds - 1) * max(m, r) if double else folds * one


def _cube(m: int, k: int, n: int, cube: int) -> int:
    return _ceil(m, cube) * _ceil(k, cube) * _ceil(n, cube)


def _floored(m: int, k: int, n: int, r: int, c: int, at_least: int = 0) -> int:
    folds = max(k // r, at_least) * max(n // c, at_least)
    return 2 * r + c + m - 2 + (folds - 1) * max(m, r)


_MISTAKES = (
    Mistake(
        "Double buffering: the next fold's weights load while this fold streams, so every "
        "fold after the first costs max(M, R), not a whole 2R + C + M - 2.",
        answer=lambda m, k, n, r, c: _ws(m, k, n, r, c, double=False),
    ),
    Mistake(
        "Fill and drain: the first fold pays R (load) + M + R + C - 2, not R + M.",
        answer=lambda m, k, n, r, c: _ws(m, k, n, r, c, fill=False),
    ),
    Mistake(
        "Folds are whole: ceil(K/R) ceil(N/C) weight tiles, even when the last is partly "
        "empty (a GEMV does not get cheaper than one fold).",
        when=lambda got, m, k, n, r, c: (
            isinstance(got, float)
            or got == (k * n) // (r * c)
            or got in (_floored(m, k, n, r, c), _floored(m, k, n, r, c, at_least=1))
        ),
    ),
)
_CUBE_MISTAKES = (
    Mistake(
        "The cube does one whole 16x16x16 block per cycle: ceil(M/16) ceil(K/16) ceil(N/16), "
        "a partial block costs a full cycle.",
        answer=lambda m, k, n, cube: m * k * n // cube**3,
    ),
)


_SHAPES = [(f"prefill {nm}", m, k, n) for nm, m, k, n in gpt_gemms(TINY, 256, 32)]
_SHAPES += [(f"decode {nm}", m, k, n) for nm, m, k, n in gpt_gemms(TINY, 1, 32)]
_SHAPES += [("one fold exactly", 128, 128, 128), ("many folds, short stream", 8, 512, 384)]


def _on_arrays(label: str, m: int, k: int, n: int, small: bool) -> list[tuple[Any, ...]]:
    """The case on a 128x128 array, and on an 8x4 one where ``small``."""
    out: list[tuple[Any, ...]] = [(f"{label}, 128x128", (m, k, n, 128, 128))]
    return out + [(f"{label}, 8x4 array", (m, k, n, 8, 4), "")] * small


def _gemm(g: Any, i: int) -> tuple[int, int, int]:
    m, k, n = (int(v) for v in g.integers(1, 700, 3))
    return m, k, n


WS = Table(
    "27.3",
    truth=_ws,
    named=[c for lbl, m, k, n in _SHAPES for c in _on_arrays(lbl, m, k, n, small=False)]
    + [c for lbl, m, k, n in _SHAPES[:3] for c in _on_arrays(lbl, m, k, n, small=True)[1:]],
    draw=lambda g, i: _on_arrays(f"random GEMM {i}", *_gemm(g, i), small=i >= 2),
    fresh=4,
    mistakes=_MISTAKES,
    hint="One fold: 2R + C + M - 2; then (folds - 1) max(M, R).",
    message="[{label}] mapped_cycles = {got!r}, expected {want!r}.{hint}",
)
CUBE = Table(
    "27.3",
    truth=_cube,
    named=[(f"{lbl}, cube 16", (m, k, n, 16)) for lbl, m, k, n in _SHAPES],
    draw=lambda g, i: (f"random GEMM {i}, cube 16", (*_gemm(g, i), 16)),
    fresh=4,
    mistakes=_CUBE_MISTAKES,
    hint="ceil(M/c) ceil(K/c) ceil(N/c) cycles.",
    message="[{label}] cube_cycles = {got!r}, expected {want!r}.{hint}",
)


@grader(
    "27.3",
    blocks=(
        f"{_S}:gemm_cycles",
        f"{_S}:utilisation",
        f"{_S}:cube_cycles",
        f"{__name__}:_ws",
        f"{__name__}:_cube",
        f"{__name__}:_floored",
    ),
)
def check_mapped_cycles(
    mapped_cycles: Callable[..., object], cube_cycles: Callable[..., object]
) -> str:
    """Exercise 27.3: cycles of (M, K, N) on an R x C WS array and on a 16^3 cube."""
    count = WS.grade(mapped_cycles) + CUBE.grade(cube_cycles)
    shapes, config = _SHAPES, TINY
    n_pre = len(gpt_gemms(config, 256, 32))
    (_, m, k, n), (_, m1, k1, n1) = shapes[6], shapes[n_pre + 6]  # layer 0's mlp w1
    pre = m * k * n / (128 * 128 * _ws(m, k, n, 128, 128))
    dec = m1 * k1 * n1 / (128 * 128 * _ws(m1, k1, n1, 128, 128))
    return (
        f"{count} mappings (10 fresh) exact; mlp w1 on 128x128: prefill "
        f"{pre:.1%} of PE-cycles busy, decode {dec:.2%}"
    )


# --------------------------------------------------------------------------- 27.4
def _footprint(tm: int, tk: int, tn: int, elem: int) -> int:
    return 2 * elem * (tm * tk + tk * tn) + 4 * tm * tn


def _traffic(m: int, k: int, n: int, tm: int, tn: int, elem: int) -> int:
    return elem * (m * k * _ceil(n, tn) + k * n * _ceil(m, tm) + m * n)


_TILE_CASES: list[
    tuple[str, int, int, int, int, float]
] = [  # (label, M, K, N, SRAM bytes, ridge FLOP/B): H100-like ridge 295 in bf16
    ("square 4096^3, 2 MiB, H100 ridge", 4096, 4096, 4096, 2 << 20, 295.0),
    ("short prefill M=256, 1 MiB, A100 ridge", 256, 8192, 8192, 1 << 20, 153.0),
    ("tall 16384 x 1024 x 4096, 3 MiB, TPU v4 ridge", 16384, 1024, 4096, 3 << 20, 229.0),
]


def _one_tiles(
    student: Callable[..., object], case: str, m: int, k: int, n: int, sram: int, ridge: float
) -> float:
    got = plain(student(m, k, n, sram, ridge), case=case)
    assert_true(
        isinstance(got, (tuple, list))
        and len(got) == 3
        and all(
            (isinstance(t, (int, np.integer)) or (isinstance(t, float) and t.is_integer()))
            and 1 <= t
            for t in got
        ),
        f"[{case}] return three positive ints (tm, tk, tn), got {got!r}.",
    )
    tm, tk, tn = (min(int(t), d) for t, d in zip(got, (m, k, n), strict=True))
    foot = _footprint(tm, tk, tn, 2)
    assert_true(
        foot <= sram,
        f"[{case}] tiles {(tm, tk, tn)} need {foot:,} B of SRAM, over the budget of {sram:,} B: "
        "count both buffers of the A and B tiles (2 x 2 B each) and the fp32 accumulators "
        "(4 B x tm x tn).",
    )
    intensity = 2 * m * k * n / _traffic(m, k, n, tm, tn, 2)
    assert_true(
        intensity >= ridge,
        f"[{case}] tiles {(tm, tk, tn)} fit the SRAM but give {intensity:.0f} FLOP/B of HBM "
        f"traffic, below the ridge {ridge:.0f}: over the traffic budget, memory-bound. Every "
        "A tile is re-read N/tn times and every B tile M/tm times: grow tm and tn, keep tk "
        "small (it costs SRAM, not traffic).",
    )
    return intensity


@grader(
    "27.4",
    blocks=(
        f"{_M}:map_gemm",
        f"{_M}:sram_footprint",
        f"{_M}:hbm_bytes",
        f"{__name__}:_footprint",
        f"{__name__}:_traffic",
    ),
    hand="property",
)
def check_choose_tiles(choose_tiles: Callable[..., object]) -> str:
    """Exercise 27.4: choose_tiles(M, K, N, sram_bytes, ridge) -> (tm, tk, tn), compute-bound."""
    new = fresh_rng("27.4")
    cases: list[tuple[str, int, int, int, int, float]] = list(_TILE_CASES)
    for i in range(3):
        m, k, n = (int(v) * 256 for v in new.integers(4, 33, 3))
        t = int(new.choice([256, 384, 512]))
        tm, tn = min(t, m), min(t, n)
        ridge = 0.9 * 2 * m * k * n / _traffic(m, k, n, tm, tn, 2)
        sram = int(1.15 * _footprint(tm, 32, tn, 2))
        cases.append((fresh(f"random case {i}: {m}x{k}x{n}"), m, k, n, sram, round(ridge, 1)))
    worst = [_one_tiles(choose_tiles, *c) / c[-1] for c in cases]
    return (
        f"{len(cases)} GEMMs (3 fresh) fit their SRAM and stay compute-bound; tightest margin "
        f"{min(worst):.2f}x the ridge"
    )
