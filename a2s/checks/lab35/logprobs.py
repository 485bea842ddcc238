"""Grader of exercise 35.3: the trainer recomputes the rollouts' log-probabilities.

``recompute_logprobs(model, ids, tokens, positions, temperature)`` returns the (B, T)
log-probabilities log softmax(logits / T) of the sampled tokens. ``model(ids)`` is a request to
this process: the tiny GPT, its weights jittered by a draw of the check's fresh seed, runs here
on the (B, L) padded ids and returns (B, L, V) logits; every call is counted here (the
learner's code runs in a forked child whose copies of the model and of the engine's recorded
log-probabilities are zeroed, :func:`run_apart`).
The rollouts come from lab 19's engine serving the same weights (``minitorch.rl.rollout``,
run here), which recorded log p of each token as it sampled it. The answer must equal a plain
loop over the logits the grader computes itself (``_truth.logprobs_loop``), and so the
engine's numbers within float32 rounding, with ONE model call per batch: one padded forward of
all the sequences, as a trainer does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import float_array
from a2s.checks.core import CheckFailure, fresh_rng, grader, plain
from a2s.checks.harness import request, run_apart
from a2s.checks.lab35._truth import logprobs_loop

__all__ = ["check_recompute_logprobs"]

BLOCKS = (
    "minitorch.rl.rollout",
    "minitorch.rl.grpo",
    "minitorch.rl.trainer",
    "minitorch.model.gpt:GPT",  # the model runs here, counted: not in the learner's process
    "minitorch.model.checkpoint:load",
    "minitorch.model.checkpoint:load_pretrained",
)
_JITTER = 0.15
_BLOCK, _VOCAB = 32, 16


@cache
def _shipped() -> Any:
    from minitorch.model.checkpoint import load_pretrained

    return load_pretrained()


def _model(seed: int) -> Any:
    g, model = np.random.default_rng(seed), copy.deepcopy(_shipped())
    for p in model.parameters():
        p.data += (_JITTER * p.data.std() * g.standard_normal(p.data.shape)).astype(p.data.dtype)
    return model


class _Counted:
    """The model behind a counter: (B, L) int ids -> (B, L, V) float64 logits."""

    def __init__(self, model: Any, label: str, ids: Any = None, needed: int = 1) -> None:
        self.model, self.label, self.calls = model, label, 0
        self.ids, self.needed = ids, needed  # the batch: its rows, in order, columns needed
        self.part = False  # a call of fewer sequences (or others) than the batch's

    def __call__(self, ids: Any) -> np.ndarray:
        from minitorch.autograd import no_grad

        arr = np.asarray(plain(ids, what="model's ids"))
        if arr.ndim != 2 or arr.dtype.kind not in "iu" or not 1 <= arr.shape[1] <= _BLOCK:
            raise CheckFailure(
                f"[{self.label}] model(ids) takes the (B, L) integer array of padded sequences "
                f"(L at most {_BLOCK}), got shape {arr.shape}, dtype {arr.dtype}."
            )
        if arr.min() < 0 or arr.max() >= _VOCAB:
            raise CheckFailure(f"[{self.label}] model(ids): ids lie in 0..{_VOCAB - 1}.")
        self.calls += 1
        self.part |= self.ids is not None and not _whole(arr, self.ids, self.needed)
        with no_grad():
            return np.asarray(self.model(arr).data, np.float64)


def _whole(arr: np.ndarray, ids: np.ndarray, needed: int) -> bool:
    """``arr`` is every sequence of ``ids``, in order; columns past ``needed`` may be cut."""
    return (
        arr.shape[0] == ids.shape[0]
        and needed <= arr.shape[1] <= ids.shape[1]
        and bool(np.array_equal(arr, ids[:, : arr.shape[1]]))
    )


def _apart(student: Callable[..., Any], zero: tuple[Any, ...], *args: Any) -> Any:
    """Child side: zero this process's copies of the models and of the engine's numbers."""
    for obj in zero:
        if isinstance(obj, np.ndarray):
            obj[...] = 0.0
        elif hasattr(obj, "logp"):  # the engine: its record of log p per sequence
            obj.logp.clear()
        else:
            for p in obj.parameters():
                p.data[...] = 0.0
    return student(_forward, *args)


def _forward(ids: Any) -> Any:
    """The ``model`` the learner gets: one forward of the tiny GPT, in the grader."""
    return request("model", ids)


def _variants(logits: np.ndarray, tok: np.ndarray, pos: np.ndarray, temp: float) -> dict:
    shifted = np.minimum(pos + 1, logits.shape[1] - 1)
    return {
        "Divide the logits by the temperature the engine sampled with before the softmax: "
        "the engine's log p is log softmax(logits / T).": logprobs_loop(logits, tok, pos, 1.0),
        "Row j of the logits predicts token j + 1: read token t's log-probability at "
        "positions[b, t] (the position before it), not at its own.": logprobs_loop(
            logits, tok, shifted, temp
        ),
        "Return log-probabilities (log softmax), not probabilities.": np.exp(
            logprobs_loop(logits, tok, pos, temp)
        ),
    }


def _batches() -> list[tuple[str, int, float, int]]:
    f = fresh_rng("35.3")
    return [
        ("T = 1, 2 prompts x 4 completions", 101, 1.0, 2),
        ("T = 2 (the run's temperature), 4 prompts x 4", 202, 2.0, 4),
        (fresh("T = 1.5, 3 prompts x 4"), int(f.integers(1 << 30)), 1.5, 3),
    ]


@grader("35.3", blocks=BLOCKS, hand="budget")
def check_recompute_logprobs(recompute_logprobs: Callable[..., Any]) -> str:
    """Exercise 35.3: recompute_logprobs(model, ids, tokens, positions, temperature)."""
    from minitorch.rl.rollout import RolloutEngine, generate, pack
    from minitorch.rl.task import make_prompts

    model = _model(int(fresh_rng("35.3 model").integers(1 << 62)))
    gap, tokens = 0.0, 0
    for label, seed, temp, n in _batches():
        engine = RolloutEngine(model, temperature=temp, seed=seed)
        batch = pack(generate(engine, make_prompts(("reverse", "sort"), n, seed=seed), 4, 8))
        counted = _Counted(model, label, batch.ids, int(batch.positions.max()) + 1)
        ids, tok, pos = batch.ids.copy(), batch.tokens.copy(), batch.positions.copy()
        got = run_apart(
            _apart,
            recompute_logprobs,
            (model, _shipped(), engine, batch.engine_logp),
            ids,
            tok,
            pos,
            temp,
            serve={"model": counted},
            timeout=20.0,
        )
        got = float_array(got, label, "recompute_logprobs")
        if counted.calls != 1:
            raise CheckFailure(
                f"[{label}] {counted.calls} model calls for one batch of {len(ids)} sequences "
                "(counted by the grader): the trainer runs ONE padded forward, model(ids), of "
                "the whole batch and reads every token's log-probability from its logits."
            )
        if counted.part:
            raise CheckFailure(
                f"[{label}] your one model call was not a forward of the batch's {len(ids)} "
                "padded sequences (counted by the grader): the trainer's log-probabilities come "
                "from model(ids) of the whole batch, not of a part of it."
            )
        logits = _Counted(model, label)(batch.ids)
        want = logprobs_loop(logits, batch.tokens, batch.positions, temp)
        if got.shape != want.shape:
            raise CheckFailure(
                f"[{label}] return one log-probability per sampled token, shape {want.shape} "
                f"(B, T), got {got.shape}."
            )
        if not np.allclose(got, want, rtol=0, atol=1e-5):
            hint = next(
                (h for h, v in _variants(logits, tok, pos, temp).items() if np.allclose(got, v)),
                "log p = log softmax(logits[b, positions[b, t]] / T)[tokens[b, t]].",
            )
            worst = float(np.abs(got - want).max())
            raise CheckFailure(
                f"[{label}] your log-probabilities differ from the model's by up to {worst:.3g} "
                f"(first row {np.round(got[0], 4).tolist()}, expected "
                f"{np.round(want[0], 4).tolist()}). {hint}"
            )
        live = batch.mask > 0
        gap = max(gap, float(np.abs(got - batch.engine_logp)[live].max()))
        tokens += int(live.sum())
    if gap > 1e-4:
        raise CheckFailure(f"your log-probabilities are {gap:.3g} from the engine's (> 1e-4).")
    return (
        f"3 batches (1 fresh), {tokens} tokens, one model call each (counted by the grader); "
        f"largest gap to the engine's log-probs {gap:.1e}"
    )
