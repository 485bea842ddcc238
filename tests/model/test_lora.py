"""LoRA reference: the numpy kernels and LoRALinear against torch autograd; merge, adapters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.model.lora import (
    LoRALinear,
    adamw_state_bytes,
    apply_lora,
    count_parameters,
    lora_backward,
    lora_forward,
    merge_weight,
    multi_adapter_forward,
    switch_adapter,
    unmerge_weight,
)
from minitorch.nn import MLP, Linear
from minitorch.optim import AdamW


def _torch(x, w, b, a, bb, s, gy):
    t = lambda v, g=False: torch.tensor(v, dtype=torch.float64, requires_grad=g)  # noqa: E731
    xt, at, bt = t(x, True), t(a, True), t(bb, True)
    y = xt @ t(w).T + t(b) + s * (xt @ at.T) @ bt.T
    y.backward(t(gy))
    return y.detach().numpy(), at.grad.numpy(), bt.grad.numpy(), xt.grad.numpy()


@pytest.mark.parametrize(("n", "d_in", "d_out", "r"), [(3, 4, 5, 1), (6, 8, 8, 4), (1, 7, 2, 2)])
def test_numpy_kernels_match_torch(n, d_in, d_out, r):
    g = np.random.default_rng(n + d_in)
    x, w, b = (
        g.standard_normal((n, d_in)),
        g.standard_normal((d_out, d_in)),
        g.standard_normal(d_out),
    )
    a, bb, gy = (
        g.standard_normal((r, d_in)),
        g.standard_normal((d_out, r)),
        g.standard_normal((n, d_out)),
    )
    y, da, db, dx = _torch(x, w, b, a, bb, 2.0, gy)
    np.testing.assert_allclose(lora_forward(x, w, b, a, bb, 2.0), y, rtol=1e-12)
    for got, want in zip(lora_backward(x, w, a, bb, 2.0, gy), (da, db, dx), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    merged = merge_weight(w, a, bb, 2.0)
    np.testing.assert_allclose(x @ merged.T + b, y, rtol=1e-10)
    np.testing.assert_allclose(unmerge_weight(merged, a, bb, 2.0), w, atol=1e-12)


def test_lora_linear_starts_at_the_base_and_freezes_it():
    g = np.random.default_rng(0)
    base = Linear(6, 4, rng=g, dtype=np.float64)
    layer = LoRALinear(base)
    ad = layer.add_adapter("task", r=2, alpha=4, rng=g)
    x = Tensor(g.standard_normal((5, 6)))
    np.testing.assert_array_equal(layer(x).data, base(x).data)  # B = 0
    assert ad.scale == 2.0 and not np.any(ad.lora_B.data)
    assert np.all(np.abs(ad.lora_A.data) <= 1 / np.sqrt(6))
    assert count_parameters(layer) == (2 * 6 + 4 * 2, 6 * 4 + 4 + 2 * 6 + 4 * 2)


def test_lora_linear_autograd_matches_torch():
    g = np.random.default_rng(1)
    layer = LoRALinear(Linear(5, 3, rng=g, dtype=np.float64))
    ad = layer.add_adapter("a", r=2, alpha=3, rng=g)
    ad.lora_B.data[...] = g.standard_normal((3, 2))
    x = Tensor(g.standard_normal((4, 5)), requires_grad=True)
    gy = g.standard_normal((4, 3))
    y = layer(x)
    y.backward(gy)
    w, b = layer.base.weight.data, layer.base.bias.data
    want = _torch(x.data, w, b, ad.lora_A.data, ad.lora_B.data, 1.5, gy)
    for got, ref in zip((y.data, ad.lora_A.grad, ad.lora_B.grad, x.grad), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    assert layer.base.weight.grad is None and layer.base.bias.grad is None


def test_merge_unmerge_and_switching_adapters():
    g = np.random.default_rng(2)
    layer = LoRALinear(Linear(6, 6, rng=g, dtype=np.float64))
    for name in ("one", "two"):
        layer.add_adapter(name, r=2, alpha=2, rng=g).lora_B.data[...] = g.standard_normal((6, 2))
    x = Tensor(g.standard_normal((3, 6)))
    w0 = layer.base.weight.data.copy()
    outs = {}
    for name in ("one", "two", None):
        layer.set_adapter(name)
        outs[name] = layer(x).data
        layer.merge()
        np.testing.assert_allclose(layer(x).data, outs[name], rtol=1e-12, atol=1e-12)
        if name is not None:  # switching a merged layer would leave the old update in W
            with pytest.raises(RuntimeError):
                layer.set_adapter("one")
        layer.unmerge()
        np.testing.assert_allclose(layer.base.weight.data, w0, atol=1e-13)
    assert not np.allclose(outs["one"], outs["two"])
    layer.set_adapter("two")
    assert [p.requires_grad for p in layer.adapters.parameters()] == [False, False, True, True]


def test_multi_adapter_forward_matches_switching_per_row():
    g = np.random.default_rng(3)
    x, w, b = g.standard_normal((7, 4)), g.standard_normal((3, 4)), g.standard_normal(3)
    adapters = [(g.standard_normal((2, 4)), g.standard_normal((3, 2)), 0.5) for _ in range(3)]
    ids = np.array([0, 2, -1, 1, 0, -1, 2])
    got = multi_adapter_forward(x, w, b, adapters, ids)
    for i, k in enumerate(ids):
        want = x[i] @ w.T + b if k < 0 else lora_forward(x[i : i + 1], w, b, *adapters[k])[0]
        np.testing.assert_allclose(got[i], want, rtol=1e-12)


def test_apply_lora_keeps_layer_order_and_counts_optimizer_state():
    g = np.random.default_rng(4)
    model = MLP([8, 16, 4], rng=g)
    x = Tensor(g.standard_normal((5, 8)).astype(np.float32))
    before = model(x).data
    apply_lora(model, r=2, alpha=4, rng=g)
    np.testing.assert_allclose(model(x).data, before, rtol=1e-6)  # B = 0, order kept
    trainable, total = count_parameters(model)
    assert total == trainable + 8 * 16 + 16 + 16 * 4 + 4
    assert trainable == 2 * (8 + 16) + 2 * (16 + 4)
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model(x).sum().backward()
    opt.step()
    measured = sum(v.nbytes for s in opt.state for v in s.values() if isinstance(v, np.ndarray))
    assert measured == adamw_state_bytes(trainable, 4)
    switch_adapter(model, None)
    np.testing.assert_allclose(model(x).data, before, rtol=1e-6)


def test_apply_lora_on_the_tiny_gpt_targets_named_projections():
    from minitorch.model.checkpoint import load_pretrained

    x = np.array([[1, 2, 3, 4, 5]])
    base, model = load_pretrained(), load_pretrained()
    apply_lora(model, r=2, alpha=4, rng=np.random.default_rng(0), targets=("q_proj", "v_proj"))
    wrapped = [n for n, m in model.named_modules() if isinstance(m, LoRALinear)]
    assert wrapped and all(n.endswith(("q_proj.", "v_proj.")) for n in wrapped)
    np.testing.assert_array_equal(model(x).data, base(x).data)  # B = 0: the same model
    trainable, total = count_parameters(model)
    assert total == base.n_params() + trainable
    d = model.config.d_model
    q, v = (
        dict(model.named_parameters())[f"blocks.0.attn.{p}.base.weight"]
        for p in ("q_proj", "v_proj")
    )
    per_block = 2 * (d + q.shape[0]) + 2 * (d + v.shape[0])
    assert trainable == model.config.n_layer * per_block
