"""``GPTConfig``: every shape and architectural choice of the tiny GPT in one dataclass.

    cfg = GPTConfig(vocab_size=16, block_size=32, n_layer=2, n_head=4, n_kv_head=2)
    cfg.head_dim, cfg.n_rep          # 16, 2 (two query heads share each K/V head: GQA)

``n_kv_head`` picks the attention variant: ``n_head`` is multi-head attention (MHA),
``1`` is multi-query attention (MQA), anything in between that divides ``n_head`` is
grouped-query attention (GQA). ``pos`` is "rope" or "alibi", ``norm`` "rmsnorm" or
"layernorm", ``mlp`` "swiglu" or "gelu"; ``tie_head`` shares the token embedding with the
output head (logits = h @ E^T).

Lab: 09_transformer
Paper: Shazeer 2019 (MQA, arXiv:1911.02150); Ainslie et al. 2023 (GQA, arXiv:2305.13245)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["GPTConfig"]

POS = ("rope", "alibi")
NORM = ("rmsnorm", "layernorm")
MLP = ("swiglu", "gelu")


@dataclass(frozen=True)
class GPTConfig:
    """Shapes and options of :class:`minitorch.model.gpt.GPT` (checked on construction)."""

    vocab_size: int = 16
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_kv_head: int = 4
    d_model: int = 64
    pos: str = "rope"
    norm: str = "rmsnorm"
    mlp: str = "swiglu"
    d_ff: int = 0  # 0: 4 * d_model for GELU, 8/3 * d_model rounded to 8 for SwiGLU
    tie_head: bool = True
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_head {self.n_head}")
        if self.n_kv_head < 1 or self.n_head % self.n_kv_head:
            raise ValueError(f"n_kv_head {self.n_kv_head} must divide n_head {self.n_head}")
        if self.pos == "rope" and self.head_dim % 2:
            raise ValueError("RoPE rotates pairs: head_dim must be even")
        for name, value, allowed in (
            ("pos", self.pos, POS),
            ("norm", self.norm, NORM),
            ("mlp", self.mlp, MLP),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {value!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def n_rep(self) -> int:
        """Query heads per K/V head (1 for MHA, n_head for MQA)."""
        return self.n_head // self.n_kv_head

    @property
    def ff_dim(self) -> int:
        """Hidden width of the MLP."""
        if self.d_ff:
            return self.d_ff
        if self.mlp == "gelu":
            return 4 * self.d_model
        return 8 * ((8 * self.d_model // 3 + 7) // 8)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GPTConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
