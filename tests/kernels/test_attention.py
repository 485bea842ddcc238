"""Naive attention, the online softmax and the IO model's HBM, against torch and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.kernels.attention import (
    naive_attention,
    naive_attention_hbm,
    online_softmax,
    online_softmax_hbm,
)
from minitorch.kernels.io_model import (
    HBM,
    TileTooLarge,
    block_sizes,
    naive_attention_traffic,
)


def _qkv(n: int, d: int, seed: int = 0) -> list[np.ndarray]:
    g = np.random.default_rng(seed)
    return [g.standard_normal((n, d)) for _ in range(3)]


@pytest.mark.parametrize(("n", "d", "causal"), [(7, 4, False), (7, 4, True), (33, 16, True)])
def test_naive_attention_matches_torch(n: int, d: int, causal: bool) -> None:
    q, k, v = _qkv(n, d)
    o, lse = naive_attention(q, k, v, causal)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    want = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).numpy()
    s = (tq @ tk.T) / np.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -torch.inf)
    np.testing.assert_allclose(o, want, atol=1e-12)
    np.testing.assert_allclose(lse, torch.logsumexp(s, 1).numpy(), atol=1e-12)


def test_naive_attention_hbm_moves_the_model_bytes() -> None:
    q, k, v = _qkv(20, 8)
    hbm = HBM({"Q": q, "K": k, "V": v, "O": np.zeros((20, 8))})
    naive_attention_hbm(hbm, causal=True)
    assert hbm.traffic() == naive_attention_traffic(20, 8)
    np.testing.assert_allclose(hbm.array("O"), naive_attention(q, k, v, True)[0], atol=1e-14)


@pytest.mark.parametrize("block", [1, 3, 8, 50])
def test_online_softmax_matches_torch(block: int) -> None:
    x = np.random.default_rng(1).standard_normal((4, 23)) * 30
    want = torch.softmax(torch.from_numpy(x), dim=1).numpy()
    np.testing.assert_allclose(online_softmax(x, block), want, atol=1e-14)
    hbm = HBM({"X": x, "Y": np.zeros_like(x)}, {"X": 4 * block, "Y": 4 * block})
    online_softmax_hbm(hbm, block)
    np.testing.assert_allclose(hbm.array("Y"), want, atol=1e-14)
    assert hbm.traffic().reads == 2 * x.nbytes and hbm.traffic().writes == x.nbytes


def test_hbm_counts_tiles_and_enforces_limits() -> None:
    hbm = HBM({"A": np.ones((4, 3))}, {"A": 6})
    assert hbm.load("A", slice(0, 2)).shape == (2, 3)
    hbm.store("A", np.zeros((1, 2)), slice(3, 4), slice(1, 3))
    assert hbm.reads == {"A": 48} and hbm.writes == {"A": 16}
    with pytest.raises(TileTooLarge):
        hbm.load("A")
    with pytest.raises(TypeError):
        hbm.load("A", slice(0, 4, 2))
    assert hbm.array("A")[3].tolist() == [1.0, 0.0, 0.0]


def test_block_sizes_follow_algorithm_1() -> None:
    # M = 100 KiB of float32 = 25,600 elements, d = 64: B_c = ceil(25600 / 256) = 100
    assert block_sizes(100 * 1024, 64, 4) == (64, 100)
    assert block_sizes(16 * 1024, 128, 4) == (8, 8)
