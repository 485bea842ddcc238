"""minitorch.model.pruning and pruning_structured: magnitude masks against torch's pruning
utilities, exact counts (Hypothesis), sensitivity and the sparsity curve on the trained tiny
GPT, and structured pruning whose smaller model equals the masked one and saves what the
closed forms say."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from threadpoolctl import threadpool_limits
from torch.nn.utils import prune

from minitorch.autograd import no_grad
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.config import GPTConfig
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.pruning import (
    apply_masks,
    global_masks,
    layer_masks,
    linear_weights,
    magnitude_mask,
    n_pruned,
    sensitivity,
    sparsity,
    sparsity_curve,
)
from minitorch.model.pruning_structured import (
    channel_scores,
    compact_heads,
    head_savings,
    head_scores,
    linear_cost,
    mlp_savings,
    model_linear_cost,
    prune_heads,
    prune_mlp,
)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Tiny matrices: BLAS threads only contend with the other test workers."""
    with threadpool_limits(limits=1):
        yield


SMALL = GPTConfig(n_layer=2, n_head=4, n_kv_head=2, d_model=32)
X, Y = task_batch(["reverse", "sort"], 64, seed=777)


def _loss(model: GPT) -> float:
    with no_grad():
        return model.loss(X, Y, ignore=IGNORE).item()


@pytest.fixture(scope="module")
def trained() -> GPT:
    return load_pretrained()


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, (5, 7), elements=st.floats(-4, 4, allow_nan=False)),
    st.floats(0, 1),
)
def test_mask_removes_exactly_round_s_n_of_the_smallest(w, s):
    m = magnitude_mask(w, s)
    k = n_pruned(w.size, s)
    assert int((~m).sum()) == k
    if 0 < k < w.size:
        assert np.abs(w[m]).min() >= np.abs(w[~m]).max()


@pytest.mark.parametrize("s", [0.25, 0.5, 0.8])
def test_layer_and_global_masks_match_torch_prune(s):
    g = np.random.default_rng(3)
    weights = {"a": g.standard_normal((6, 8)), "b": 0.3 * g.standard_normal((4, 8))}
    lins = {}
    for name, w in weights.items():
        lin = torch.nn.Linear(8, w.shape[0], bias=False).double()
        lin.weight.data = torch.from_numpy(w.copy())
        lins[name] = lin
    for name, lin in lins.items():
        prune.l1_unstructured(lin, "weight", amount=n_pruned(lin.weight.numel(), s))
        assert np.array_equal(layer_masks(weights, s)[name], lin.weight_mask.numpy() > 0)
        prune.remove(lin, "weight")
        lin.weight.data = torch.from_numpy(weights[name].copy())  # unpruned again
    total = sum(w.size for w in weights.values())
    prune.global_unstructured(
        [(lin, "weight") for lin in lins.values()],
        pruning_method=prune.L1Unstructured,
        amount=n_pruned(total, s),
    )
    masks = global_masks(weights, s)
    for name, lin in lins.items():
        assert np.array_equal(masks[name], lin.weight_mask.numpy() > 0)
    assert sparsity(masks) == pytest.approx(n_pruned(total, s) / total)


def test_global_ranking_prunes_the_small_layer_more():
    g = np.random.default_rng(0)
    weights = {"big": g.standard_normal((8, 8)), "small": 0.1 * g.standard_normal((8, 8))}
    masks = global_masks(weights, 0.5)
    assert (~masks["small"]).sum() > (~masks["big"]).sum()
    assert (~layer_masks(weights, 0.5)["small"]).sum() == 32


def test_apply_masks_copies_and_checks_names():
    model = GPT(SMALL, seed=1)
    w = linear_weights(model)
    masks = layer_masks(w, 0.5)
    pruned = apply_masks(model, masks)
    for name, pw in linear_weights(pruned).items():
        assert np.array_equal(pw, w[name] * masks[name])
    assert np.array_equal(linear_weights(model)["blocks.0.mlp.w1"], w["blocks.0.mlp.w1"])
    with pytest.raises(KeyError):
        apply_masks(model, {"nope": np.ones(1)})
    with pytest.raises(ValueError):
        apply_masks(model, {"blocks.0.mlp.w1": np.ones((2, 2))})
    with pytest.raises(ValueError):
        magnitude_mask(np.ones(3), 1.5)


def test_sensitivity_and_the_curve_on_the_trained_model(trained):
    base = _loss(trained)
    sens = sensitivity(trained, [0.0, 0.9], _loss)
    assert set(sens) == set(linear_weights(trained))
    assert all(v[0] == pytest.approx(base, rel=1e-6) for v in sens.values())
    assert all(v[1] > v[0] for v in sens.values())
    for scope in ("global", "layer"):
        curve = sparsity_curve(trained, [0.0, 0.5, 0.9], _loss, scope)
        assert curve[0] == pytest.approx(base, rel=1e-6) and curve[0] < curve[1] < curve[2]
    with pytest.raises(ValueError):
        sparsity_curve(trained, [0.5], _loss, "row")


def _masked_mlp(model: GPT, keep: int) -> GPT:
    """The same-size model with the channels prune_mlp drops set to zero (plain loops)."""
    out = apply_masks(model, {})
    for i, block in enumerate(out.blocks):
        order = sorted(
            range(block.mlp.w2.weight.shape[1]), key=lambda j: -channel_scores(model)[i][j]
        )
        for j in order[keep:]:
            block.mlp.w1.weight.data[j] = 0
            block.mlp.w3.weight.data[j] = 0
            block.mlp.w2.weight.data[:, j] = 0
    return out


@pytest.mark.parametrize("keep", [40, 88])
def test_smaller_mlp_model_equals_the_masked_one_and_saves_the_closed_form(trained, keep):
    small = prune_mlp(trained, keep)
    assert small.config.ff_dim == keep and small.blocks[0].mlp.w2.weight.shape == (64, keep)
    with no_grad():
        a, b = small(X).data, _masked_mlp(trained, keep)(X).data
    assert np.allclose(a, b, atol=1e-5)
    full, part = model_linear_cost(trained), model_linear_cost(small)
    saved = mlp_savings(trained.config, keep)
    assert (full[0] - part[0], full[1] - part[1]) == (saved.linear_flops, saved.weight_bytes)
    with pytest.raises(ValueError):
        prune_mlp(trained, 0)


def test_head_pruning_q_rows_are_dead_compute_and_the_savings_match(trained):
    heads = {0: [0, 1], 1: [3]}  # layer 0 loses both heads of K/V group 0
    pruned = prune_heads(trained, heads)
    d = trained.config.head_dim
    only_o = apply_masks(trained, {})
    for layer, hs in heads.items():
        for h in hs:
            only_o.blocks[layer].attn.o_proj.weight.data[:, h * d : (h + 1) * d] = 0
    assert _loss(pruned) == pytest.approx(_loss(only_o), rel=1e-5)
    attn0 = pruned.blocks[0].attn
    assert not attn0.k_proj.weight.data[:d].any() and attn0.k_proj.weight.data[d:].any()
    compact = compact_heads(trained, heads)
    assert compact[0]["q_proj"].shape == (2 * d, 64) and compact[0]["k_proj"].shape == (d, 64)
    assert compact[1]["o_proj"].shape == (64, 3 * d) and compact[1]["v_proj"].shape == (2 * d, 64)
    full = linear_cost(
        [
            a.weight.data
            for b in trained.blocks
            for a in (b.attn.q_proj, b.attn.k_proj, b.attn.v_proj, b.attn.o_proj)
        ]
    )
    part = linear_cost([w for layer in compact for w in layer.values()])
    saved = head_savings(trained.config, heads, seq_len=18)
    assert (full[0] - part[0], full[1] - part[1]) == (saved.linear_flops, saved.weight_bytes)
    assert saved.kv_bytes == 2 * d * 4  # one K/V head gone: its K and V, 4-byte values
    t = 18
    assert saved.attention_flops == 3 * sum(4 * d * (i + 1) for i in range(t))
    assert head_scores(trained).shape == (2, 4)
    with pytest.raises(ValueError):
        prune_heads(trained, {2: [0]})
