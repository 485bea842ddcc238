"""Graders of lab 25: right schedules pass; broken dependencies, GPipe memory, wrong timings,
wrong training steps and reference calls fail."""

from __future__ import annotations

from fractions import Fraction
from functools import partial

import numpy as np

from a2s.checks import lab25
from a2s.checks.core import ReferenceCalledError, StudentError
from minitorch.autograd import Tensor
from minitorch.parallel import pipeline, pipeline_exec
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.parallel")


# --------------------------------------------------------------------------- 25.1 GPipe
def gpipe_schedule(p, m):
    return [[("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)] for _ in range(p)]


def gpipe_missing_last(p, m):
    return [[("F", j, 0) for j in range(m - 1)] + [("B", j, 0) for j in range(m - 1)]] * p


def model_parallel(p, m):
    return [[op for j in range(m) for op in (("F", j, 0), ("B", j, 0))] for _ in range(p)]


def backward_first(p, m):
    return [[("B", j, 0) for j in range(m)] + [("F", j, 0) for j in range(m)]] * p


def test_gpipe():
    lab25.check_gpipe(gpipe_schedule)
    lab25.check_gpipe(unblocked(pipeline.gpipe))
    rejects(lab25.check_gpipe, gpipe_missing_last, match="exactly once")
    rejects(lab25.check_gpipe, backward_first, match="before its forward")
    rejects(lab25.check_gpipe, model_parallel, match="all m forwards before any backward")
    rejects(lab25.check_gpipe, pipeline.gpipe, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 25.2 1F1B
def one_f_one_b_schedule(p, m):
    out = []
    for s in range(p):
        warm = min(p - s - 1, m)
        ops = [("F", j, 0) for j in range(warm)]
        for j in range(m - warm):
            ops += [("F", warm + j, 0), ("B", j, 0)]
        out.append(ops + [("B", j, 0) for j in range(m - warm, m)])
    return out


def warmup_reversed(p, m):  # stage s warms up with s forwards: stage 0 waits on itself
    out = []
    for s in range(p):
        warm = min(s, m)
        ops = [("F", j, 0) for j in range(warm)]
        for j in range(m - warm):
            ops += [("F", warm + j, 0), ("B", j, 0)]
        out.append(ops + [("B", j, 0) for j in range(m - warm, m)])
    return out


def one_warmup_too_many(p, m):
    out = []
    for s in range(p):
        warm = min(p - s, m)
        ops = [("F", j, 0) for j in range(warm)]
        for j in range(m - warm):
            ops += [("F", warm + j, 0), ("B", j, 0)]
        out.append(ops + [("B", j, 0) for j in range(m - warm, m)])
    return out


def test_one_f_one_b():
    lab25.check_one_f_one_b(one_f_one_b_schedule)
    lab25.check_one_f_one_b(unblocked(pipeline.one_f_one_b))
    rejects(lab25.check_one_f_one_b, warmup_reversed, match="deadlocks")
    rejects(lab25.check_one_f_one_b, gpipe_schedule, match="GPipe's memory")  # m, not p - s
    rejects(lab25.check_one_f_one_b, one_warmup_too_many, match="budget is min.*warm-up")
    rejects(lab25.check_one_f_one_b, model_parallel, match="bubble")  # tiny memory, no overlap
    rejects(
        lab25.check_one_f_one_b, pipeline.one_f_one_b, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 25.3 timing
def predict_bubble(p, m, v):
    return (p - 1) / (v * m + p - 1)


def predict_megatron_ratio(p, m, v):
    return (p - 1) / (v * m)


def simulate_schedule(schedule, t_f, t_b, t_comm):
    p = len(schedule)
    v = 1 + max(c for ops in schedule for _, _, c in ops)
    end, free, pos = {}, [0.0] * p, [0] * p
    while any(pos[s] < len(schedule[s]) for s in range(p)):
        for s in range(p):
            while pos[s] < len(schedule[s]):
                kind, j, c = schedule[s][pos[s]]
                k = c * p + s
                q = k - 1 if kind == "F" else k + 1
                ready = free[s]
                if 0 <= q < p * v:
                    if (kind, j, q) not in end:
                        break
                    ready = max(ready, end[(kind, j, q)] + (t_comm if q % p != s else 0.0))
                free[s] = ready + (t_f if kind == "F" else t_b)
                end[(kind, j, k)] = free[s]
                pos[s] += 1
    span = max(free)
    work = sum(t_f if k == "F" else t_b for ops in schedule for k, _, _ in ops)
    return span, 1 - work / (p * span)


def simulate_serial(schedule, t_f, t_b, t_comm):  # never waits for an input
    p = len(schedule)
    span = max(sum(t_f if k == "F" else t_b for k, _, _ in ops) for ops in schedule)
    work = sum(t_f if k == "F" else t_b for ops in schedule for k, _, _ in ops)
    return span, 1 - work / (p * span)


def simulate_no_comm(schedule, t_f, t_b, t_comm):
    return simulate_schedule(schedule, t_f, t_b, 0.0)


def reference_simulate(schedule, t_f, t_b, t_comm):
    span, bubble, _ = pipeline_exec.simulate(schedule, t_f, t_b, t_comm)
    return span, bubble


def predict_exact(p, m, v):
    return Fraction(p - 1, v * m + p - 1)


def predict_floor(p, m, v):
    return (p - 1) // (v * m + p - 1)


def simulate_comm_always(schedule, t_f, t_b, t_comm):  # pays t_comm between its own chunks
    p = len(schedule)
    v = 1 + max(c for ops in schedule for _, _, c in ops)
    end, free, pos = {}, [0.0] * p, [0] * p
    while any(pos[s] < len(schedule[s]) for s in range(p)):
        for s in range(p):
            while pos[s] < len(schedule[s]):
                kind, j, c = schedule[s][pos[s]]
                k = c * p + s
                q = k - 1 if kind == "F" else k + 1
                ready = free[s]
                if 0 <= q < p * v:
                    if (kind, j, q) not in end:
                        break
                    ready = max(ready, end[(kind, j, q)] + t_comm)
                free[s] = ready + (t_f if kind == "F" else t_b)
                end[(kind, j, k)] = free[s]
                pos[s] += 1
    work = sum(t_f if k == "F" else t_b for ops in schedule for k, _, _ in ops)
    return max(free), 1 - work / (p * max(free))


def simulate_by_walk(schedule, t_f, t_b, t_comm):
    p, free, end = len(schedule), [0.0] * len(schedule), {}

    def visit(s, op, need, src):
        ready = 0.0 if need is None else end[need] + (t_comm if src != s else 0.0)
        free[s] = max(free[s], ready) + (t_f if op[0] == "F" else t_b)
        end[(op[0], op[1], op[2] * p + s)] = free[s]

    pipeline_exec._walk(schedule, visit)
    work = sum(t_f if k == "F" else t_b for ops in schedule for k, _, _ in ops)
    return max(free), 1 - work / (p * max(free))


def test_simulate():
    lab25.check_simulate(simulate_schedule, predict_bubble)
    sim = unblocked(pipeline_exec.simulate)
    lab25.check_simulate(lambda *a: sim(*a)[:2], unblocked(pipeline.bubble_formula))
    rejects(lab25.check_simulate, simulate_schedule, predict_megatron_ratio, match="IDEAL")
    rejects(lab25.check_simulate, simulate_serial, predict_bubble, match="summed each stage")
    rejects(lab25.check_simulate, simulate_no_comm, predict_bubble, match="t_comm is missing")
    rejects(
        lab25.check_simulate,
        reference_simulate,
        predict_bubble,
        match="reference",
        error=ReferenceCalledError,
    )
    lab25.check_simulate(simulate_schedule, predict_exact)  # a Fraction is a fine prediction
    rejects(lab25.check_simulate, simulate_schedule, predict_floor, match="integer division")
    rejects(lab25.check_simulate, simulate_comm_always, predict_bubble, match="no t_comm")
    rejects(  # the reference's stage-advancing loop, given a visitor, is the exercise
        lab25.check_simulate,
        simulate_by_walk,
        predict_bubble,
        match="_walk",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 25.4 interleaved
def interleaved_schedule(p, m, v):
    def micro(k, forward):
        group, within = divmod(k, p * v)
        chunk = within // p
        return group * p + within % p, chunk if forward else v - 1 - chunk

    out = []
    for s in range(p):
        warm = min((p - s - 1) * 2 + (v - 1) * p, m * v) if v > 1 else min(p - s - 1, m)
        ops = [("F", *micro(k, True)) for k in range(warm)]
        for k in range(m * v - warm):
            ops += [("F", *micro(warm + k, True)), ("B", *micro(k, False))]
        out.append(ops + [("B", *micro(k, False)) for k in range(m * v - warm, m * v)])
    return out


def interleaved_chunks_not_reversed(p, m, v):
    sched = interleaved_schedule(p, m, v)
    return [[(k, j, (v - 1 - c) if k == "B" else c) for k, j, c in ops] for ops in sched]


def interleaved_all_forwards_first(p, m, v):
    return [
        [op for op in ops if op[0] == "F"] + [op for op in ops if op[0] == "B"]
        for ops in interleaved_schedule(p, m, v)
    ]


def interleaved_one_more_warmup(p, m, v):
    order = interleaved_schedule(p, m, v)
    out = []
    for s, ops in enumerate(order):
        fwd = [op for op in ops if op[0] == "F"]
        bwd = [op for op in ops if op[0] == "B"]
        w = min(2 * (p - s - 1) + (v - 1) * p + 1, m * v) if v > 1 else min(p - s - 1, m)
        row = fwd[:w]
        for k in range(m * v - w):
            row += [fwd[w + k], bwd[k]]
        out.append(row + bwd[m * v - w :])
    return out


def interleaved_chunk_major(p, m, v):  # every microbatch through chunk 0 before chunk 1
    fwd = [("F", j, c) for c in range(v) for j in range(m)]
    bwd = [("B", j, v - 1 - c) for c in range(v) for j in range(m)]
    out = []
    for s in range(p):
        w = min(2 * (p - s - 1) + (v - 1) * p, m * v) if v > 1 else min(p - s - 1, m)
        row = fwd[:w]
        for k in range(m * v - w):
            row += [fwd[w + k], bwd[k]]
        out.append(row + bwd[m * v - w :])
    return out


def interleaved_from_helpers(p, m, v):  # the reference's own warm-up count and order
    out = []
    for s in range(p):
        w = pipeline.warmup_count(p, m, v, s)
        fwd = [("F", *pipeline._micro_chunk(k, p, v, True)) for k in range(m * v)]
        bwd = [("B", *pipeline._micro_chunk(k, p, v, False)) for k in range(m * v)]
        row = fwd[:w]
        for k in range(m * v - w):
            row += [fwd[w + k], bwd[k]]
        out.append(row + bwd[m * v - w :])
    return out


def test_interleaved():
    lab25.check_interleaved(interleaved_schedule)
    lab25.check_interleaved(unblocked(pipeline.interleaved))
    rejects(lab25.check_interleaved, interleaved_chunks_not_reversed, match="deadlocks")
    rejects(lab25.check_interleaved, interleaved_all_forwards_first, match="GPipe over the virtual")
    rejects(lab25.check_interleaved, interleaved_one_more_warmup, match="one warm-up forward too")
    rejects(lab25.check_interleaved, interleaved_chunk_major, match="Megatron's order")
    rejects(
        lab25.check_interleaved,
        interleaved_from_helpers,
        match="warmup_count|_micro_chunk",
        error=ReferenceCalledError,
    )
    rejects(
        lab25.check_interleaved, pipeline.interleaved, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 25.5 training
def pipeline_train_step(comm, stage, ops, inputs, targets):
    s, p, m = comm.rank, comm.world_size, len(inputs)
    stash, total = {}, 0.0
    for kind, j, _ in ops:
        if kind == "F":
            x = inputs[j] if s == 0 else Tensor(comm.recv(s - 1, 2 * j), requires_grad=True)
            out = stage(x)
            if s == p - 1:
                out = stage.loss(out, targets[j]) * (1.0 / m)
                total += float(out.data)
            else:
                comm.send(out.data, s + 1, 2 * j)
            stash[j] = (x, out)
        else:
            x, out = stash.pop(j)
            out.backward(None if s == p - 1 else comm.recv(s + 1, 2 * j + 1))
            if s > 0:
                comm.send(x.grad, s - 1, 2 * j + 1)
    return total


def train_step_no_mean(comm, stage, ops, inputs, targets):
    s, p = comm.rank, comm.world_size
    stash, total = {}, 0.0
    for kind, j, _ in ops:
        if kind == "F":
            x = inputs[j] if s == 0 else Tensor(comm.recv(s - 1, 2 * j), requires_grad=True)
            out = stage(x)
            if s == p - 1:
                out = stage.loss(out, targets[j])
                total += float(out.data)
            else:
                comm.send(out.data, s + 1, 2 * j)
            stash[j] = (x, out)
        else:
            x, out = stash.pop(j)
            out.backward(None if s == p - 1 else comm.recv(s + 1, 2 * j + 1))
            if s > 0:
                comm.send(x.grad, s - 1, 2 * j + 1)
    return total


def train_step_extra_messages(comm, stage, ops, inputs, targets):
    total = pipeline_train_step(comm, stage, ops, inputs, targets)
    if comm.rank == 0:
        comm.send(np.zeros(1), comm.world_size - 1, 999)  # a stray "done" message
    else:
        if comm.rank == comm.world_size - 1:
            comm.recv(0, 999)
    return total


def train_step_mismatched_tags(comm, stage, ops, inputs, targets):
    class Retag:  # the receiver asks for tag j where the sender used 2j
        rank, world_size = comm.rank, comm.world_size

        def send(self, x, dst, tag=0):
            comm.send(x, dst, tag)

        def recv(self, src, tag=0):
            return comm.recv(src, tag // 2 if tag % 2 == 0 else tag)

    return pipeline_train_step(Retag(), stage, ops, inputs, targets)


def train_step_uncounted(comm, stage, ops, inputs, targets):  # a message the check can't count
    total = pipeline_train_step(comm, stage, ops, inputs, targets)
    if comm.rank == 0:
        comm.inner.send(np.zeros(4096), 1, 999)
    elif comm.rank == 1:
        comm.inner.recv(0, 999)
    return total


def train_step_no_leaf(comm, stage, ops, inputs, targets):  # received activation: no grad
    s, p, m = comm.rank, comm.world_size, len(inputs)
    stash, total = {}, 0.0
    for kind, j, _ in ops:
        if kind == "F":
            x = inputs[j] if s == 0 else Tensor(comm.recv(s - 1, 2 * j))
            out = stage(x)
            if s == p - 1:
                out = stage.loss(out, targets[j]) * (1.0 / m)
                total += float(out.data)
            else:
                comm.send(out.data, s + 1, 2 * j)
            stash[j] = (x, out)
        else:
            x, out = stash.pop(j)
            out.backward(None if s == p - 1 else comm.recv(s + 1, 2 * j + 1))
            if s > 0:
                comm.send(x.grad, s - 1, 2 * j + 1)
    return total


def train_step_ignores_ops(comm, stage, ops, inputs, targets):  # GPipe whatever the schedule
    m = len(inputs)
    order = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    return pipeline_train_step(comm, stage, order, inputs, targets)


def train_step_float32(comm, stage, ops, inputs, targets):
    class Narrow:  # sends every array as float32: half the bytes, 1e-8 off
        rank, world_size = comm.rank, comm.world_size

        def send(self, x, dst, tag=0):
            comm.send(np.asarray(x, np.float32), dst, tag)

        def recv(self, src, tag=0):
            return comm.recv(src, tag).astype(np.float64)

    return pipeline_train_step(Narrow(), stage, ops, inputs, targets)


def train_step_gloo_all_reduce(comm, stage, ops, inputs, targets):
    # honest on the simulated world; on gloo ranks it also calls torch.distributed's own
    # collective (the function travels as source: self-contained). On the simulated world
    # any torch call fails the check (the forbidden-call watch), so it must tell them apart.
    import multiprocessing

    s, p, m = comm.rank, comm.world_size, len(inputs)
    stash, total = {}, 0.0
    for kind, j, _ in ops:
        if kind == "F":
            x = inputs[j] if s == 0 else Tensor(comm.recv(s - 1, 2 * j), requires_grad=True)
            out = stage(x)
            if s == p - 1:
                out = stage.loss(out, targets[j]) * (1.0 / m)
                total += float(out.data)
            else:
                comm.send(out.data, s + 1, 2 * j)
            stash[j] = (x, out)
        else:
            x, out = stash.pop(j)
            out.backward(None if s == p - 1 else comm.recv(s + 1, 2 * j + 1))
            if s > 0:
                comm.send(x.grad, s - 1, 2 * j + 1)
    if multiprocessing.current_process().name != "MainProcess":  # a spawned gloo rank
        import torch
        import torch.distributed

        torch.distributed.all_reduce(torch.zeros(1))
    return total


def test_pipeline_train_on_two_gloo_processes():
    lab25.check_pipeline_train(pipeline_train_step)  # one spawn of 2 gloo ranks


def test_pipeline_train_on_gloo_refuses_torch_collectives():
    # one spawn: passes the simulated world, then torch.distributed.all_reduce raises on gloo
    from a2s.checks.errors import ForbiddenCallError

    rejects(
        lab25.check_pipeline_train,
        train_step_gloo_all_reduce,
        match="torch",
        error=ForbiddenCallError,
    )


def test_pipeline_train_simulated():
    simulated = partial(lab25.check_pipeline_train, real=False)
    simulated(unblocked(pipeline_exec.pipeline_train_step))
    # wrong answers fail on the simulated world, before any process is spawned
    rejects(lab25.check_pipeline_train, train_step_no_mean, match="divide each by m")
    rejects(lab25.check_pipeline_train, train_step_extra_messages, match="one message per")
    rejects(lab25.check_pipeline_train, train_step_mismatched_tags, match="deadlock")
    rejects(lab25.check_pipeline_train, train_step_float32, match="sent float32 arrays")
    rejects(
        lab25.check_pipeline_train, train_step_ignores_ops, match="did not run its ops in order"
    )
    rejects(
        lab25.check_pipeline_train,
        train_step_no_leaf,
        match="requires_grad=True",
        error=StudentError,
    )
    rejects(  # the communicator handed over is the protocol only: no private handle
        lab25.check_pipeline_train,
        train_step_uncounted,
        match="no attribute 'inner'",
        error=StudentError,
    )
    rejects(
        lab25.check_pipeline_train,
        pipeline_exec.pipeline_train_step,
        match="reference",
        error=ReferenceCalledError,
    )


# Every "must", "only", budget and invariant of the lab's prose, and the test that fails when
# it is broken (test_attempt: the adversarial battery, tests/checks/test_lab25_attacks.py).
MUSTS = [
    ("25.1", r"Every stage runs $F_0, \dots, F_{m-1}$, then the $m$ backwards", "test_attempt"),
    (
        "25.1",
        "each stage runs one F and one B of every microbatch, each F before its B",
        "test_attempt",
    ),
    (
        "25.1",
        "Alternating F and B per microbatch (plain model parallelism) is valid but not GPipe, "
        "and fails",
        "test_gpipe",
    ),
    ("25.2", r"Stage $s$ runs $w = \min(p-s-1, m)$ warm-up forwards", "test_attempt"),
    (
        "25.2",
        r"stage $s$ never holds more than $\min(p-s, m)$ forwards whose backward has not run",
        "test_one_f_one_b",
    ),
    ("25.2", "a schedule that breaks a dependency **deadlocks** and fails", "test_one_f_one_b"),
    (
        "25.2",
        "GPipe's order (peak $m$) fails; so does one warm-up forward too many",
        "test_attempt",
    ),
    (
        "25.3",
        "matches the grader's timing to 1e-9 on GPipe, 1F1B, interleaved and random valid "
        "schedules",
        "test_simulate",
    ),
    (
        "25.3",
        r"Summing each stage's durations (no waiting) fails; forgetting $t_{\text{comm}}$ "
        "fails",
        "test_attempt",
    ),
    ("25.4", "at most $w + 1$ chunk-activations stashed on stage $s$", "test_interleaved"),
    ("25.4", "Backwards that visit the chunks in forward order deadlock", "test_attempt"),
    (
        "25.4",
        "with a communication time of 0.25 per message between stages: it must be as fast as "
        "Megatron's order there too",
        "test_attempt",
    ),
    ("25.5", "running `ops` **in the order given** (that order is the schedule)", "test_attempt"),
    (
        "25.5",
        "one message per microbatch per neighbour and direction, carrying only the "
        "activation or its gradient (bytes counted)",
        "test_attempt",
    ),
    ("25.5", "Forgetting the $1/m$ moves the weights $m$ times too far", "test_attempt"),
    (
        "25.5",
        "every message goes through `comm`",
        "test_pipeline_train_on_gloo_refuses_torch_collectives",
    ),
]
