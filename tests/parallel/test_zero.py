"""ZeRO: memory per rank equal to the paper's formulas, 2Ψ/3Ψ communication, same training."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.comm.simworld import SimWorld
from minitorch.parallel.zero import ZeroRank, zero3_forward, zero3_train_step, zero_bytes, zero_comm

SHAPES = [(8, 16), (16, 16), (16, 8)]
PSI = sum(a * b for a, b in SHAPES)


def _run(stage: int, n: int, steps: int = 2):
    gen = np.random.default_rng(0)
    params = [gen.standard_normal(s) * 0.3 for s in SHAPES]
    x, y = gen.standard_normal((8, 8)), gen.standard_normal((8, 8)) * 0.5
    world = SimWorld(n)

    def rank(comm):
        store = ZeroRank(comm, params, stage, lr=1e-2)
        rows = np.array_split(np.arange(8), n)[comm.rank]
        sent = []
        for _ in range(steps):
            before = world.bytes_sent[comm.rank]
            zero3_train_step(store, x[rows], y[rows])
            sent.append(world.bytes_sent[comm.rank] - before)
        return store.memory_bytes(), store.peak_bytes, sent, store.master

    return world.run(rank)


def test_fig1_numbers():
    gb = [round(zero_bytes(7.5e9, 64, s) / 1e9, 1) for s in range(4)]
    assert gb == [120.0, 31.4, 16.6, 1.9]
    assert zero_comm(7.5e9, 2) == 15e9 and zero_comm(7.5e9, 3) == 22.5e9


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_memory_and_volume_equal_formulas(stage, n):
    for held, peak, sent, _ in _run(stage, n):
        assert held == zero_bytes(PSI, n, stage)
        assert sent == [2 * zero_comm(PSI, stage) * (n - 1) / n] * 2  # fp16: 2 bytes each
        if stage == 3:
            assert peak - held <= 2 * 16 * 16  # one gathered fp16 layer at a time


def test_every_stage_trains_to_the_same_weights():
    def full(out, n):
        return [np.concatenate([out[r][3][i] for r in range(n)]) for i in range(len(SHAPES))]

    want = [w for w in _run(0, 4)[0][3]]
    for stage in (1, 2, 3):
        got = full(_run(stage, 4), 4)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_adam_step_matches_torch():
    import torch

    gen = np.random.default_rng(5)
    w0, g = gen.standard_normal(8).astype(np.float32), gen.standard_normal(8)
    g16 = g.astype(np.float16)

    def rank(comm):
        store = ZeroRank(comm, [w0], 1, lr=1e-2)
        store.reduce_grad(0, g16)
        store.update()
        return store.master[0]

    got = np.concatenate(SimWorld(2).run(rank))
    t = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([t], lr=1e-2)
    t.grad = torch.tensor(g16.astype(np.float32))
    opt.step()
    np.testing.assert_allclose(got, t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_zero3_forward_frees_each_layer():
    gen = np.random.default_rng(1)
    params = [gen.standard_normal(s) * 0.3 for s in SHAPES]
    x = gen.standard_normal((2, 8))

    def rank(comm):
        store = ZeroRank(comm, params, 3)
        out = zero3_forward(store, x)
        return out, store.peak_bytes - store.memory_bytes()

    want = x.astype(np.float32)
    for p in params:
        want = np.tanh(want @ p.astype(np.float32).astype(np.float16).astype(np.float32))
    for out, extra in SimWorld(4).run(rank):
        np.testing.assert_allclose(out, want, rtol=1e-6)
        assert extra == 16 * 16 * 2
