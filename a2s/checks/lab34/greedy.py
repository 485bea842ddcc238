"""Grader of exercise 34.2: greedy speculative decoding on the tiny GPT, passes counted here.

``speculative_greedy(target, draft, prompt, n, gamma)`` gets two models that are requests to
this process: ``target(tokens)`` runs the tiny GPT here and ``draft(tokens)`` its ternary copy,
each returning ``(len(tokens), V)`` logits, and each call is counted here (the learner's code
runs in a forked child, :func:`~a2s.checks.harness.run_apart`). The output must equal plain
greedy decoding of the target (a loop written in ``_truth``), with no more target passes than
greedy speculative decoding needs (counted by ``_truth.greedy_spec_calls``) and at most
``gamma`` draft calls per target pass. Contexts stay within the model's 32-token block, where
greedy equality is exact.

The target is the shipped checkpoint with every weight jittered by a draw of the check's
fresh seed (new each grading run; ``_JITTER`` of each matrix's spread) and the draft its
ternary copy: a forward written from the checkpoint file (``np.load`` of ``tiny_gpt.npz``)
is not the target and does not know its argmaxes, so the counted passes cannot be replaced
by uncounted ones. The child's copies of both models are zeroed before the learner's code
runs.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain
from a2s.checks.harness import request, run_apart
from a2s.checks.lab34._truth import gpt_rows, greedy_plain, greedy_spec_calls
from a2s.checks.lab34.verify import BLOCKS as _VERIFY_BLOCKS

__all__ = ["check_speculative_greedy", "models"]

_S = "minitorch.model.speculative"
BLOCKS = (
    *_VERIFY_BLOCKS,
    f"{_S}:plain_generate",
    f"{_S}:gpt_logits",
    "minitorch.model.gpt:GPT",  # the target runs here, counted: not in the learner's process
    "minitorch.model.checkpoint:load",
    "minitorch.model.checkpoint:load_pretrained",
)
_BLOCK = 32


_JITTER = 0.4
_RUNS = itertools.count(1)  # numbers the checks of 34.2 in this process (not grader data)


@cache
def _shipped() -> Any:
    from minitorch.model.checkpoint import load_pretrained

    return load_pretrained(np.float64)


def models(seed: int | None = None) -> tuple[Any, Any]:
    """(the target: the tiny GPT in float64, as shipped when ``seed`` is None (the notebook's
    demo), else with every weight jittered by N(0, _JITTER x its tensor's std) drawn from
    ``seed`` (the check's, drawn with its fresh cases: new each grading run, replayed by
    ``A2S_SEED``); its draft: the same GPT with ternary weights, every matrix row rounded to
    {-s, 0, s} with s its largest magnitude)."""
    g = None if seed is None else np.random.default_rng(seed)
    target, draft = copy.deepcopy(_shipped()), copy.deepcopy(_shipped())
    for p, d in zip(target.parameters(), draft.parameters(), strict=True):
        if g is not None:
            p.data += _JITTER * p.data.std() * g.standard_normal(p.data.shape)
        d.data[...] = p.data
        if p.data.ndim == 2:
            s = np.abs(p.data).max(axis=1, keepdims=True)
            d.data[...] = np.round(p.data / np.where(s > 0, s, 1.0)) * s
    return target, draft


def _unlike_the_checkpoint(seed: int, cases: list) -> tuple[Any, Any]:
    """The first jitter (of up to 8 from ``seed``) whose greedy text differs from the shipped
    checkpoint's on every case: a forward rebuilt from the file, or a stale model found in
    memory, is never this run's target."""
    shipped = _shipped()
    for k in range(8):
        model, small = models(seed + k)
        rows = functools.partial(gpt_rows, model)
        if all(
            greedy_plain(rows, p, n) != greedy_plain(lambda t: gpt_rows(shipped, t), p, n)
            for _label, p, n, _g in cases
        ):
            break
    return model, small


def _apart(student: Callable[..., Any], zero: tuple[Any, ...], *args: Any) -> Any:
    """Child side: zero this process's copy of the models, then run the learner's function."""
    for m in zero:
        for p in m.parameters():
            p.data[...] = 0.0
    return student(*args)


def _target(tokens: Any) -> Any:
    """The ``target`` the learner gets: one forward pass of the tiny GPT, in the grader."""
    return request("target", tokens)


def _draft(tokens: Any) -> Any:
    """The ``draft`` the learner gets: the ternary-weight GPT, in the grader."""
    return request("draft", tokens)


class _Counted:
    """A model behind a counter; the context is checked before it runs."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], name: str, limit: int) -> None:
        self.fn, self.name, self.limit, self.calls, self.tokens = fn, name, limit, 0, 0

    def __call__(self, tokens: Any) -> np.ndarray:
        arr = np.asarray(plain(tokens, what=f"{self.name}'s tokens"))
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or not 1 <= arr.size <= self.limit:
            raise CheckFailure(
                f"{self.name}(tokens) takes one 1-D list of token ids, 1 to {self.limit} long "
                f"(got shape {arr.shape}, dtype {arr.dtype}): the whole context, prompt included."
            )
        if arr.min() < 0 or arr.max() >= 16:
            raise CheckFailure(f"{self.name}(tokens): ids lie in 0..15, got {arr.tolist()}.")
        self.calls += 1
        self.tokens += int(arr.size)
        return np.asarray(self.fn(arr), np.float64)


def _cases() -> list[tuple[str, list[int], int, int]]:
    from minitorch.model.corpus import examples
    from minitorch.model.tokenizer import CharTokenizer

    tok, f = CharTokenizer(), fresh_rng("34.2")
    prompt, _ = examples(["reverse", "sort"], 1, seed=int(f.integers(1 << 30)))[0]
    return [
        ("reverse 'cabhd', gamma 4", tok.encode("Rcabhd="), 16, 4),
        ("sort 'fgabe', gamma 2", tok.encode("Sfgabe="), 16, 2),
        ("gamma 1: one draft token per pass", tok.encode("Rdcba="), 12, 1),
        (fresh(f"{prompt!r}, gamma 3"), tok.encode(prompt), min(16, _BLOCK - len(prompt)), 3),
    ]


@grader("34.2", blocks=BLOCKS, hand="budget")
def check_speculative_greedy(speculative_greedy: Callable[..., Any]) -> str:
    """Exercise 34.2: speculative_greedy(target, draft, prompt, n, gamma) -> prompt + n tokens."""
    run = next(_RUNS)  # a new target every check in this process: an earlier one, still in
    # memory (a traceback keeps it), is not this run's; the first run replays by A2S_SEED
    cases = _cases()
    model, small = _unlike_the_checkpoint(
        int(fresh_rng("34.2 target").integers(2**62)) + 1009 * run, cases
    )
    passes = produced = 0
    for label, prompt, n, gamma in cases:
        target = _Counted(lambda t: gpt_rows(model, t), "target", _BLOCK)
        draft = _Counted(lambda t: gpt_rows(small, t), "draft", _BLOCK)
        got = run_apart(
            _apart,
            speculative_greedy,
            (model, small, _shipped()),
            _target,
            _draft,
            list(prompt),
            n,
            gamma,
            serve={"target": target, "draft": draft},
            timeout=20.0,
        )
        got = plain(got, what="tokens", case=label)
        want = greedy_plain(lambda t: gpt_rows(model, t), prompt, n)
        budget = greedy_spec_calls(
            lambda t: gpt_rows(model, t), lambda t: gpt_rows(small, t), prompt, n, gamma
        )
        try:
            toks = [int(t) for t in got] if isinstance(got, (list, tuple, np.ndarray)) else None
        except (TypeError, ValueError):
            toks = None
        assert_true(
            toks is not None and len(toks) == len(prompt) + n,
            f"[{label}] return the prompt followed by exactly n = {n} new tokens "
            f"({len(prompt) + n} ids); got {got!r}.",
        )
        assert toks is not None
        if toks != want:
            first = next(i for i, (a, b) in enumerate(zip(toks, want, strict=True)) if a != b)
            raise CheckFailure(
                f"[{label}] your text differs from greedy decoding of the target at position "
                f"{first} (token {toks[first]}, the target's argmax is {want[first]}). Accept "
                "draft tokens while each equals the target's argmax at its position, then emit "
                "the target's argmax at the first mismatch (or after the last draft token)."
            )
        if target.calls > budget:
            why = (
                f"{target.calls} passes for {n} tokens is one pass per token (or more): score "
                "the context plus all g drafted tokens in ONE target call, whose last g + 1 "
                "rows verify them."
                if target.calls >= n
                else "draft min(gamma, tokens still missing - 1) tokens before each target pass, "
                "and keep every accepted token plus the target's own at the mismatch."
            )
            raise CheckFailure(
                f"[{label}] {target.calls} target passes, more than the {budget} that greedy "
                f"speculative decoding needs here (counted by the grader). {why}"
            )
        assert_true(
            draft.calls <= gamma * target.calls,
            f"[{label}] {draft.calls} draft calls for {target.calls} target passes: draft at "
            f"most gamma = {gamma} tokens per pass.",
        )
        passes, produced = passes + target.calls, produced + n
    return (
        f"4 prompts (1 fresh) decode exactly as plain greedy of the target (the tiny GPT, "
        f"jittered anew each run); {passes} target passes for "
        f"{produced} tokens ({produced / max(passes, 1):.2f} tokens per pass, counted by the "
        "grader)"
    )
