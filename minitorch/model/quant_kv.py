"""An INT8 KV cache: keys and values stored as int8 with one scale per token and head.

Decoding reads the whole cache every step, so its bytes set the speed of long contexts. INT8
halves them against FP16; a scale per (token, head) vector keeps the error at half a step of
that vector's own range, and a new token never changes the scales of the old ones. Keys and
values are both quantized per token here, the simplest scheme; KVQuant quantizes values per
token too, but keys per channel and before RoPE, where their outlier channels sit.

Lab: 11_quantization
Paper: Hooper et al., "KVQuant: Towards 10 Million Context Length LLM Inference with KV Cache
Quantization", 2024 (per-token values; per-channel, pre-RoPE keys); Kwon et al., vLLM, SOSP
2023 (FP8/INT8 KV).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Int8KVCache"]


class Int8KVCache:
    """Append-only cache of (heads, dim) keys and values per token, stored as int8."""

    def __init__(self, heads: int, dim: int, capacity: int) -> None:
        self.k = np.zeros((capacity, heads, dim), np.int8)
        self.v = np.zeros((capacity, heads, dim), np.int8)
        self.k_scale = np.zeros((capacity, heads), np.float32)
        self.v_scale = np.zeros((capacity, heads), np.float32)
        self.length = 0

    @staticmethod
    def _q(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scale = np.maximum(np.abs(t).max(axis=-1) / 127.0, 1e-12)
        return np.round(t / scale[..., None]).astype(np.int8), scale.astype(np.float32)

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        """Add one token's keys and values, each (heads, dim)."""
        t = self.length
        self.k[t], self.k_scale[t] = self._q(k)
        self.v[t], self.v_scale[t] = self._q(v)
        self.length += 1

    def keys(self) -> np.ndarray:
        """Dequantized keys (length, heads, dim)."""
        n = self.length
        return self.k[:n].astype(np.float64) * self.k_scale[:n, :, None]

    def values(self) -> np.ndarray:
        """Dequantized values (length, heads, dim)."""
        n = self.length
        return self.v[:n].astype(np.float64) * self.v_scale[:n, :, None]

    def nbytes(self) -> int:
        """Bytes held for the tokens so far: int8 entries plus float32 scales."""
        n = self.length
        return n * (self.k[0].nbytes + self.v[0].nbytes + self.k_scale[0].nbytes * 2)
