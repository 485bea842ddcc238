"""Graders of exercises 19.1 (one scheduling step under a token budget, chunked prefill) and
19.2 (which running sequences to preempt when KV blocks run out).

Both are compared with plain loops written here, on named cases (decodes beside a long prompt,
a full batch, too few blocks, two prompts that fit the free blocks one at a time but not
together, a partly prefilled prompt) and fresh random ones. 19.1 also
holds every answer to the budget: the tokens scheduled never exceed it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain

__all__ = ["check_preemption", "check_schedule_step"]

_SCHED = "minitorch.runtime.scheduler"


def _plan(
    running: list,
    waiting: list,
    budget: int,
    seats: int,
    free: int,
    chunked: bool,
    *,
    waiting_first: bool = False,
    overtake: bool = False,
    seats_running: bool = True,
    blocks: bool = True,
    chunk_always: bool = False,
    running_break: bool = False,
    seats_scheduled: bool = False,
    shrink: bool = True,
) -> list[tuple[int, int]]:
    """The rule (keyword flags give the known mistakes)."""
    out: list[tuple[int, int]] = []
    left = seats - (len(running) if seats_running else 0)

    def take(need: int) -> int:
        return min(need, budget) if (chunked or chunk_always) else need

    def run_running() -> None:
        nonlocal budget
        for sid, need in running:
            n = take(need)
            if 0 < n <= budget:
                out.append((sid, n))
                budget -= n
            elif running_break:
                break

    if not waiting_first:
        run_running()
    if seats_scheduled:
        left = seats - len(out)
    for sid, need, nb in waiting:
        n = take(need)
        if left <= 0 or n <= 0 or n > budget or (blocks and nb > free):
            if overtake:
                continue
            break
        out.append((sid, n))
        budget, left, free = budget - n, left - 1, free - nb * shrink
    if waiting_first:
        run_running()
    return out


_STEP_MISTAKES = (
    (
        dict(waiting_first=True),
        "Running sequences go first (their decodes keep TPOT low); "
        "waiting ones get what is left of the budget.",
    ),
    (
        dict(overtake=True),
        "Stop at the first waiting sequence that does not fit: later ones "
        "may not overtake it (first come, first served).",
    ),
    (
        dict(seats_scheduled=True),
        "max_num_seqs counts every running sequence, also one skipped this step: admit at "
        "most max_num_seqs - len(running).",
    ),
    (
        dict(seats_running=False),
        "max_num_seqs counts the running sequences too: admit at most max_num_seqs - len(running).",
    ),
    (
        dict(shrink=False),
        "free_blocks shrinks with every admission: two prompts that each fit the free blocks "
        "may not fit together (subtract each admitted prompt's blocks_needed).",
    ),
    (
        dict(blocks=False),
        "A waiting sequence is admitted only if its blocks are free "
        "(blocks_needed <= free_blocks, which then shrinks).",
    ),
    (dict(chunk_always=True), "Without chunked prefill a prompt runs whole or not at all."),
    (
        dict(running_break=True),
        "A running sequence whose whole need does not fit is skipped, not the end of the "
        "loop: the running ones after it are still served.",
    ),
)


def _step_cases(f: np.random.Generator) -> list[tuple[str, tuple]]:
    dec = [(0, 1), (1, 1), (2, 1)]
    cases = [
        (
            "3 decodes and a 100-token prompt, budget 16, chunked",
            (dec, [(3, 100, 25), (4, 5, 2)], 16, 8, 50, True),
        ),
        ("the same without chunked prefill", (dec, [(3, 100, 25), (4, 5, 2)], 16, 8, 50, False)),
        ("a full batch: max_num_seqs 4", (dec, [(3, 4, 1), (4, 4, 1)], 64, 4, 50, True)),
        ("one free block left", (dec, [(3, 8, 2), (4, 2, 1)], 64, 8, 1, True)),
        (
            "two prompts fit 3 free blocks one at a time, not together",
            (dec, [(3, 4, 2), (4, 4, 2), (5, 1, 1)], 64, 8, 3, True),
        ),
        ("a partly prefilled prompt continues first", ([(0, 40)], [(1, 3, 1)], 16, 8, 9, True)),
        ("20 decodes, budget 8", ([(i, 1) for i in range(20)], [(20, 3, 1)], 8, 32, 9, True)),
        ("small prompts admitted whole", ([], [(0, 5, 2), (1, 6, 2), (2, 9, 3)], 16, 8, 9, False)),
        (
            "a running prompt too long for the step, not chunked",
            ([(0, 1), (1, 20), (2, 1)], [(3, 2, 1), (4, 2, 1)], 8, 4, 9, False),
        ),
    ]
    n_run = int(f.integers(0, 6))
    running = [(i, int(f.choice([1, 1, 1, int(f.integers(2, 30))]))) for i in range(n_run)]
    waiting = [(n_run + i, int(f.integers(1, 40)), int(f.integers(1, 6))) for i in range(6)]
    cases.append(
        (
            fresh(f"{n_run} running, 6 waiting"),
            (
                running,
                waiting,
                int(f.integers(4, 64)),
                int(f.integers(n_run + 1, 10)),
                int(f.integers(0, 20)),
                bool(f.integers(0, 2)),
            ),
        )
    )
    return cases


@grader(
    "19.1",
    blocks=(f"{_SCHED}:plan_step", f"{_SCHED}:Scheduler"),
    hand="property",
)
def check_schedule_step(plan_step: Callable[..., Any]) -> str:
    """Exercise 19.1: plan_step(running, waiting, token_budget, max_num_seqs, free_blocks,
    chunked) -> [(seq_id, n_tokens)]."""
    cases = _step_cases(fresh_rng("19.1"))
    for label, args in cases:
        got = plain(
            plan_step(*[list(a) if isinstance(a, list) else a for a in args]),
            what="plan",
            case=label,
        )
        try:
            got = [(int(s), int(n)) for s, n in got]
        except (TypeError, ValueError):
            raise CheckFailure(f"[{label}] return a list of (seq_id, n_tokens) pairs") from None
        budget = args[2]
        assert_true(
            sum(n for _, n in got) <= budget,
            f"[{label}] {sum(n for _, n in got)} tokens scheduled, over the budget of "
            f"{budget}: one step computes at most token_budget tokens.",
        )
        want = _plan(*args)
        if got != want:
            hint = "Running first (each min(need, budget left) if chunked), then waiting in order."
            for kwargs, text in _STEP_MISTAKES:
                if got == _plan(*args, **kwargs):  # type: ignore[arg-type]
                    hint = text
                    break
            raise CheckFailure(f"[{label}] scheduled {got}, expected {want}. {hint}")
    return f"{len(cases)} scheduling steps exact (1 fresh), never over the token budget"


def _preempt(
    running: list, free: int, *, oldest: bool = False, refund: bool = True, self_first: bool = False
) -> tuple[list[int], list[int]]:
    queue, kept, out = list(running), [], []
    while queue:
        sid, need, held = queue.pop(0)
        if self_first and free < need:
            out.append(sid)
            free += held * refund
            continue
        while free < need and queue:
            victim = queue.pop(0) if oldest else queue.pop()
            out.append(victim[0])
            free += victim[2] * refund
        if free < need:
            out.append(sid)
            free += held * refund
            continue
        free -= need
        kept.append(sid)
    return kept, out


_PREEMPT_MISTAKES = (
    (
        dict(oldest=True),
        "Preempt the NEWEST running sequence (the end of the list): the oldest "
        "have waited longest and hold the most finished work.",
    ),
    (
        dict(refund=False),
        "A preempted sequence frees every block it holds: add them to "
        "free_blocks before checking again.",
    ),
    (
        dict(self_first=True),
        "Preempt others (newest first) before giving up on this sequence; "
        "it preempts itself only when no one else is left.",
    ),
)


@grader(
    "19.2",
    blocks=(f"{_SCHED}:plan_preemption", f"{_SCHED}:Scheduler"),
    hand="property",
)
def check_preemption(plan_preemption: Callable[..., Any]) -> str:
    """Exercise 19.2: plan_preemption(running, free_blocks) -> (kept ids, preempted ids)."""
    f = fresh_rng("19.2")
    cases = [
        ("enough free blocks", [(0, 1, 4), (1, 1, 3), (2, 0, 2)], 2),
        ("one block short: the newest goes", [(0, 1, 4), (1, 1, 3), (2, 1, 2)], 2),
        ("the newest cannot be served: it preempts itself", [(0, 0, 5), (1, 2, 1)], 1),
        ("two victims needed", [(0, 3, 6), (1, 0, 1), (2, 0, 1), (3, 0, 1)], 1),
        ("nothing needed, no free block", [(0, 0, 3), (1, 0, 3)], 0),
        ("a victim frees more than enough", [(0, 1, 2), (1, 1, 2), (2, 0, 9)], 0),
    ]
    for _ in range(3):
        n = int(f.integers(1, 8))
        running = [(i, int(f.integers(0, 3)), int(f.integers(1, 6))) for i in range(n)]
        cases.append((fresh(f"{n} running"), running, int(f.integers(0, 4))))
    preempted = 0
    for label, running, free in cases:
        got = plain(plan_preemption([tuple(r) for r in running], free), what="plan", case=label)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CheckFailure(f"[{label}] return (kept ids, preempted ids)")
        got = ([int(x) for x in got[0]], [int(x) for x in got[1]])
        want = _preempt(running, free)
        if got != want:
            hint = "Oldest first; while short of blocks, preempt the newest and take its blocks."
            for kwargs, text in _PREEMPT_MISTAKES:
                if got == _preempt(running, free, **kwargs):  # type: ignore[arg-type]
                    hint = text
                    break
            raise CheckFailure(f"[{label}] (kept, preempted) = {got}, expected {want}. {hint}")
        preempted += len(want[1])
    return (
        f"{len(cases)} block shortages resolved exactly (3 fresh), {preempted} preemptions, "
        "the fewest this policy allows"
    )
