"""Grader of exercise 37.5: the profiler's op counts of a GPT forward, predicted from its
configuration.

The truth (``_truth.profiled_counts``) is torch's profiler itself: the grader writes its own
copy of the lab's model (embeddings, per layer a layer norm, a fused QKV linear, two batched
matmuls around a softmax, an output linear, a layer norm and a GELU MLP; a final layer norm and
an LM head), runs one forward of every configuration of the run in one child process under
``torch.profiler.profile`` and counts the *top-level* events (no parent event) named
``aten::embedding``, ``layer_norm``, ``addmm``, ``mm``, ``bmm``, ``softmax``, ``gelu``. The
learner's function gets the configuration (a dict) and may not call torch (nor the reference):
the point is to predict the counts from the architecture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import NATIVE, OPS, closed_counts, profile_all, profiled_counts
from a2s.checks.table import Table

__all__ = ["TINY", "check_op_counts"]

TINY = {
    "vocab_size": 16,
    "block_size": 32,
    "n_layer": 2,
    "n_head": 4,
    "d_model": 64,
    "batch": 2,
    "bias": True,
}


def _cfg(**change: Any) -> tuple[dict[str, Any]]:
    return ({**TINY, **change},)


_NAMED = [
    ("the tiny GPT's sizes, with biases", _cfg()),
    ("the tiny GPT's sizes, no biases", _cfg(bias=False)),
    ("one layer, one head", _cfg(n_layer=1, n_head=1, d_model=16)),
    ("eight heads", _cfg(n_head=8)),
    ("a batch of 5", _cfg(batch=5, block_size=8)),
    ("six layers, no biases", _cfg(n_layer=6, d_model=32, bias=False)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple[dict[str, Any]]]:
    heads = int(g.choice([1, 2, 4, 8]))
    cfg = {
        "vocab_size": int(g.integers(8, 65)),
        "block_size": int(g.integers(2, 17)),
        "n_layer": int(g.integers(1, 6)),
        "n_head": heads,
        "d_model": heads * int(g.choice([4, 8])),
        "batch": int(g.integers(1, 5)),
        "bias": bool(g.integers(0, 2)),
    }
    return (f"{cfg['n_layer']} layers, {heads} heads, bias={cfg['bias']}", (cfg,))


def _read(got: Any, label: str) -> dict[str, int]:
    if type(got) is not dict or any(type(k) is not str for k in got):
        raise CheckFailure(
            f"[{label}] op_counts must return a dict {{operator name: calls}}, got {got!r:.200}"
        )
    extra = sorted(set(got) - set(OPS))
    if extra:
        raise CheckFailure(f"[{label}] op_counts: {extra} are not among the operators {OPS}.")
    if any(type(v) is not int or v < 0 for v in got.values()):
        raise CheckFailure(f"[{label}] op_counts: every count must be an int >= 0, got {got!r}")
    return {op: got.get(op, 0) for op in OPS}


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    wrong = [f"{op} {got[op]} (the profiler: {want[op]})" for op in OPS if got[op] != want[op]]
    return f"[{case.label}] op_counts: {'; '.join(wrong)}.{' ' + hint.lstrip() if hint else ''}"


def _wrong(**switch: bool) -> Callable[[dict[str, Any]], dict[str, int]]:
    return lambda cfg: closed_counts(cfg, **switch)


_MISTAKES = (
    Mistake(
        " The LM head is a linear too: one more aten::mm (it has no bias) after the final norm.",
        answer=_wrong(no_head=True),
    ),
    Mistake(
        " The heads are folded into the batch of one torch.bmm: attention makes two bmm calls "
        "and one softmax per layer, whatever the number of heads.",
        answer=_wrong(per_head=True),
    ),
    Mistake(
        " Attention has two matmuls per layer: Q K^T (the scores) and P V (the weighted values).",
        answer=_wrong(one_matmul=True),
    ),
    Mistake(
        " Without a bias a linear is torch.mm, not torch.addmm (addmm adds the bias in the same "
        "call).",
        answer=_wrong(bias_always=True),
    ),
    Mistake(
        " The batch is folded into the rows of one (B T, C) matrix: a linear is one call for the "
        "whole batch, not one per sequence.",
        answer=_wrong(per_batch=True),
    ),
)

OP_COUNTS = Table(
    "37.5",
    truth=profiled_counts,
    named=_NAMED,
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    read=_read,
    hint="Count per layer: 2 layer norms, 4 linears (addmm with a bias, mm without), 2 bmm, "
    "1 softmax, 1 gelu; plus 2 embeddings, the final norm and the LM head.",
    what="op_counts",
    message=_message,
)


@grader("37.5", blocks=NATIVE)
def check_op_counts(student: Callable[..., Any]) -> str:
    """Exercise 37.5: op_counts(config) -> {aten operator: top-level calls in one forward}."""
    cases = OP_COUNTS.cases()
    profile_all([case.args[0] for case in cases])  # every configuration in one child process
    n = OP_COUNTS.grade(student)
    tiny = profiled_counts(TINY)
    return (
        f"{n} configurations equal to torch.profiler's top-level counts (one child process); "
        f"the tiny GPT's forward: {sum(tiny.values())} calls of these {len(OPS)} operators"
    )
