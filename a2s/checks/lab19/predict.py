"""Grader of exercise 19.4: predict the number of steps static and continuous batching take.

All requests arrive at once, the token budget and the KV blocks are ample, and a request of
L output tokens occupies a batch slot for L steps (its prefill step gives the first token).
Static batching runs batches of ``batch_size`` in order, each until its longest request ends:
sum of batch maxima. Continuous batching hands each request, in order, the first slot that
frees (list scheduling): the last finish time. Both written here as plain loops.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import grader, rng
from a2s.checks.table import Table

__all__ = ["check_predict_steps"]


def _static(lens: list[int], b: int) -> int:
    return sum(max(lens[i : i + b]) for i in range(0, len(lens), b))


def _continuous(lens: list[int], b: int) -> int:
    slots = [0] * min(b, len(lens))
    end = 0
    for n in lens:
        start = heapq.heappop(slots)
        end = max(end, start + n)
        heapq.heappush(slots, start + n)
    return end


def _steps(lens: list[int], b: int, policy: str) -> int:
    return _static(lens, b) if policy == "static" else _continuous(lens, b)


def _mean_batches(lens: list[int], b: int) -> int:
    return sum(round(sum(lens[i : i + b]) / len(lens[i : i + b])) for i in range(0, len(lens), b))


def _only(policy: str, wrong: Callable[[list[int], int], int]) -> Callable[..., int]:
    """A mistake of one policy: the wrong count there, the right one under the other."""
    return lambda lens, b, p: wrong(lens, b) if p == policy else _steps(lens, b, p)


_MISTAKES = (
    Mistake(
        "A static batch lasts as long as its LONGEST request, not the mean.",
        answer=_only("static", _mean_batches),
    ),
    Mistake(
        "ceil(sum / batch_size) assumes work can be split across slots; a request "
        "stays in its slot: give each, in order, the slot that frees first.",
        answer=_only("continuous", lambda lens, b: -(-sum(lens) // b)),
    ),
    Mistake(
        "That is static batching: in continuous batching a freed slot is refilled at once.",
        answer=_only("continuous", _static),
    ),
)


def _policies(label: str, lens: list[int], b: int) -> list[tuple[str, tuple[Any, ...]]]:
    return [(f"{label}, {p}", (list(lens), b, p)) for p in ("static", "continuous")]


_NAMED = [
    ("4 requests, batch 2", [3, 1, 2, 4], 2),
    ("one long request", [10, 1, 1, 1, 1], 2),
    ("batch larger than the workload", [5, 2], 8),
    ("equal lengths", [4] * 6, 3),
    ("batch size 1: both take the sum", [3, 1, 2, 4], 1),
    ("64 ShareGPT-like lengths, batch 8", rng(1904).integers(1, 500, 64).tolist(), 8),
]


def _random(f: Any, i: int) -> list[tuple[str, tuple[Any, ...]]]:
    lens = f.integers(1, 100, int(f.integers(1, 40))).tolist()
    return _policies("random lengths", lens, int(f.integers(1, 9)))


STEPS = Table(
    "19.4",
    truth=_steps,
    named=[c for row in _NAMED for c in _policies(*row)],
    draw=_random,
    fresh=1,
    mistakes=_MISTAKES,
    hint=(
        "static: sum of each batch's longest request; continuous: each request, in order, "
        "takes the earliest free slot (a heap of slot free times)."
    ),
    what="steps",
    message="[{label}] predicted {got!r} steps, expected {want}.{hint}",
)


@grader(
    "19.4",
    blocks=(
        "minitorch.runtime.engine:Engine",
        "minitorch.runtime.scheduler:Scheduler",
    ),
)
def check_predict_steps(predict_steps: Callable[..., Any]) -> str:
    """Exercise 19.4: predict_steps(output_lens, batch_size, policy) -> steps (int)."""
    count = STEPS.grade(predict_steps)
    lens = _NAMED[5][1]
    ratio = _static(lens, 8) / _continuous(lens, 8)
    return (
        f"{count} predictions exact (2 fresh); on 64 requests continuous batching "
        f"needs {ratio:.2f}x fewer steps"
    )
