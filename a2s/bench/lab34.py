"""Lab 34 experiments: greedy speculative decoding of the tiny GPT, and MLA's KV cache.

1. Counted: target forward passes per generated token, speculative (gamma = 4) against plain
   greedy (1 per token), on the same prompts; the output is checked to be plain greedy's.
2. Counted: tokens emitted per target pass against Leviathan et al.'s
   (1 - a^(gamma+1)) / (1 - a), with ``a`` the acceptance rate measured on the same run
   (accepted draft tokens over the draft tokens the target judged).
3. Wall clock, one thread, alternated: speculative over plain greedy. The draft is the lab's,
   the same GPT with ternary weights: on numpy it costs what the target costs (c = 1), so
   fewer target passes do not make a faster decode here; the anchor is the slowdown Leviathan
   et al.'s walltime factor predicts at c = 1 and the measured ``a``.
4. Counted: bytes per token and layer of MLA's cache (c_KV and the shared rotary key, from
   ``mla_cache``) against MHA's K and V (materialised from the same latent, as ``mla_naive``).

Lab: 34_speculative_decoding
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.corpus import examples
from minitorch.model.mla import MLAConfig, init_mla, kv_elements_per_token, mla_cache
from minitorch.model.speculative import (
    expected_tokens,
    gpt_logits,
    plain_generate,
    speculative_generate,
    walltime_factor,
)
from minitorch.model.tokenizer import CharTokenizer


def _ternary(model: Any) -> Any:
    """The lab's draft: every matrix row rounded to {-s, 0, s}, s its largest magnitude."""
    draft = copy.deepcopy(model)
    for p in draft.parameters():
        if p.data.ndim == 2:
            s = np.abs(p.data).max(axis=1, keepdims=True)
            p.data[...] = np.round(p.data / np.where(s > 0, s, 1.0)) * s
    return draft


def _acceptance(runs: list[Any], n: int, gamma: int) -> tuple[int, int]:
    """(draft tokens accepted, draft tokens the target judged): a pass that drafted g tokens
    and accepted k < g judged k + 1 of them, one that accepted all g judged g (the drafts are
    cut short near the end, g = min(gamma, left - 1), as ``speculative_generate`` does)."""
    accepted = judged = 0
    for r in runs:
        left = n
        for k in r.accepted:
            g = min(gamma, left - 1)
            accepted, judged, left = accepted + k, judged + min(k + 1, g), left - k - 1
    return accepted, judged


@register
def speculative_decoding(
    prompts: int = 8, n: int = 16, gamma: int = 4, repeats: int = 3
) -> list[Figure]:
    tok, model = CharTokenizer(), load_pretrained(np.float64)
    target, draft = gpt_logits(model), gpt_logits(_ternary(model))
    ids = [tok.encode(q) for q, _ in examples(["reverse", "sort"], prompts, seed=2)]

    def spec() -> list[Any]:
        return [speculative_generate(target, draft, p, n, gamma=gamma, greedy=True) for p in ids]

    def plain() -> list[Any]:
        return [plain_generate(target, p, n) for p in ids]

    runs, base = spec(), plain()
    same = all(np.array_equal(a.tokens, b.tokens) for a, b in zip(runs, base, strict=True))
    passes, plain_passes = sum(r.target_calls for r in runs), sum(b.target_calls for b in base)
    tokens = n * len(ids)
    accepted, judged = _acceptance(runs, n, gamma)
    alpha = accepted / max(judged, 1)
    with one_thread():
        t_spec, t_plain = alternate(spec, plain, repeats)
    return [
        Figure(
            f"target passes per token, speculative gamma = {gamma}",
            passes / tokens,
            "passes",
            f"plain greedy {plain_passes / tokens:.2f}; same tokens: {same}; target <= 1.0",
        ),
        Figure(
            "tokens per target pass, speculative",
            tokens / passes,
            "tokens",
            f"(1 - a^(g+1)) / (1 - a) = {expected_tokens(alpha, gamma):.2f} at a = {alpha:.2f}",
        ),
        Figure(
            "speculative / plain greedy decode, tiny GPT",
            t_spec / t_plain,
            "x",
            f"predicted 1 / walltime factor at c = 1: {1 / walltime_factor(alpha, gamma, 1.0):.2f}"
            f" (ternary draft, a target's cost); plain {t_plain * 1e3:.0f} ms = 1.0",
        ),
    ]


@register
def mla_kv_bytes(tokens: int = 64) -> list[Figure]:
    cfg = MLAConfig(d_model=32, n_head=4, head_dim=8, d_c=8, d_cq=16, rope_dim=4)
    w = init_mla(cfg, seed=0)
    h = np.random.default_rng(0).standard_normal((tokens, cfg.d_model))
    c_kv, k_r = mla_cache(h, w, cfg)
    mla = (c_kv.nbytes + k_r.nbytes) // tokens
    k, v = c_kv @ w["W_UK"].T, c_kv @ w["W_UV"].T  # what MHA caches: K and V of every head
    mha = (k.nbytes + v.nbytes) // tokens
    size = h.itemsize
    elements = (
        kv_elements_per_token("mha", cfg.n_head, cfg.head_dim),
        kv_elements_per_token("mla", cfg.n_head, cfg.head_dim, d_c=cfg.d_c, rope_dim=cfg.rope_dim),
    )
    return [
        Figure(
            "MLA KV bytes per token and layer, fp64",
            mla,
            "B",
            f"MHA {mha} B (ratio {mla / mha:.3f}); closed forms {elements[1] * size}"
            f" and {elements[0] * size} B",
        )
    ]
