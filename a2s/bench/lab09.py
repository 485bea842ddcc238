"""Lab 09 experiments: the tiny GPT's training step and greedy decoding speed.

1. One training step (forward, backward, no optimizer) of the tiny GPT (``TINY``: 2 layers,
   d_model 64, GQA 4/2, RoPE, RMSNorm, SwiGLU) on a batch of 32 x 18 tokens: the course
   ``Tensor`` against the torch twin with the same weights, float32, one thread.
2. Greedy generation without a KV cache: every new token recomputes the whole window, so the
   cost per token grows with the length; tokens/s for 32 new tokens after an 8-token prompt,
   ours and torch's (same loop), one thread.

The torch side is a functional forward written here for speed (real-valued RoPE tables,
``F.rms_norm``, ``F.scaled_dot_product_attention`` with ``enable_gqa``) on the GPT's own
state dict; ``tests/model/test_gpt.py`` checks it equals the course GPT. (``bench`` may not
import ``checks``, where the formula-level torch twin lives.)

Lab: 09_transformer
"""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.config import GPTConfig
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.positions import rope_tables
from minitorch.model.train import TINY


def torch_forward(model: GPT, requires_grad: bool = False) -> tuple[Any, dict[str, Any]]:
    """A torch eager forward ``f(idx) -> logits`` of ``model`` (RoPE, RMSNorm, SwiGLU, tied
    head; GQA allowed) and its weights as torch tensors (leaves when ``requires_grad``)."""
    import torch
    import torch.nn.functional as F

    cfg: GPTConfig = model.config
    if (cfg.pos, cfg.norm, cfg.mlp, cfg.tie_head) != ("rope", "rmsnorm", "swiglu", True):
        raise ValueError("the bench forward covers RoPE + RMSNorm + SwiGLU + tied head")
    w = {
        k: torch.from_numpy(v).requires_grad_(requires_grad) for k, v in model.state_dict().items()
    }
    dtype = model.tok_emb.weight.dtype
    cos, sin = (torch.from_numpy(a) for a in rope_tables(cfg.block_size, cfg.head_dim, dtype=dtype))

    def rope(x: Any) -> Any:
        t = x.shape[-2]
        a, b = x[..., 0::2], x[..., 1::2]
        c, s = cos[:t], sin[:t]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)

    def forward(idx: Any) -> Any:
        bsz, t = idx.shape
        h = w["tok_emb.weight"][idx]
        for i in range(cfg.n_layer):
            p = f"blocks.{i}."
            x = F.rms_norm(h, (cfg.d_model,), w[p + "norm1.weight"], cfg.norm_eps)
            q, k, v = (
                (x @ w[p + f"attn.{n}_proj.weight"].T)
                .view(bsz, t, -1, cfg.head_dim)
                .transpose(1, 2)
                for n in "qkv"
            )
            y = F.scaled_dot_product_attention(
                rope(q), rope(k), v, is_causal=True, enable_gqa=cfg.n_rep > 1
            )
            h = h + y.transpose(1, 2).reshape(bsz, t, -1) @ w[p + "attn.o_proj.weight"].T
            x = F.rms_norm(h, (cfg.d_model,), w[p + "norm2.weight"], cfg.norm_eps)
            up = F.silu(x @ w[p + "mlp.w1.weight"].T) * (x @ w[p + "mlp.w3.weight"].T)
            h = h + up @ w[p + "mlp.w2.weight"].T
        h = F.rms_norm(h, (cfg.d_model,), w["norm_f.weight"], cfg.norm_eps)
        return h @ w["tok_emb.weight"].T

    return forward, w


@register
def training_step_vs_torch() -> list[Figure]:
    import torch

    model = GPT(TINY, seed=0)
    tm, weights = torch_forward(model, requires_grad=True)
    x, y = task_batch(["reverse", "sort"], 32, seed=0)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def ours() -> None:
        model.zero_grad()
        model.loss(x, y, ignore=IGNORE).backward()

    def theirs() -> None:
        for p in weights.values():
            p.grad = None
        logits = tm(xt)
        torch.nn.functional.cross_entropy(
            logits.reshape(-1, 16), yt.reshape(-1), ignore_index=IGNORE
        ).backward()

    with one_thread():
        a, b = alternate(ours, theirs, repeats=9, warmup=2)
    return [
        Figure("tiny GPT fwd+bwd, 32x18 tokens, course Tensor", a * 1e3, "ms", "ours"),
        Figure("tiny GPT fwd+bwd, torch eager", b * 1e3, "ms", "torch eager"),
        Figure(
            "training step, ours / torch", a / b, "x", "torch eager = 1.0, same model, 1 thread"
        ),
    ]


@register
def greedy_generation_no_kv_cache() -> list[Figure]:
    import torch

    model = GPT(TINY, seed=0)
    tm, _ = torch_forward(model)
    prompt, n_new = np.arange(3, 11)[None, :], 32

    def ours() -> None:
        model.generate(prompt, n_new)

    def theirs() -> None:
        ids = torch.from_numpy(prompt)
        with torch.no_grad():
            for _ in range(n_new):
                nxt = tm(ids[:, -TINY.block_size :])[:, -1].argmax(-1, keepdim=True)
                ids = torch.cat([ids, nxt], dim=1)

    with one_thread():
        a, b = alternate(ours, theirs, repeats=5, warmup=1)
    return [
        Figure("greedy decode, no KV cache, course Tensor", n_new / a, "tokens/s", "ours"),
        Figure("greedy decode, no KV cache, torch eager", n_new / b, "tokens/s", "torch eager"),
        Figure("decode time, ours / torch", a / b, "x", "torch eager = 1.0"),
    ]
