"""KV retention: which tokens keep their K/V in a bounded cache as a sequence grows.

After n tokens a policy keeps a set K(n) of positions (always including the newest, n - 1);
a token once evicted never returns, so K(n + 1) is a subset of K(n) plus {n}:

* **full**: K(n) = {0, ..., n - 1}; |K(n)| = n, unbounded;
* **window(w)**: the w most recent, {n - w, ..., n - 1}; |K(n)| = min(n, w);
* **sinks(s, w)** (StreamingLLM): the first s tokens, the *attention sinks* that soak up
  the softmax mass, plus a recent window of w; |K(n)| = min(n, s + w);
* **sepllm(s, w, separators, m)** (SepLLM): the first s tokens, the most recent m
  separator tokens (here ``.`` and ``=``) before the window, and the window of w;
  |K(n)| <= min(n, s + m + w).

The K/V bytes of a model are |K(n)| * 2 n_layer n_kv_head head_dim itemsize, so a bounded
policy bounds memory by (s + m + w) * 2 n_layer n_kv_head head_dim itemsize however long
the stream. StreamingLLM assigns positions **within the cache**: the kept
tokens are numbered 0..|K|-1 in order and RoPE is applied to the cached (un-rotated) keys
at those positions at every step. :class:`RetentionCache` stores K/V in lab 18's
``PagedKVCache`` at token granularity (blocks of one slot): an evicted token's slot goes
back to a free list and is reused by the next token.

    pol = sinks(4, 24)
    pol.kept(tokens)                      # positions kept after len(tokens) tokens
    pol.max_kept(1000)                    # 28
    rc = RetentionCache(pol, n_layer=2, n_kv_head=2, head_dim=16, capacity=28)
    slot = rc.append(token_id)            # evicts, then gives the new token a slot

Lab: 34_speculative_decoding
Paper: Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024
(sections 3.1-3.2); Chen et al., "SepLLM: Accelerate Large Language Models by Compressing
One Segment into One Separator", ICML 2025 (section 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from minitorch.runtime.paged_attention import PagedKVCache

__all__ = [
    "Policy",
    "RetentionCache",
    "full",
    "kv_bytes",
    "kv_bytes_bound",
    "sepllm",
    "sinks",
    "window",
]


@dataclass(frozen=True)
class Policy:
    """A retention rule; build one with :func:`full`, :func:`window`, :func:`sinks`,
    :func:`sepllm`."""

    kind: str
    window: int = 0
    sinks: int = 0
    separators: frozenset[int] = field(default_factory=frozenset)
    max_seps: int = 0

    @property
    def name(self) -> str:
        if self.kind == "full":
            return "full"
        if self.kind == "window":
            return f"window({self.window})"
        if self.kind == "sinks":
            return f"sinks({self.sinks}+{self.window})"
        return f"sepllm({self.sinks}+{self.max_seps}+{self.window})"

    def kept(self, tokens: Sequence[int]) -> np.ndarray:
        """Sorted positions kept after the len(tokens) tokens seen so far (int64)."""
        n = len(tokens)
        if self.kind == "full":
            return np.arange(n, dtype=np.int64)
        start = max(0, n - self.window)
        if self.kind == "window":
            return np.arange(start, n, dtype=np.int64)
        start = min(n, max(self.sinks, start))
        head = list(range(min(self.sinks, n)))
        middle: list[int] = []
        if self.kind == "sepllm" and self.max_seps > 0:
            seps = [p for p in range(len(head), start) if int(tokens[p]) in self.separators]
            middle = seps[-self.max_seps :]
        return np.array(head + middle + list(range(start, n)), dtype=np.int64)

    def max_kept(self, n: int) -> int:
        """The closed-form bound on |K(n)|."""
        if self.kind == "full":
            return n
        if self.kind == "window":
            return min(n, self.window)
        if self.kind == "sinks":
            return min(n, self.sinks + self.window)
        return min(n, self.sinks + self.max_seps + self.window)


def full() -> Policy:
    return Policy("full")


def window(w: int) -> Policy:
    if w < 1:
        raise ValueError("the window must hold at least the newest token")
    return Policy("window", window=w)


def sinks(s: int, w: int) -> Policy:
    if w < 1 or s < 0:
        raise ValueError("need s >= 0 sinks and a window w >= 1")
    return Policy("sinks", window=w, sinks=s)


def sepllm(s: int, w: int, separators: Sequence[int], max_seps: int) -> Policy:
    if w < 1 or s < 0 or max_seps < 0:
        raise ValueError("need s >= 0, w >= 1, max_seps >= 0")
    return Policy("sepllm", window=w, sinks=s, separators=frozenset(separators), max_seps=max_seps)


def kv_bytes(n_kept: int, n_layer: int, n_kv_head: int, head_dim: int, itemsize: int = 4) -> int:
    """K and V of n_kept tokens in every layer."""
    return 2 * n_layer * n_kv_head * head_dim * itemsize * n_kept


def kv_bytes_bound(
    policy: Policy, n: int, n_layer: int, n_kv_head: int, head_dim: int, itemsize: int = 4
) -> int:
    """The most K/V bytes the policy can hold after n tokens."""
    return kv_bytes(policy.max_kept(n), n_layer, n_kv_head, head_dim, itemsize)


class RetentionCache:
    """K/V slots of one sequence under a policy, in a ``PagedKVCache`` of one-token blocks."""

    def __init__(
        self,
        policy: Policy,
        n_layer: int,
        n_kv_head: int,
        head_dim: int,
        capacity: int,
        dtype: type = np.float32,
    ) -> None:
        self.policy, self.capacity = policy, capacity
        self.cache = PagedKVCache(n_layer, capacity, 1, n_kv_head, head_dim, dtype)
        self.free: list[int] = list(range(capacity - 1, -1, -1))  # pop() gives 0, 1, ...
        self.slot_of: dict[int, int] = {}  # position -> slot
        self.tokens: list[int] = []
        self.history: list[np.ndarray] = []  # kept positions after each step
        self.peak = 0

    def append(self, token: int) -> int:
        """Admit one token: evict what the policy drops, then give the token a slot."""
        self.tokens.append(int(token))
        keep = self.policy.kept(self.tokens)
        keep_set = set(keep.tolist())
        for pos in [p for p in self.slot_of if p not in keep_set]:
            self.free.append(self.slot_of.pop(pos))
        if not self.free:
            raise RuntimeError(f"{self.policy.name} needs more than {self.capacity} slots")
        slot = self.free.pop()
        self.slot_of[len(self.tokens) - 1] = slot
        self.history.append(keep)
        self.peak = max(self.peak, len(self.slot_of))
        return slot

    def kept(self) -> tuple[np.ndarray, np.ndarray]:
        """Kept positions (sorted) and their slots."""
        pos = np.array(sorted(self.slot_of), dtype=np.int64)
        return pos, np.array([self.slot_of[int(p)] for p in pos], dtype=np.int64)

    def nbytes_live(self) -> int:
        k = self.cache.k
        return kv_bytes(len(self.slot_of), k.shape[0], k.shape[3], k.shape[4], k.itemsize)
