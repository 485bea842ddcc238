"""Rollouts from lab 19's serving engine, with each sampled token's log-probability.

    engine = RolloutEngine(model, temperature=2.0, seed=0)       # lab 19's Engine, sampling
    rollouts = generate(engine, prompts, group_size=4, max_new_tokens=10)
    batch = pack(rollouts)                                        # ids, positions, mask, ...
    trainer = recompute_logprobs(model, batch, temperature=2.0)   # the trainer's forward
    np.abs(trainer - batch.engine_logp)[batch.mask > 0].max()     # ~1e-6 in float32

The engine (paged KV cache, continuous batching, chunked prefill) samples each token from
softmax(logits / T) with a generator seeded by (seed, sequence, position), so the tokens do
not depend on batching; :class:`RolloutEngine` records log p(token) at that moment, and the
policy version it was sampled under. The trainer recomputes the same numbers with one padded
forward of the whole sequences (no cache): equal within float32 rounding when both run the
same weights in the same precision. They differ when they do not: an engine serving the
weights rounded to bfloat16 (:func:`bf16_copy`) gives log-probs off by up to ~2e-2 (measured
on the tiny GPT), so the ratio rho = exp(logp - logp_old) is not 1 at the first step unless
the trainer recomputes ``logp_old`` itself (veRL's actor recomputes ``old_log_probs`` with
``compute_log_prob`` after generation; the engine's numbers serve to monitor the gap).

Lab: 35_rl_systems
Paper: Kwon et al., vLLM, SOSP 2023 (the engine); Sheng et al. 2024, "HybridFlow" (veRL,
arXiv:2409.19256: generation in an inference engine, log-probs recomputed by the trainer)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.autograd import Tensor, no_grad
from minitorch.model.gpt import GPT
from minitorch.numerics.bfloat16 import round_to_bf16
from minitorch.rl.grpo import token_logprobs
from minitorch.rl.task import Prompt, response_mask, reward
from minitorch.runtime.engine import Engine, Result, Work, batched_step
from minitorch.runtime.paged_model import PagedGPT
from minitorch.runtime.sequence import Sequence as Seq
from minitorch.runtime.workload import Request

__all__ = [
    "Batch",
    "Rollout",
    "RolloutEngine",
    "bf16_copy",
    "generate",
    "pack",
    "policy_logprobs",
    "recompute_logprobs",
]


class RolloutEngine(Engine):
    """Lab 19's engine that keeps log p of every sampled token and the policy version."""

    def __init__(self, model: GPT, temperature: float = 1.0, seed: int = 0, **kw: object) -> None:
        kw = {"num_blocks": 512, "block_size": 4, "token_budget": 512, "max_num_seqs": 64} | kw
        super().__init__(model, greedy=False, temperature=temperature, seed=seed, **kw)  # type: ignore[arg-type]
        self.step_fn = self._step
        self.version, self.busy, self.steps_run = 0, False, 0
        self.on_step: Callable[[RolloutEngine], None] | None = None  # called before each step
        self.logp: dict[int, list[float]] = {}
        self.versions: dict[int, list[int]] = {}

    def _step(self, runner: PagedGPT, work: Sequence[Work]) -> list[np.ndarray | None]:
        if self.on_step is not None:
            self.on_step(self)
        self.steps_run += 1
        return batched_step(runner, work)

    def run(self, requests: Sequence[Request]) -> Result:
        """Lab 19's ``run``, marked busy while it serves (a sync must wait for the end)."""
        self.busy = True
        try:
            return super().run(requests)
        finally:
            self.busy = False

    def _sample(self, logits: np.ndarray | None, seq: Seq) -> int:
        token = super()._sample(logits, seq)
        assert logits is not None
        z = logits.astype(np.float64) / self.temperature
        lse = z.max() + np.log(np.exp(z - z.max()).sum())
        self.logp.setdefault(seq.seq_id, []).append(float(z[token] - lse))
        self.versions.setdefault(seq.seq_id, []).append(self.version)
        return token


@dataclass
class Rollout:
    """One completion: its prompt, tokens, engine log-probs, per-token versions, reward."""

    prompt: Prompt
    group: int
    tokens: list[int]
    engine_logp: list[float]
    versions: list[int]
    reward: float

    @property
    def version(self) -> int:
        """The one policy version that sampled every token (raises if they differ)."""
        if len(set(self.versions)) != 1:
            raise ValueError(f"rollout mixes policy versions {sorted(set(self.versions))}")
        return self.versions[0]


def generate(
    engine: RolloutEngine,
    prompts: Sequence[Prompt],
    group_size: int,
    max_new_tokens: int = 10,
    partial: bool = False,
) -> list[Rollout]:
    """G completions of every prompt in one engine run, laid out group after group."""
    reqs = [Request(p.ids, max_new_tokens) for p in prompts for _ in range(group_size)]
    engine.logp, engine.versions = {}, {}
    engine.seed += 1  # a fresh draw each call, still a function of the engine's seed
    outputs = engine.run(reqs).outputs
    out = []
    for i, toks in enumerate(outputs):
        p = prompts[i // group_size]
        out.append(
            Rollout(
                p,
                i // group_size,
                toks,
                engine.logp[i],
                engine.versions[i],
                reward(p.answer, toks, partial),
            )
        )
    return out


@dataclass
class Batch:
    """Rollouts as arrays: ids (B, L) right-padded, completion tokens and the positions whose
    logits predict them (B, T), the response mask (B, T), engine log-probs, rewards (B,)."""

    ids: np.ndarray
    tokens: np.ndarray
    positions: np.ndarray
    mask: np.ndarray
    engine_logp: np.ndarray
    rewards: np.ndarray


def pack(rollouts: Sequence[Rollout]) -> Batch:
    """One padded batch of rollouts whose completions all have the same length."""
    n = {len(r.tokens) for r in rollouts}
    if len(n) != 1:
        raise ValueError(f"completions of different lengths {sorted(n)}")
    t = n.pop()
    width = max(len(r.prompt.ids) for r in rollouts) + t
    ids = np.zeros((len(rollouts), width), np.int64)
    pos = np.zeros((len(rollouts), t), np.int64)
    for b, r in enumerate(rollouts):
        seq = list(r.prompt.ids) + r.tokens
        ids[b, : len(seq)] = seq
        pos[b] = np.arange(len(r.prompt.ids) - 1, len(seq) - 1)
    return Batch(
        ids,
        np.array([r.tokens for r in rollouts], np.int64),
        pos,
        np.stack([response_mask(r.tokens) for r in rollouts]),
        np.array([r.engine_logp for r in rollouts], np.float64),
        np.array([r.reward for r in rollouts], np.float64),
    )


def policy_logprobs(model: GPT, batch: Batch, temperature: float = 1.0) -> Tensor:
    """The trainer's log-probabilities of the sampled tokens, on the tape: (B, T)."""
    return token_logprobs(model(batch.ids), batch.tokens, batch.positions, temperature)


def recompute_logprobs(model: GPT, batch: Batch, temperature: float = 1.0) -> np.ndarray:
    """The same, without a tape (old policy, reference model): float64 (B, T)."""
    with no_grad():
        return policy_logprobs(model, batch, temperature).data.astype(np.float64)


def bf16_copy(model: GPT) -> GPT:
    """A copy of ``model`` whose weights are rounded to bfloat16 (stored as float32)."""
    twin = GPT(model.config, seed=0)
    twin.load_state_dict({k: round_to_bf16(v) for k, v in model.state_dict().items()})
    return twin
