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

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, fresh_rng, grader, plain, rng

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


def _hint(got: Any, lens: list[int], b: int, policy: str) -> str:
    mean = sum(round(sum(lens[i : i + b]) / len(lens[i : i + b])) for i in range(0, len(lens), b))
    if policy == "static" and got == mean:
        return "A static batch lasts as long as its LONGEST request, not the mean."
    if policy == "continuous" and got == -(-sum(lens) // b):
        return (
            "ceil(sum / batch_size) assumes work can be split across slots; a request "
            "stays in its slot: give each, in order, the slot that frees first."
        )
    if policy == "continuous" and got == _static(lens, b):
        return "That is static batching: in continuous batching a freed slot is refilled at once."
    return (
        "static: sum of each batch's longest request; continuous: each request, in order, "
        "takes the earliest free slot (a heap of slot free times)."
    )


@grader(
    "19.4",
    blocks=(
        "minitorch.runtime.engine:Engine",
        "minitorch.runtime.scheduler:Scheduler",
        "a2s.checks.lab19.predict:_static",
        "a2s.checks.lab19.predict:_continuous",
    ),
)
def check_predict_steps(predict_steps: Callable[..., Any]) -> str:
    """Exercise 19.4: predict_steps(output_lens, batch_size, policy) -> steps (int)."""
    gen, f = rng(1904), fresh_rng("19.4")
    cases = [
        ("4 requests, batch 2", [3, 1, 2, 4], 2),
        ("one long request", [10, 1, 1, 1, 1], 2),
        ("batch larger than the workload", [5, 2], 8),
        ("equal lengths", [4] * 6, 3),
        ("batch size 1: both take the sum", [3, 1, 2, 4], 1),
        ("64 ShareGPT-like lengths, batch 8", gen.integers(1, 500, 64).tolist(), 8),
    ]
    cases.append(
        (
            fresh("random lengths"),
            f.integers(1, 100, int(f.integers(1, 40))).tolist(),
            int(f.integers(1, 9)),
        )
    )
    for label, lens, b in cases:
        for policy in ("static", "continuous"):
            got = plain(predict_steps(list(lens), b, policy), what="steps", case=label)
            want = _static(lens, b) if policy == "static" else _continuous(lens, b)
            if got != want:
                raise CheckFailure(
                    f"[{label}, {policy}] predicted {got!r} steps, expected "
                    f"{want}. {_hint(got, lens, b, policy)}"
                )
    lens = cases[5][1]
    ratio = _static(lens, 8) / _continuous(lens, 8)
    return (
        f"{2 * len(cases)} predictions exact (2 fresh); on 64 requests continuous batching "
        f"needs {ratio:.2f}x fewer steps"
    )
