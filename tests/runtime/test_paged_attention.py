"""Paged attention equals contiguous attention (torch SDPA); the paged tiny GPT decodes
exactly the tokens of the model's own no-cache generation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.model.checkpoint import load_pretrained
from minitorch.model.positions import alibi_slopes
from minitorch.runtime.block_manager import BlockManager
from minitorch.runtime.paged_attention import PagedKVCache, gather_kv, paged_attention, slot_mapping
from minitorch.runtime.paged_model import Chunk, PagedGPT


def _torch_attention(q, k, v, bias=None):
    n_q, h, _ = q.shape
    rep = h // k.shape[1]
    qt = torch.tensor(q).permute(1, 0, 2)
    kt = torch.tensor(k).repeat_interleave(rep, 1).permute(1, 0, 2)
    vt = torch.tensor(v).repeat_interleave(rep, 1).permute(1, 0, 2)
    L = k.shape[0]
    mask = torch.ones(n_q, L, dtype=torch.bool).tril(L - n_q)
    attn = torch.zeros(h, n_q, L, dtype=qt.dtype).masked_fill(~mask, float("-inf"))
    if bias is not None:
        attn = attn + torch.tensor(bias)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=attn).permute(1, 0, 2).numpy()


def test_slot_mapping_is_table_times_block_size_plus_offset() -> None:
    assert slot_mapping([7, 2, 5], [0, 3, 4, 9], 4).tolist() == [28, 31, 8, 21]


@pytest.mark.parametrize(
    ("n_q", "L", "heads", "alibi"),
    [(1, 9, (4, 2), False), (5, 13, (4, 4), False), (3, 3, (4, 1), True)],
)
def test_paged_attention_equals_contiguous(n_q, L, heads, alibi) -> None:
    rng = np.random.default_rng(0)
    h, hkv, d, bs = *heads, 8, 4
    table = rng.permutation(10)[: -(-L // bs)].tolist()
    k_cache = rng.standard_normal((10, bs, hkv, d)) * 100  # stale data everywhere
    v_cache = rng.standard_normal((10, bs, hkv, d)) * 100
    k, v = rng.standard_normal((L, hkv, d)), rng.standard_normal((L, hkv, d))
    flat_k, flat_v = k_cache.reshape(-1, hkv, d), v_cache.reshape(-1, hkv, d)
    flat_k[slot_mapping(table, range(L), bs)] = k
    flat_v[slot_mapping(table, range(L), bs)] = v
    assert np.array_equal(gather_kv(k_cache, table, L), k)
    q = rng.standard_normal((n_q, h, d))
    slopes = alibi_slopes(h) if alibi else None
    bias = None
    if alibi:
        i = np.arange(L - n_q, L)[:, None]
        bias = -slopes[:, None, None] * (i - np.arange(L)[None])
    got = paged_attention(q, k_cache, v_cache, table, L, slopes)
    np.testing.assert_allclose(got, _torch_attention(q, k, v, bias), atol=1e-10)


def test_paged_gpt_matches_the_model_and_its_greedy_generation() -> None:
    model = load_pretrained()
    cfg = model.config
    bm = BlockManager(16, 4)
    cache = PagedKVCache(cfg.n_layer, 16, 4, cfg.n_kv_head, cfg.head_dim)
    runner = PagedGPT(model, cache)
    prompts = [[3, 7, 8, 9, 12, 2], [4, 15, 9, 8, 7, 10, 2]]
    for i, p in enumerate(prompts):
        bm.allocate(i, p)
    full = runner.forward([Chunk(prompts[0], 0, bm.block_table(0))], all_logits=True)
    np.testing.assert_allclose(full, model.forward(np.array([prompts[0]])).data[0], atol=1e-4)
    # decode both in one batch; the chunks reuse the K/V written above
    seqs = [list(p) for p in prompts]
    logits = runner.forward([Chunk(p, 0, bm.block_table(i)) for i, p in enumerate(prompts)])
    for _ in range(8):
        chunks = []
        for i, tok in enumerate(logits.argmax(-1).tolist()):
            seqs[i].append(tok)
            bm.append_slot(i, tok)
            chunks.append(Chunk([tok], len(seqs[i]) - 1, bm.block_table(i)))
        logits = runner.forward(chunks)
    for p, s in zip(prompts, seqs, strict=True):
        assert model.generate(np.array([p]), 8)[0].tolist() == s
