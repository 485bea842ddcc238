"""LoRA: a frozen linear layer plus a trainable low-rank update, several adapters on one base.

Hu et al. (2021) freeze the pretrained weight W: (d_out, d_in) and learn ΔW = (alpha / r) B A
with A: (r, d_in) and B: (d_out, r), r << min(d_in, d_out):

    y = x W^T + b + (alpha / r) (x A^T) B^T        x: (..., d_in) -> y: (..., d_out)

A starts random (Kaiming-uniform, as PEFT: U(-1/sqrt(d_in), 1/sqrt(d_in))) and B at zero, so
the adapted model starts exactly at the pretrained one. The unmerged forward never builds the
(d_out, d_in) matrix ΔW: two thin matmuls cost 2 N r (d_in + d_out) FLOPs. For serving, the
update folds into the weight (``merge``: W + ΔW, no extra latency) and out again (``unmerge``).
Several named adapters can share one base; ``set_adapter`` picks the one that runs and trains.

Training memory: full fine-tuning keeps a gradient and AdamW's two moments for every weight;
LoRA keeps them for r (d_in + d_out) numbers per adapted layer only.

Lab: 12_lora_peft
Paper: Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.autograd import Tensor, linear
from minitorch.nn import Linear, Module, Parameter

__all__ = [
    "LoRAAdapter",
    "LoRALinear",
    "adamw_state_bytes",
    "apply_lora",
    "count_parameters",
    "lora_backward",
    "lora_forward",
    "merge_weight",
    "multi_adapter_forward",
    "switch_adapter",
    "unmerge_weight",
]


# --------------------------------------------------------------------------- numpy kernels
def lora_forward(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, a: np.ndarray, bb: np.ndarray, scale: float
) -> np.ndarray:
    """y = x W^T + b + scale (x A^T) B^T, without forming B A; x: (N, d_in) -> (N, d_out)."""
    y = x @ w.T + scale * ((x @ a.T) @ bb.T)  # (N, r) then (N, d_out)
    return y if b is None else y + b


def lora_backward(
    x: np.ndarray, w: np.ndarray, a: np.ndarray, bb: np.ndarray, scale: float, gy: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dA, dB, dx) of the LoRA forward for upstream gy: (N, d_out); W is frozen (no dW)."""
    h = x @ a.T  # (N, r), recomputed: the tape would keep it
    gh = scale * (gy @ bb)  # (N, r)
    return gh.T @ x, scale * (gy.T @ h), gy @ w + gh @ a


def merge_weight(w: np.ndarray, a: np.ndarray, bb: np.ndarray, scale: float) -> np.ndarray:
    """W + scale B A: the layer that computes base + adapter in one matmul."""
    return w + scale * (bb @ a)


def unmerge_weight(w: np.ndarray, a: np.ndarray, bb: np.ndarray, scale: float) -> np.ndarray:
    """W - scale B A: the base back (up to rounding) from a merged weight."""
    return w - scale * (bb @ a)


def multi_adapter_forward(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    adapters: list[tuple[np.ndarray, np.ndarray, float]],
    ids: np.ndarray,
) -> np.ndarray:
    """Row i through adapter ``ids[i]`` (-1: none), one base matmul for the whole batch.

    Serving many fine-tunes from one base (S-LoRA, Punica): no merged copy of W per adapter;
    the rows of each adapter are gathered, pass its two thin matmuls, and are added back.
    """
    y = x @ w.T if b is None else x @ w.T + b  # (N, d_out), shared by every request
    for k, (a, bb, scale) in enumerate(adapters):
        rows = np.flatnonzero(ids == k)
        if rows.size:
            y[rows] += scale * ((x[rows] @ a.T) @ bb.T)  # (n_k, r) -> (n_k, d_out)
    return y


# --------------------------------------------------------------------------- modules
class LoRAAdapter(Module):
    """One adapter: A: (r, d_in) Kaiming-uniform, B: (d_out, r) zero, scale alpha / r."""

    def __init__(
        self, d_in: int, d_out: int, r: int, alpha: float, rng: np.random.Generator, dtype: type
    ) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)  # kaiming_uniform(a=sqrt(5)), as PEFT initialises A
        self.lora_A = Parameter(rng.uniform(-bound, bound, (r, d_in)).astype(dtype))
        self.lora_B = Parameter(np.zeros((d_out, r), dtype))
        self.r, self.alpha, self.scale = r, alpha, alpha / r

    def delta(self) -> np.ndarray:
        """ΔW = scale B A, (d_out, d_in): built only to merge."""
        return self.scale * (self.lora_B.data @ self.lora_A.data)


class LoRALinear(Module):
    """A frozen ``Linear`` with named LoRA adapters; the active one runs (unless merged)."""

    def __init__(self, base: Linear) -> None:
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad = False  # frozen: no gradient, no optimizer state
        self.adapters = Module()
        self.active: str | None = None
        self.merged = False

    def add_adapter(
        self, name: str, r: int, alpha: float, *, rng: np.random.Generator | None = None
    ) -> LoRAAdapter:
        """Attach a fresh adapter (B = 0: the output is unchanged) and make it active."""
        w = self.base.weight
        rng = rng if rng is not None else np.random.default_rng()
        adapter = LoRAAdapter(w.shape[1], w.shape[0], r, alpha, rng, w.dtype.type)
        setattr(self.adapters, name, adapter)
        self.set_adapter(name)
        return adapter

    def set_adapter(self, name: str | None) -> None:
        """Switch the active adapter (None: the base alone); only the active one trains."""
        if self.merged:
            raise RuntimeError("unmerge() before switching adapters")
        if name is not None and name not in self.adapters._modules:
            raise KeyError(f"no adapter {name!r}")
        self.active = name
        for key, adapter in self.adapters._modules.items():
            for p in adapter.parameters():
                p.requires_grad = key == name

    def merge(self) -> None:
        """Fold the active adapter into the base weight: one matmul at inference."""
        if self.active is not None and not self.merged:
            self.base.weight.data += self.adapters._modules[self.active].delta()  # type: ignore[attr-defined]
            self.merged = True

    def unmerge(self) -> None:
        """Subtract the active adapter from the base weight again."""
        if self.active is not None and self.merged:
            self.base.weight.data -= self.adapters._modules[self.active].delta()  # type: ignore[attr-defined]
            self.merged = False

    def forward(self, x: Tensor) -> Tensor:
        y = self.base(x)
        if self.active is None or self.merged:
            return y
        ad = self.adapters._modules[self.active]
        return y + linear(linear(x, ad.lora_A), ad.lora_B) * ad.scale  # type: ignore[attr-defined]


def apply_lora(
    model: Module,
    r: int,
    alpha: float,
    name: str = "default",
    *,
    rng: np.random.Generator,
    targets: tuple[str, ...] = (),
) -> Module:
    """Freeze every parameter of ``model``; wrap each ``Linear`` (whose name ends with one of
    ``targets``, if given, e.g. ``("q_proj", "v_proj")``) in a ``LoRALinear`` with an adapter."""
    for p in model.parameters():
        p.requires_grad = False
    for _, parent in list(model.named_modules()):
        for key, child in list(parent._modules.items()):
            if isinstance(child, Linear) and (not targets or key.endswith(targets)):
                child = LoRALinear(child)
                child.add_adapter(name, r, alpha, rng=rng)
            setattr(parent, key, child)  # every child, in order: assignment moves a key last
    return model


def switch_adapter(model: Module, name: str | None) -> None:
    """Make ``name`` the active adapter of every ``LoRALinear`` in ``model`` (None: the base)."""
    for _, m in model.named_modules():
        if isinstance(m, LoRALinear):
            m.set_adapter(name)


def count_parameters(model: Module) -> tuple[int, int]:
    """(trainable, total) numbers of parameters (tied weights once)."""
    params = model.parameters()
    return sum(p.size for p in params if p.requires_grad), sum(p.size for p in params)


def adamw_state_bytes(trainable: int, itemsize: int = 4) -> int:
    """AdamW keeps two moments (exp_avg, exp_avg_sq) per trainable parameter."""
    return 2 * trainable * itemsize
