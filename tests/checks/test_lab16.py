"""Graders of lab 16: right schedules pass; wrong ones, over-budget ones, reference calls fail."""

from __future__ import annotations

import numpy as np

from a2s.checks import lab16
from a2s.checks.core import ReferenceCalledError
from minitorch.runtime import overlap as O
from minitorch.runtime import streams as S
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.runtime")


MUSTS = [
    ("16.1", "an op never starts before the previous op of its stream ends", "test_attempt"),
    (
        "16.1",
        "Ignoring the waits, letting a wait block the host, running every op in one "
        "queue, or ignoring the host syncs each fail with its own hint",
        "test_simulate",
    ),
    ("16.2", "closes once it holds **at least** `bucket_bytes`", "test_bucket_schedule"),
    ("16.2", "with one bucket, its all-reduce starts when backward ends", "test_attempt"),
    (
        "16.2",
        "letting two all-reduces run at once (the comm stream is FIFO)",
        "test_bucket_schedule",
    ),
    (
        "16.3",
        r"with one bucket ($k = L$) the answer is $\alpha + \beta L g$",
        "test_predict_exposed",
    ),
    ("16.3", "4 teaching and 8 fresh cases (both regimes)", "test_attempt"),
    ("16.4", "rejects a choice whose step is longer", "test_choose_bucket"),
    ("16.4", "the best step is never longer than with one bucket", "test_attempt"),
    ("16.5", "never more than 2 layers held", "test_prefetch"),
    (
        "16.5",
        "the forward must end no later than the best schedule under that limit",
        "test_prefetch",
    ),
    ("16.5", "a layer computes after its gather", "test_attempt"),
]


# --------------------------------------------------------------------------- 16.1 streams
def simulate(
    program, *, waits=True, serial=False, syncs=True, host_waits=False, back=False, at_host=False
):
    tail, events, host, out = {}, {}, 0.0, []
    for ins in program:
        kind = ins[0]
        lane = ("one" if serial else ins[1]) if len(ins) > 1 else None
        if kind == "op":
            start = max(tail.get(lane, 0.0), host)
            tail[lane] = start + ins[3]
            out.append((start, tail[lane]))
        elif kind == "record":
            events[ins[2]] = host if at_host else max(tail.get(lane, 0.0), host)
        elif kind == "wait" and waits:
            tail[lane] = max(tail.get(lane, 0.0), events[ins[2]])
            host = max(host, events[ins[2]]) if host_waits else host
        elif kind == "sync" and syncs:
            ends = list(tail.values()) if lane is None else [tail.get(lane, 0.0)]
            host = max(ends, default=0.0) if back else max([host, *ends])
    return out


def reference_spans(program):
    return [(s.start, s.end) for s in S.simulate(program)]


def test_simulate():
    lab16.check_simulate(simulate)
    rejects(lab16.check_simulate, lambda p: simulate(p, waits=False), match="ignored the wait")
    rejects(lab16.check_simulate, lambda p: simulate(p, serial=True), match="concurrently")
    rejects(lab16.check_simulate, lambda p: simulate(p, syncs=False), match="host")
    rejects(lab16.check_simulate, lambda p: simulate(p)[:-1], match="expected 2 numbers|tuples")
    # cudaEventSynchronize instead of cudaStreamWaitEvent: the wait blocks the host
    rejects(lab16.check_simulate, lambda p: simulate(p, host_waits=True), match="not the host")
    # the host's clock set to the synced stream's end, even when that is earlier
    rejects(lab16.check_simulate, lambda p: simulate(p, back=True), match="never goes back")
    rejects(lab16.check_simulate, lambda p: simulate(p, at_host=True), match="enqueued")
    rejects(lab16.check_simulate, reference_spans, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 16.2 schedule
def bucket_schedule(
    bwd_times, grad_bytes, bucket_bytes, alpha, beta, *, after=False, fifo=True, strict=False
):
    out, clock, comm, size = [], 0.0, 0.0, 0
    for i, (t, g) in enumerate(zip(bwd_times, grad_bytes, strict=True)):
        clock += t
        size += g
        if (size > bucket_bytes if strict else size >= bucket_bytes) or i == len(bwd_times) - 1:
            ready = sum(bwd_times) if after else clock
            start = max(ready, comm) if fifo else ready
            comm = start + alpha + beta * size
            out.append((start, comm))
            size = 0
    return out


def test_bucket_schedule():
    lab16.check_bucket_schedule(bucket_schedule)
    rejects(
        lab16.check_bucket_schedule, lambda *a: bucket_schedule(*a, after=True), match="no overlap"
    )
    rejects(lab16.check_bucket_schedule, lambda *a: bucket_schedule(*a, fifo=False), match="FIFO")
    rejects(lab16.check_bucket_schedule, lambda *a: bucket_schedule(*a, strict=True), match=">=")
    rejects(
        lab16.check_bucket_schedule,
        O.allreduce_intervals,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 16.3 predict
def predict_exposed(n_layers, t_layer, g_layer, per_bucket, alpha, beta):
    c = alpha + beta * per_bucket * g_layer
    return max(c, per_bucket * t_layer + n_layers // per_bucket * c - n_layers * t_layer)


def test_predict_exposed():
    lab16.check_predict_exposed(predict_exposed)
    lab16.check_predict_exposed(unblocked(O.exposed_uniform))
    # a float32 answer is right to 7 digits
    lab16.check_predict_exposed(lambda *a: np.float32(predict_exposed(*a)))
    rejects(lab16.check_predict_exposed, lambda n, t, g, k, a, b: a + b * k * g, match="keeps up")
    rejects(
        lab16.check_predict_exposed,
        lambda n, t, g, k, a, b: n // k * (a + b * k * g),
        match="no-overlap",
    )
    rejects(
        lab16.check_predict_exposed,
        lambda n, t, g, k, a, b: k * t + n // k * (a + b * k * g) - n * t,
        match="max",
    )
    rejects(
        lab16.check_predict_exposed,
        O.exposed_uniform,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 16.4 choose
def choose_bucket_bytes(bwd_times, grad_bytes, alpha, beta):
    n, best = len(grad_bytes), None
    for i in range(n):
        for j in range(i + 1, n + 1):
            cap = sum(grad_bytes[i:j])
            ends = bucket_schedule(bwd_times, grad_bytes, cap, alpha, beta)
            step = max(sum(bwd_times), ends[-1][1])
            if best is None or step < best[0]:
                best = (step, cap)
    return best[1]


def prefix_caps_only(bwd_times, grad_bytes, alpha, beta):
    caps = [sum(grad_bytes[:j]) for j in range(1, len(grad_bytes) + 1)]
    return min(caps, key=lambda c: bucket_schedule(bwd_times, grad_bytes, c, alpha, beta)[-1][1])


def test_choose_bucket():
    lab16.check_choose_bucket(choose_bucket_bytes)
    # the DDP default, 25 MB: right kind of number, but one bucket on these small models
    rejects(lab16.check_choose_bucket, lambda t, g, a, b: 25 * 2**20, match="one bucket")
    rejects(lab16.check_choose_bucket, lambda t, g, a, b: 1, match="alpha on every layer")
    rejects(lab16.check_choose_bucket, lambda t, g, a, b: 2 * max(g), match="budget")
    rejects(lab16.check_choose_bucket, prefix_caps_only, match="not only from the first layer")
    rejects(
        lab16.check_choose_bucket,
        O.best_bucket_bytes,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 16.5 prefetch
def prefetch_schedule(fwd_times, param_bytes, alpha, beta, depth=1):
    rows = []
    for i, (t, b) in enumerate(zip(fwd_times, param_bytes, strict=True)):
        gs = max(rows[-1][1] if rows else 0.0, rows[i - depth - 1][3] if i > depth else 0.0)
        ge = gs + alpha + beta * b
        cs = max(rows[-1][3] if rows else 0.0, ge)
        rows.append((gs, ge, cs, cs + t))
    return rows


def early_compute(f, p, a, b):
    return [
        (gs, ge, gs, gs + t)
        for (gs, ge, _, _), t in zip(prefetch_schedule(f, p, a, b), f, strict=True)
    ]


def test_prefetch():
    lab16.check_prefetch(prefetch_schedule)
    # on demand: right values for "no prefetch", within memory, over the time budget
    rejects(lab16.check_prefetch, lambda *a: prefetch_schedule(*a, depth=0), match="no prefetch")
    # prefetch everything: a valid, faster schedule that breaks the memory budget
    rejects(lab16.check_prefetch, lambda *a: prefetch_schedule(*a, depth=99), match="memory budget")
    rejects(lab16.check_prefetch, early_compute, match="after its gather")
    rejects(
        lab16.check_prefetch, O.prefetch_intervals, match="reference", error=ReferenceCalledError
    )


def schedule_on_device(bwd_times, grad_bytes, bucket_bytes, alpha, beta):
    dev, out, size = S.Device(), [], 0
    for i, (t, g) in enumerate(zip(bwd_times, grad_bytes, strict=True)):
        dev.launch("compute", f"bwd {i}", t)
        size += g
        if size >= bucket_bytes or i == len(bwd_times) - 1:
            dev.record("compute", f"e{i}")
            dev.wait("comm", f"e{i}")
            span = dev.launch("comm", "all-reduce", alpha + beta * size)
            out.append((span.start, span.end))
            size = 0
    return out


def test_bucket_schedule_may_not_use_the_reference_simulator():
    rejects(
        lab16.check_bucket_schedule,
        schedule_on_device,
        match="Device",
        error=ReferenceCalledError,
    )


def test_the_graders_own_ground_truth_is_blocked():
    """The grader's truth functions are importable; calling them is calling the reference."""
    from a2s.checks.lab16 import _truth
    from a2s.checks.lab16.buckets import _exposed

    def cap_from_truth(t, g, a, b):
        return min(range(1, sum(g) + 1), key=lambda c: _truth.step_time(t, g, c, a, b))

    for check, fn in [
        (lab16.check_simulate, _truth.program_times),
        (lab16.check_bucket_schedule, _truth.schedule),
        (lab16.check_predict_exposed, _exposed),
        (lab16.check_choose_bucket, cap_from_truth),
        (lab16.check_prefetch, _truth.prefetch_rows),
    ]:
        rejects(check, fn, match="reference", error=ReferenceCalledError)
