"""The tiny GPT: token embedding, pre-norm blocks, final norm, (tied) output head.

API. ``GPT(config, seed=0, dtype=np.float32)`` builds the model of a :class:`GPTConfig`
(weights drawn from ``seed``: N(0, 0.02), output projections scaled by 1/sqrt(2 n_layer)).
``model(idx)`` / ``model.forward(idx)`` maps int token ids (B, T), T <= block_size, to a
course ``Tensor`` of logits (B, T, vocab_size); ``model.loss(idx, targets)`` is the mean
cross entropy (a Tensor: call ``.backward()``). ``parameters()``, ``named_parameters()``,
``state_dict()`` and ``load_state_dict()`` come from ``minitorch.nn.Module``; names follow
torch / Llama style: ``tok_emb.weight``, ``blocks.{i}.norm1.weight``,
``blocks.{i}.attn.{q,k,v,o}_proj.weight`` (out, in), ``blocks.{i}.mlp.w1/w2/w3.weight``,
``norm_f.weight``, ``lm_head.weight`` (absent when ``config.tie_head``). ``generate(idx, n,
greedy=True, temperature=1.0, seed=0)`` appends n tokens, recomputing the whole window
each step (no KV cache). ``n_params()`` counts unique weights. The torch twin used by
tests and graders lives in ``a2s.checks.lab09._truth`` (``to_torch(model)``,
``from_torch(torch_model, model)``), a fast functional torch forward for benchmarks in
``a2s.bench.lab09.torch_forward``: the reference itself never imports torch. The
trained tiny model: ``minitorch.model.checkpoint.load_pretrained()`` (config
``minitorch.model.train.TINY``; tasks and tokenizer in ``corpus`` and ``tokenizer``).

    cfg = GPTConfig(vocab_size=16, n_head=4, n_kv_head=2, pos="alibi")
    model = GPT(cfg, seed=0)
    model.loss(x, y).backward()
    model.generate(np.array([[1, 2, 3]]), 5)          # (1, 8) int64

Lab: 09_transformer
Paper: Radford et al. 2019 (GPT-2); Touvron et al. 2023 (LLaMA, arXiv:2302.13971)
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd import Tensor, cross_entropy, no_grad
from minitorch.model.blocks import Block, make_norm
from minitorch.model.config import GPTConfig
from minitorch.nn import Embedding, Linear, Module, Parameter, Sequential

__all__ = ["GPT"]


class GPT(Module):
    """A decoder-only transformer on the course Tensor; see the module docstring."""

    def __init__(self, config: GPTConfig, seed: int = 0, dtype: type = np.float32) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.config = config
        self.tok_emb = Embedding(config.vocab_size, config.d_model, rng=rng, dtype=dtype)
        self.tok_emb.weight = Parameter(
            (rng.standard_normal((config.vocab_size, config.d_model)) * 0.02).astype(dtype)
        )
        self.blocks = Sequential(*(Block(config, rng, dtype) for _ in range(config.n_layer)))
        self.norm_f = make_norm(config, dtype)
        if not config.tie_head:
            self.lm_head = Linear(
                config.d_model, config.vocab_size, bias=False, rng=rng, dtype=dtype
            )
            self.lm_head.weight = Parameter(
                (rng.standard_normal((config.vocab_size, config.d_model)) * 0.02).astype(dtype)
            )

    def forward(self, idx: np.ndarray | Tensor) -> Tensor:
        """int ids (B, T) -> logits (B, T, vocab_size)."""
        ids = np.asarray(idx.data if isinstance(idx, Tensor) else idx)
        if ids.ndim != 2 or ids.shape[1] > self.config.block_size:
            raise ValueError(f"idx must be (B, T<= {self.config.block_size}), got {ids.shape}")
        h = self.norm_f(self.blocks(self.tok_emb(ids)))  # (B, T, C)
        if self.config.tie_head:
            return h @ self.tok_emb.weight.T  # (B, T, C) @ (C, V)
        return self.lm_head(h)

    def loss(self, idx: np.ndarray, targets: np.ndarray, ignore: int | None = None) -> Tensor:
        """Mean next-token cross entropy; positions whose target == ``ignore`` are skipped."""
        logits = self.forward(idx)
        t = np.asarray(targets)
        if ignore is None:
            return cross_entropy(logits, t)
        keep = t.reshape(-1) != ignore
        flat = logits.reshape(-1, logits.shape[-1])[np.flatnonzero(keep)]
        return cross_entropy(flat, t.reshape(-1)[keep])

    def n_params(self) -> int:
        return sum(p.size for p in self.parameters())

    def generate(
        self,
        idx: np.ndarray,
        n: int,
        greedy: bool = True,
        temperature: float = 1.0,
        seed: int = 0,
    ) -> np.ndarray:
        """Append ``n`` tokens to idx (B, T0) -> (B, T0 + n); the window is the last
        ``block_size`` tokens; sampling draws from ``seed`` (reproducible)."""
        rng = np.random.default_rng(seed)
        out = np.asarray(idx, dtype=np.int64)
        with no_grad():
            for _ in range(n):
                logits = self.forward(out[:, -self.config.block_size :]).data[:, -1]  # (B, V)
                if greedy:
                    nxt = logits.argmax(axis=-1)
                else:
                    z = logits.astype(np.float64) / temperature
                    p = np.exp(z - z.max(axis=-1, keepdims=True))
                    p /= p.sum(axis=-1, keepdims=True)
                    nxt = np.array([rng.choice(len(row), p=row) for row in p])
                out = np.concatenate([out, nxt[:, None].astype(np.int64)], axis=1)
        return out
