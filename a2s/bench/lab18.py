"""Lab 18 experiments: KV memory waste of paging vs max-length reservation, the cost of
gathering K/V through a block table, and paged decoding of the tiny GPT vs no-cache generation.

1. Waste on the lab's workload (200 ShareGPT-like requests, T_max 2048, blocks of 16), every
   request at its full length, by the block manager's own count (anchor: vLLM, 60-80 %
   reserved vs under 4 % paged).
2. Paged attention (gather through a shuffled block table) / attention on contiguous K/V, one
   decode query over 1,024 tokens: what the indirection costs in numpy.
3. Greedy decoding of the tiny GPT, 8 sequences x 20 tokens: ``PagedGPT`` (K/V cached, one
   batched forward per token) against ``GPT.generate`` (the whole window recomputed per token).

Lab: 18_paged_kv_cache
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.block_manager import BlockManager
from minitorch.runtime.paged_attention import PagedKVCache, paged_attention
from minitorch.runtime.paged_model import Chunk, PagedGPT


@register
def kv_waste() -> list[Figure]:
    g = np.random.default_rng(0)
    prompt = np.clip(g.lognormal(np.log(120), 0.8, 200), 4, 1024).astype(int)
    total = prompt + np.clip(g.lognormal(np.log(250), 0.8, 200), 1, 2048 - prompt).astype(int)
    bm = BlockManager(200 * 2048 // 16, 16, prefix_caching=False)
    for i, n in enumerate(total):
        bm.allocate(i, [0] * int(n))
    used = int(total.sum())
    return [
        Figure(
            "KV waste, reserve 2,048 per request",
            100 * (1 - used / (200 * 2048)),
            "%",
            "vLLM: 60-80 % in earlier systems",
            "18",
        ),
        Figure(
            "KV waste, paged (16-token blocks)",
            100 * (1 - used / (16 * bm.num_used_blocks())),
            "%",
            "vLLM: under 4 %",
            "18",
        ),
    ]


@register
def gather_cost() -> list[Figure]:
    g = np.random.default_rng(0)
    n, bs, h, d = 1024, 16, 8, 64
    table = g.permutation(n // bs).tolist()
    kc = g.standard_normal((n // bs, bs, h, d)).astype(np.float32)
    vc = g.standard_normal((n // bs, bs, h, d)).astype(np.float32)
    q = g.standard_normal((1, h, d)).astype(np.float32)
    k, v = kc.reshape(n, h, d), vc.reshape(n, h, d)  # contiguous: no gather

    def contiguous() -> np.ndarray:
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)

    with one_thread():
        t_paged, t_flat = alternate(lambda: paged_attention(q, kc, vc, table, n), contiguous)
    return [
        Figure(
            "paged / contiguous attention, decode over 1k tokens",
            t_paged / t_flat,
            "x",
            "numpy copies K/V; vLLM's kernel reads blocks in place",
            "18",
        )
    ]


@register
def paged_decode_vs_generate() -> list[Figure]:
    model = load_pretrained()
    cfg = model.config
    prompts = np.random.default_rng(0).integers(3, 16, (8, 10))

    def paged() -> None:
        bm = BlockManager(64, 4)
        runner = PagedGPT(model, PagedKVCache(cfg.n_layer, 64, 4, cfg.n_kv_head, cfg.head_dim))
        seqs = [list(p) for p in prompts]
        for i, s in enumerate(seqs):
            bm.allocate(i, s)
        logits = runner.forward([Chunk(s, 0, bm.block_table(i)) for i, s in enumerate(seqs)])
        for _ in range(20):
            chunks = []
            for i, t in enumerate(logits.argmax(-1).tolist()):
                seqs[i].append(t)
                bm.append_slot(i, t)
                chunks.append(Chunk([t], len(seqs[i]) - 1, bm.block_table(i)))
            logits = runner.forward(chunks)

    with one_thread():
        t_paged, t_gen = alternate(paged, lambda: model.generate(prompts, 20), repeats=3)
    return [
        Figure("tiny GPT decode, paged KV cache", 160 / t_paged, "tokens/s", "8 seqs x 20", "18"),
        Figure(
            "no-cache generate / paged decode time",
            t_gen / t_paged,
            "x",
            "the KV cache's saving at 30 tokens",
            "18",
        ),
    ]
