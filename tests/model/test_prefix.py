"""Prefix tuning reference: the numpy kernels against torch autograd; off / P = 0 is the base."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT
from minitorch.model.prefix import (
    PrefixSelfAttention,
    apply_prefix,
    prefix_attention_backward,
    prefix_attention_forward,
    prefix_parameter_count,
)


@pytest.mark.parametrize(
    ("h", "tq", "n", "p", "d"), [(2, 4, 4, 0, 3), (1, 1, 5, 3, 4), (3, 6, 6, 2, 8)]
)
def test_kernels_match_torch(h, tq, n, p, d):
    g = np.random.default_rng(h + n + p)
    q, k, v = (
        g.standard_normal((h, tq, d)),
        g.standard_normal((h, n, d)),
        g.standard_normal((h, n, d)),
    )
    pk, pv, go = (
        g.standard_normal((h, p, d)),
        g.standard_normal((h, p, d)),
        g.standard_normal((h, tq, d)),
    )
    t = lambda a, r=False: torch.tensor(a, requires_grad=r)  # noqa: E731
    pkt, pvt = t(pk, True), t(pv, True)
    kk, vv = torch.cat([pkt, t(k)], 1), torch.cat([pvt, t(v)], 1)
    hidden = torch.zeros(tq, p + n, dtype=torch.bool)
    hidden[:, p:] = torch.ones(n, n, dtype=torch.bool).triu(1)[n - tq :]
    s = (t(q) @ kk.transpose(1, 2) / math.sqrt(d)).masked_fill(hidden, -math.inf)
    out = torch.softmax(s, -1) @ vv
    out.backward(t(go))
    np.testing.assert_allclose(prefix_attention_forward(q, k, v, pk, pv), out.detach(), rtol=1e-12)
    dpk, dpv = prefix_attention_backward(q, k, v, pk, pv, go)
    np.testing.assert_allclose(dpk, pkt.grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dpv, pvt.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pos", ["rope", "alibi"])
def test_off_or_empty_prefix_is_the_base_exactly_and_only_the_prefix_trains(pos):
    cfg = GPTConfig(
        vocab_size=11, block_size=8, n_layer=2, n_head=4, n_kv_head=2, d_model=16, pos=pos
    )
    x = np.random.default_rng(0).integers(0, 11, (3, 7))
    base = GPT(cfg, seed=1)(x).data
    empty = apply_prefix(GPT(cfg, seed=1), 0, rng=np.random.default_rng(0))
    assert np.array_equal(empty(x).data, base)
    model = apply_prefix(GPT(cfg, seed=1), 3, rng=np.random.default_rng(0))
    assert not np.array_equal(model(x).data, base)
    model.loss(x, x).backward()
    for name, p in model.named_parameters():
        assert p.requires_grad == ("prefix_" in name), name
        assert (p.grad is not None and np.any(p.grad != 0)) == ("prefix_" in name), name
    trainable = sum(p.size for p in model.parameters() if p.requires_grad)
    assert trainable == prefix_parameter_count(2, 2, 4, 3) == 2 * 2 * 2 * 3 * 4
    for _, m in model.named_modules():
        if isinstance(m, PrefixSelfAttention):
            m.enabled = False
    assert np.array_equal(model(x).data, base)


def test_the_model_runs_the_kernel_per_head():
    """One layer's attention with a prefix equals the numpy kernel on its q, k, v (ALiBi off)."""
    cfg = GPTConfig(
        vocab_size=11, block_size=8, n_layer=1, n_head=2, n_kv_head=2, d_model=8, pos="rope"
    )
    model = apply_prefix(
        GPT(cfg, seed=2, dtype=np.float64), 2, rng=np.random.default_rng(1), std=0.5
    )
    attn = model.blocks[0].attn
    from minitorch.autograd import Tensor
    from minitorch.model.positions import apply_rope, rope_tables

    x = Tensor(np.random.default_rng(3).standard_normal((1, 5, 8)))
    b = attn.base
    q = b.q_proj(x).reshape(1, 5, 2, 4).transpose(1, 2)
    k = b.k_proj(x).reshape(1, 5, 2, 4).transpose(1, 2)
    v = b.v_proj(x).reshape(1, 5, 2, 4).transpose(1, 2)
    cos, sin = rope_tables(5, 4, cfg.rope_base, np.float64)
    q, k = apply_rope(q, cos, sin).data[0], apply_rope(k, cos, sin).data[0]
    y = prefix_attention_forward(q, k, v.data[0], attn.prefix_k.data, attn.prefix_v.data)
    want = b.o_proj(Tensor(y.transpose(1, 0, 2).reshape(1, 5, 8))).data
    np.testing.assert_allclose(attn(x).data, want, rtol=1e-12, atol=1e-14)
