"""A transformer layer under TP, TP + SP and recomputation: equal to torch, bytes as the paper."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.comm.collectives import chunk_bounds
from minitorch.comm.simworld import SimWorld
from minitorch.parallel import sequence as sq

S, B, H, A, RATE = 8, 2, 8, 4, 0.25
REPLICATED = ("ln1_g", "ln1_b", "ln2_g", "ln2_b", "bo", "b2")
COLUMN = {"wq": 1, "wk": 1, "wv": 1, "w1": 1, "b1": 0, "wo": 0, "w2": 0}


def _torch_layer(x, p, masks):
    ln = torch.nn.functional.layer_norm
    s, b, h = x.shape
    u = ln(x, (h,), p["ln1_g"], p["ln1_b"], eps=1e-5)
    q, k, v = ((u @ p[n]).reshape(s, b, A, h // A).permute(1, 2, 0, 3) for n in ("wq", "wk", "wv"))
    scores = (q @ k.transpose(-1, -2)) / np.sqrt(h // A)
    scores = scores.masked_fill(~torch.tril(torch.ones(s, s, dtype=torch.bool)), float("-inf"))
    prob = torch.softmax(scores, -1) * torch.tensor(masks["attn"]) / (1 - RATE)
    ctx = (prob @ v).permute(2, 0, 1, 3).reshape(s, b, h)
    h1 = x + (ctx @ p["wo"] + p["bo"]) * torch.tensor(masks["out1"]) / (1 - RATE)
    u2 = ln(h1, (h,), p["ln2_g"], p["ln2_b"], eps=1e-5)
    mlp = torch.nn.functional.gelu(u2 @ p["w1"] + p["b1"], approximate="tanh") @ p["w2"] + p["b2"]
    return h1 + mlp * torch.tensor(masks["out2"]) / (1 - RATE)


def _run(t: int, mode: str, x, params, masks, dy):
    rows = chunk_bounds(S, t)

    def rank(comm):
        r = comm.rank
        p, m = sq.shard_layer(params, t, r), sq.rank_masks(masks, t, r, mode)
        lo, hi = rows[r] if mode == "sp" else (0, S)
        y, cache = sq.layer_forward(comm, x[lo:hi], p, m, A // t, RATE, mode)
        stored = sq.activation_bytes(cache)
        dx, g = sq.layer_backward(comm, cache, p, m, A // t, RATE, mode, dy[lo:hi])
        return y, dx, g, stored

    world = SimWorld(t)
    return world.run(rank), world


@pytest.fixture(scope="module")
def case():
    gen = np.random.default_rng(0)
    x, dy = gen.standard_normal((S, B, H)), gen.standard_normal((S, B, H))
    params, masks = sq.init_layer(H, seed=1), sq.dropout_masks(S, B, H, A, RATE, seed=2)
    tp_ = {n: torch.tensor(v, requires_grad=True) for n, v in params.items()}
    tx = torch.tensor(x, requires_grad=True)
    ty = _torch_layer(tx, tp_, masks)
    ty.backward(torch.tensor(dy))
    grads = {n: v.grad.numpy() for n, v in tp_.items()}
    return x, dy, params, masks, ty.detach().numpy(), tx.grad.numpy(), grads


@pytest.mark.parametrize(
    ("t", "mode"), [(1, "tp"), (2, "tp"), (4, "tp"), (2, "sp"), (4, "sp"), (2, "recompute")]
)
def test_layer_equals_torch_forward_and_backward(case, t: int, mode: str) -> None:
    x, dy, params, masks, want_y, want_dx, want_g = case
    outs, _ = _run(t, mode, x, params, masks, dy)
    rows = chunk_bounds(S, t) if mode == "sp" else [(0, S)] * t
    for r, (y, dx, g, _) in enumerate(outs):
        lo, hi = rows[r]
        np.testing.assert_allclose(y, want_y[lo:hi], atol=1e-10)
        np.testing.assert_allclose(dx, want_dx[lo:hi], atol=1e-10)
        for n, axis in COLUMN.items():
            np.testing.assert_allclose(g[n], np.split(want_g[n], t, axis=axis)[r], atol=1e-10)
    for n in REPLICATED:  # SP: partial sums over the rows; TP: whole on every rank
        got = sum(o[2][n] for o in outs) if mode == "sp" else outs[0][2][n]
        np.testing.assert_allclose(got, want_g[n], atol=1e-10)


@pytest.mark.parametrize("t", [1, 2, 4])
def test_stored_bytes_equal_the_formulas(case, t: int) -> None:
    x, dy, params, masks, *_ = case
    for mode in ("tp", "sp", "recompute") if t > 1 else ("tp", "recompute"):
        outs, _ = _run(t, mode, x, params, masks, dy)
        want = sq.korthikanti_bytes(S, B, H, A, t, mode)
        assert all(o[3] == want for o in outs), (mode, [o[3] for o in outs], want)
    assert sq.korthikanti_bytes(S, B, H, A, 1, "tp") == sq.korthikanti_bytes(S, B, H, A, 1, "none")
    assert sq.korthikanti_bytes(S, B, H, A, 1, "sp") == sq.korthikanti_bytes(S, B, H, A, 1, "none")


def test_sp_moves_the_same_bytes_as_tp(case) -> None:
    x, _, params, masks, *_ = case
    t = 2

    def fwd(mode):
        def rank(comm):
            r = comm.rank
            lo, hi = chunk_bounds(S, t)[r] if mode == "sp" else (0, S)
            p, m = sq.shard_layer(params, t, r), sq.rank_masks(masks, t, r, mode)
            return sq.layer_forward(comm, x[lo:hi], p, m, A // t, RATE, mode)[0]

        world = SimWorld(t)
        world.run(rank)
        return sum(world.bytes_sent)

    assert fwd("tp") == fwd("sp") == 2 * 2 * (t - 1) * x.nbytes  # 2 all-reduces of (s, b, h)


@pytest.mark.parametrize("t", [2, 4])
def test_collectives_per_layer(case, t: int) -> None:
    """TP: 2 all-reduces forward, 2 backward; SP: the same forward, 3 backward (re-gathers)."""
    x, dy, params, masks, *_ = case
    unit = 2 * (t - 1) * x.nbytes  # bytes of one all-reduce of (s, b, h), all ranks together
    for mode, backward in (("tp", 2), ("sp", 3)):
        _, world = _run(t, mode, x, params, masks, dy)
        total = sum(world.bytes_sent)
        fwd = SimWorld(t)
        fwd.run(
            lambda comm, mode=mode: sq.layer_forward(
                comm,
                np.split(x, t)[comm.rank] if mode == "sp" else x,
                sq.shard_layer(params, t, comm.rank),
                sq.rank_masks(masks, t, comm.rank, mode),
                A // t,
                RATE,
                mode,
            )
        )
        assert sum(fwd.bytes_sent) == 2 * unit
        assert total - sum(fwd.bytes_sent) == backward * unit


def test_paper_example_numbers() -> None:
    # GPT-3 175B row of Korthikanti et al. Table: s=2048, b=1, h=12288, a=96, t=8
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    full = sq.korthikanti_bytes(s, b, h, a, 1, "none")
    assert full == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    assert sq.korthikanti_bytes(s, b, h, a, t, "sp") == pytest.approx(full / t)
    assert sq.korthikanti_bytes(s, b, h, a, t, "tp") > sq.korthikanti_bytes(s, b, h, a, t, "sp")
