"""Lab 19 tried as a class of students would: honest variants, realistic mistakes, cheats.

19.3's step runs in a forked child (the harness): its runner only sends requests, and the
forward calls and tokens are counted in the grader's process, so the cheats that reach for
the real runner (its closure, ``gc``) or rewrite the count change the child's copy only.
"""

from __future__ import annotations

import bisect
import gc
import heapq
from collections import deque

import numpy as np
import pytest

from a2s.checks import lab19
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from minitorch.runtime.paged_model import Chunk
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

REF, FORBID = ReferenceCalledError, ForbiddenCallError


# --------------------------------------------------------------------------- 19.1 plan_step
def plan_loop(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    out, budget = [], token_budget
    for sid, need in running:
        n = min(need, budget) if chunked else need
        if 0 < n <= budget:
            out.append((sid, n))
            budget -= n
    seats = max_num_seqs - len(running)
    for sid, need, blocks in waiting:
        n = min(need, budget) if chunked else need
        if seats <= 0 or n <= 0 or n > budget or blocks > free_blocks:
            break
        out.append((sid, n))
        budget, seats, free_blocks = budget - n, seats - 1, free_blocks - blocks
    return out


def plan_generator(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    """A generator of decisions, collected at the end; lists of lists are fine."""

    def steps():
        budget, seats, free = token_budget, max_num_seqs - len(running), free_blocks
        for sid, need in running:
            take = min(need, budget) if chunked else need
            if take and take <= budget:
                budget -= take
                yield [sid, take]
        for sid, need, blocks in waiting:
            take = min(need, budget) if chunked else need
            if not (seats > 0 and 0 < take <= budget and blocks <= free):
                return
            budget, seats, free = budget - take, seats - 1, free - blocks
            yield [sid, take]

    return list(steps())


def plan_recursive(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    def admit(queue, budget, seats, free):
        if not queue:
            return []
        sid, need, blocks = queue[0]
        n = min(need, budget) if chunked else need
        if seats <= 0 or n <= 0 or n > budget or blocks > free:
            return []
        return [(sid, n), *admit(queue[1:], budget - n, seats - 1, free - blocks)]

    out, budget = [], token_budget
    for sid, need in running:
        n = min(need, budget) if chunked else need
        if 0 < n <= budget:
            out.append((sid, n))
            budget -= n
    return out + admit(list(waiting), budget, max_num_seqs - len(running), free_blocks)


def plan_waiting_first(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    admitted = plan_loop(
        [], waiting, token_budget, max_num_seqs - len(running), free_blocks, chunked
    )
    left = token_budget - sum(n for _, n in admitted)
    return admitted + plan_loop(running, [], left, max_num_seqs, free_blocks, chunked)


def plan_overtakes(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    out = plan_loop(running, [], token_budget, max_num_seqs, free_blocks, chunked)
    budget, seats = token_budget - sum(n for _, n in out), max_num_seqs - len(running)
    for sid, need, blocks in waiting:
        n = min(need, budget) if chunked else need
        if seats > 0 and 0 < n <= budget and blocks <= free_blocks:
            out.append((sid, n))
            budget, seats, free_blocks = budget - n, seats - 1, free_blocks - blocks
    return out


def plan_free_fixed(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    """Checks each prompt against free_blocks but never subtracts what was admitted."""
    out, budget = plan_loop(running, [], token_budget, max_num_seqs, free_blocks, chunked), None
    budget, seats = token_budget - sum(n for _, n in out), max_num_seqs - len(running)
    for sid, need, blocks in waiting:
        n = min(need, budget) if chunked else need
        if seats <= 0 or n <= 0 or n > budget or blocks > free_blocks:
            break
        out.append((sid, n))
        budget, seats = budget - n, seats - 1
    return out


def plan_seats_ignore_running(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    return plan_loop(
        running, waiting, token_budget, max_num_seqs + len(running), free_blocks, chunked
    )


def plan_via_reference(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    from minitorch.runtime.scheduler import plan_step

    return plan_step(running, waiting, token_budget, max_num_seqs, free_blocks, chunked)


def plan_via_truth(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    from a2s.checks.lab19 import schedule

    return schedule._plan(running, waiting, token_budget, max_num_seqs, free_blocks, chunked)


def plan_torch(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    import torch

    budget = int(torch.tensor(token_budget))
    return plan_loop(running, waiting, budget, max_num_seqs, free_blocks, chunked)


def plan_always_equal(running, waiting, token_budget, max_num_seqs, free_blocks, chunked):
    return [(always_equal(0), always_equal(1))]


# --------------------------------------------------------------------------- 19.2 preemption
def preempt_loop(running, free_blocks):
    queue, kept, preempted = list(running), [], []
    while queue:
        sid, need, held = queue.pop(0)
        while free_blocks < need and queue:
            victim = queue.pop()
            preempted.append(victim[0])
            free_blocks += victim[2]
        if free_blocks < need:
            preempted.append(sid)
            free_blocks += held
            continue
        free_blocks -= need
        kept.append(sid)
    return kept, preempted


def preempt_deque(running, free_blocks):
    """A deque from both ends, numpy ints for the ids: still plain values."""
    queue, kept, out, free = deque(running), [], [], free_blocks
    while queue:
        sid, need, held = queue.popleft()
        while need > free and queue:
            vid, _, vheld = queue.pop()
            out.append(np.int64(vid))
            free += vheld
        if need > free:
            out.append(np.int64(sid))
            free += held
        else:
            free -= need
            kept.append(np.int64(sid))
    return [kept, out]


def preempt_oldest(running, free_blocks):
    queue, kept, out = list(running), [], []
    while queue:
        sid, need, held = queue.pop(0)
        while free_blocks < need and queue:
            victim = queue.pop(0)
            out.append(victim[0])
            free_blocks += victim[2]
        if free_blocks < need:
            out.append(sid)
            free_blocks += held
            continue
        free_blocks -= need
        kept.append(sid)
    return kept, out


def preempt_no_refund(running, free_blocks):
    queue, kept, out = list(running), [], []
    while queue:
        sid, need, _ = queue.pop(0)
        while free_blocks < need and queue:
            out.append(queue.pop()[0])
        if free_blocks < need:
            out.append(sid)
            continue
        free_blocks -= need
        kept.append(sid)
    return kept, out


def preempt_self_first(running, free_blocks):
    kept, out = [], []
    for sid, need, held in running:
        if need > free_blocks:
            out.append(sid)
            free_blocks += held
        else:
            free_blocks -= need
            kept.append(sid)
    return kept, out


def preempt_via_reference(running, free_blocks):
    from minitorch.runtime.scheduler import plan_preemption

    return plan_preemption(running, free_blocks)


def preempt_via_scheduler(running, free_blocks):
    from minitorch.runtime.block_manager import BlockManager
    from minitorch.runtime.scheduler import Scheduler

    Scheduler(BlockManager(4, 4))
    return preempt_loop(running, free_blocks)


def preempt_via_truth(running, free_blocks):
    from a2s.checks.lab19 import schedule

    return schedule._preempt(list(running), free_blocks)


def preempt_torch(running, free_blocks):
    import torch

    held = torch.tensor([h for _, _, h in running])
    assert int(held.sum()) >= 0
    return preempt_loop(running, free_blocks)


# --------------------------------------------------------------------------- 19.3 engine step
def step_batched(runner, work):
    chunks = [Chunk(t[d : d + n], d, b) for t, d, n, b in work]
    logits = runner.forward(chunks)
    return [
        row if d + n == len(t) else None for row, (t, d, n, _) in zip(logits, work, strict=False)
    ]


def step_all_logits(runner, work):
    """Asks for every token's logits and picks each chunk's last row (cumulative sizes)."""
    chunks = [Chunk(list(t[d : d + n]), d, list(b)) for t, d, n, b in work]
    every = runner.forward(chunks, all_logits=True)
    ends = np.cumsum([len(c.tokens) for c in chunks]) - 1
    return [
        every[e] if d + n == len(t) else None for e, (t, d, n, _) in zip(ends, work, strict=False)
    ]


def step_sorted(runner, work):
    """Longest chunk first, rows mapped back to the work's order."""
    order = sorted(range(len(work)), key=lambda i: -work[i][2])
    chunks = [
        Chunk(work[i][0][work[i][1] : work[i][1] + work[i][2]], work[i][1], work[i][3])
        for i in order
    ]
    rows = runner.forward(chunks)
    back = {i: rows[k] for k, i in enumerate(order)}
    return [back[i] if d + n == len(t) else None for i, (t, d, n, _) in enumerate(work)]


def step_every_row(runner, work):
    logits = runner.forward([Chunk(t[d : d + n], d, b) for t, d, n, b in work])
    return list(logits)


def step_tail(runner, work):
    logits = runner.forward([Chunk(t[len(t) - n :], d, b) for t, d, n, b in work])
    return [
        row if d + n == len(t) else None for row, (t, d, n, _) in zip(logits, work, strict=False)
    ]


def step_per_sequence(runner, work):
    rows = [runner.forward([Chunk(t[d : d + n], d, b)])[0] for t, d, n, b in work]
    return [row if d + n == len(t) else None for row, (t, d, n, _) in zip(rows, work, strict=False)]


def step_rest_of_prompt(runner, work):
    """Computes the whole rest of each prompt at once, whatever n the scheduler gave."""
    logits = runner.forward([Chunk(t[d:], d, b) for t, d, n, b in work])
    return [
        row if d + n == len(t) else None for row, (t, d, n, _) in zip(logits, work, strict=False)
    ]


def step_via_reference(runner, work):
    from minitorch.runtime.engine import batched_step

    return batched_step(runner, work)


def step_through_closure(runner, work):
    """Reaches the real runner through the proxy's method closure: one forward per sequence."""
    cells = type(runner).forward.__closure__
    real = next(c.cell_contents for c in cells if hasattr(c.cell_contents, "cache"))
    rows = [real.forward([Chunk(t[d : d + n], d, b)])[0] for t, d, n, b in work]
    return [row if d + n == len(t) else None for row, (t, d, n, _) in zip(rows, work, strict=False)]


def step_through_gc(runner, work):
    """Finds the engine's PagedGPT with gc and runs it per sequence, never through the proxy."""
    from minitorch.runtime.paged_model import PagedGPT

    real = next(o for o in gc.get_objects() if isinstance(o, PagedGPT))
    rows = [real.forward([Chunk(t[d : d + n], d, b)])[0] for t, d, n, b in work]
    return [row if d + n == len(t) else None for row, (t, d, n, _) in zip(rows, work, strict=False)]


def step_rewrites_count(runner, work):
    """One forward per sequence, then finds the counter list and sets it back to one call."""
    before = [o for o in gc.get_objects() if type(o) is list and len(o) == 2]
    rows = [runner.forward([Chunk(t[d : d + n], d, b)])[0] for t, d, n, b in work]
    for o in before:
        if all(type(x) is int for x in o) and o[0] >= len(work):
            o[0] -= len(work) - 1
    return [row if d + n == len(t) else None for row, (t, d, n, _) in zip(rows, work, strict=False)]


def step_own_model(runner, work):
    """One forward with exactly the step's tokens, but logits from the model run without cache."""
    from minitorch.model.checkpoint import load_pretrained

    runner.forward([Chunk(t[d : d + n], d, b) for t, d, n, b in work])
    model = load_pretrained()
    return [
        model.forward(np.array([t])).data[0, -1] if d + n == len(t) else None for t, d, n, _ in work
    ]


def step_torch(runner, work):
    import torch

    logits = torch.tensor(runner.forward([Chunk(t[d : d + n], d, b) for t, d, n, b in work]))
    return [
        row.numpy() if d + n == len(t) else None
        for row, (t, d, n, _) in zip(logits, work, strict=False)
    ]


# --------------------------------------------------------------------------- 19.4 predict
def predict_heap(output_lens, batch_size, policy):
    if policy == "static":
        return sum(
            max(output_lens[i : i + batch_size]) for i in range(0, len(output_lens), batch_size)
        )
    seats, end = [0] * min(batch_size, len(output_lens)), 0
    for n in output_lens:
        start = heapq.heappop(seats)
        end = max(end, start + n)
        heapq.heappush(seats, start + n)
    return end


def predict_simulated(output_lens, batch_size, policy):
    """Steps the batch one model step at a time, as an engine would."""
    queue, seats, steps = list(output_lens), [], 0
    while queue or seats:
        if policy == "continuous" or not seats:
            while queue and len(seats) < batch_size:
                seats.append(queue.pop(0))
        steps += 1
        seats = [s - 1 for s in seats if s > 1]
    return steps


def predict_bisect(output_lens, batch_size, policy):
    if policy == "static":
        batches = [output_lens[i : i + batch_size] for i in range(0, len(output_lens), batch_size)]
        return int(np.sum([np.max(b) for b in batches]))
    free = sorted([0] * min(batch_size, len(output_lens)))
    for n in output_lens:
        start = free.pop(0)
        bisect.insort(free, start + n)
    return free[-1]


def predict_mean(output_lens, batch_size, policy):
    if policy == "static":
        return sum(
            round(sum(b) / len(b))
            for b in (
                output_lens[i : i + batch_size] for i in range(0, len(output_lens), batch_size)
            )
        )
    return predict_heap(output_lens, batch_size, policy)


def predict_divisible(output_lens, batch_size, policy):
    if policy == "static":
        return predict_heap(output_lens, batch_size, policy)
    return -(-sum(output_lens) // batch_size)


def predict_static_twice(output_lens, batch_size, policy):
    return predict_heap(output_lens, batch_size, "static")


def predict_via_engine(output_lens, batch_size, policy):
    from minitorch.runtime.engine import CostModel, Engine
    from minitorch.runtime.workload import Request

    reqs = [Request([1], n, 0.0) for n in output_lens]
    eng = Engine(
        None,
        num_blocks=4096,
        block_size=16,
        token_budget=4096,
        max_num_seqs=batch_size,
        chunked_prefill=False,
        policy=policy,
        cost=CostModel(),
    )
    return len(eng.run(reqs).steps)


def predict_via_truth(output_lens, batch_size, policy):
    from a2s.checks.lab19 import predict

    return (predict._static if policy == "static" else predict._continuous)(output_lens, batch_size)


def predict_torch(output_lens, batch_size, policy):
    import torch

    if policy == "static":
        t = torch.tensor(output_lens)
        return int(sum(t[i : i + batch_size].max() for i in range(0, len(t), batch_size)))
    return predict_heap(output_lens, batch_size, policy)


def predict_memorised(output_lens, batch_size, policy):
    table = {((3, 1, 2, 4), 2): (7, 6), ((10, 1, 1, 1, 1), 2): (12, 10), ((5, 2), 8): (5, 5)}
    static, continuous = table.get((tuple(output_lens), batch_size), (0, 0))
    return static if policy == "static" else continuous


def predict_always_equal(output_lens, batch_size, policy):
    return always_equal(0)


# --------------------------------------------------------------------------- the battery
P, Q, E, N = (
    lab19.check_schedule_step,
    lab19.check_preemption,
    lab19.check_engine_step,
    lab19.check_predict_steps,
)

ATTEMPTS = [
    honest("19.1", "two loops", lambda: P(plan_loop)),
    honest("19.1", "a generator of lists", lambda: P(plan_generator)),
    honest("19.1", "recursive admission", lambda: P(plan_recursive)),
    wrong("19.1", "waiting first", lambda: P(plan_waiting_first), "Running sequences go first"),
    wrong("19.1", "later prompts overtake", lambda: P(plan_overtakes), "may not overtake"),
    wrong("19.1", "free blocks never shrink", lambda: P(plan_free_fixed), "free_blocks shrinks"),
    wrong(
        "19.1",
        "seats ignore the running",
        lambda: P(plan_seats_ignore_running),
        "counts the running sequences too",
    ),
    cheat("19.1", "calls plan_step", lambda: P(plan_via_reference), "reference", REF),
    cheat("19.1", "calls the grader's _plan", lambda: P(plan_via_truth), "reference", REF),
    cheat("19.1", "torch", lambda: P(plan_torch), "torch", FORBID),
    cheat("19.1", "ids whose == says yes", lambda: P(plan_always_equal), "plain value"),
    honest("19.2", "two loops", lambda: Q(preempt_loop)),
    honest("19.2", "a deque and numpy ids", lambda: Q(preempt_deque)),
    wrong("19.2", "preempts the oldest", lambda: Q(preempt_oldest), "NEWEST"),
    wrong("19.2", "no blocks refunded", lambda: Q(preempt_no_refund), "frees every block"),
    wrong("19.2", "gives up on itself first", lambda: Q(preempt_self_first), "before giving up"),
    cheat("19.2", "calls plan_preemption", lambda: Q(preempt_via_reference), "reference", REF),
    cheat("19.2", "builds a Scheduler", lambda: Q(preempt_via_scheduler), "reference", REF),
    cheat("19.2", "calls the grader's _preempt", lambda: Q(preempt_via_truth), "reference", REF),
    cheat("19.2", "torch", lambda: Q(preempt_torch), "torch", FORBID),
    honest("19.3", "one forward of chunks", lambda: E(step_batched)),
    honest("19.3", "all_logits and cumulative ends", lambda: E(step_all_logits)),
    honest("19.3", "chunks sorted, rows mapped back", lambda: E(step_sorted)),
    wrong("19.3", "logits for every sequence", lambda: E(step_every_row), "must get None"),
    wrong("19.3", "the last n tokens", lambda: E(step_tail), "one-at-a-time greedy"),
    wrong("19.3", "one forward per sequence", lambda: E(step_per_sequence), "ONE forward"),
    wrong("19.3", "the whole rest of the prompt", lambda: E(step_rest_of_prompt), "no more"),
    cheat("19.3", "calls batched_step", lambda: E(step_via_reference), "reference", REF),
    cheat(
        "19.3",
        "the real runner via __closure__",
        lambda: E(step_through_closure),
        "TypeError",
        StudentError,
    ),
    cheat("19.3", "the real runner via gc", lambda: E(step_through_gc), "0 runner.forward calls"),
    cheat("19.3", "rewrites the count", lambda: E(step_rewrites_count), "ONE forward"),
    cheat("19.3", "logits from its own model", lambda: E(step_own_model), "not a row of"),
    cheat("19.3", "torch", lambda: E(step_torch), "torch", FORBID),
    honest("19.4", "a heap of seats", lambda: N(predict_heap)),
    honest("19.4", "a step-by-step simulation", lambda: N(predict_simulated)),
    honest("19.4", "bisect and numpy", lambda: N(predict_bisect)),
    wrong("19.4", "mean of a batch", lambda: N(predict_mean), "LONGEST"),
    wrong("19.4", "ceil(sum / batch)", lambda: N(predict_divisible), "can be split"),
    wrong("19.4", "static for both", lambda: N(predict_static_twice), "That is static batching"),
    cheat("19.4", "runs the Engine", lambda: N(predict_via_engine), "reference", REF),
    cheat("19.4", "calls the grader's closed form", lambda: N(predict_via_truth), "reference", REF),
    cheat("19.4", "torch", lambda: N(predict_torch), "torch", FORBID),
    cheat("19.4", "memorised figures", lambda: N(predict_memorised), "expected"),
    cheat("19.4", "an int whose == says yes", lambda: N(predict_always_equal), "plain value"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
