"""Serving the quantized tiny GPT: INT8 weights, an INT8 paged KV cache, continuous batching.

The capstone's glue. :func:`quant_engine` builds lab 19's :class:`~minitorch.runtime.engine.
Engine` around the tiny GPT with every linear weight rounded to INT8 per output channel (lab
11, ``quantized_model(model, "int8")``) and its K/V stored in an :class:`Int8PagedKVCache`:
lab 18's block layout with int8 entries and one float32 scale per (token, head), as lab 11's
``Int8KVCache`` stores them contiguously (keys as well as values per token; KVQuant, cited
below, quantizes keys per channel, before RoPE). The model code is unchanged: attention reads
``cache.k[layer]``, here dequantized on the fly.

    engine = quant_engine(load_pretrained(), num_blocks=64, block_size=4, token_budget=32)
    reqs, answers = capstone_workload(24, rate=100.0, seed=0)   # Poisson arrivals
    result = engine.run(reqs)
    served_work(result), baseline_work(reqs)     # (forward passes, token positions)

Work counts are the deterministic throughput proxies: a forward pass reads every weight once
(on a GPU, a decode step costs about that, whatever the batch), and the linear layers' FLOPs
grow with the token positions computed. The no-cache one-at-a-time baseline runs one pass per
output token over the whole prefix: ``p + i`` positions for the ``i``-th token of a prompt of
``p``. :func:`kv_usage` reads the KV memory of a live engine: blocks held, the paging bound
``sum ceil(len / block_size)`` and what reserving every request at its maximum length takes.
:func:`capstone_report` runs the whole report of the lab from a seed (workload
``capstone_workload(24, 100.0, seed)``, configuration ``LAB_SERVING``, lab 19's modelled
clock), every figure computed, none typed.

Lab: 28_capstone
Paper: Kwon et al., vLLM, SOSP 2023; Yu et al., Orca, OSDI 2022; Dettmers et al.,
LLM.int8(), NeurIPS 2022; Hooper et al., KVQuant, 2024
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minitorch.autograd import no_grad
from minitorch.model.config import GPTConfig
from minitorch.model.corpus import IGNORE, examples, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.quant_model import quantized_model
from minitorch.model.tokenizer import CharTokenizer
from minitorch.runtime.engine import CostModel, Engine, Result
from minitorch.runtime.paged_model import PagedGPT
from minitorch.runtime.workload import Request

__all__ = [
    "LAB_SERVING",
    "Int8PagedKVCache",
    "baseline_work",
    "capstone_report",
    "capstone_workload",
    "kv_bytes_per_token",
    "kv_usage",
    "quant_engine",
    "quantize_kv",
    "served_work",
    "work_counts",
]


LAB_SERVING: dict[str, Any] = {
    "num_blocks": 64,
    "block_size": 4,
    "token_budget": 32,
    "max_num_seqs": 8,
}


def quantize_kv(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric INT8 per vector of the last axis: x (..., d) -> q (..., d) int8, scale (...)."""
    scale = np.maximum(np.abs(x).max(axis=-1) / np.float32(127.0), np.float32(1e-12))
    scale = scale.astype(np.float32)
    return np.round(x / scale[..., None]).astype(np.int8), scale


class _Dequantized:
    """``cache.k[layer]``: the layer's int8 blocks times their scales, (blocks, bs, H, d)."""

    def __init__(self, q: np.ndarray, scale: np.ndarray) -> None:
        self.q, self.scale = q, scale

    def __getitem__(self, layer: int) -> np.ndarray:
        return self.q[layer].astype(np.float32) * self.scale[layer][..., None]


class Int8PagedKVCache:
    """A paged KV cache of int8 entries with a float32 scale per (slot, head).

    Same interface as :class:`~minitorch.runtime.paged_attention.PagedKVCache`: ``write``,
    ``copy_block``, ``nbytes`` and ``k[layer]`` / ``v[layer]`` (dequantized).
    """

    def __init__(
        self, n_layer: int, num_blocks: int, block_size: int, n_kv_head: int, head_dim: int
    ) -> None:
        shape = (n_layer, num_blocks, block_size, n_kv_head, head_dim)
        self.k_q = np.zeros(shape, np.int8)
        self.v_q = np.zeros(shape, np.int8)
        self.k_scale = np.zeros(shape[:-1], np.float32)
        self.v_scale = np.zeros(shape[:-1], np.float32)
        self.block_size = block_size

    @property
    def k(self) -> _Dequantized:
        return _Dequantized(self.k_q, self.k_scale)

    @property
    def v(self) -> _Dequantized:
        return _Dequantized(self.v_q, self.v_scale)

    def write(self, layer: int, slots: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        """Quantize and store k, v (n, n_kv_head, head_dim) at flat slots (n,) of one layer."""
        idx = np.asarray(slots, dtype=np.int64)
        for q, s, x in ((self.k_q, self.k_scale, k), (self.v_q, self.v_scale, v)):
            xq, xs = quantize_kv(np.asarray(x, np.float32))
            q[layer].reshape(-1, *q.shape[3:])[idx] = xq  # views: writes land in the cache
            s[layer].reshape(-1, s.shape[3])[idx] = xs

    def copy_block(self, src: int, dst: int) -> None:
        for a in (self.k_q, self.v_q, self.k_scale, self.v_scale):
            a[:, dst] = a[:, src]

    def nbytes(self) -> int:
        return int(self.k_q.nbytes + self.v_q.nbytes + self.k_scale.nbytes + self.v_scale.nbytes)


def kv_bytes_per_token(cfg: GPTConfig, int8: bool = True) -> int:
    """K and V of one token over all layers: int8 entries + a float32 scale per head, or FP32."""
    per_head = cfg.head_dim + 4 if int8 else 4 * cfg.head_dim
    return 2 * cfg.n_layer * cfg.n_kv_head * per_head


def quant_engine(
    model: GPT,
    num_blocks: int = 64,
    block_size: int = 4,
    token_budget: int = 64,
    max_num_seqs: int = 8,
    cost: CostModel | None = None,
    **kwargs: Any,
) -> Engine:
    """An engine serving ``model`` with INT8 weights (per channel) and an INT8 paged KV cache."""
    q = quantized_model(model, "int8")
    engine = Engine(q, num_blocks, block_size, token_budget, max_num_seqs, cost=cost, **kwargs)
    cfg = q.config
    cache = Int8PagedKVCache(cfg.n_layer, num_blocks, block_size, cfg.n_kv_head, cfg.head_dim)
    engine.runner = PagedGPT(q, cache)  # type: ignore[arg-type]
    return engine


def baseline_work(requests: Sequence[Request]) -> tuple[int, int]:
    """(forward passes, token positions) of no-cache, one-at-a-time greedy generation."""
    passes = sum(r.max_new_tokens for r in requests)
    tokens = sum(
        len(r.prompt) * r.max_new_tokens + r.max_new_tokens * (r.max_new_tokens - 1) // 2
        for r in requests
    )
    return passes, tokens


def served_work(result: Result) -> tuple[int, int]:
    """(forward passes, token positions) the engine ran: one pass per step, its tokens."""
    return len(result.steps), sum(s.tokens for s in result.steps)


def work_counts(requests: Sequence[Request], result: Result) -> dict[str, int]:
    """Forward passes and token positions of the served run and of the no-cache baseline."""
    (bp, bt), (sp, st) = baseline_work(requests), served_work(result)
    return {"baseline_passes": bp, "baseline_tokens": bt, "served_passes": sp, "served_tokens": st}


def kv_usage(engine: Engine) -> dict[str, int]:
    """KV memory of a live engine (blocks): held, the paging bound, a max-length reservation,
    and the bytes the held blocks take in the INT8 cache."""
    bs, running = engine.blocks.block_size, engine.scheduler.running
    held = engine.blocks.num_used_blocks()
    cfg = engine.runner.cfg if engine.runner is not None else None
    per_token = kv_bytes_per_token(cfg) if cfg is not None else 0
    return {
        "held": held,
        "bound": sum(-(-len(s.tokens) // bs) for s in running),
        "reserved": sum(-(-(len(s.prompt) + s.max_new_tokens) // bs) for s in running),
        "bytes": held * bs * per_token,
    }


def capstone_workload(
    n: int, rate: float, seed: int = 0, extra: tuple[int, int] = (0, 10)
) -> tuple[list[Request], list[str]]:
    """n reverse/sort requests, Poisson arrivals at ``rate``/s, and their expected answers.

    Each request asks for its answer (``len + 1`` tokens, the ``.`` included) plus 0-10 more
    tokens (serving benchmarks ignore the end token), so output lengths are mixed, 4-19.
    """
    g = np.random.default_rng(seed)
    tok = CharTokenizer()
    gaps = g.exponential(1.0 / rate, n) if np.isfinite(rate) else np.zeros(n)
    pairs = examples(["reverse", "sort"], n, seed=seed, min_len=3, max_len=8)
    lo, hi = extra
    reqs = [
        Request(tuple(tok.encode(p)), len(a) + int(g.integers(lo, hi + 1)), float(t))
        for (p, a), t in zip(pairs, np.cumsum(gaps), strict=True)
    ]
    return reqs, [a for _, a in pairs]


def capstone_report(
    model: GPT, seed: int = 0, n: int = 24, rate: float = 100.0
) -> dict[str, float]:
    """Every figure of the capstone's report, from code: serve, count, measure, score.

    The workload ``capstone_workload(n, rate, seed)`` is served by ``quant_engine(model,
    **LAB_SERVING, cost=CostModel())`` (times on lab 19's modelled clock); the baseline is the
    FP32 model's own no-cache ``generate``, one request at a time. Losses: answer cross
    entropy on ``task_batch(("reverse", "sort"), 64, seed)``, FP32 and INT8 weights.
    """
    reqs, answers = capstone_workload(n, rate, seed)
    engine = quant_engine(model, **LAB_SERVING, cost=CostModel())
    peak = {"held": 0, "reserved": 0, "bytes": 0}
    inner = engine.step_fn

    def step(runner: PagedGPT, work: Sequence[Any]) -> Sequence[Any]:
        usage = kv_usage(engine)
        for key in peak:
            peak[key] = max(peak[key], usage[key])
        return inner(runner, work)

    engine.step_fn = step
    result = engine.run(reqs)
    counts = work_counts(reqs, result)
    tok = CharTokenizer()
    alone = [
        model.generate(np.array([r.prompt]), r.max_new_tokens)[0, len(r.prompt) :] for r in reqs
    ]

    def accuracy(outputs: Sequence[Any]) -> float:
        return float(
            np.mean([tok.decode(o).startswith(a) for o, a in zip(outputs, answers, strict=True)])
        )

    x, y = task_batch(("reverse", "sort"), 64, seed)
    with no_grad():
        loss_fp32 = float(model.loss(x, y, ignore=IGNORE).item())
        loss_int8 = float(engine.runner.model.loss(x, y, ignore=IGNORE).item())  # type: ignore[union-attr]
    ttft = np.percentile([s.ttft for s in result.seqs], [50, 99])
    tpot = np.percentile([s.tpot for s in result.seqs], [50, 99])
    return {
        "throughput": float(result.metrics()["throughput"]),
        "ttft_p50": float(ttft[0]),
        "ttft_p99": float(ttft[1]),
        "tpot_p50": float(tpot[0]),
        "tpot_p99": float(tpot[1]),
        "pass_speedup": counts["baseline_passes"] / counts["served_passes"],
        "token_speedup": counts["baseline_tokens"] / counts["served_tokens"],
        "kv_peak_blocks": float(peak["held"]),
        "kv_peak_bytes": float(peak["bytes"]),
        "kv_reserved_blocks": float(peak["reserved"]),
        "loss_fp32": loss_fp32,
        "loss_int8": loss_int8,
        "accuracy_fp32": accuracy(alone),
        "accuracy_served": accuracy(result.outputs),
    }
