"""Grader of exercise 34.1: the accept/reject rule of speculative sampling, proved exact.

``verify(p_rows, q_rows, draft, coin, sample)`` must make every random choice through the two
handed-out oracles: ``coin(prob)`` (True with probability ``prob``) and ``sample(dist)`` (one
index drawn from the distribution ``dist``). The learner's function runs in a forked child
(:func:`~a2s.checks.harness.run_apart`); each oracle call is a request to this process, which
answers from a script and enumerates every branch (the draft tokens drawn from ``q_rows``
too) by depth-first replay: the exact law of what one step emits, summed here. It must equal
the law of the rule written in ``_truth`` (and then the first emitted token is distributed
exactly as ``p_rows[0]``, the closed form of Leviathan et al. 2023).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.harness import request, run_apart
from a2s.checks.lab34._truth import (
    Explorer,
    coin_options,
    draft_options,
    exact_law,
    first_token_marginal,
    same_law,
    sample_options,
    verify_rule,
)

__all__ = ["check_verify"]

_S = "minitorch.model.speculative"
BLOCKS = (
    f"{_S}:verify",
    f"{_S}:residual",
    f"{_S}:step_distribution",
    f"{_S}:speculative_generate",
    f"{_S}:acceptance_rate",
)
_VARIANTS = {
    "from p": "After a rejection draw from the residual norm(max(0, p - q)), not from p: "
    "drawing from p gives p's tokens a second chance and the step no longer emits p.",
    "q - p": "The residual is max(0, p - q) (where the TARGET wants more than the draft "
    "proposed), normalised; max(0, q - p) is the draft's excess.",
    "no bonus": "When all draft tokens are accepted, draw one more token from p_rows[gamma] "
    "(the target already scored that position): every step emits at least 1 and up to "
    "gamma + 1 tokens.",
    "no stop": "Stop at the first rejection: the later draft tokens were drafted after a token "
    "that was replaced, so they no longer continue the text.",
}


def _coin(prob: Any) -> Any:
    """The ``coin`` the learner's function gets: a request to the grader's process."""
    return request("coin", prob)


def _sample(dist: Any) -> Any:
    """The ``sample`` the learner's function gets: a request to the grader's process."""
    return request("sample", dist)


class _Session:
    """The grader's side of one check: the cases, their explorers, the laws found."""

    def __init__(self, cases: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        self.limit = 1500
        self.cases, self.ci, self.ex = cases, 0, Explorer(self.limit)
        self.open, self.problem, self.calls, self.outputs, self.worst = False, "", 0, 0, 0.0

    def fail(self, text: str) -> None:
        self.problem = self.problem or f"[{self.cases[self.ci][0]}] {text}"

    def next(self) -> Any:
        if self.open:
            self.fail("a new step began before the last one returned (only the grader asks).")
        while not self.problem and self.ci < len(self.cases):
            if self.ex.start():
                _, p, q = self.cases[self.ci]
                draft = [int(self.ex.choose(draft_options(row))) for row in q]
                self.open = True
                return p.copy(), q.copy(), draft
            if self.ex.stack:
                self.fail(
                    f"more than {self.ex.limit} branches: make one coin() per draft token you "
                    "examine and one sample() per step, nothing else."
                )
                return None
            self._judge()
        return None

    def _judge(self) -> None:
        """The case's law is complete: compare it with the rule's, then go to the next case."""
        _, p, q = self.cases[self.ci]
        law, want = self.ex.law, exact_law(p, q, verify_rule)
        if not same_law(law, want):
            hint = next(
                (
                    h
                    for v, h in _VARIANTS.items()
                    if same_law(law, exact_law(p, q, partial(verify_rule, variant=v)))
                ),
                "Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection "
                "emit one token from norm(max(0, p_i - q_i)) and stop; if all are accepted, "
                "emit a bonus token from p_rows[gamma].",
            )
            first = first_token_marginal(law, p.shape[1])
            self.fail(
                f"the law of what your step emits is not the rule's: your first token is "
                f"distributed as {np.round(first, 4).tolist()}, the target's p_rows[0] is "
                f"{np.round(p[0], 4).tolist()}. {hint}"
            )
            return
        self.outputs += len(want)
        self.worst = max(
            self.worst, float(np.abs(first_token_marginal(law, p.shape[1]) - p[0]).max())
        )
        self.ci, self.ex = self.ci + 1, Explorer(self.limit)

    def coin(self, prob: Any) -> bool:
        try:
            x = float(prob)
        except (TypeError, ValueError):
            x = float("nan")
        if not self.open or not -1e-12 <= x <= 1 + 1e-12:
            self.fail(
                f"coin({prob!r}): a probability lies in [0, 1]. Accept the draft token x with "
                "probability min(1, p(x) / q(x))."
            )
            return False
        self.calls += 1
        return bool(self.ex.choose(coin_options(min(max(x, 0.0), 1.0))))

    def sample(self, dist: Any) -> int:
        v = self.cases[self.ci][1].shape[1]
        try:
            d = np.asarray(dist, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            d = np.full(1, np.nan)
        if not self.open or d.shape != (v,) or not np.all(np.isfinite(d)):
            self.fail(f"sample(dist) takes one row of {v} probabilities; got {dist!r}.")
        elif d.min() < -1e-12:
            self.fail("sample(dist) got a negative probability: the residual is max(0, p - q).")
        elif abs(d.sum() - 1.0) > 1e-9:
            self.fail(
                f"sample(dist) got weights summing to {d.sum():.4f}, not 1: normalise the "
                "residual, max(0, p - q) / sum(max(0, p - q))."
            )
        if self.problem:
            return 0
        self.calls += 1
        return int(self.ex.choose(sample_options(np.maximum(d, 0.0))))

    def done(self, got: Any) -> None:
        v, gamma = self.cases[self.ci][1].shape[1], self.cases[self.ci][2].shape[0]
        try:
            toks = [int(t) for t in got]
            ok = all(float(t) == int(t) for t in got)
        except (TypeError, ValueError):
            toks, ok = [], False
        if not self.open or not ok or not 1 <= len(toks) <= gamma + 1:
            self.fail(
                f"return the list of emitted tokens (1 to gamma + 1 = {gamma + 1}); got {got!r}."
            )
        elif not all(0 <= t < v for t in toks):
            self.fail(f"emitted token out of the vocabulary 0..{v - 1}: {toks}.")
        if "nondeterministic" in self.ex.problems:
            self.fail(
                "the same replay made different random choices: draw every random number "
                "through coin() and sample(), never through np.random."
            )
        self.open = False
        if not self.problem:
            self.ex.finish(toks)


def _drive(student: Callable[..., Any]) -> int:
    """Child side: run the learner's step on every job the grader hands out."""
    steps = 0
    while (job := request("next")) is not None:
        request("done", student(*job, _coin, _sample))
        steps += 1
    return steps


def _rows(g: np.random.Generator, n: int, v: int) -> np.ndarray:
    return g.dirichlet(np.ones(v), n)


def _cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    p3, q3 = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]]), np.array([[0.2, 0.3, 0.5]])
    same = np.array([[0.25, 0.5, 0.25]] * 3)
    g, f = rng(3401), fresh_rng("34.1")
    return [
        ("V=3, one draft token", p3, q3),
        ("p == q: every draft token accepted", same, same[:2].copy()),
        (
            "the draft proposes a token the target never emits",
            np.array([[0.0, 0.6, 0.4, 0.0], [0.3, 0.3, 0.2, 0.2], [0.1, 0.2, 0.3, 0.4]]),
            np.array([[0.5, 0.25, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25]]),
        ),
        (
            "the draft never proposes a token the target wants",
            np.array([[0.1, 0.2, 0.3, 0.4], [0.25] * 4]),
            np.array([[0.0, 0.5, 0.5, 0.0]]),
        ),
        ("V=5, two draft tokens", _rows(g, 3, 5), _rows(g, 2, 5)),
        (fresh("V=4, two draft tokens"), _rows(f, 3, 4), _rows(f, 2, 4)),
    ]


@grader("34.1", blocks=BLOCKS, hand="replay")
def check_verify(verify: Callable[..., Any]) -> str:
    """Exercise 34.1: verify(p_rows, q_rows, draft, coin, sample) -> emitted tokens."""
    cases = _cases()
    session = _Session(cases)
    serve: dict[str, Callable[..., Any]] = {
        "next": session.next,
        "coin": session.coin,
        "sample": session.sample,
        "done": session.done,
    }
    steps = run_apart(_drive, verify, serve=serve)
    if session.problem:
        raise CheckFailure(session.problem)
    return (
        f"{len(cases)} cases (1 fresh), {steps} replays, {session.outputs} distinct outputs: the "
        f"law of every step equals the rule's exactly; the first token is p to {session.worst:.0e}"
    )
