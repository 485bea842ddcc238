"""MLA: the absorbed form equals the naive one, decoding from the latent cache equals the
full forward, the cache is (d_c + d_h^R) per token (DeepSeek-V2 Table 1), and MLA with a
full-rank latent and identity up-projections is multi-head attention (torch as truth)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.model.mla import (
    MLAConfig,
    init_mla,
    kv_elements_per_token,
    mla_absorbed,
    mla_cache,
    mla_naive,
)

CONFIGS = [
    MLAConfig(),
    MLAConfig(d_model=48, n_head=6, head_dim=8, d_c=12, d_cq=24, rope_dim=8),
    MLAConfig(d_model=16, n_head=2, head_dim=8, d_c=4, d_cq=8, rope_dim=0),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_absorbed_equals_naive(cfg: MLAConfig) -> None:
    w = init_mla(cfg, seed=1)
    h = np.random.default_rng(2).standard_normal((11, cfg.d_model))
    assert np.abs(mla_absorbed(h, w, cfg) - mla_naive(h, w, cfg)).max() <= 1e-12


@pytest.mark.parametrize("cfg", CONFIGS[:2])
def test_decoding_from_the_latent_cache_equals_the_full_forward(cfg: MLAConfig) -> None:
    w = init_mla(cfg, seed=3)
    h = np.random.default_rng(4).standard_normal((9, cfg.d_model))
    full = mla_naive(h, w, cfg)
    c_kv, k_r = mla_cache(h[:6], w, cfg)
    for t in range(6, 9):  # append one token's latent at a time
        c_new, r_new = mla_cache(h[t : t + 1], w, cfg, start=t)
        c_kv, k_r = np.concatenate([c_kv, c_new]), np.concatenate([k_r, r_new])
        out = mla_absorbed(h[t : t + 1], w, cfg, cache=(c_kv, k_r))
        assert np.abs(out[0] - full[t]).max() <= 1e-12


def test_cache_elements_follow_table_1() -> None:
    cfg = CONFIGS[1]
    c_kv, k_r = mla_cache(np.ones((5, cfg.d_model)), init_mla(cfg), cfg)
    per_token = (c_kv.size + k_r.size) // 5
    assert per_token == kv_elements_per_token("mla", 6, 8, d_c=12, rope_dim=8) == 20
    assert kv_elements_per_token("mha", 6, 8) == 96
    assert kv_elements_per_token("gqa", 6, 8, n_group=2) == 32
    assert kv_elements_per_token("mqa", 6, 8) == 16
    # DeepSeek-V2's own choice: d_c = 4 d_h, d_h^R = d_h / 2 -> 4.5 d_h per token
    assert kv_elements_per_token("mla", 128, 128, d_c=512, rope_dim=64) == 4.5 * 128


def test_full_rank_identity_latent_is_multi_head_attention() -> None:
    cfg = MLAConfig(d_model=32, n_head=4, head_dim=8, d_c=32, d_cq=32, rope_dim=0)
    rng = np.random.default_rng(5)
    wq, wk, wv, wo = (rng.standard_normal((32, 32)) / np.sqrt(32) for _ in range(4))
    eye = np.eye(32)
    w = {
        "W_DQ": eye,
        "W_UQ": wq,
        "W_DKV": wk,
        "W_UK": eye,
        "W_UV": wv @ np.linalg.inv(wk),
        "W_QR": np.zeros((0, 32)),
        "W_KR": np.zeros((0, 32)),
        "W_O": wo,
    }
    h = rng.standard_normal((7, 32))

    def heads(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(x).reshape(7, 4, 8).transpose(0, 1)

    o = torch.nn.functional.scaled_dot_product_attention(
        heads(h @ wq.T), heads(h @ wk.T), heads(h @ wv.T), is_causal=True
    )
    mha = o.transpose(0, 1).reshape(7, 32).numpy() @ wo.T
    assert np.abs(mla_naive(h, w, cfg) - mha).max() <= 1e-10
    assert np.abs(mla_absorbed(h, w, cfg) - mha).max() <= 1e-10
