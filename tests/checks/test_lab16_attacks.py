"""Lab 16 tried as a class would: answers written differently, usual mistakes, cheats.

Every case has nonzero communication time (alpha and beta > 0), so an overlap rule that is
wrong only when communication costs something is caught. Wrong answers are the timings
students get on the way (a wait ignored or blocking the host, a wait that moves a busy stream
back, no overlap, two all-reduces at once, the last bucket forgotten, no prefetch, prefetch of
everything); cheats are the reference's simulator and schedules, the grader's own loops, a
memorised answer and values that decide their own equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from a2s.checks import lab16
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab16 import _truth
from minitorch.runtime import overlap as O
from minitorch.runtime import streams as S
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab16


# ------------------------------------------------------------------------------------ 16.1
@dataclass
class Machine:
    """A simulator as a class: one method per instruction."""

    free: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)
    host: float = 0.0
    spans: list = field(default_factory=list)

    def op(self, s, _name, d):
        start = max(self.free.get(s, 0.0), self.host)
        self.free[s] = start + d
        self.spans.append((start, start + d))

    def record(self, s, e):
        self.events[e] = max(self.free.get(s, 0.0), self.host)

    def wait(self, s, e):
        self.free[s] = max(self.free.get(s, 0.0), self.events[e])

    def sync(self, *s):
        ends = [self.free.get(x, 0.0) for x in s] if s else list(self.free.values())
        self.host = max([self.host, *ends])


def sim_class(program):
    m = Machine()
    for ins in program:
        getattr(m, ins[0])(*ins[1:])
    return m.spans


def sim_match(program):
    import collections  # inside the function

    free = collections.defaultdict(float)
    events, host, out = {}, 0.0, []
    for ins in program:
        match ins:
            case ("op", s, _, d):
                start = max(free[s], host)
                free[s] = start + d
                out.append([start, start + d])  # lists, not tuples
            case ("record", s, e):
                events[e] = max(free[s], host)
            case ("wait", s, e):
                free[s] = max(free[s], events[e])
            case ("sync", s):
                host = max(host, free[s])
            case ("sync",):
                host = max([host, *free.values()])
    return out


def sim_variant(**kw):
    return lambda program: _plain_times(program, **kw)


def _plain_times(program, waits=True, serial=False, host_waits=False, wait_sets=False, syncs=True):
    free, events, host, out = {}, {}, 0.0, []
    for ins in program:
        lane = ("one" if serial else ins[1]) if len(ins) > 1 else None
        if ins[0] == "op":
            start = max(free.get(lane, 0.0), host)
            free[lane] = start + ins[3]
            out.append((start, start + ins[3]))
        elif ins[0] == "record":
            events[ins[2]] = max(free.get(lane, 0.0), host)
        elif ins[0] == "wait" and waits:
            t = events[ins[2]]
            free[lane] = t if wait_sets else max(free.get(lane, 0.0), t)
            if host_waits:
                host = max(host, t)
        elif ins[0] == "sync" and syncs:
            ends = list(free.values()) if lane is None else [free.get(lane, 0.0)]
            host = max([host, *ends])
    return out


def sim_device(program):
    """The reference's Device driven instruction by instruction."""
    dev = S.Device()
    out = []
    for ins in program:
        if ins[0] == "op":
            span = dev.launch(ins[1], ins[2], ins[3])
            out.append((span.start, span.end))
        elif ins[0] == "record":
            dev.record(ins[1], ins[2])
        elif ins[0] == "wait":
            dev.wait(ins[1], ins[2])
        else:
            dev.sync(*ins[1:])
    return out


def sim_memorised(program):
    """The teaching programs' answers, and zeros for anything else."""
    ops = [i for i in program if i[0] == "op"]
    return [(0.0, float(i[3])) for i in ops]


def sim_torch(program):
    import torch

    torch.zeros(1)
    return sim_class(program)


ATTEMPTS = [
    honest("16.1", "a class per instruction", lambda: lab16.check_simulate(sim_class)),
    honest("16.1", "match statement, lists", lambda: lab16.check_simulate(sim_match)),
    wrong(
        "16.1",
        "waits ignored",
        lambda: lab16.check_simulate(sim_variant(waits=False)),
        match="ignored the wait",
    ),
    wrong(
        "16.1",
        "one queue for all",
        lambda: lab16.check_simulate(sim_variant(serial=True)),
        match="Streams run concurrently",
    ),
    wrong(
        "16.1",
        "a wait blocks the host",
        lambda: lab16.check_simulate(sim_variant(host_waits=True)),
        match="not the host",
    ),
    wrong(
        "16.1",
        "a wait moves a busy stream back",
        lambda: lab16.check_simulate(sim_variant(wait_sets=True)),
        match="never moves a stream back",
    ),
    wrong(
        "16.1",
        "syncs ignored",
        lambda: lab16.check_simulate(sim_variant(syncs=False)),
        match="After `sync`",
    ),
    cheat(
        "16.1",
        "streams.simulate",
        lambda: lab16.check_simulate(lambda p: [(s.start, s.end) for s in S.simulate(p)]),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.1",
        "streams.Device",
        lambda: lab16.check_simulate(sim_device),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.1",
        "the grader's loop",
        lambda: lab16.check_simulate(_truth.program_times),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.1", "memorised durations", lambda: lab16.check_simulate(sim_memorised), match="expected"
    ),
    cheat(
        "16.1",
        "floats that equal anything",
        lambda: lab16.check_simulate(
            lambda p: [(always_equal(0.0), always_equal(0.0)) for i in p if i[0] == "op"]
        ),
    ),
    cheat("16.1", "torch", lambda: lab16.check_simulate(sim_torch), error=ForbiddenCallError),
]


# ------------------------------------------------------------------------------------ 16.2
def buckets_two_pass(bwd_times, grad_bytes, bucket_bytes, alpha, beta):
    """First the buckets (ready time, bytes), then the comm stream."""
    ready, buckets, clock, size = [], [], 0.0, 0
    for i, (t, g) in enumerate(zip(bwd_times, grad_bytes, strict=True)):
        clock, size = clock + t, size + g
        if size >= bucket_bytes or i == len(bwd_times) - 1:
            ready.append(clock)
            buckets.append(size)
            size = 0
    out, end = [], 0.0
    for r, b in zip(ready, buckets, strict=True):
        start = max(r, end)
        end = start + alpha + beta * b
        out.append((start, end))
    return out


def buckets_numpy(bwd_times, grad_bytes, bucket_bytes, alpha, beta):
    done = np.cumsum(bwd_times)
    out, end, first = [], 0.0, 0
    for i in range(len(grad_bytes)):
        nbytes = int(np.sum(grad_bytes[first : i + 1]))
        if nbytes >= bucket_bytes or i == len(grad_bytes) - 1:
            start = max(float(done[i]), end)
            end = start + alpha + beta * nbytes
            out.append((start, end))
            first = i + 1
    return np.array(out)


def buckets_variant(overlap=True, fifo=True, strict=False, last=True, cap_cost=False):
    def f(t, g, cap, alpha, beta):
        out, clock, end, size, total = [], 0.0, 0.0, 0, float(sum(t))
        for i, (ti, gi) in enumerate(zip(t, g, strict=True)):
            clock += ti
            size += gi
            full = size > cap if strict else size >= cap
            if full or (last and i == len(t) - 1):
                ready = clock if overlap else total
                start = max(ready, end) if fifo else ready
                end = start + alpha + beta * (cap if cap_cost else size)
                out.append((start, end))
                size = 0
        return out

    return f


ATTEMPTS += [
    honest(
        "16.2",
        "buckets first, then the stream",
        lambda: lab16.check_bucket_schedule(buckets_two_pass),
    ),
    honest("16.2", "numpy cumsum", lambda: lab16.check_bucket_schedule(buckets_numpy)),
    wrong(
        "16.2",
        "after the whole backward",
        lambda: lab16.check_bucket_schedule(buckets_variant(overlap=False)),
        match="no overlap",
    ),
    wrong(
        "16.2",
        "two all-reduces at once",
        lambda: lab16.check_bucket_schedule(buckets_variant(fifo=False)),
        match="FIFO",
    ),
    wrong(
        "16.2",
        "closes at > cap",
        lambda: lab16.check_bucket_schedule(buckets_variant(strict=True)),
        match="at least bucket_bytes",
    ),
    wrong(
        "16.2",
        "the last bucket forgotten",
        lambda: lab16.check_bucket_schedule(buckets_variant(last=False)),
        match="last bucket takes what is left",
    ),
    cheat(
        "16.2",
        "overlap.allreduce_intervals",
        lambda: lab16.check_bucket_schedule(O.allreduce_intervals),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.2",
        "overlap.make_buckets",
        lambda: lab16.check_bucket_schedule(
            lambda t, g, cap, a, b: (
                buckets_two_pass(t, g, cap, a, b) if O.make_buckets(g, cap) else []
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.2",
        "the grader's loop",
        lambda: lab16.check_bucket_schedule(_truth.schedule),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.2",
        "an array that equals anything",
        lambda: lab16.check_bucket_schedule(
            lambda t, g, cap, a, b: always_equal(
                np.zeros((len(buckets_two_pass(t, g, cap, a, b)), 2))
            )
        ),
    ),
]


# ------------------------------------------------------------------------------------ 16.3
def predict_closed(n_layers, t_layer, g_layer, per_bucket, alpha, beta):
    c = alpha + beta * per_bucket * g_layer
    n = n_layers // per_bucket
    return max(c, n * c - (n - 1) * per_bucket * t_layer)


def predict_by_regime(n_layers, t_layer, g_layer, per_bucket, alpha, beta):
    """The two regimes written out: keeps up (only the last bucket) or falls behind."""
    import math  # inside the function

    c = alpha + beta * per_bucket * g_layer
    n = math.floor(n_layers / per_bucket)
    if c <= per_bucket * t_layer:
        return c
    return per_bucket * t_layer + n * c - n_layers * t_layer


ATTEMPTS += [
    honest(
        "16.3", "max of the two candidates", lambda: lab16.check_predict_exposed(predict_closed)
    ),
    honest("16.3", "by regime", lambda: lab16.check_predict_exposed(predict_by_regime)),
    wrong(
        "16.3",
        "only the last bucket",
        lambda: lab16.check_predict_exposed(lambda n, t, g, k, a, b: a + b * k * g),
        match="still busy",
    ),
    wrong(
        "16.3",
        "no overlap",
        lambda: lab16.check_predict_exposed(lambda n, t, g, k, a, b: (n // k) * (a + b * k * g)),
        match="no-overlap",
    ),
    wrong(
        "16.3",
        "comm-bound formula always",
        lambda: lab16.check_predict_exposed(
            lambda n, t, g, k, a, b: k * t + (n // k) * (a + b * k * g) - n * t
        ),
        match="take the max",
    ),
    cheat(
        "16.3",
        "overlap.exposed_uniform",
        lambda: lab16.check_predict_exposed(O.exposed_uniform),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.3",
        "the reference's step",
        lambda: lab16.check_predict_exposed(
            lambda n, t, g, k, a, b: O.overlap_step([t] * n, [g] * n, k * g, a, b).exposed
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.3",
        "the grader's schedule",
        lambda: lab16.check_predict_exposed(
            lambda n, t, g, k, a, b: _truth.step_time([t] * n, [g] * n, k * g, a, b) - n * t
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.3",
        "a float that equals anything",
        lambda: lab16.check_predict_exposed(lambda *args: always_equal(0.0)),
    ),
]


# ------------------------------------------------------------------------------------ 16.4
def choose_all_caps(bwd_times, grad_bytes, alpha, beta):
    caps = {
        sum(grad_bytes[i:j])
        for i in range(len(grad_bytes))
        for j in range(i + 1, len(grad_bytes) + 1)
    }
    total = sum(bwd_times)

    def step(cap):
        return max(total, buckets_two_pass(bwd_times, grad_bytes, cap, alpha, beta)[-1][1])

    return min(sorted(caps), key=step)


def choose_every_integer(bwd_times, grad_bytes, alpha, beta):
    """Brute force over every byte count up to the total (slow but exhaustive, small models)."""
    total = sum(bwd_times)
    best = None
    for cap in range(1, sum(grad_bytes) + 1):
        step = max(total, buckets_two_pass(bwd_times, grad_bytes, cap, alpha, beta)[-1][1])
        if best is None or step < best[0] - 1e-12:
            best = (step, cap)
    return best[1]


def choose_prefixes(bwd_times, grad_bytes, alpha, beta):
    caps = [sum(grad_bytes[:j]) for j in range(1, len(grad_bytes) + 1)]
    total = sum(bwd_times)
    return min(
        caps,
        key=lambda c: max(total, buckets_two_pass(bwd_times, grad_bytes, c, alpha, beta)[-1][1]),
    )


ATTEMPTS += [
    honest("16.4", "every run of layers", lambda: lab16.check_choose_bucket(choose_all_caps)),
    honest("16.4", "every integer cap", lambda: lab16.check_choose_bucket(choose_every_integer)),
    wrong(
        "16.4",
        "DDP's 25 MB",
        lambda: lab16.check_choose_bucket(lambda t, g, a, b: 25 * 2**20),
        match="one bucket",
    ),
    wrong(
        "16.4",
        "one bucket per layer",
        lambda: lab16.check_choose_bucket(lambda t, g, a, b: 1),
        match="Per-layer buckets",
    ),
    wrong(
        "16.4",
        "prefix sums only",
        lambda: lab16.check_choose_bucket(choose_prefixes),
        match="not only from the first layer",
    ),
    cheat(
        "16.4",
        "overlap.best_bucket_bytes",
        lambda: lab16.check_choose_bucket(O.best_bucket_bytes),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.4",
        "the grader's step time",
        lambda: lab16.check_choose_bucket(
            lambda t, g, a, b: min(
                range(1, sum(g) + 1), key=lambda c: _truth.step_time(t, g, c, a, b)
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.4",
        "memorised caps",
        lambda: lab16.check_choose_bucket(
            lambda t, g, a, b: {16: 400, 8: 570, 7: 160}.get(len(t), sum(g))
        ),
        match="budget",
    ),
    cheat(
        "16.4",
        "a cap that equals anything",
        lambda: lab16.check_choose_bucket(lambda t, g, a, b: always_equal(100)),
        match="number|subclass",
    ),
]


# ------------------------------------------------------------------------------------ 16.5
def prefetch_rows(f, p, alpha, beta):
    rows = []
    for i, (t, nbytes) in enumerate(zip(f, p, strict=True)):
        gs = max(rows[i - 1][1] if i else 0.0, rows[i - 2][3] if i >= 2 else 0.0)
        ge = gs + alpha + beta * nbytes
        cs = max(rows[i - 1][3] if i else 0.0, ge)
        rows.append((gs, ge, cs, cs + t))
    return rows


def prefetch_streams(f, p, alpha, beta):
    """Two stream clocks and a queue of the layers held."""
    from collections import deque

    comm = comp = 0.0
    held, out = deque(), []
    for t, nbytes in zip(f, p, strict=True):
        start = comm
        if len(held) == 2:
            start = max(start, held.popleft())
        comm = start + alpha + beta * nbytes
        comp = max(comp, comm) + t
        held.append(comp)
        out.append([start, comm, comp - t, comp])
    return np.array(out)


def prefetch_on_demand(f, p, alpha, beta):
    rows, clock = [], 0.0
    for t, nbytes in zip(f, p, strict=True):
        ge = clock + alpha + beta * nbytes
        rows.append((clock, ge, ge, ge + t))
        clock = ge + t
    return rows


def prefetch_everything(f, p, alpha, beta):
    rows, comm, comp = [], 0.0, 0.0
    for t, nbytes in zip(f, p, strict=True):
        gs, comm = comm, comm + alpha + beta * nbytes
        comp = max(comp, comm) + t
        rows.append((gs, comm, comp - t, comp))
    return rows


def prefetch_compute_early(f, p, alpha, beta):
    """Compute starts when the previous layer ends, whether its gather is done or not."""
    return [
        (gs, ge, cs0, cs0 + t)
        for (gs, ge, _, _), cs0, t in zip(
            prefetch_rows(f, p, alpha, beta),
            np.concatenate([[0.0], np.cumsum(f)[:-1]]),
            f,
            strict=True,
        )
    ]


ATTEMPTS += [
    honest("16.5", "rows of the last two layers", lambda: lab16.check_prefetch(prefetch_rows)),
    honest("16.5", "a deque of layers held", lambda: lab16.check_prefetch(prefetch_streams)),
    wrong(
        "16.5",
        "gather on demand",
        lambda: lab16.check_prefetch(prefetch_on_demand),
        match="on demand",
    ),
    wrong(
        "16.5",
        "prefetch everything",
        lambda: lab16.check_prefetch(prefetch_everything),
        match="memory budget",
    ),
    wrong(
        "16.5",
        "compute before its gather",
        lambda: lab16.check_prefetch(prefetch_compute_early),
        match="after its gather",
    ),
    cheat(
        "16.5",
        "overlap.prefetch_intervals",
        lambda: lab16.check_prefetch(O.prefetch_intervals),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.5",
        "the reference's Device",
        lambda: lab16.check_prefetch(
            lambda f, p, a, b: [(0.0,) * 4 for _ in f] if S.Device().launch("x", "y", 1.0) else []
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.5",
        "the grader's rows",
        lambda: lab16.check_prefetch(_truth.prefetch_rows),
        error=ReferenceCalledError,
    ),
    cheat(
        "16.5",
        "an array that equals anything",
        lambda: lab16.check_prefetch(lambda f, p, a, b: always_equal(np.zeros((len(f), 4)))),
    ),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
