"""Structured pruning of the tiny GPT: whole attention heads and MLP channels, and what it saves.

Unstructured zeros save nothing on dense hardware; removing a whole head or MLP channel
shrinks the matrices themselves. With ``C = d_model``, ``d = head_dim``, ``f`` the MLP width
and ``s`` bytes per weight, per token and layer:

* a query head is ``d`` rows of ``q_proj`` and ``d`` columns of ``o_proj``: removing it saves
  ``4 C d`` projection FLOPs and ``2 C d s`` weight bytes, plus its attention core, ``4 d``
  FLOPs per key it attends to (``q k`` and ``p v``: ``2 d T (T + 1)`` over a causal sequence
  of ``T``); a K/V head goes too once every query head of its group is gone (``4 C d`` FLOPs,
  ``2 C d s`` weight bytes and ``2 d s`` KV-cache bytes per token);
* an MLP channel is one row of ``w1`` (and ``w3`` for SwiGLU) and one column of ``w2``:
  ``2 m C`` FLOPs and ``m C s`` bytes with ``m`` = 3 (SwiGLU) or 2 (GELU) matrices.

Scores: a head's is the L2 norm of its ``o_proj`` columns, a channel's the product of the
norms of its rows and column (both plain weight-magnitude criteria). :func:`prune_mlp` builds
a genuinely smaller GPT (``d_ff = keep``) equal to the masked one; heads cannot be removed
from a ``GPTConfig`` (``head_dim = d_model / n_head``), so :func:`compact_heads` returns the
smaller matrices and :func:`prune_heads` the equivalent zero-masked model.

Lab: 33_sparsity_distillation_qat
Paper: Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?" (NeurIPS
2019): removing attention heads after training.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from minitorch.model.blocks import Block
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT
from minitorch.model.quant_model import linear_layers

__all__ = [
    "Savings",
    "channel_scores",
    "compact_heads",
    "head_savings",
    "head_scores",
    "linear_cost",
    "mlp_savings",
    "model_linear_cost",
    "prune_heads",
    "prune_mlp",
]

Heads = Mapping[int, Sequence[int]]


@dataclass(frozen=True, slots=True)
class Savings:
    """Removed per token: linear-layer FLOPs, weight bytes, KV-cache bytes; and the attention
    core FLOPs removed over one causal sequence."""

    linear_flops: int
    weight_bytes: int
    kv_bytes: int = 0
    attention_flops: int = 0


def _blocks(model: GPT) -> list[Block]:
    return [cast(Block, b) for b in model.blocks]


def _copy(model: GPT, config: GPTConfig | None = None) -> GPT:
    out = GPT(config or model.config)
    if config is None:
        out.load_state_dict(model.state_dict())
    return out


def head_scores(model: GPT) -> np.ndarray:
    """(n_layer, n_head): the L2 norm of each head's columns of ``o_proj``."""
    cfg = model.config
    rows = []
    for block in _blocks(model):
        w = block.attn.o_proj.weight.data.astype(np.float64)  # (C, H d)
        rows.append(np.linalg.norm(w.reshape(cfg.d_model, cfg.n_head, -1), axis=(0, 2)))
    return np.array(rows)


def _dead_kv(cfg: GPTConfig, heads: Sequence[int]) -> list[int]:
    gone = set(heads)
    return [
        g for g in range(cfg.n_kv_head) if set(range(g * cfg.n_rep, (g + 1) * cfg.n_rep)) <= gone
    ]


def _check_heads(cfg: GPTConfig, heads: Heads) -> None:
    for layer, hs in heads.items():
        if not 0 <= layer < cfg.n_layer or any(not 0 <= h < cfg.n_head for h in hs):
            raise ValueError(f"layer {layer}, heads {list(hs)} out of range")


def prune_heads(model: GPT, heads: Heads) -> GPT:
    """A copy with the listed query heads (``{layer: [head, ...]}``) zeroed in ``q_proj`` and
    ``o_proj``, and the K/V heads of fully pruned groups zeroed in ``k_proj``/``v_proj``."""
    cfg = model.config
    _check_heads(cfg, heads)
    out, d = _copy(model), cfg.head_dim
    for layer, hs in heads.items():
        attn = _blocks(out)[layer].attn
        for h in hs:
            attn.q_proj.weight.data[h * d : (h + 1) * d] = 0
            attn.o_proj.weight.data[:, h * d : (h + 1) * d] = 0
        for g in _dead_kv(cfg, hs):
            attn.k_proj.weight.data[g * d : (g + 1) * d] = 0
            attn.v_proj.weight.data[g * d : (g + 1) * d] = 0
    return out


def compact_heads(model: GPT, heads: Heads) -> list[dict[str, np.ndarray]]:
    """Per layer, the attention matrices with the pruned heads' rows/columns removed."""
    cfg = model.config
    _check_heads(cfg, heads)
    d, out = cfg.head_dim, []
    for i, block in enumerate(_blocks(model)):
        gone = set(heads.get(i, ()))
        q = [h for h in range(cfg.n_head) if h not in gone]
        kv = [g for g in range(cfg.n_kv_head) if g not in _dead_kv(cfg, sorted(gone))]
        rq = np.concatenate([np.arange(h * d, (h + 1) * d) for h in q]) if q else np.arange(0)
        rkv = np.concatenate([np.arange(g * d, (g + 1) * d) for g in kv]) if kv else np.arange(0)
        a = block.attn
        out.append(
            {
                "q_proj": a.q_proj.weight.data[rq],
                "k_proj": a.k_proj.weight.data[rkv],
                "v_proj": a.v_proj.weight.data[rkv],
                "o_proj": a.o_proj.weight.data[:, rq],
            }
        )
    return out


def head_savings(config: GPTConfig, heads: Heads, seq_len: int, itemsize: int = 4) -> Savings:
    """The closed form of what removing ``heads`` saves (see the module docstring)."""
    _check_heads(config, heads)
    c, d = config.d_model, config.head_dim
    nq = sum(len(set(hs)) for hs in heads.values())
    nkv = sum(len(_dead_kv(config, sorted(set(hs)))) for hs in heads.values())
    return Savings(
        linear_flops=4 * c * d * (nq + nkv),
        weight_bytes=2 * c * d * (nq + nkv) * itemsize,
        kv_bytes=2 * d * nkv * itemsize,
        attention_flops=2 * d * seq_len * (seq_len + 1) * nq,
    )


def linear_cost(matrices: Sequence[np.ndarray], itemsize: int = 4) -> tuple[int, int]:
    """(FLOPs per token, weight bytes) of linear layers given by their (out, in) weights."""
    flops = sum(2 * int(np.prod(np.shape(w))) for w in matrices)
    return flops, sum(int(np.prod(np.shape(w))) for w in matrices) * itemsize


def channel_scores(model: GPT) -> np.ndarray:
    """(n_layer, ff): ``|w1_j| |w3_j| |w2_:,j|`` (SwiGLU) or ``|w1_j| |w2_:,j|`` (GELU)."""
    rows = []
    for block in _blocks(model):
        mlp = block.mlp
        score = np.linalg.norm(mlp.w1.weight.data, axis=1) * np.linalg.norm(
            mlp.w2.weight.data, axis=0
        )
        if mlp.kind == "swiglu":
            score = score * np.linalg.norm(mlp.w3.weight.data, axis=1)
        rows.append(score.astype(np.float64))
    return np.array(rows)


def prune_mlp(model: GPT, keep: int) -> GPT:
    """A smaller GPT (``d_ff = keep``) keeping each layer's ``keep`` best-scored channels
    (in their original order); its forward equals the zero-masked model's."""
    cfg = model.config
    if not 1 <= keep <= cfg.ff_dim:
        raise ValueError(f"keep must be in 1..{cfg.ff_dim}, got {keep}")
    small = _copy(model, GPTConfig.from_dict({**cfg.to_dict(), "d_ff": keep}))
    state = dict(model.state_dict())
    scores = channel_scores(model)
    for i in range(cfg.n_layer):
        chosen = np.sort(np.argsort(-scores[i], kind="stable")[:keep])
        pre = f"blocks.{i}.mlp."
        for name in ("w1", "w3"):
            if pre + name + ".weight" in state:
                state[pre + name + ".weight"] = state[pre + name + ".weight"][chosen]
        state[pre + "w2.weight"] = state[pre + "w2.weight"][:, chosen]
    small.load_state_dict(state)
    return small


def mlp_savings(config: GPTConfig, keep: int, itemsize: int = 4) -> Savings:
    """Closed form: ``n_layer (f - keep)`` channels of ``m`` matrices, ``2 m C`` FLOPs each."""
    m = 3 if config.mlp == "swiglu" else 2
    gone = config.n_layer * (config.ff_dim - keep)
    return Savings(2 * m * config.d_model * gone, m * config.d_model * gone * itemsize)


def model_linear_cost(model: GPT, itemsize: int = 4) -> tuple[int, int]:
    """(FLOPs per token, bytes) of all linear layers of ``model``, from their shapes."""
    return linear_cost([lay.weight.data for lay in linear_layers(model).values()], itemsize)
