"""Graders of lab 19: the reference passes; realistic wrong answers and reference calls fail."""

from __future__ import annotations

import heapq

import pytest

import minitorch.runtime.engine as engine_mod
import minitorch.runtime.scheduler as sched_mod
from a2s.checks import lab19
from a2s.checks.core import ReferenceCalledError
from minitorch.runtime.paged_model import Chunk
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.runtime")
ref_plan_step = unblocked(sched_mod.plan_step)
ref_preemption = unblocked(sched_mod.plan_preemption)
ref_batched_step = unblocked(engine_mod.batched_step)


# --------------------------------------------------------------------------- 19.1 step
def plan_step(
    running,
    waiting,
    budget,
    max_num_seqs,
    free,
    chunked,
    *,
    waiting_first=False,
    overtake=False,
    blocks=True,
    over_budget=False,
    seats_scheduled=False,
):
    out, seats = [], max_num_seqs - len(running)
    order = [("w", w) for w in waiting] if waiting_first else []
    order = (
        order + [("r", r) for r in running] + ([] if waiting_first else [("w", w) for w in waiting])
    )
    for kind, item in order:
        if kind == "r":
            sid, need = item
            n = min(need, budget) if chunked else need
            if over_budget:
                n = need
            if 0 < n <= budget or over_budget:
                out.append((sid, n))
                budget -= n
            continue
        sid, need, nb = item
        if seats_scheduled:
            seats, seats_scheduled = max_num_seqs - len(out), False
        n = min(need, budget) if chunked else need
        if seats <= 0 or n <= 0 or n > budget or (blocks and nb > free):
            if overtake:
                continue
            break
        out.append((sid, n))
        budget, seats, free = budget - n, seats - 1, free - nb
    return out


def test_schedule_step_reference_and_solution_pass(capsys):
    lab19.check_schedule_step(ref_plan_step)
    lab19.check_schedule_step(plan_step)
    assert "✔ Exercise 19.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(waiting_first=True), "Running sequences go first"),
        (dict(overtake=True), "may not overtake"),
        (dict(blocks=False), "its blocks are free"),
        (dict(over_budget=True), "over the budget"),
        (dict(seats_scheduled=True), "also one skipped this step"),
    ],
)
def test_schedule_step_rejects_wrong_answers(kwargs, match):
    rejects(lab19.check_schedule_step, lambda *a: plan_step(*a, **kwargs), match=match)


def plan_step_stops_at_long_prompt(running, waiting, budget, max_num_seqs, free, chunked):
    """Ends the running loop at the first sequence that does not fit (it should skip it)."""
    fits = []
    for sid, need in running:
        n = min(need, budget - sum(f[1] for f in fits)) if chunked else need
        if not 0 < n <= budget - sum(f[1] for f in fits):
            break
        fits.append((sid, n))
    rest = budget - sum(n for _, n in fits)
    return fits + plan_step([], waiting, rest, max_num_seqs - len(running), free, chunked)


def test_schedule_step_rejects_stopping_at_a_running_prompt():
    rejects(lab19.check_schedule_step, plan_step_stops_at_long_prompt, match="is skipped, not")


def test_schedule_step_rejects_the_reference():
    rejects(
        lab19.check_schedule_step,
        lambda *a: sched_mod.plan_step(*a),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 19.2 preemption
def plan_preemption(running, free, oldest=False, refund=True):
    queue, kept, out = list(running), [], []
    while queue:
        sid, need, held = queue.pop(0)
        while free < need and queue:
            victim = queue.pop(0) if oldest else queue.pop()
            out.append(victim[0])
            free += victim[2] if refund else 0
        if free < need:
            out.append(sid)
            free += held if refund else 0
            continue
        free -= need
        kept.append(sid)
    return kept, out


def test_preemption_reference_and_solution_pass(capsys):
    lab19.check_preemption(ref_preemption)
    lab19.check_preemption(plan_preemption)
    assert "✔ Exercise 19.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda r, f: plan_preemption(r, f, oldest=True), "NEWEST"),
        (lambda r, f: plan_preemption(r, f, refund=False), "frees every block"),
        (
            lambda r, f: (
                ([], [s for s, *_ in r][::-1])
                if sum(n for _, n, _ in r) > f
                else ([s for s, *_ in r], [])
            ),
            "expected",
        ),
    ],
)
def test_preemption_rejects_wrong_answers(wrong, match):
    rejects(lab19.check_preemption, wrong, match=match)


def test_preemption_rejects_the_reference():
    rejects(
        lab19.check_preemption,
        lambda r, f: sched_mod.plan_preemption(r, f),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 19.3 engine step
def engine_step(runner, work, every=False, tail=False, per_seq=False):
    chunks = [
        Chunk(toks[len(toks) - n :] if tail else toks[done : done + n], done, table)
        for toks, done, n, table in work
    ]
    if per_seq:
        logits = [runner.forward([c])[0] for c in chunks]
    else:
        logits = list(runner.forward(chunks))
    return [
        row if every or done + n == len(toks) else None
        for row, (toks, done, n, _) in zip(logits, work, strict=True)
    ]


def test_engine_step_reference_and_solution_pass(capsys):
    lab19.check_engine_step(ref_batched_step)
    lab19.check_engine_step(engine_step)
    assert "✔ Exercise 19.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(every=True), "must get None"),
        (dict(tail=True), "one-at-a-time greedy"),
        (dict(per_seq=True), "ONE forward"),
    ],
)
def test_engine_step_rejects_wrong_answers(kwargs, match):
    rejects(lab19.check_engine_step, lambda r, w: engine_step(r, w, **kwargs), match=match)


def test_engine_step_rejects_the_reference():
    rejects(
        lab19.check_engine_step,
        lambda r, w: engine_mod.batched_step(r, w),
        match="reference",
        error=ReferenceCalledError,
    )


def engine_step_around_the_count(runner, work):
    """A cheat: one uncounted forward per sequence on the runner behind the counter."""
    inner = getattr(runner, "_runner", runner)
    rows = [inner.forward([Chunk(t[d : d + n], d, b)])[0] for t, d, n, b in work]
    return [r if d + n == len(t) else None for r, (t, d, n, _) in zip(rows, work, strict=True)]


def test_engine_step_runner_has_no_uncounted_way_in():
    rejects(lab19.check_engine_step, engine_step_around_the_count, match="forward calls")


# --------------------------------------------------------------------------- 19.4 predict
def predict_steps(lens, b, policy):
    if policy == "static":
        return sum(max(lens[i : i + b]) for i in range(0, len(lens), b))
    slots, end = [0] * min(b, len(lens)), 0
    for n in lens:
        start = heapq.heappop(slots)
        end = max(end, start + n)
        heapq.heappush(slots, start + n)
    return end


def test_predict_steps_solution_passes(capsys):
    lab19.check_predict_steps(predict_steps)
    assert "✔ Exercise 19.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda ls, b, p: predict_steps(ls, b, "static"), "freed slot is refilled"),
        (
            lambda ls, b, p: -(-sum(ls) // b) if p == "continuous" else predict_steps(ls, b, p),
            "stays in its slot",
        ),
        (
            lambda ls, b, p: (
                sum(round(sum(ls[i : i + b]) / len(ls[i : i + b])) for i in range(0, len(ls), b))
                if p == "static"
                else predict_steps(ls, b, p)
            ),
            "LONGEST",
        ),
    ],
)
def test_predict_steps_rejects_wrong_answers(wrong, match):
    rejects(lab19.check_predict_steps, wrong, match=match)


def test_predict_steps_rejects_the_reference():
    def via_engine(lens, b, policy):
        engine_mod.Engine(None, cost=engine_mod.CostModel())
        return predict_steps(lens, b, policy)

    rejects(lab19.check_predict_steps, via_engine, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- issue 18: edges
def test_schedule_step_rejects_free_blocks_that_never_shrink():
    from tests.checks.test_lab19_attacks import plan_free_fixed

    rejects(lab19.check_schedule_step, plan_free_fixed, match="free_blocks shrinks")


def test_schedule_step_rejects_empty_entries():
    def zero_entries(running, waiting, budget, max_num_seqs, free, chunked):
        out = plan_step(running, waiting, budget, max_num_seqs, free, chunked)
        listed = {sid for sid, _ in out}
        return out + [(sid, 0) for sid, _ in running if sid not in listed]

    rejects(lab19.check_schedule_step, zero_entries, match="expected")


def test_engine_step_counts_the_tokens_computed():
    from tests.checks.test_lab19_attacks import step_rest_of_prompt

    rejects(lab19.check_engine_step, step_rest_of_prompt, match="the step asks for")


def test_engine_step_counters_are_out_of_reach():
    """The step runs in a child: the proxy runner holds nothing, the counts live here."""
    from a2s.checks.core import StudentError
    from tests.checks.test_lab19_attacks import (
        step_own_model,
        step_rewrites_count,
        step_through_closure,
        step_through_gc,
    )

    rejects(lab19.check_engine_step, step_through_closure, match="TypeError", error=StudentError)
    rejects(lab19.check_engine_step, step_through_gc, match="0 runner.forward calls")
    rejects(lab19.check_engine_step, step_rewrites_count, match="ONE forward")
    rejects(lab19.check_engine_step, step_own_model, match="not a row of")


def test_predict_steps_rejects_a_prefill_step_per_batch():
    def plus_one(lens, b, policy):  # counts a separate prefill step per batch: wrong at b = 1
        return predict_steps(lens, b, policy) + (policy == "static")

    rejects(lab19.check_predict_steps, plus_one, match="expected")


# every must, only, budget and invariant of the prose -> the test that fails when it breaks
MUSTS = [
    (
        "19.1",
        "Exercise code may not call torch, nor the `minitorch.runtime` reference of what "
        "the exercise asks",
        "test_schedule_step_rejects_the_reference",
    ),
    (
        "19.1",
        "a step never schedules more tokens than its budget",
        "test_schedule_step_rejects_wrong_answers",
    ),
    (
        "19.1",
        "**Budget:** the tokens returned never exceed `token_budget`.",
        "test_schedule_step_rejects_wrong_answers",
    ),
    (
        "19.1",
        "a sequence with nothing left gets no entry",
        "test_schedule_step_rejects_empty_entries",
    ),
    (
        "19.1",
        "while fewer than `max_num_seqs` sequences run (running ones count)",
        "test_schedule_step_rejects_wrong_answers",
    ),
    (
        "19.1",
        "`blocks_needed <= free_blocks` (which then shrinks)",
        "test_schedule_step_rejects_free_blocks_that_never_shrink",
    ),
    (
        "19.1",
        "Stop at the first that cannot be admitted: later ones may not overtake it.",
        "test_schedule_step_rejects_wrong_answers",
    ),
    (
        "19.1",
        "its whole need if it fits (skipped otherwise)",
        "test_schedule_step_rejects_stopping_at_a_running_prompt",
    ),
    (
        "19.2",
        "preempt the newest *other* sequence not yet served this step",
        "test_preemption_rejects_wrong_answers",
    ),
    (
        "19.2",
        "the kept sequences' new blocks fit in `free_blocks` plus the blocks the preempted "
        "ones held; nobody is preempted when the blocks suffice",
        "test_preemption_rejects_wrong_answers",
    ),
    ("19.2", "if none is left, it preempts itself", "test_preemption_rejects_wrong_answers"),
    (
        "19.3",
        "the engine's step must run the whole batch in one forward pass that computes "
        "exactly the step's tokens",
        "test_engine_step_counts_the_tokens_computed",
    ),
    (
        "19.3",
        "**Budget:** one `runner.forward` call per engine step",
        "test_engine_step_rejects_wrong_answers",
    ),
    (
        "19.3",
        "the logits you return are rows of what that call returned",
        "test_engine_step_counters_are_out_of_reach",
    ),
    (
        "19.3",
        "Your step runs in a separate process whose runner only sends its chunks to the check",
        "test_engine_step_counters_are_out_of_reach",
    ),
    (
        "19.3",
        "a prompt cut mid-way has no next token yet",
        "test_engine_step_rejects_wrong_answers",
    ),
    (
        "19.3",
        "every request's tokens must equal `generate` run on it alone",
        "test_engine_step_rejects_wrong_answers",
    ),
    (
        "19.4",
        "with `batch_size = 1` both policies take `sum(output_lens)` steps",
        "test_predict_steps_rejects_a_prefill_step_per_batch",
    ),
    (
        "19.4",
        "each lasting as long as its *longest* request",
        "test_predict_steps_rejects_wrong_answers",
    ),
    (
        "19.4",
        "each request, in order, takes the seat that frees first",
        "test_predict_steps_rejects_wrong_answers",
    ),
]
