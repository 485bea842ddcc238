"""Graders of exercises 24.4 (a sequence-parallel MLP block) and 24.5 (activation bytes).

24.4: the learner's ``sp_mlp_forward(comm, x, ln_g, ln_b, w1, b1, w2, b2)`` gets rank r's
``s/t`` rows of the block input and returns its rows of ``x + MLP(LayerNorm(x))`` and what it
keeps for backward, ``{"x", "ln", "z", "a"}``. Ground truth: the unsharded block, token by
token. Budgets: the ranks send exactly one all-gather plus one reduce-scatter of ``(s, b, h)``
(the bytes of one all-reduce), and keep at most ``20 sbh/t`` bytes counted as the paper does
(2 per value): the LayerNorm input and output SHARDS and ``z``, ``gelu(z)`` (4h/t wide).

24.5: the learner's ``activation_bytes_per_layer(s, b, h, a, t, mode)`` predicts Korthikanti
et al.'s bytes per layer for ``mode`` in none / tp / sp / recompute; compared with the closed
forms written here and with the bytes the course's layer actually keeps on SimWorld.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab24._truth import (
    BLOCKS,
    all_reduce_bytes,
    budget,
    expect,
    mlp_case,
    mlp_shards,
    plain_mlp,
    run_ranks,
)
from a2s.checks.truths import gelu_tanh, layer_norm
from minitorch.comm.simworld import SimWorld

__all__ = ["check_activation_bytes", "check_sp_mlp", "measured_bytes"]

_TEACHING = [(1, 2, 1, 4, 2441), (2, 4, 2, 4, 2442), (4, 8, 1, 8, 2443), (2, 2, 3, 2, 2444)]
_STORE_SHARD = (
    "keep the LayerNorm output as YOUR s/t rows and all-gather it again in backward "
    "(Korthikanti et al. 4.2.2): storing the gathered (s, b, h) copy is what TP alone does."
)


def _sp_case(gen: np.random.Generator) -> tuple[int, ...]:
    t = int(gen.choice([2, 4]))
    return (
        t,
        t * int(gen.integers(1, 3)),
        int(gen.integers(1, 3)),
        2 * t,
        int(gen.integers(1, 2**31)),
    )


@grader("24.4", blocks=BLOCKS, hand="ranks")
def check_sp_mlp(sp_mlp_forward: Callable[..., Any]) -> str:
    """Exercise 24.4: SP block equals the unsharded rows; one AG + one RS; 1/t of the storage."""
    gen = fresh_rng("24.4")
    specs = list(_TEACHING) + [_sp_case(gen) for _ in range(2)]
    for i, (t, s, b, h, seed) in enumerate(specs):
        label = f"t={t}, s={s}, b={b}, h={h}"
        label = fresh(label) if i >= len(_TEACHING) else label
        c = mlp_case(seed, s, b, h)
        rows = np.split(c["x"], t)
        args = [(rows[r], c["ln_g"], c["ln_b"], *mlp_shards(c, t, r), c["b2"]) for r in range(t)]
        outs, world = run_ranks(sp_mlp_forward, "24.4", t, args, label, "sp_mlp_forward's result")
        ln = layer_norm(c["x"], c["ln_g"], c["ln_b"])
        full = c["x"] + plain_mlp(c, ln)
        for r, got in enumerate(outs):
            if not (isinstance(got, tuple | list) and len(got) == 2 and isinstance(got[1], dict)):
                raise CheckFailure(f"[{label}] rank {r}: return (y, saved) with saved a dict.")
            y, saved = got
            want = np.split(full, t)[r]
            expect(
                label,
                r,
                y,
                want,
                [
                    (
                        full,
                        "That is every row: under SP a rank ends with ITS s/t rows -- "
                        "reduce-scatter the row-parallel output, do not all-reduce.",
                    ),
                    (want - rows[r], "The residual is missing: y = x + MLP(LN(x))."),
                    (
                        want - c["b2"],
                        "b2 is missing: add the whole bias once, after the reduce-scatter.",
                    ),
                    (
                        want + (t - 1) * c["b2"],
                        "b2 was added on every rank before the reduce-scatter: add it after.",
                    )
                    if t > 1
                    else (None, ""),
                ],
                "y",
                "y = x + (gelu_tanh(all_gather(LN(x)) W1_r + b1_r) W2_r, reduce-scattered) "
                "+ b2, on this rank's rows.",
            )
            kept = sum(2 * v.size for v in saved.values() if isinstance(v, np.ndarray))
            limit = 20 * s * b * h // t
            if kept > limit:
                big = [
                    k
                    for k, v in saved.items()
                    if isinstance(v, np.ndarray) and v.shape[0] == s and v.shape[-1] == h and t > 1
                ]
                raise CheckFailure(
                    f"[{label}] rank {r}: right y, but you keep {kept:,} bytes (2 per value) "
                    f"where sequence parallelism needs {limit:,} = 20 sbh/t. "
                    + (
                        f"'{big[0]}' is the full (s, b, h): {_STORE_SHARD}"
                        if big
                        else "Keep x, LN(x) (your rows), z and gelu_tanh(z) only."
                    )
                )
            z = ln @ mlp_shards(c, t, r)[0] + mlp_shards(c, t, r)[1]
            for key, w in (
                ("x", rows[r]),
                ("ln", np.split(ln, t)[r]),
                ("z", z),
                ("a", gelu_tanh(z)),
            ):
                what = "saved holds x and LN(x) (your rows), z = fc1 output, a = gelu_tanh(z)."
                expect(label, r, saved.get(key), w, [], f"saved['{key}']", what)
        budget(
            label,
            world,
            all_reduce_bytes(t, c["x"].nbytes),
            "One all-gather of LN(x) in, "
            "one reduce-scatter of the row-parallel output out: together the bytes of ONE "
            "all-reduce (an all-reduce IS a reduce-scatter then an all-gather).",
        )
    return (
        f"{len(specs)} blocks (t = 1..4, 2 fresh) equal the unsharded rows; one all-gather + one "
        "reduce-scatter (= one all-reduce's bytes); 20 sbh/t bytes kept per rank"
    )


# --------------------------------------------------------------------------- 24.5 bytes
def _formula(s: int, b: int, h: int, a: int, t: int, mode: str) -> float:
    att = 5 * a * s / h
    return (
        s
        * b
        * h
        * {"none": 34 + att, "tp": 10 + 24 / t + att / t, "sp": 34 / t + att / t, "recompute": 2}[
            mode
        ]
    )


_MODE_HINTS = {
    "tp": [
        (
            lambda s, b, h, a, t: s * b * h * (34 / t + 5 * a * s / (h * t)),
            "That is TP + SP. With TP alone the LayerNorm inputs, the block inputs, and the "
            "dropout masks after each block are replicated on every rank: 10 sbh stays whole.",
        ),
        (
            lambda s, b, h, a, t: s * b * h * (10 + 24 / t + 5 * a * s / h),
            "The attention scores are split by heads too: 5as^2b/t.",
        ),
        (
            lambda s, b, h, a, t: s * b * h * (34 + 5 * a * s / (h * t)),
            "TP splits the 24 sbh inside the blocks (the matmul outputs, attention's Q, K, V, "
            "GeLU input, ...) by t: 10 + 24/t.",
        ),
    ],
    "sp": [
        (
            lambda s, b, h, a, t: s * b * h * (34 / t + 5 * a * s / h),
            "The attention scores are split by heads: 5as^2b/t.",
        ),
        (
            lambda s, b, h, a, t: s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
            "That is TP alone: with SP the 10 sbh (LayerNorm inputs, block inputs, dropout "
            "masks) is split along the sequence too, 34 sbh/t in all.",
        ),
    ],
    "none": [
        (
            lambda s, b, h, a, t: s * b * h * (34 + 5 * a * s / h) / t,
            "No parallelism: t plays no part.",
        )
    ],
    "recompute": [
        (
            lambda s, b, h, a, t: s * b * h,
            "Only the layer input is kept, in 16-bit: 2 bytes per value, 2sbh.",
        )
    ],
}


def measured_bytes(s: int, b: int, h: int, a: int, t: int, mode: str) -> int:
    """Bytes rank 0 keeps after the course layer's forward on SimWorld (paper's counting)."""
    from minitorch.parallel import sequence as sq

    params, masks = sq.init_layer(h, seed=0), sq.dropout_masks(s, b, h, a, 0.1, seed=1)
    x = np.random.default_rng(2).standard_normal((s, b, h))
    run = "tp" if mode == "none" else mode

    def rank(comm: Any) -> int:
        r = comm.rank
        rows = np.split(x, t)[r] if run == "sp" else x
        p, m = sq.shard_layer(params, t, r), sq.rank_masks(masks, t, r, run)
        return sq.activation_bytes(sq.layer_forward(comm, rows, p, m, a // t, 0.1, run)[1])

    return int(SimWorld(t).run(rank)[0])


@grader("24.5", blocks=BLOCKS, hand="measure")
def check_activation_bytes(activation_bytes_per_layer: Callable[..., Any]) -> str:
    """Exercise 24.5: predicted bytes per layer equal the formulas and the measurement."""
    gen = fresh_rng("24.5")
    configs = [(2048, 1, 12288, 96, 8), (1024, 4, 4096, 32, 4), (8, 2, 8, 4, 2), (8, 1, 8, 4, 4)]
    for _ in range(2):
        s, b, h = (
            8 * int(gen.integers(1, 64)),
            int(gen.integers(1, 9)),
            64 * int(gen.integers(1, 9)),
        )
        configs.append((s, b, h, 8, int(gen.choice([2, 4, 8]))))
    rows = []
    for i, (s, b, h, a, t) in enumerate(configs):
        for mode in ("none", "tp", "sp", "recompute"):
            label = f"s={s}, b={b}, h={h}, a={a}, t={t}, mode={mode!r}"
            label = fresh(label) if i >= 4 else label
            got = plain(activation_bytes_per_layer(s, b, h, a, t, mode), case=label)
            want = _formula(s, b, h, a, t, mode)
            if not isinstance(got, int | float | np.number) or not np.isclose(got, want, rtol=1e-9):
                known = [
                    msg
                    for f, msg in _MODE_HINTS.get(mode, [])
                    if isinstance(got, int | float | np.number)
                    and np.isclose(got, f(s, b, h, a, t), rtol=1e-9)
                ]
                hint = (known or ["Korthikanti et al. 2022, Table 2 (bytes, 16-bit values)."])[0]
                raise CheckFailure(
                    f"[{label}] you predict {got!r} bytes, the formula gives {want:,.0f}. {hint}"
                )
            if s * b * h <= 256 and mode != "none":
                rows.append((got, measured_bytes(s, b, h, a, t, mode), label))
    for got, measured, label in rows:
        if not np.isclose(got, measured):
            raise CheckFailure(f"[{label}] predicted {got}, the layer keeps {measured} bytes.")
    s, b, h, a, t = configs[0]
    return (
        f"{len(configs) * 4} predictions (2 configs fresh) equal the formulas and {len(rows)} "
        f"measurements on SimWorld; GPT-3 175B at t=8: "
        f"{_formula(s, b, h, a, t, 'tp') / 2**30:.2f} GiB (TP) vs "
        f"{_formula(s, b, h, a, t, 'sp') / 2**30:.2f} GiB (TP+SP) per layer"
    )
