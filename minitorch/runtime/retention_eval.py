"""The tiny GPT decoding a long stream under a KV retention policy: per-token NLL.

Each new token runs through the model once (incremental decoding); in every layer its
un-rotated key and its value go into a :class:`~minitorch.runtime.kv_retention.
RetentionCache`, and its query attends only to the kept tokens K(n). Positions are either
**within the cache** (StreamingLLM: kept token j of |K| gets position j, the
query |K| - 1, RoPE applied at every step) or **absolute** (the original index: past the
trained ``block_size`` RoPE then extrapolates). With the full policy and absolute
positions this equals the model's own forward exactly (a test checks it).

The stream is the course corpus (``minitorch.model.corpus``) concatenated:
``Rcab=bac.Sfa=af....``; ``.`` and ``=`` are its separators. The shipped tiny GPT was
trained on one example per sequence, from position 0, scored on answers only: on the
stream it answers the first example almost perfectly and later ones poorly under every
policy, so :func:`compare` scores answer tokens (:func:`answer_mask`) and the numbers
compare policies with one another, not with a long-context model.

    tokens = long_stream(384, seed=0)
    nll = retention_nll(model, tokens, sinks(4, 24))      # (383,) nats per next token
    report = compare(model, tokens, [full(), window(28), sinks(4, 24)])

Lab: 34_speculative_decoding
Paper: Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.autograd import Tensor
from minitorch.model.corpus import examples
from minitorch.model.gpt import GPT
from minitorch.model.positions import apply_rope, rope_tables
from minitorch.model.tokenizer import CharTokenizer
from minitorch.runtime.kv_retention import Policy, RetentionCache

__all__ = ["answer_mask", "compare", "long_stream", "retention_logits", "retention_nll"]


def long_stream(
    n_tokens: int, seed: int = 0, tasks: Sequence[str] = ("reverse", "sort")
) -> np.ndarray:
    """n_tokens ids of concatenated corpus examples (prompt + answer, back to back)."""
    tok, out = CharTokenizer(), list[int]()
    while len(out) < n_tokens:
        for prompt, answer in examples(tasks, 64, seed=seed):
            out.extend(tok.encode(prompt + answer))
        seed += 1
    return np.asarray(out[:n_tokens], dtype=np.int64)


def answer_mask(tokens: Sequence[int]) -> np.ndarray:
    """(T - 1,) bool: the next token t + 1 belongs to an answer (after ``=``, up to ``.``),
    the only tokens the tiny GPT was trained to predict (the prompts are random letters)."""
    tok, inside, mask = CharTokenizer(), False, []
    for t in tokens[:-1]:
        if int(t) == tok.sep_id:
            inside = True
        elif int(t) == tok.end_id:
            inside = False
        mask.append(inside)
    return np.array(mask, dtype=bool)


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x: np.ndarray, pos: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    return apply_rope(Tensor(x), cos[pos], sin[pos]).data  # x (..., T, d)


def retention_logits(
    model: GPT, tokens: Sequence[int], policy: Policy, positions: str = "cache"
) -> tuple[np.ndarray, RetentionCache]:
    """Logits (T, V) after each token, decoding with the policy's kept K/V only."""
    cfg = model.config
    if cfg.pos != "rope" or cfg.norm != "rmsnorm" or cfg.mlp != "swiglu":
        raise ValueError("retention_logits runs the RoPE / RMSNorm / SwiGLU tiny GPT")
    if positions not in ("cache", "absolute"):
        raise ValueError("positions is 'cache' or 'absolute'")
    sd = {k: np.asarray(v, np.float64) for k, v in model.state_dict().items()}
    n, hd, nh, nkv = len(tokens), cfg.head_dim, cfg.n_head, cfg.n_kv_head
    rc = RetentionCache(policy, cfg.n_layer, nkv, hd, policy.max_kept(n), np.float64)
    cos, sin = rope_tables(n, hd, cfg.rope_base, np.float64)
    head = sd.get("lm_head.weight", sd["tok_emb.weight"])
    group = np.arange(nh) // cfg.n_rep  # the K/V head of each query head
    out = np.zeros((n, cfg.vocab_size))
    for t, token in enumerate(tokens):
        slot = rc.append(int(token))
        kept, slots = rc.kept()
        kpos = np.arange(len(kept)) if positions == "cache" else kept
        qpos = kpos[-1:]
        x = sd["tok_emb.weight"][int(token)]
        for layer in range(cfg.n_layer):
            p = f"blocks.{layer}."
            hn = _rms(x, sd[p + "norm1.weight"], cfg.norm_eps)
            q = (sd[p + "attn.q_proj.weight"] @ hn).reshape(nh, 1, hd)
            k = (sd[p + "attn.k_proj.weight"] @ hn).reshape(1, nkv, hd)
            v = (sd[p + "attn.v_proj.weight"] @ hn).reshape(1, nkv, hd)
            rc.cache.write(layer, np.array([slot]), k, v)  # keys stored before RoPE
            keys = rc.cache.k[layer].reshape(-1, nkv, hd)[slots].transpose(1, 0, 2)
            vals = rc.cache.v[layer].reshape(-1, nkv, hd)[slots].transpose(1, 0, 2)
            qr = _rope(q, qpos, cos, sin)[:, 0]  # (H, hd)
            kr = _rope(keys, kpos, cos, sin)[group]  # (H, m, hd)
            s = np.einsum("hd,hmd->hm", qr, kr) / np.sqrt(hd)
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            o = np.einsum("hm,hmd->hd", a, vals[group]).reshape(-1)
            x = x + sd[p + "attn.o_proj.weight"] @ o
            hn = _rms(x, sd[p + "norm2.weight"], cfg.norm_eps)
            g, u = sd[p + "mlp.w1.weight"] @ hn, sd[p + "mlp.w3.weight"] @ hn
            x = x + sd[p + "mlp.w2.weight"] @ (g / (1.0 + np.exp(-g)) * u)
        out[t] = head @ _rms(x, sd["norm_f.weight"], cfg.norm_eps)
    return out, rc


def retention_nll(
    model: GPT, tokens: Sequence[int], policy: Policy, positions: str = "cache"
) -> np.ndarray:
    """-log p(token t+1 | kept context) for t < T - 1: (T - 1,) nats."""
    logits, _ = retention_logits(model, tokens, policy, positions)
    z = logits[:-1] - logits[:-1].max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nxt = np.asarray(tokens[1:], dtype=np.int64)
    return -logp[np.arange(len(nxt)), nxt]


def compare(
    model: GPT, tokens: Sequence[int], policies: Sequence[Policy], positions: str = "cache"
) -> dict[str, dict[str, float]]:
    """Per policy, over answer tokens: mean NLL, its excess over the first policy, the
    bound on kept tokens."""
    report: dict[str, dict[str, float]] = {}
    base = None
    mask = answer_mask(tokens)
    for pol in policies:
        nll = retention_nll(model, tokens, pol, positions)[mask]
        base = nll if base is None else base
        report[pol.name] = {
            "mean_nll": float(nll.mean()),
            "excess_nll": float((nll - base).mean()),
            "max_kept": float(pol.max_kept(len(tokens))),
        }
    return report
