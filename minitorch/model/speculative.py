"""Speculative decoding: a cheap draft proposes, the target verifies, the output is exact.

A draft model q proposes gamma tokens x_1..x_gamma autoregressively; the target p scores
all gamma + 1 positions in **one** forward pass. Draft token x_i is accepted with
probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection a token is drawn from the
residual norm(max(0, p_i - q_i)) and the step ends; if all gamma are accepted, one bonus
token is drawn from p_{gamma+1}. Each emitted token is then distributed exactly as p:

    P(out = x) = q(x) min(1, p(x)/q(x)) + (1 - beta) norm(max(0, p - q))(x) = p(x),

with beta = sum_x min(p(x), q(x)) = 1 - D_TV(p, q) the acceptance probability (Leviathan
et al. 2023; alpha = E[beta]). With
i.i.d. acceptances of rate alpha a target pass yields on average

    E[tokens per target pass] = (1 - alpha^(gamma + 1)) / (1 - alpha),

and with c = (draft cost) / (target cost) the expected walltime improvement is
(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)). The greedy variant
accepts while the draft token equals the target's argmax and emits the argmax at the
first mismatch: its output is exactly plain greedy decoding of the target.

Models are callables ``logits(tokens) -> (len(tokens), vocab)``; :class:`NGramDraft` is a
counting draft fitted on the course corpus in milliseconds, :func:`gpt_logits` wraps the
tiny GPT.

    res = speculative_generate(target, draft, prompt, n=20, gamma=4, seed=0)
    res.tokens, res.target_calls, res.draft_calls, res.accepted

Lab: 34_speculative_decoding
Paper: Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative
Decoding", ICML 2023 (equation numbers left out: not checked against the paper); Chen et al.,
"Accelerating Large Language Model Decoding with Speculative Sampling", 2023
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from minitorch.autograd import no_grad

__all__ = [
    "NGramDraft",
    "SpecResult",
    "acceptance_rate",
    "expected_tokens",
    "gpt_logits",
    "plain_generate",
    "residual",
    "softmax",
    "speculative_generate",
    "step_distribution",
    "verify",
    "walltime_factor",
]

Logits = Callable[[np.ndarray], np.ndarray]


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def acceptance_rate(p: np.ndarray, q: np.ndarray) -> float:
    """beta = sum_x min(p(x), q(x)) = 1 - D_TV(p, q) (Leviathan et al.)."""
    return float(np.minimum(p, q).sum())


def residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p - q)); p itself when p == q (then no rejection can happen)."""
    r = np.maximum(np.asarray(p, np.float64) - q, 0.0)
    s = r.sum()
    return r / s if s > 0 else np.asarray(p, np.float64)


def step_distribution(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The law of the first emitted token, summed analytically over the draft outcome."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        accept = np.where(q > 0, np.minimum(1.0, p / q), 0.0)
    return q * accept + (1.0 - acceptance_rate(p, q)) * residual(p, q)


def expected_tokens(alpha: float, gamma: int) -> float:
    """Tokens per target pass, (1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan et al.)."""
    if alpha >= 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def walltime_factor(alpha: float, gamma: int, c: float) -> float:
    """Expected walltime improvement (Leviathan et al.): E[tokens] / (gamma c + 1)."""
    return expected_tokens(alpha, gamma) / (gamma * c + 1.0)


def _draw(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One sample by inverting the CDF (faster than ``rng.choice`` for one draw)."""
    cdf = np.cumsum(probs)
    return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)


def verify(
    p_rows: np.ndarray, q_rows: np.ndarray, draft: Sequence[int], rng: np.random.Generator
) -> tuple[list[int], int]:
    """One verification: p_rows (gamma+1, V), q_rows (gamma, V), draft tokens (gamma,).
    Returns (emitted tokens, number of draft tokens accepted); 1..gamma+1 tokens."""
    out: list[int] = []
    for i, x in enumerate(draft):
        px, qx = float(p_rows[i][x]), float(q_rows[i][x])
        if qx > 0 and rng.random() < min(1.0, px / qx):
            out.append(int(x))
            continue
        out.append(_draw(residual(p_rows[i], q_rows[i]), rng))
        return out, i
    out.append(_draw(np.asarray(p_rows[len(draft)], np.float64), rng))
    return out, len(draft)


@dataclass
class SpecResult:
    """Generated tokens (prompt included) and the work it took."""

    tokens: np.ndarray
    target_calls: int = 0
    draft_calls: int = 0
    accepted: list[int] = field(default_factory=list)  # draft tokens accepted per pass

    @property
    def tokens_per_target_call(self) -> float:
        new = sum(self.accepted) + len(self.accepted)
        return new / max(self.target_calls, 1)


def speculative_generate(
    target: Logits,
    draft: Logits,
    prompt: Sequence[int],
    n: int,
    gamma: int = 4,
    seed: int = 0,
    greedy: bool = False,
    temperature: float = 1.0,
) -> SpecResult:
    """Append exactly n tokens to prompt by speculative decoding (sampled or greedy)."""
    rng = np.random.default_rng(seed)
    toks = [int(t) for t in prompt]
    res = SpecResult(np.zeros(0, np.int64))
    goal = len(toks) + n
    while len(toks) < goal:
        g = min(gamma, goal - len(toks) - 1)  # never draft past the goal
        ctx, q_rows = list(toks), []
        for _ in range(g):
            q = softmax(draft(np.asarray(ctx, np.int64))[-1], temperature)
            res.draft_calls += 1
            x = int(q.argmax()) if greedy else _draw(q, rng)
            q_rows.append(q)
            ctx.append(x)
        logits = target(np.asarray(ctx, np.int64))[-(g + 1) :]  # one pass, g + 1 rows
        res.target_calls += 1
        drafted = ctx[len(toks) :]
        if greedy:
            best = np.asarray(logits).argmax(axis=-1)
            k = 0
            while k < g and drafted[k] == int(best[k]):
                k += 1
            emitted = [*drafted[:k], int(best[k])]
        else:
            emitted, k = verify(softmax(logits, temperature), np.array(q_rows), drafted, rng)
        res.accepted.append(k)
        toks.extend(emitted)
    res.tokens = np.asarray(toks[:goal], np.int64)
    return res


def plain_generate(
    target: Logits,
    prompt: Sequence[int],
    n: int,
    seed: int = 0,
    greedy: bool = True,
    temperature: float = 1.0,
) -> SpecResult:
    """The baseline: one target pass per token."""
    rng = np.random.default_rng(seed)
    toks = [int(t) for t in prompt]
    res = SpecResult(np.zeros(0, np.int64))
    for _ in range(n):
        row = np.asarray(target(np.asarray(toks, np.int64)))[-1]
        res.target_calls += 1
        p = softmax(row, temperature)
        toks.append(int(row.argmax()) if greedy else _draw(p, rng))
    res.tokens = np.asarray(toks, np.int64)
    return res


class NGramDraft:
    """An order-n counting model with add-k smoothing: ``draft(tokens) -> (len, V)`` log
    probabilities of the next token after each prefix (a draft, not a language model)."""

    def __init__(self, vocab_size: int, order: int = 3, k: float = 0.1) -> None:
        self.vocab_size, self.order, self.k = vocab_size, order, k
        self.counts: dict[tuple[int, ...], np.ndarray] = {}

    def fit(self, sequences: Sequence[Sequence[int]]) -> NGramDraft:
        for seq in sequences:
            s = [int(t) for t in seq]
            for i in range(1, len(s)):
                ctx = tuple(s[max(0, i - self.order + 1) : i])
                row = self.counts.setdefault(ctx, np.zeros(self.vocab_size))
                row[s[i]] += 1
        return self

    def _row(self, prefix: tuple[int, ...]) -> np.ndarray:
        for start in range(len(prefix) + 1):  # back off to shorter contexts
            row = self.counts.get(prefix[start:])
            if row is not None:
                return np.log((row + self.k) / (row.sum() + self.k * self.vocab_size))
        return np.full(self.vocab_size, -np.log(self.vocab_size))

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        s = tuple(int(t) for t in tokens)
        n = self.order - 1
        return np.stack([self._row(s[max(0, i + 1 - n) : i + 1]) for i in range(len(s))])


def gpt_logits(model: Any) -> Logits:
    """The tiny GPT as ``tokens -> (len, V)`` logits over its last block_size tokens."""

    def call(tokens: np.ndarray) -> np.ndarray:
        window = np.asarray(tokens, np.int64)[-model.config.block_size :]
        with no_grad():
            return np.asarray(model(window[None]).data[0], np.float64)

    return call
