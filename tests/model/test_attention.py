"""Attention pieces against torch SDPA: causal mask, scale, GQA head mapping, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.autograd import Tensor
from minitorch.model.attention import causal_mask, repeat_kv, scaled_dot_product_attention

pytestmark = pytest.mark.lab09


def test_causal_mask_hides_only_the_future() -> None:
    m = causal_mask(4)
    assert np.all(np.isneginf(m[np.triu_indices(4, 1)])) and np.all(m[np.tril_indices(4)] == 0)


@pytest.mark.parametrize("shape", [(1, 1, 5, 4), (2, 3, 7, 8)])
def test_sdpa_matches_torch_values_and_gradients(shape: tuple[int, ...]) -> None:
    g = np.random.default_rng(0)
    arrs = [g.standard_normal(shape) for _ in range(3)]
    ts = [Tensor(a, requires_grad=True) for a in arrs]
    out = scaled_dot_product_attention(*ts)
    (out * out).sum().backward()
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    ref = F.scaled_dot_product_attention(*tt, is_causal=True)
    (ref * ref).sum().backward()
    assert np.allclose(out.data, ref.detach().numpy(), atol=1e-12)
    for t, r in zip(ts, tt, strict=True):
        assert np.allclose(t.grad, r.grad.numpy(), atol=1e-10)
    assert np.allclose(scaled_dot_product_attention(*arrs), out.data)  # numpy in, numpy out


def test_repeat_kv_groups_consecutive_query_heads() -> None:
    k = Tensor(np.arange(2.0).reshape(1, 2, 1, 1))
    assert repeat_kv(k, 3).data.reshape(-1).tolist() == [0, 0, 0, 1, 1, 1]
