"""The course GPT equals a torch twin with the same weights, for every option combination."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from a2s.checks.lab09._truth import from_torch, to_torch
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT

pytestmark = pytest.mark.lab09

COMBOS = list(itertools.product([4, 2, 1], ["rope", "alibi"]))  # MHA, GQA, MQA x RoPE, ALiBi


@pytest.mark.parametrize(("n_kv", "pos"), COMBOS)
@pytest.mark.parametrize(
    ("norm", "mlp", "tie"), [("rmsnorm", "swiglu", True), ("layernorm", "gelu", False)]
)
def test_logits_equal_torch_in_float64(n_kv: int, pos: str, norm: str, mlp: str, tie: bool) -> None:
    cfg = GPTConfig(
        vocab_size=16,
        block_size=16,
        n_layer=2,
        n_head=4,
        n_kv_head=n_kv,
        d_model=32,
        pos=pos,
        norm=norm,
        mlp=mlp,
        tie_head=tie,
    )
    model = GPT(cfg, seed=3, dtype=np.float64)
    idx = np.random.default_rng(0).integers(0, 16, (2, 16))
    ours = model(idx).data
    theirs = to_torch(model)(torch.from_numpy(idx)).detach().numpy()
    assert np.abs(ours - theirs).max() <= 1e-5  # measured: about 1e-15


def test_gradients_equal_torch() -> None:
    cfg = GPTConfig(vocab_size=16, block_size=8, n_layer=1, n_head=4, n_kv_head=2, d_model=16)
    model = GPT(cfg, seed=1, dtype=np.float64)
    idx = np.random.default_rng(1).integers(0, 16, (3, 8))
    tgt = np.random.default_rng(2).integers(0, 16, (3, 8))
    model.loss(idx, tgt).backward()
    tm = to_torch(model)
    logits = tm(torch.from_numpy(idx))
    torch.nn.functional.cross_entropy(
        logits.reshape(-1, 16), torch.from_numpy(tgt).reshape(-1)
    ).backward()
    for name, p in model.named_parameters():
        tg = dict(tm.named_parameters())[name].grad.numpy()
        assert np.allclose(p.grad, tg, atol=1e-10), name


def test_from_torch_round_trip_and_state_dict() -> None:
    cfg = GPTConfig(n_kv_head=1, pos="alibi")
    a, b = GPT(cfg, seed=0), GPT(cfg, seed=1)
    from_torch(to_torch(a, torch.float32), b)
    for k, v in a.state_dict().items():
        assert np.array_equal(v, b.state_dict()[k])
    assert "lm_head.weight" not in a.state_dict()  # tied head: one matrix


def test_generate_is_deterministic_and_respects_the_window() -> None:
    model = GPT(GPTConfig(block_size=8), seed=0)
    start = np.array([[3, 7, 8]])
    out = model.generate(start, 12)
    assert out.shape == (1, 15) and np.array_equal(out[:, :3], start)
    assert np.array_equal(out, model.generate(start, 12))
    s1, s2 = (
        model.generate(start, 6, greedy=False, seed=5),
        model.generate(start, 6, greedy=False, seed=5),
    )
    assert np.array_equal(s1, s2)


def test_config_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError):
        GPTConfig(n_head=4, n_kv_head=3)
    with pytest.raises(ValueError):
        GPTConfig(pos="learned")
    assert GPTConfig(mlp="swiglu", d_model=64).ff_dim == 176
    assert GPTConfig.from_dict(GPTConfig(n_kv_head=2).to_dict()).n_rep == 2


def test_the_bench_torch_forward_equals_the_course_gpt() -> None:
    from a2s.bench.lab09 import torch_forward

    model = GPT(GPTConfig(n_kv_head=2, block_size=16), seed=2, dtype=np.float64)
    idx = np.random.default_rng(3).integers(0, 16, (2, 16))
    forward, _ = torch_forward(model)
    assert np.abs(forward(torch.from_numpy(idx)).numpy() - model(idx).data).max() <= 1e-10
