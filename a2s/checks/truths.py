"""The graders' shared ground truth, written once (blocked for learner code by default).

Every function here is in :data:`a2s.checks.truth_guard.TRUTH_MODULES`: while a learner's
function runs, a call from the learner's code raises
:class:`~a2s.checks.errors.ReferenceCalledError`; the graders call them freely. None of it
calls the reference package. Conventions:

* arrays are float64; the numpy truths are closed forms or plain loops, the ``*_torch`` ones
  are torch in float64 (where a grader's truth has always been torch's own function);
* attention layout ``(..., H, T, d)`` for queries and ``(..., H_kv, L, d)`` for keys and
  values; a 2-D ``(T, d)`` is one head. GQA: ``H`` is a multiple of ``H_kv`` and query head
  ``h`` reads K/V head ``h // (H // H_kv)`` (consecutive query heads share one K/V head,
  ``np.repeat`` / ``repeat_interleave``). Causal with ``offset``: query ``i`` sees keys
  ``j <= i + offset`` (``offset = L - T``: the queries are the last ``T`` of ``L``
  positions). The scale defaults to ``1 / sqrt(d)``;
* norms run over the last axis; eps goes inside the square root, ``sqrt(mean + eps)``;
* GELU is the tanh approximation unless named otherwise (``gelu_torch(z, "none")``: erf);
* ranks' buffers: the course convention splits ``n`` into ``p`` contiguous chunks, the first
  ``n % p`` one longer; the all-reduce truth is the element-wise sum by a plain loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "attention",
    "chunk_bounds",
    "chunks",
    "gelu_tanh",
    "gelu_torch",
    "layer_norm",
    "loop_sum",
    "rank_inputs",
    "rms_norm",
    "rms_norm_torch",
    "torch_attention",
]

_C = 0.7978845608028654  # sqrt(2 / pi)


# --------------------------------------------------------------------------- activations
def gelu_tanh(z: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation: ``0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))``."""
    return 0.5 * z * (1.0 + np.tanh(_C * (z + 0.044715 * z**3)))


def gelu_torch(z: np.ndarray, approximate: str = "tanh") -> np.ndarray:
    """torch's ``F.gelu`` in float64 (``approximate="none"``: the exact erf form)."""
    import torch
    import torch.nn.functional as F

    return F.gelu(torch.from_numpy(z), approximate=approximate).numpy()


# --------------------------------------------------------------------------- norms
def rms_norm(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm over the last axis: ``x / sqrt(mean(x^2) + eps) * g`` (no centering)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rms_norm_torch(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """torch's ``F.rms_norm`` over the last axis in float64, weight ``w``."""
    import torch
    import torch.nn.functional as F

    return F.rms_norm(torch.from_numpy(x), (x.shape[-1],), torch.from_numpy(w), eps).numpy()


def layer_norm(
    x: np.ndarray, g: np.ndarray | float, b: np.ndarray | float, eps: float = 1e-5
) -> np.ndarray:
    """LayerNorm over the last axis, token by token: ``(v - mean) / sqrt(var + eps) * g + b``
    (biased variance; ``g = 1.0, b = 0.0``: no affine part)."""
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape[:-1]):
        v = x[idx]
        out[idx] = (v - v.mean()) / np.sqrt(((v - v.mean()) ** 2).mean() + eps) * g + b
    return out


# --------------------------------------------------------------------------- attention
def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    causal: bool = True,
    scale: float | None = None,
    offset: int = 0,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """``softmax(q k^T * scale + mask) v`` with numpy, the row maximum subtracted first.

    Layout, GQA grouping, ``causal`` and ``offset``: the module docstring. ``scale=None``
    divides the scores by ``sqrt(d)``. ``keep``: an explicit ``(T, L)`` boolean mask of the
    keys each query sees, used instead of the causal one (a mistake model's mask).
    """
    if q.ndim > 2 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    s = q @ np.swapaxes(k, -1, -2)
    s = s / np.sqrt(q.shape[-1]) if scale is None else s * scale
    if keep is None and causal:
        keep = np.tri(s.shape[-2], s.shape[-1], offset, dtype=bool)
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def torch_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    offset: int = 0,
    scale: float | None = None,
) -> np.ndarray:
    """Causal attention by torch's ``scaled_dot_product_attention`` in float64.

    Layout, GQA grouping (``repeat_interleave``) and ``offset``: the module docstring; with
    ``offset=0`` and ``T = L`` it is SDPA's ``is_causal=True``. ``scale=None``: SDPA's
    ``1 / sqrt(d)``.
    """
    import torch
    import torch.nn.functional as F

    qt, kt, vt = (torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v))
    rep = qt.shape[-3] // kt.shape[-3]
    if rep > 1:
        kt, vt = kt.repeat_interleave(rep, -3), vt.repeat_interleave(rep, -3)
    mask = torch.ones(qt.shape[-2], kt.shape[-2], dtype=torch.bool).tril(offset)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale).numpy()


# --------------------------------------------------------------------------- ranks' buffers
def chunks(n: int, p: int) -> list[int]:
    """Chunk lengths of the course convention (the first ``n % p`` one longer), by a loop."""
    return [n // p + (1 if r < n % p else 0) for r in range(p)]


def chunk_bounds(n: int, p: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each of the ``p`` chunks of :func:`chunks`, by a loop."""
    out, start = [], 0
    for size in chunks(n, p):
        out.append((start, start + size))
        start += size
    return out


def rank_inputs(gen: np.random.Generator, p: int, n: int, ints: bool) -> list[np.ndarray]:
    """One array of length ``n`` per rank (int64 in [-99, 99], or standard normal float64)."""
    if ints:
        return [gen.integers(-99, 100, n).astype(np.int64) for _ in range(p)]
    return [gen.standard_normal(n) for _ in range(p)]


def loop_sum(xs: Sequence[np.ndarray]) -> np.ndarray:
    """Element-wise sum of the ranks' arrays, by a plain loop (the all-reduce's truth)."""
    total = np.zeros(len(xs[0]), dtype=xs[0].dtype)
    for i in range(len(total)):
        total[i] = sum(x[i] for x in xs)
    return total
