"""Grader of exercise 34.5: a KV eviction policy (sinks + recent window + heavy hitters) under
a budget the grader counts.

The grader streams tokens into its own cache record: at each step the new token is admitted,
its query attends over the cached tokens (scores drawn here: the first tokens and a few
"heavy" ones draw more attention, as in trained models), and every cached token accumulates
the attention it receives (H2O's accumulated score). Then the learner's
``evict(kept, mass, budget, sinks, recent)`` names the positions to drop. The learner's code
runs in a forked child (:func:`~a2s.checks.harness.run_apart`) and gets copies; the cache,
its size after every step and the attention mass live here. Each step's evictions must be the
rule's (``_truth.evictions``) and the cache may never hold more than ``budget`` tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.harness import request, run_apart
from a2s.checks.lab34._truth import evictions

__all__ = ["check_evict"]

_K = "minitorch.runtime.kv_retention"
_HINTS = {
    "oldest": "Evict by attention mass, not by age: among the tokens that are neither sinks nor "
    "recent, drop the ones with the LEAST accumulated mass (that is H2O's heavy-hitter rule; "
    "dropping the oldest is a plain window).",
    "highest": "Drop the tokens with the least accumulated mass, keep the heavy hitters.",
    "sinks": "Never evict the first `sinks` positions (0 .. sinks - 1): the attention sinks.",
    "recent": "Never evict the `recent` newest tokens, whatever their mass (they have had "
    "few queries to collect it).",
    "always": "Evict only when the cache is over budget, and only len(kept) - budget tokens.",
    "newer": "On equal mass evict the OLDER token first (sort by (mass, position)).",
}


class _Stream:
    """The grader's cache and attention record for one stream."""

    def __init__(
        self,
        label: str,
        n: int,
        budget: int,
        sinks: int,
        recent: int,
        g: np.random.Generator,
        sink_bias: float = 2.5,
        quantum: float = 0.0,
    ) -> None:
        self.sink_bias, self.quantum = sink_bias, quantum
        self.label, self.n, self.budget, self.sinks, self.recent = label, n, budget, sinks, recent
        self.g, self.step = g, 0
        self.kept: list[int] = []
        self.mass: dict[int, float] = {}
        self.heavy = set(
            g.choice(np.arange(sinks, n), size=max(2, n // 10), replace=False).tolist()
        )
        self.problem, self.open, self.peak = "", False, 0

    def _admit(self) -> None:
        t = self.step
        self.kept.append(t)
        self.mass[t] = 0.0
        logits = np.array(
            [
                self.sink_bias if p < self.sinks else 1.5 if p in self.heavy else 0.0
                for p in self.kept
            ]
        ) + self.g.standard_normal(len(self.kept))
        att = np.exp(logits - logits.max())
        att /= att.sum()
        if self.quantum:  # attention in whole quanta: equal masses, ties broken by age
            att = np.round(att / self.quantum) * self.quantum
        for p, a in zip(self.kept, att, strict=True):
            self.mass[p] += float(a)

    def next(self) -> Any:
        if self.open:
            self.problem = self.problem or "a new step began before the last one returned."
        if self.problem or self.step >= self.n:
            return None
        self._admit()
        self.open = True
        return (
            list(self.kept),
            [self.mass[p] for p in self.kept],
            self.budget,
            self.sinks,
            self.recent,
        )

    def done(self, got: Any) -> None:
        self.open = False
        want = evictions(
            self.kept, [self.mass[p] for p in self.kept], self.budget, self.sinks, self.recent
        )
        where = f"[{self.label}, token {self.step}, {len(self.kept)} cached]"
        try:
            ev = sorted(int(p) for p in got)
            ok = all(float(p) == int(p) for p in got)
        except (TypeError, ValueError):
            ev, ok = [], False
        if not ok or len(set(ev)) != len(ev) or not set(ev) <= set(self.kept):
            self.problem = (
                f"{where} return a list of cached positions to evict, each once; got "
                f"{got!r} (cached: {self.kept})."
            )
        elif ev != want:
            args = (
                self.kept,
                [self.mass[p] for p in self.kept],
                self.budget,
                self.sinks,
                self.recent,
            )
            hint = next(
                (h for v, h in _HINTS.items() if evictions(*args, variant=v) == ev),
                "When len(kept) > budget, evict the len(kept) - budget tokens of least "
                "accumulated mass that are neither sinks nor among the recent newest "
                "(the older first on equal mass).",
            )
            self.problem = f"{where} you evicted {ev}, the rule evicts {want}. {hint}"
        if self.problem:
            return
        self.kept = [p for p in self.kept if p not in set(ev)]
        self.peak = max(self.peak, len(self.kept))
        if len(self.kept) > self.budget:
            self.problem = (
                f"{where} the cache holds {len(self.kept)} tokens, over the budget {self.budget}."
            )
        self.step += 1


def _drive(student: Callable[..., Any]) -> int:
    """Child side: one learner call per streamed token."""
    steps = 0
    while (job := request("next")) is not None:
        request("done", student(*job))
        steps += 1
    return steps


@grader("34.5", blocks=(_K, "minitorch.runtime.retention_eval"), hand="replay")
def check_evict(evict: Callable[..., Any]) -> str:
    """Exercise 34.5: evict(kept, mass, budget, sinks, recent) -> positions to evict."""
    g, f = rng(3405), fresh_rng("34.5")
    fb = int(f.integers(8, 16))
    streams = [
        _Stream("64 tokens, budget 12: 2 sinks + 4 recent + 6 by mass", 64, 12, 2, 4, g),
        _Stream("40 tokens, budget 6: 1 sink + 3 recent + 2 by mass", 40, 6, 1, 3, g),
        _Stream("no sinks, budget 5, recent 5: a plain window", 24, 5, 0, 5, g),
        _Stream("sinks that draw little attention are kept anyway", 32, 8, 2, 2, g, -3.0),
        _Stream(
            "attention in eighths: equal masses, the older evicted first",
            40,
            8,
            1,
            2,
            g,
            1.0,
            0.125,
        ),
        _Stream(fresh(f"48 tokens, budget {fb}"), 48, fb, 2, 3, f),
    ]
    for s in streams:
        run_apart(_drive, evict, serve={"next": s.next, "done": s.done})
        if s.problem:
            raise CheckFailure(s.problem)
        if s.step < s.n:
            raise CheckFailure(f"[{s.label}] the stream stopped after {s.step} of {s.n} tokens.")
    s = streams[0]
    return (
        f"{len(streams)} streams (1 fresh), {sum(x.n for x in streams)} tokens: every "
        "eviction is the rule's; "
        f"peak cache {s.peak} of budget {s.budget} (counted by the grader), heavy hitters kept: "
        f"{len(s.heavy & set(s.kept))} of {len(s.heavy)}"
    )
