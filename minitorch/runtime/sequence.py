"""A request being served: its tokens, how many have K/V in the cache, and its timestamps.

    seq = Sequence(seq_id=0, prompt=[3, 7, 8, 2], max_new_tokens=5, arrival=0.0)
    seq.need                      # 4: prompt tokens still without K/V (prefill)
    seq.num_computed += 4; seq.append(9, now=0.01)
    seq.need                      # 1: the sampled token (decode)

``tokens`` is prompt + output; ``num_computed`` counts the leading tokens whose K/V are in
the cache. Preemption by recompute sets it back to 0 (the output is kept, so the prompt and
the output so far are prefilled again). Times feed the serving metrics: time to first token
(TTFT = first token - arrival) and time per output token (TPOT = (finish - first token) /
(n_out - 1)).

Lab: 19_continuous_batching
Paper: Kwon et al., vLLM, SOSP 2023 (sequences, preemption by recompute); Yu et al., "Orca: A
Distributed Serving System for Transformer-Based Generative Models", OSDI 2022
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Sequence"]


@dataclass
class Sequence:
    """One request: prompt, generated tokens, K/V progress, timestamps (seconds)."""

    seq_id: int
    prompt: list[int]
    max_new_tokens: int
    arrival: float = 0.0
    output: list[int] = field(default_factory=list)
    num_computed: int = 0
    token_times: list[float] = field(default_factory=list)
    preemptions: int = 0

    @property
    def tokens(self) -> list[int]:
        return self.prompt + self.output

    @property
    def need(self) -> int:
        """Tokens whose K/V must still be computed before the next token can be sampled."""
        return len(self.prompt) + len(self.output) - self.num_computed

    @property
    def finished(self) -> bool:
        return len(self.output) >= self.max_new_tokens

    def append(self, token: int, now: float) -> None:
        self.output.append(int(token))
        self.token_times.append(now)

    def preempt(self) -> None:
        """Drop the K/V (recompute later): every token becomes prefill again."""
        self.num_computed = 0
        self.preemptions += 1

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.arrival

    @property
    def tpot(self) -> float:
        """Mean time between output tokens after the first (0 for a single token)."""
        n = len(self.token_times)
        return (self.token_times[-1] - self.token_times[0]) / (n - 1) if n > 1 else 0.0
