"""Grader of exercise 24.3: vocabulary-parallel cross-entropy, the logits never gathered.

The learner's ``vocab_parallel_cross_entropy(comm, logits, targets, start)`` gets rank r's
columns ``start .. start + V/t`` of the ``(n, V)`` logits and returns the per-token loss and
its shard of the gradient of the mean loss. Logits sit around 800 (exp overflows without the
max shift). Ground truth: log-sum-exp written here, token by token. Budget: the ranks together
send at most three all-gathers' worth of ``n`` values (``3 t (t-1) n 8`` bytes) -- gathering
the logits costs ``(t-1) n V 8``, V/t >= 16 times more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab24._truth import BLOCKS, budget, expect, run_ranks

__all__ = ["check_vocab_cross_entropy"]

_TEACHING = [(1, 3, 16, 2431), (2, 4, 32, 2432), (4, 5, 64, 2433), (2, 1, 32, 2434)]
_GATHER = (
    "Gathering the logits moves n x V values: the point of the vocabulary-parallel loss is "
    "that only per-token scalars travel -- the max, the sum of exponentials and the target's "
    "logit, each an all-reduce of n values."
)


def _truth(logits: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(targets)
    loss, grad = np.empty(n), np.empty(logits.shape)
    for i in range(n):
        m = logits[i].max()
        e = np.exp(logits[i] - m)
        loss[i] = np.log(e.sum()) + m - logits[i, targets[i]]
        grad[i] = e / e.sum()
        grad[i, targets[i]] -= 1.0
    return loss, grad / n


def _local_max_loss(logits: np.ndarray, targets: np.ndarray, t: int, m: np.ndarray) -> np.ndarray:
    """The loss when each rank shifts its exponentials by its OWN max (``m`` added back)."""
    total = sum(
        np.exp(s - s.max(axis=1, keepdims=True)).sum(axis=1) for s in np.split(logits, t, axis=1)
    )
    return np.log(total) + m - logits[np.arange(len(targets)), targets]


@grader("24.3", blocks=BLOCKS, hand="ranks")
def check_vocab_cross_entropy(vocab_parallel_cross_entropy: Callable[..., Any]) -> str:
    """Exercise 24.3: loss and gradient shards equal the full softmax; scalars only travel."""
    gen = fresh_rng("24.3")
    specs = list(_TEACHING)
    for _ in range(2):
        t = int(gen.choice([2, 4]))
        specs.append((t, int(gen.integers(1, 7)), 16 * t, int(gen.integers(1, 2**31))))
    sent = 0
    for i, (t, n, v, seed) in enumerate(specs):
        label = f"t={t}, n={n} tokens, V={v}"
        label = fresh(label) if i >= len(_TEACHING) else label
        g = np.random.default_rng(seed)
        logits = 800.0 + 20.0 * g.standard_normal((n, v))
        targets = g.integers(0, v, n)
        args = [(np.split(logits, t, axis=1)[r], targets, r * v // t) for r in range(t)]
        outs, world = run_ranks(vocab_parallel_cross_entropy, "24.3", t, args, label, "result")
        loss, grad = _truth(logits, targets)
        for r, got in enumerate(outs):
            if not isinstance(got, tuple | list) or len(got) != 2:
                raise CheckFailure(f"[{label}] rank {r}: return (loss, dlogits).")
            if isinstance(got[0], np.ndarray) and not np.all(np.isfinite(got[0])):
                raise CheckFailure(
                    f"[{label}] rank {r}: the loss has inf/nan. exp(800) overflows float64: "
                    "subtract the row's GLOBAL max (all-reduced over ranks) before exp."
                )
            own = np.split(logits, t, axis=1)[r].max(axis=1)
            hints = (
                [
                    (
                        _local_max_loss(logits, targets, t, m),
                        "Each rank shifted by its OWN max: "
                        "the partial sums of exp are then on different scales. All-reduce the max "
                        "first (e.g. all_gather the n per-rank maxima and take the max).",
                    )
                    for m in (own, logits.max(axis=1))
                ]
                if t > 1
                else []
            )
            expect(
                label,
                r,
                got[0],
                loss,
                hints,
                "loss",
                "loss_i = log(sum over ALL ranks of exp(l - m)) + m - l[target_i]; the "
                "rank with 0 <= target - start < V/t (its column 0 included) owns it.",
                atol=1e-8,
            )
            want = np.split(grad, t, axis=1)[r]
            expect(
                label,
                r,
                got[1],
                want,
                [(want * n, "That is the gradient of the SUM: divide by n for the mean loss.")],
                "dlogits",
                "dlogits = (softmax - onehot(target)) / n on this rank's columns.",
            )
        budget(label, world, 3 * t * (t - 1) * n * 8, _GATHER, at_most=True)
        sent += sum(world.bytes_sent)
    return (
        f"{len(specs)} vocabularies (t = 1..4, logits ~800, 2 fresh) equal the full softmax "
        f"loss; {sent:,} bytes moved in all, never the logits"
    )
