"""Serving workloads: requests arriving as a Poisson process with random prompt/output lengths.

    reqs = poisson_workload(500, rate=20.0, seed=0)       # ShareGPT-like lengths, 20 req/s
    reqs = tiny_workload(12, rate=50.0, seed=0)           # prompts the tiny GPT was trained on

Arrivals: gaps drawn from an exponential distribution of mean 1 / rate (``rate`` requests
per second; ``rate=inf`` puts every arrival at 0). Lengths: log-normal, clipped, with medians
close to the ShareGPT conversations used in the vLLM paper (prompt ~160, output ~340 tokens
on average). Serving benchmarks ignore the end-of-sequence token and generate exactly
``max_new_tokens`` per request, so two systems do the same work; so does the engine here.

Lab: 19_continuous_batching
Paper: Kwon et al., vLLM, SOSP 2023 (section 6.1: ShareGPT/Alpaca workloads, Poisson
arrivals)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from minitorch.model.corpus import examples
from minitorch.model.tokenizer import CharTokenizer

__all__ = ["Request", "poisson_workload", "tiny_workload"]


@dataclass(frozen=True)
class Request:
    """A prompt (token ids), how many tokens to generate, and when it arrives (seconds)."""

    prompt: tuple[int, ...]
    max_new_tokens: int
    arrival: float = 0.0


def _arrivals(g: np.random.Generator, n: int, rate: float) -> np.ndarray:
    if math.isinf(rate):
        return np.zeros(n)
    return np.cumsum(g.exponential(1.0 / rate, n))


def poisson_workload(
    n: int,
    rate: float,
    seed: int = 0,
    prompt_median: float = 120.0,
    output_median: float = 250.0,
    sigma: float = 0.8,
    max_len: int = 2048,
    vocab: int = 32000,
) -> list[Request]:
    """n requests: Poisson arrivals at ``rate``/s, log-normal prompt and output lengths."""
    g = np.random.default_rng(seed)
    arrivals = _arrivals(g, n, rate)
    prompt = np.clip(g.lognormal(np.log(prompt_median), sigma, n), 4, max_len // 2).astype(int)
    out = np.clip(g.lognormal(np.log(output_median), sigma, n), 1, max_len - prompt).astype(int)
    return [
        Request(tuple(g.integers(0, vocab, int(p)).tolist()), int(o), float(a))
        for p, o, a in zip(prompt, out, arrivals, strict=True)
    ]


def tiny_workload(
    n: int, rate: float, seed: int = 0, max_new: tuple[int, int] = (2, 20)
) -> list[Request]:
    """n reverse/sort prompts for the tiny GPT (at most 32 tokens with the answer)."""
    g = np.random.default_rng(seed)
    tok = CharTokenizer()
    arrivals = _arrivals(g, n, rate)
    pairs = examples(["reverse", "sort"], n, seed=seed, min_len=3, max_len=8)
    return [
        Request(tuple(tok.encode(p)), int(g.integers(max_new[0], max_new[1] + 1)), float(a))
        for (p, _), a in zip(pairs, arrivals, strict=True)
    ]
