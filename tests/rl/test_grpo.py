"""GRPO in the course autograd equals an independent torch twin (loss and gradients), and the
advantages, the clip and the k3 estimator behave as the formulas say."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.rl.grpo import group_advantages, grpo_loss, k3_kl, token_logprobs


def _case(seed: int, b: int = 6, length: int = 9, t: int = 5, v: int = 7):
    g = np.random.default_rng(seed)
    logits = g.standard_normal((b, length, v))
    tokens = g.integers(0, v, (b, t))
    positions = np.sort(g.integers(0, length, (b, t)), axis=1)
    old = -g.uniform(0.5, 3.0, (b, t))
    ref = -g.uniform(0.5, 3.0, (b, t))
    mask = (g.uniform(size=(b, t)) < 0.8).astype(float)
    mask[:, 0] = 1.0
    adv = group_advantages(np.resize([1.0, 0.0, 0.0], b), 3)  # no group of equal rewards
    return logits, tokens, positions, old, ref, mask, adv


def _torch_loss(logits, tokens, positions, old, ref, mask, adv, clip, beta, temp, agg):
    """GRPO written directly from the paper's formula in torch (float64)."""
    x = torch.tensor(logits, requires_grad=True)
    rows = torch.arange(tokens.shape[0])[:, None]
    logp_all = torch.log_softmax(x[rows, torch.tensor(positions)] / temp, dim=-1)
    logp = torch.gather(logp_all, -1, torch.tensor(tokens)[..., None])[..., 0]
    a = torch.tensor(adv)[:, None]
    ratio = torch.exp(logp - torch.tensor(old))
    surr = torch.min(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
    d = torch.tensor(ref) - logp
    per = surr - beta * (torch.exp(d) - d - 1)
    m = torch.tensor(mask)
    if agg == "seq":
        j = ((per * m).sum(1) / m.sum(1)).mean()
    else:
        j = (per * m).sum() / m.sum()
    (-j).backward()
    return float(-j.detach()), x.grad.numpy()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("clip", "beta", "temp", "agg"),
    [(0.2, 0.04, 1.0, "seq"), (0.1, 0.0, 2.0, "seq"), (0.3, 0.1, 1.5, "token")],
)
def test_loss_and_gradient_equal_a_torch_twin(seed, clip, beta, temp, agg):
    logits, tokens, positions, old, ref, mask, adv = _case(seed)
    x = Tensor(logits, requires_grad=True)
    logp = token_logprobs(x, tokens, positions, temp)
    loss, stats = grpo_loss(logp, old, ref, adv, mask, clip, beta, agg)
    loss.backward()
    want, grad = _torch_loss(logits, tokens, positions, old, ref, mask, adv, clip, beta, temp, agg)
    assert loss.item() == pytest.approx(want, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(x.grad, grad, rtol=1e-9, atol=1e-12)
    assert 0.0 < stats["clip_fraction"] < 1.0  # old logp far from logp: some tokens clip


def test_advantages_are_group_relative():
    r = np.array([1, 0, 0, 0, 1, 1, 1, 1, 0.5, 0.2, 0.9, 0.4])
    adv = group_advantages(r, 4)
    for g in range(3):
        chunk = r[4 * g : 4 * g + 4]
        want = (chunk - chunk.mean()) / (chunk.std(ddof=1) + 1e-6)
        np.testing.assert_allclose(adv[4 * g : 4 * g + 4], want)
    assert np.all(adv[4:8] == 0)  # equal rewards: nothing to learn from this group
    biased = group_advantages(r, 4, unbiased=False)
    assert np.abs(biased[:4]).max() > np.abs(adv[:4]).max()
    with pytest.raises(ValueError, match="groups of 5"):
        group_advantages(r, 5)


def test_k3_is_nonnegative_unbiased_and_zero_at_the_reference():
    g = np.random.default_rng(0)
    p = g.dirichlet(np.ones(6))
    q = 0.7 * p + 0.3 * g.dirichlet(np.ones(6))
    kl = k3_kl(Tensor(np.log(p)), np.log(q)).data  # the estimate at each outcome x ~ p
    assert kl.min() >= 0
    assert float((p * kl).sum()) == pytest.approx(float((p * np.log(p / q)).sum()), rel=1e-12)
    same = k3_kl(Tensor(np.log(p)), np.log(p)).data
    np.testing.assert_allclose(same, 0.0, atol=1e-15)


def test_first_epoch_ratio_is_one_and_no_token_clips():
    logits, tokens, positions, _, ref, mask, adv = _case(3)
    logp = token_logprobs(Tensor(logits, requires_grad=True), tokens, positions)
    _, stats = grpo_loss(logp, logp.data.copy(), ref, adv, mask)
    assert stats["ratio_mean"] == pytest.approx(1.0)
    assert stats["clip_fraction"] == 0.0


def test_clipped_tokens_pass_no_gradient():
    logits, tokens, positions, _, _, mask, _ = _case(4, b=3)
    x = Tensor(logits, requires_grad=True)
    logp = token_logprobs(x, tokens, positions)
    old = logp.data - 1.0  # rho = e > 1 + clip everywhere
    loss, stats = grpo_loss(logp, old, None, np.ones(3), np.ones_like(mask), beta=0.0)
    loss.backward()
    assert stats["clip_fraction"] == 1.0
    np.testing.assert_array_equal(x.grad, 0.0)


def test_bad_aggregation_is_refused():
    logits, tokens, positions, old, ref, mask, adv = _case(5)
    logp = token_logprobs(Tensor(logits), tokens, positions)
    with pytest.raises(ValueError, match="agg"):
        grpo_loss(logp, old, ref, adv, mask, agg="sum")
