"""Lab 30 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`); 30.4 runs the
learner's ``run_commands`` in a forked child whose ``gpus[d]`` are requests to the grader's
``Fleet``. What was tried:

* 30.1: a zip loop, numpy with ``np.mod``, a class over the intervals, a decorated answer;
  wrap-around forgotten, percent, GB/s divided by 1e9, the clock left out, ``mod 2**w - 1``,
  the increment's sign flipped, one row per interval; the reference decoder, the grader's
  truth, torch, a lookup of the public cases (fallback: no wrap), an array whose ``==`` says
  yes, rebinding the grader's comparison.
* 30.2: a scan, numpy's mask, a bisection, a dataclass; leakage left out, leakage at T_0,
  the lowest clock that fits, the top clock when none does, f in MHz, V from the lab's
  formula, the lab's printed constants; the reference ``SimulatedGpu``, the grader's truth,
  torch, a lookup of the public cases (fallback: the top clock), a governor keyed on its call
  count, a float whose ``==`` says yes, rebinding ``CAP`` and zeroing ``CHIP`` mid-check,
  the expected value read from the caller's frame (it has none in the replay).
* 30.5: a scan, numpy's argmin with imports inside, a dataclass and ``min(key=)`` behind a
  decorator; the top clock, the least power, the memory time left out, ``mem_ns`` taken as
  seconds, leakage at T_0, V from the lab's formula; the reference ``optimal_point``, the
  reference's closed forms, the grader's truth, torch, a lookup of the public cases (fallback:
  the knee), a float whose ``==`` says yes, rebinding the grader's ``TABLE`` and ``CHIP``
  mid-check. Then (the lab 33 reviewer): a recursion with E expanded term by term, a sorted
  list of (E, f); the activity factor left out, the leakage left out, f in MHz in power and
  time, the voltage returned; the grader's ``CHIP`` imported, the handed table cut in place,
  the table's truth rebound mid-check.
* 30.3: a pointer over sorted beats, ``bisect``, an event walk over the gaps, a class;
  a deadline on completion, ``>=``, the last beat of the whole trace, the hang tested before
  the completion, the horizon's poll left out; the reference ``Watchdog``, the grader's
  truth, torch, lookups of the public cases (fallbacks: peeking ahead, hang first), a float
  whose ``==`` says yes.
* 30.4: the notebook's runtime, a round-robin class with deques, numpy queues with a report
  of sets, every orphan to one GPU; an ECC error as a retry, retrying forever, retrying on
  another GPU, no isolation, a second submit, a report that lies, re-mapped commands that
  wander between healthy GPUs, the ECC command dropped; the reference ``Runtime``, the
  child's copy of the ``Fleet`` rewritten through ``gc`` or its methods called, the proxies'
  ``__self__``/``__dict__``/closure cells rewritten, ``request`` sent straight to another
  GPU or to a name the grader does not serve, the fault plan read through ``gc`` to skip
  the doomed commands, a report whose ``==`` says yes, torch.

Reading the grader's frame (``sys._getframe``) finds the expected value of a table case in a
plain kernel: the sealed kernel (``a2s grade``) vetoes it (docs/trust.md), kept as ``PENDING``.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import sys
from collections import deque
from dataclasses import dataclass

import numpy as np
import pytest

from a2s.checks import lab30
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from a2s.checks.lab30 import counters, energy, governor, watchdog
from tests.checks.test_lab30 import counter_rates as cr_ref
from tests.checks.test_lab30 import energy_clock as ec_ref
from tests.checks.test_lab30 import governor as gov_ref
from tests.checks.test_lab30 import hang_first as wd_hang_first
from tests.checks.test_lab30 import run_commands as rc_ref
from tests.checks.test_lab30 import watchdog as wd_ref
from tests.helpers.attacks import (
    attempt_id,
    cheat,
    honest,
    judge,
    replay_public,
    wrong,
)
from tests.helpers.graders import always_equal

REF = "reference|minitorch.driver"
TRUTH = "a2s.checks.lab30"


def _restoring(run, *where):
    """Run ``run``, then put back the attributes ``(obj, name)`` an attempt rebinds."""
    saved = [(obj, name, getattr(obj, name)) for obj, name in where]

    def attempt():
        try:
            return run()
        finally:
            for obj, name, value in saved:
                setattr(obj, name, value)

    return attempt


def _from_frame(*args):
    """The expected value, read from the runner's frame (a plain kernel lets it)."""
    f = sys._getframe(1)
    while f is not None:
        if "want" in f.f_locals and "case" in f.f_locals:
            return f.f_locals["want"]
        f = f.f_back
    return None


# --------------------------------------------------------------------------- 30.1
def rates_numpy(raw, interval_ns, width_bits, n_sm, clock_ghz):
    import numpy

    d = numpy.mod(numpy.diff(numpy.asarray(raw, dtype=numpy.int64), axis=0), 2**width_bits)
    return d[:, 0] / interval_ns, d[:, 1] / interval_ns, d[:, 2] / (n_sm * clock_ghz * interval_ns)


class Rates:
    """A decoder object, one interval at a time by recursion over the readings."""

    def __call__(self, raw, interval_ns, width_bits, n_sm, clock_ghz):
        self.dt, self.mod, self.cycles = interval_ns, 1 << width_bits, n_sm * clock_ghz
        return tuple(map(list, zip(*self.walk(list(raw)), strict=True)))

    def walk(self, raw):
        if len(raw) < 2:
            return []
        (b0, y0, s0), (b1, y1, s1) = raw[0], raw[1]
        row = (
            ((b1 - b0) % self.mod) / self.dt,
            ((y1 - y0) % self.mod) / self.dt,
            ((s1 - s0) % self.mod) / (self.cycles * self.dt),
        )
        return [row, *self.walk(raw[1:])]


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        util, bw, sm = fn(*args)
        return np.stack([np.asarray(util), np.asarray(bw), np.asarray(sm)])

    return wrapper


def rates_mod_minus_one(raw, dt, w, n_sm, f):
    d = [
        [(int(c) - int(p)) % (2**w - 1) for p, c in zip(a, b, strict=True)]
        for a, b in itertools.pairwise(raw)
    ]
    d = np.asarray(d, dtype=np.float64)
    return d[:, 0] / dt, d[:, 1] / dt, d[:, 2] / (n_sm * f * dt)


def rates_sign_flipped(raw, dt, w, n_sm, f):
    d = np.mod(-np.diff(np.asarray(raw, dtype=np.int64), axis=0), 2**w)
    return d[:, 0] / dt, d[:, 1] / dt, d[:, 2] / (n_sm * f * dt)


def rates_reference(raw, dt, w, n_sm, f):
    from minitorch.driver import telemetry

    d = [
        [telemetry.decode_delta(p, c, w) for p, c in zip(a, b, strict=True)]
        for a, b in itertools.pairwise(raw)
    ]
    d = np.asarray(d, dtype=np.float64)
    return d[:, 0] / dt, d[:, 1] / dt, d[:, 2] / (n_sm * f * dt)


def rates_truth(*args):
    from a2s.checks.lab30._truth import decoded_rates

    return decoded_rates(*args)


def rates_torch(raw, dt, w, n_sm, f):
    import torch

    d = torch.remainder(torch.diff(torch.tensor(raw, dtype=torch.int64), dim=0), 2**w)
    return (d.double() / torch.tensor([dt, dt, n_sm * f * dt])).T.numpy()


def rates_rebinds_compare(*args):
    counters._same = lambda got, want: True  # the table holds its own: nothing changes
    return [[0.0] * (len(args[0]) - 1)] * 3


def cr(fn):
    return lambda: lab30.check_counter_rates(fn)


COUNTERS = [
    honest("30.1", "a zip loop over intervals", cr(cr_ref)),
    honest("30.1", "numpy np.mod, imports inside", cr(rates_numpy)),
    honest("30.1", "a class, recursion over readings", cr(Rates())),
    honest("30.1", "wrapped with functools.wraps, one stacked array", cr(_logged(cr_ref))),
    wrong("30.1", "wrap-around forgotten", cr(lambda *a: cr_ref(*a, bug="no wrap")), match="mod 2"),
    wrong(
        "30.1",
        "utilisation in percent",
        cr(lambda *a: cr_ref(*a, bug="percent")),
        match="not a percent",
    ),
    wrong(
        "30.1",
        "bytes/ns divided by 1e9",
        cr(lambda *a: cr_ref(*a, bug="GB")),
        match="do not divide by 1e9",
    ),
    wrong(
        "30.1",
        "SM activity without the clock",
        cr(lambda *a: cr_ref(*a, bug="no clock")),
        match="left out the clock",
    ),
    wrong("30.1", "mod 2**w - 1", cr(rates_mod_minus_one), match=r"mod 2\*\*width_bits"),
    wrong("30.1", "r0 - r1", cr(rates_sign_flipped), match=r"\(r1 - r0\) mod 2\*\*width_bits"),
    wrong(
        "30.1",
        "one row per interval",
        cr(lambda *a: np.asarray(cr_ref(*a)).T),
        match="three sequences",
    ),
    cheat(
        "30.1", "the reference decoder", cr(rates_reference), match=REF, error=ReferenceCalledError
    ),
    cheat("30.1", "the grader's truth", cr(rates_truth), match=TRUTH, error=ReferenceCalledError),
    cheat("30.1", "torch", cr(rates_torch), match="torch", error=ForbiddenCallError),
    cheat(
        "30.1",
        "the public cases looked up, no wrap otherwise",
        cr(replay_public(counters.RATES, lambda *a: cr_ref(*a, bug="no wrap"))),
        match="fresh case.*mod 2",
    ),
    cheat(
        "30.1",
        "an array whose == says yes",
        cr(lambda *a: always_equal(np.zeros((3, len(a[0]) - 1)))),
        match="subclass|plain",
    ),
    cheat(
        "30.1",
        "rebinds the grader's comparison",
        _restoring(cr(rates_rebinds_compare), (counters, "_same")),
        match="counters give",
    ),
]

PENDING = [
    cheat("30.1", "the expected value from the runner's frame", cr(_from_frame)),
]


# --------------------------------------------------------------------------- 30.2
def gov_numpy(activity, temp_c, cap_w, table, chip):
    import numpy

    f, v = numpy.asarray(table, dtype=numpy.float64).T
    leak = chip["p_leak0_w"] * numpy.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    ok = activity * chip["c_eff_f"] * v**2 * f * 1e6 + leak <= cap_w
    return float(f[ok].max()) if ok.any() else float(f.min())


def gov_bisect(activity, temp_c, cap_w, table, chip):
    """Power grows with f along the table: bisect for the last point that fits."""
    pts = sorted(table)
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))

    def power(i):
        f, v = pts[i]
        return activity * chip["c_eff_f"] * v * v * f * 1e6 + leak

    lo, hi = 0, len(pts)  # pts[:lo] fit, pts[hi:] do not
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if power(mid) <= cap_w else (lo, mid)
    return pts[lo - 1][0] if lo else pts[0][0]


@dataclass(frozen=True)
class Part:
    c_eff_f: float
    p_leak0_w: float
    t_leak0_c: float
    beta_per_k: float

    def watts(self, a, f_mhz, v, temp):
        dyn = a * self.c_eff_f * v**2 * f_mhz * 1e6
        return dyn + self.p_leak0_w * math.exp(self.beta_per_k * (temp - self.t_leak0_c))


def gov_dataclass(activity, temp_c, cap_w, table, chip):
    part = Part(**chip)
    fits = [f for f, v in table if part.watts(activity, f, v, temp_c) <= cap_w]
    return max(fits, default=min(f for f, _ in table))


def gov_mhz(activity, temp_c, cap_w, table, chip):
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    fits = [f for f, v in table if activity * chip["c_eff_f"] * v * v * f + leak <= cap_w]
    return max(fits, default=min(f for f, _ in table))


def gov_lab_volts(activity, temp_c, cap_w, table, chip):
    return gov_ref(
        activity, temp_c, cap_w, [(f, 0.70 * max(1.0, f / 1200.0)) for f, _ in table], chip
    )


def gov_lab_chip(activity, temp_c, cap_w, table, chip):
    lab_chip = {"c_eff_f": 2.8e-7, "p_leak0_w": 80.0, "t_leak0_c": 60.0, "beta_per_k": 0.02}
    return gov_ref(activity, temp_c, cap_w, table, lab_chip)


def gov_reference(activity, temp_c, cap_w, table, chip):
    from minitorch.driver import power
    from minitorch.driver.governor import SimulatedGpu

    gpu = SimulatedGpu(power.PowerModel())
    gpu.temp_c = temp_c
    gpu.set_power_limit_mw(cap_w * 1e3)
    return gpu.choose_point(activity).f_mhz


def gov_truth(activity, temp_c, cap_w, table, chip):
    from a2s.checks.lab30._truth import capped_clock

    return capped_clock(activity, temp_c, cap_w, table, chip)


def gov_torch(activity, temp_c, cap_w, table, chip):
    import torch

    t = torch.tensor(table, dtype=torch.float64)
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    ok = activity * chip["c_eff_f"] * t[:, 1] ** 2 * t[:, 0] * 1e6 + leak <= cap_w
    return float(t[ok, 0].max()) if bool(ok.any()) else float(t[:, 0].min())


def _counting(then):
    """Right on the first 12 calls (the table of decisions), ``then`` in the replay."""
    count = itertools.count()
    last = []

    def gov(*args):
        if next(count) < 12:
            last[:] = [gov_ref(*args)]
            return last[0]
        return then(*args, last)

    return gov


def gov_rebinds_cap():
    """Right on the decisions; on its first call it lifts the replay's cap and zeroes the
    chip's power, then runs at the top clock in the replay."""
    count = itertools.count()

    def gov(activity, temp_c, cap_w, table, chip):
        n = next(count)
        if n == 0:
            governor.CAP = 1e9
            lab30._truth.CHIP.update(c_eff_f=0.0, p_leak0_w=0.0)
        return gov_ref(activity, temp_c, cap_w, table, chip) if n < 12 else max(table)[0]

    return gov


def rebinds_cap_attempt():
    cap, chip = governor.CAP, dict(lab30._truth.CHIP)
    try:
        lab30.check_governor(gov_rebinds_cap())
    finally:
        governor.CAP = cap
        lab30._truth.CHIP.clear()
        lab30._truth.CHIP.update(chip)


def gv(fn):
    return lambda: lab30.check_governor(fn)


GOVERNOR = [
    honest("30.2", "a scan of the table", gv(gov_ref)),
    honest("30.2", "numpy, a mask, imports inside", gv(gov_numpy)),
    honest("30.2", "a bisection on the sorted table", gv(gov_bisect)),
    honest("30.2", "a dataclass for the chip, math.exp", gv(gov_dataclass)),
    wrong(
        "30.2",
        "leakage left out",
        gv(lambda *a: gov_ref(*a, bug="no leak")),
        match="add the leakage",
    ),
    wrong(
        "30.2",
        "leakage at T_0",
        gv(lambda *a: gov_ref(*a, bug="cold")),
        match="evaluate it at temp_c",
    ),
    wrong(
        "30.2",
        "the lowest clock that fits",
        gv(lambda *a: gov_ref(*a, bug="lowest")),
        match="highest",
    ),
    wrong(
        "30.2",
        "the top clock when none fits",
        gv(lambda *a: gov_ref(*a, bug="top")),
        match="run at the lowest clock",
    ),
    wrong("30.2", "f in MHz", gv(gov_mhz), match="needs it in Hz"),
    wrong("30.2", "V from the lab's formula", gv(gov_lab_volts), match="voltage from the table"),
    wrong("30.2", "the lab's printed constants", gv(gov_lab_chip), match="from the chip dict"),
    cheat(
        "30.2",
        "the reference SimulatedGpu",
        gv(gov_reference),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("30.2", "the grader's truth", gv(gov_truth), match=TRUTH, error=ReferenceCalledError),
    cheat("30.2", "torch", gv(gov_torch), match="torch", error=ForbiddenCallError),
    cheat(
        "30.2",
        "the public cases looked up, the top clock otherwise",
        gv(replay_public(governor.DECISIONS, lambda a, t, cap, table, chip: max(table)[0])),
        match="fresh case",
    ),
    cheat(
        "30.2",
        "keyed on its call count: the last decision replayed",
        gv(_counting(lambda *args: args[-1][0])),
        match="over the 400 W cap|least slowdown|not a clock of the table",
    ),
    cheat(
        "30.2",
        "keyed on its call count: the top clock in the replay",
        gv(_counting(lambda a, t, cap, table, chip, last: max(table)[0])),
        match="over the 400 W cap",
    ),
    cheat(
        "30.2",
        "a float whose == says yes",
        gv(lambda *a: always_equal(1980.0)),
        match="subclass|plain",
    ),
    cheat(
        "30.2",
        "rebinds CAP and zeroes CHIP mid-check",
        rebinds_cap_attempt,
        match="over the 400 W cap",
    ),
    cheat(
        "30.2",
        "the expected value from the runner's frame",
        gv(_from_frame),
        match="clock in MHz",
    ),
]


# --------------------------------------------------------------------------- 30.3
def wd_bisect(beats, done, deadline, poll, horizon):
    import bisect

    beats = sorted(beats)
    for k in itertools.count(1):
        t = k * poll
        if t > horizon:
            return None
        if done is not None and done <= t:
            return None
        i = bisect.bisect_right(beats, t)
        if t - (beats[i - 1] if i else 0.0) > deadline:
            return t
    return None


def wd_events(beats, done, deadline, poll, horizon):
    """Walk the gaps between beats: the first poll past each beat + deadline, if no beat
    or completion comes first."""
    marks = [0.0, *sorted(beats)]
    for i, last in enumerate(marks):
        fire = (math.floor((last + deadline) / poll) + 1) * poll
        fire = max(fire, poll)
        nxt = marks[i + 1] if i + 1 < len(marks) else math.inf
        if nxt <= fire:
            continue
        if fire > horizon or (done is not None and done <= fire):
            return None
        return fire
    return None


class Dog:
    """A watchdog object polled by a generator of poll times."""

    def __init__(self, deadline, poll):
        self.deadline, self.poll = deadline, poll

    def polls(self, horizon):
        t = self.poll
        while t <= horizon:
            yield t
            t += self.poll

    def __call__(self, beats, done, deadline, poll, horizon):
        self.deadline, self.poll = deadline, poll
        for k, _ in enumerate(self.polls(horizon), 1):
            t = k * poll
            if done is not None and done <= t:
                return None
            seen = [b for b in beats if b <= t]
            if t - (seen[-1] if seen else 0) > self.deadline:
                return t
        return None


def wd_short_horizon(beats, done, deadline, poll, horizon):
    return wd_ref(beats, done, deadline, poll, horizon - poll / 2)


def wd_reference(beats, done, deadline, poll, horizon):
    from minitorch.driver import faults, recovery

    trace = faults.KernelTrace(tuple(beats), done)
    return recovery.Watchdog(deadline, poll).first_alarm_ns(trace, horizon)


def wd_truth(*args):
    from a2s.checks.lab30._truth import first_alarm

    return first_alarm(*args)


def wd_torch(beats, done, deadline, poll, horizon):
    import torch

    t = torch.tensor([0.0, *beats], dtype=torch.float64)
    return wd_ref(t.tolist()[1:], done, deadline, poll, horizon)


def wd(fn):
    return lambda: lab30.check_watchdog(fn)


WATCHDOG = [
    honest("30.3", "a pointer over sorted beats", wd(wd_ref)),
    honest("30.3", "bisect per poll, imports inside", wd(wd_bisect)),
    honest("30.3", "an event walk over the gaps", wd(wd_events)),
    honest("30.3", "a class with a generator of polls", wd(Dog(0, 1))),
    wrong(
        "30.3",
        "a deadline on completion",
        wd(lambda *a: wd_ref(*a, bug="start")),
        match="slow kernel that still beats",
    ),
    wrong(
        "30.3", ">= the deadline", wd(lambda *a: wd_ref(*a, bug=">=")), match="exactly the deadline"
    ),
    wrong(
        "30.3",
        "the last beat of the trace",
        wd(lambda *a: wd_ref(*a, bug="future")),
        match="in its future",
    ),
    wrong("30.3", "the hang before the completion", wd(wd_hang_first), match="completion first"),
    wrong("30.3", "the horizon's own poll left out", wd(wd_short_horizon), match="<= horizon"),
    cheat(
        "30.3", "the reference Watchdog", wd(wd_reference), match=REF, error=ReferenceCalledError
    ),
    cheat("30.3", "the grader's truth", wd(wd_truth), match=TRUTH, error=ReferenceCalledError),
    cheat("30.3", "torch", wd(wd_torch), match="torch", error=ForbiddenCallError),
    cheat(
        "30.3",
        "the public cases looked up, peeking ahead otherwise",
        wd(replay_public(watchdog.WATCH, lambda *a: wd_ref(*a, bug="future"))),
        match="fresh case.*in its future",
    ),
    cheat(
        "30.3",
        "the public cases looked up, the hang first otherwise",
        wd(replay_public(watchdog.WATCH, wd_hang_first)),
        match="fresh case.*completion first",
    ),
    cheat(
        "30.3",
        "the public cases looked up, >= otherwise",
        wd(replay_public(watchdog.WATCH, lambda *a: wd_ref(*a, bug=">="))),
        match="fresh case.*exactly the deadline",
    ),
    cheat(
        "30.3",
        "a float whose == says yes",
        wd(lambda *a: always_equal(100.0)),
        match="subclass|plain",
    ),
]
PENDING.append(cheat("30.3", "the expected value from the runner's frame", wd(_from_frame)))


# --------------------------------------------------------------------------- 30.4
class RoundRobin:
    """One command per healthy GPU in turn, deques, orphans to the shortest queue."""

    def __call__(self, gpus, queues, max_retries):
        self.q = {d: deque(q) for d, q in enumerate(queues)}
        done, failed, errors, lost = [], [], {}, []
        while any(self.q.values()):
            for d in [d for d in self.q if self.q[d]]:
                if d not in self.q:
                    continue
                c = self.q[d][0]
                answer = gpus[d].submit(c)
                if answer == "ok":
                    done.append(self.q[d].popleft())
                elif answer == "transient":
                    errors[c] = errors.get(c, 0) + 1
                    if errors[c] > max_retries:
                        failed.append(self.q[d].popleft())
                else:
                    lost.append(d)
                    self.remap(self.q.pop(d), failed)
        return {"completed": done, "failed": failed, "isolated": lost}

    def remap(self, orphans, failed):
        for c in orphans:
            if self.q:
                min(self.q.values(), key=len).append(c)
            else:
                failed.append(c)


def rc_numpy_sets(gpus, queues, max_retries):
    """numpy queues (np.int64 commands), one GPU's orphans all to the lowest healthy GPU,
    the report kept as sets."""
    import numpy

    pending = {d: list(numpy.asarray(q, dtype=numpy.int64)) for d, q in enumerate(queues)}
    done, failed, errors = set(), set(), {}
    while any(pending.values()):
        d = min(d for d, q in pending.items() if q)
        c = pending[d][0]
        answer = gpus[d].submit(c)
        if answer == "ok":
            done.add(pending[d].pop(0))
        elif answer == "transient":
            errors[c] = errors.get(c, 0) + 1
            if errors[c] > max_retries:
                failed.add(pending[d].pop(0))
        else:
            orphans = pending.pop(d)
            if pending:
                pending[min(pending)].extend(orphans)
            else:
                failed.update(orphans)
    return {
        "completed": done,
        "failed": failed,
        "isolated": {d for d in range(len(gpus)) if d not in pending},
    }


def rc_pool(gpus, queues, max_retries):
    """Re-mapped commands go to a shared pool any healthy GPU takes from; a transient error
    puts the command back in the pool (so another GPU may retry it)."""
    own = {d: list(q) for d, q in enumerate(queues)}
    pool, done, failed, errors = [], [], [], {}
    while any(own.values()) or pool:
        for d in list(own):
            if d not in own:
                continue
            from_pool = not own[d]
            if from_pool and not pool:
                continue
            c = pool.pop(0) if from_pool else own[d][0]
            answer = gpus[d].submit(c)
            if answer == "ok":
                done.append(c)
                if not from_pool:
                    own[d].pop(0)
            elif answer == "transient":
                errors[c] = errors.get(c, 0) + 1
                if errors[c] > max_retries:
                    failed.append(c)
                    if not from_pool:
                        own[d].pop(0)
                elif from_pool:
                    pool.append(c)
            else:
                pool += ([c] if from_pool else []) + own.pop(d)
        if not own:
            failed += pool
            pool = []
    return {
        "completed": done,
        "failed": failed,
        "isolated": [d for d in range(len(gpus)) if d not in own],
    }


def rc_drops_ecc_command(gpus, queues, max_retries):
    """On an ECC error the rest of the queue moves; the command that met it is dropped."""
    pending = {d: list(q) for d, q in enumerate(queues)}
    done, failed, errors = [], [], {}
    while any(pending.values()):
        d = next(d for d, q in pending.items() if q)
        c = pending[d][0]
        answer = gpus[d].submit(c)
        if answer == "ok":
            done.append(pending[d].pop(0))
        elif answer == "transient":
            errors[c] = errors.get(c, 0) + 1
            if errors[c] > max_retries:
                failed.append(pending[d].pop(0))
        else:
            rest = pending.pop(d)[1:]
            for o in rest:
                if pending:
                    min(pending.values(), key=len).append(o)
                else:
                    failed.append(o)
    isolated = [d for d in range(len(gpus)) if d not in pending]
    return {"completed": done, "failed": failed, "isolated": isolated}


def rc_reference(gpus, queues, max_retries):
    from minitorch.driver import recovery

    recovery.Runtime(len(gpus), max_retries).run([1.0] * sum(map(len, queues)))
    return rc_ref(gpus, queues, max_retries)


def rc_fleet_rewritten(gpus, queues, max_retries):
    """The child's copy of the Fleet, found through gc: every command marked completed."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "Fleet":
            obj.completions = [1] * obj.n_commands
            obj.isolated, obj.broken = [], []
    return {"completed": [c for q in queues for c in q], "failed": [], "isolated": []}


def rc_fleet_called(gpus, queues, max_retries):
    """The child's copy of the Fleet's submit called to learn outcomes without the GPUs."""
    fleet = next(o for o in gc.get_objects() if type(o).__name__ == "Fleet")
    return {
        "completed": [c for c in range(fleet.n_commands) if fleet.submit(0, c) == "ok"],
        "failed": [],
        "isolated": [],
    }


def rc_proxy_attributes(gpus, queues, max_retries):
    """The proxy's __self__ and __dict__: no fleet, no device behind them."""
    gpus[0].submit.__self__.fleet.completions = [1] * 99
    return rc_ref(gpus, queues, max_retries)


def rc_vars(gpus, queues, max_retries):
    vars(gpus[0])["device"] = 1
    return rc_ref(gpus, queues, max_retries)


def rc_closure_swapped(gpus, queues, max_retries):
    """Every proxy's closure cell pointed at GPU 0's request: the record sees GPU 0 run all."""
    for g in gpus:
        type(g).submit.__closure__[0].cell_contents = "gpu0.submit"
    return rc_ref(gpus, queues, max_retries)


def rc_request_elsewhere(gpus, queues, max_retries):
    """Straight to the harness: the doomed GPU's commands sent as another GPU's requests."""
    from a2s.checks.harness import request

    last = len(gpus) - 1
    for q in queues:
        for c in q:
            request(f"gpu{last}.submit", c)
    return {"completed": [c for q in queues for c in q], "failed": [], "isolated": []}


def rc_request_unserved(gpus, queues, max_retries):
    from a2s.checks.harness import request

    request("gpu0.fleet.completions", [1] * 99)
    return rc_ref(gpus, queues, max_retries)


def rc_plan_read(gpus, queues, max_retries):
    """The fault plan read from the child's copy of the Fleet: doomed commands never sent,
    reported failed, the rest run as usual (the copy of this case's Fleet: nothing sent yet)."""
    fleets = [o for o in gc.get_objects() if type(o).__name__ == "Fleet"]
    fleet = next(o for o in fleets if o.queues == queues and not o.log)
    doomed = {c for (c, a), what in fleet.plan.items() if what == "ecc_uncorrectable"}
    out = rc_ref(gpus, [[c for c in q if c not in doomed] for q in queues], max_retries)
    return {**out, "failed": [*out["failed"], *doomed]}


def rc(fn):
    return lambda: lab30.check_run_commands(fn)


RECOVERY = [
    honest("30.4", "the notebook's runtime", rc(rc_ref)),
    honest("30.4", "round robin, a class with deques", rc(RoundRobin())),
    honest("30.4", "numpy queues, orphans to one GPU, sets", rc(rc_numpy_sets)),
    wrong(
        "30.4",
        "an ECC error counted as a retry",
        rc(lambda *a: rc_ref(*a, bug="ecc is a retry")),
        match="never completed",
    ),
    wrong(
        "30.4", "retries forever", rc(lambda *a: rc_ref(*a, bug="forever")), match="retried after"
    ),
    wrong(
        "30.4",
        "a retry on another GPU",
        rc(lambda *a: rc_ref(*a, bug="elsewhere")),
        match="which is healthy, but ran on gpu",
    ),
    wrong(
        "30.4",
        "no isolation",
        rc(lambda *a: rc_ref(*a, bug="no isolation")),
        match="after it was isolated",
    ),
    wrong(
        "30.4",
        "submitted again after ok",
        rc(lambda *a: rc_ref(*a, bug="twice")),
        match="submitted again after it completed",
    ),
    wrong(
        "30.4",
        "failed reported completed",
        rc(lambda *a: rc_ref(*a, bug="lie")),
        match="you reported completed",
    ),
    wrong(
        "30.4",
        "isolated left out",
        rc(lambda *a: rc_ref(*a, bug="no isolated")),
        match="you reported isolated",
    ),
    wrong(
        "30.4",
        "re-mapped commands in a shared pool",
        rc(rc_pool),
        match="was re-mapped and ran on gpu",
    ),
    wrong("30.4", "the ECC command dropped", rc(rc_drops_ecc_command), match="never completed"),
    cheat("30.4", "the reference Runtime", rc(rc_reference), match=REF, error=ReferenceCalledError),
    cheat(
        "30.4",
        "the child's Fleet rewritten through gc",
        rc(rc_fleet_rewritten),
        match="never completed",
    ),
    cheat(
        "30.4",
        "the child's Fleet's submit called",
        rc(rc_fleet_called),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "30.4",
        "the proxy's __self__",
        rc(rc_proxy_attributes),
        match="AttributeError",
        error=StudentError,
    ),
    cheat("30.4", "the proxy's __dict__", rc(rc_vars), match="TypeError", error=StudentError),
    cheat(
        "30.4",
        "the proxies' closure cells swapped",
        rc(rc_closure_swapped),
        match="which is healthy, but ran on gpu 0",
    ),
    cheat(
        "30.4",
        "request() as another GPU",
        rc(rc_request_elsewhere),
        match="which is healthy, but ran on gpu",
    ),
    cheat(
        "30.4",
        "request() to a name not served",
        rc(rc_request_unserved),
        match="no such request",
        error=StudentError,
    ),
    cheat(
        "30.4",
        "the fault plan read, doomed commands skipped",
        rc(rc_plan_read),
        match="never completed",
    ),
    cheat(
        "30.4",
        "a report whose == says yes",
        rc(lambda g, q, r: {"completed": always_equal(0), "failed": [], "isolated": []}),
        match="equality|plain|subclass",
    ),
    cheat(
        "30.4",
        "torch",
        rc(lambda g, q, r: rc_ref(g, [__import__("torch").tensor(x).tolist() for x in q], r)),
        match="torch",
        error=ForbiddenCallError,
    ),
]


# --------------------------------------------------------------------------- 30.5
def ec_numpy(cycles, mem_ns, activity, temp_c, table, chip):
    import numpy

    f, v = numpy.asarray(table, dtype=numpy.float64).T
    leak = chip["p_leak0_w"] * numpy.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    e = (activity * chip["c_eff_f"] * v**2 * f * 1e6 + leak) * (cycles / (f * 1e6) + mem_ns / 1e9)
    return float(f[int(numpy.argmin(e))])


@dataclass
class Phase:
    cycles: float
    seconds_on_memory: float
    activity: float

    def joules(self, f_hz, volts, chip, leak):
        watts = self.activity * chip["c_eff_f"] * volts**2 * f_hz + leak
        return watts * (self.cycles / f_hz + self.seconds_on_memory)


def _logged(fn):
    @functools.wraps(fn)
    def inner(*args):
        return fn(*args)

    return inner


@_logged
def ec_dataclass(cycles, mem_ns, activity, temp_c, table, chip):
    phase = Phase(cycles, mem_ns * 1e-9, activity)
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    return min(table, key=lambda p: phase.joules(p[0] * 1e6, p[1], chip, leak))[0]


def ec_lab_volts(cycles, mem_ns, activity, temp_c, table, chip):
    lab = [(f, 0.70 * max(1.0, f / 1200.0)) for f, _ in table]
    return ec_ref(cycles, mem_ns, activity, temp_c, lab, chip)


def ec_reference(cycles, mem_ns, activity, temp_c, table, chip):
    from minitorch.driver import power

    phase = power.Phase("p", cycles=cycles, mem_ns=mem_ns, activity=activity)
    return power.optimal_point(power.PowerModel(), phase, temp_c).f_mhz


def ec_closed_forms(cycles, mem_ns, activity, temp_c, table, chip):
    from minitorch.driver import power

    model = power.PowerModel()
    if cycles < 1e4:
        return power.optimal_clock_memory_bound([power.OperatingPoint(*p) for p in table])
    f = power.optimal_clock_compute_bound(model, activity, temp_c)
    return min((p[0] for p in table), key=lambda g: abs(g - f))


def ec_truth(*args):
    from a2s.checks.lab30._truth import least_energy_clock

    return least_energy_clock(*args)


def ec_torch(cycles, mem_ns, activity, temp_c, table, chip):
    import torch

    t = torch.tensor(table, dtype=torch.float64)
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    hz = t[:, 0] * 1e6
    e = (activity * chip["c_eff_f"] * t[:, 1] ** 2 * hz + leak) * (cycles / hz + mem_ns * 1e-9)
    return float(t[int(torch.argmin(e)), 0])


def ec_rebinds():
    """On its first call, empties the lab's table to one point and zeroes the chip's power;
    then answers the knee everywhere."""
    count = itertools.count()

    def fn(cycles, mem_ns, activity, temp_c, table, chip):
        if next(count) == 0:
            energy.TABLE[:] = [(1200.0, 0.70)]
            lab30._truth.CHIP.update(c_eff_f=0.0, p_leak0_w=0.0)
        return 1200.0

    return fn


def rebinds_table_attempt():
    table, chip = list(energy.TABLE), dict(lab30._truth.CHIP)
    try:
        lab30.check_energy_clock(ec_rebinds())
    finally:
        energy.TABLE[:] = table
        lab30._truth.CHIP.clear()
        lab30._truth.CHIP.update(chip)


def ec(fn):
    return lambda: lab30.check_energy_clock(fn)


ENERGY = [
    honest("30.5", "a scan of the table", ec(ec_ref)),
    honest("30.5", "numpy's argmin, imports inside", ec(ec_numpy)),
    honest("30.5", "a dataclass, min(key=), a decorator", ec(ec_dataclass)),
    wrong(
        "30.5",
        "the top clock (race to idle)",
        ec(lambda *a: ec_ref(*a, bug="race")),
        match="top clock is not the least energy",
    ),
    wrong(
        "30.5",
        "the least power",
        ec(lambda *a: ec_ref(*a, bug="least power")),
        match="least \\*power\\*",
    ),
    wrong(
        "30.5",
        "the memory time left out",
        ec(lambda *a: ec_ref(*a, bug="no memory")),
        match="waits t_m on memory",
    ),
    wrong(
        "30.5",
        "mem_ns taken as seconds",
        ec(lambda *a: ec_ref(*a, bug="ns")),
        match="in nanoseconds",
    ),
    wrong(
        "30.5",
        "leakage at T_0",
        ec(lambda *a: ec_ref(*a, bug="cold")),
        match="evaluate it at temp_c",
    ),
    wrong("30.5", "V from the lab's formula", ec(ec_lab_volts), match="voltage from the table"),
    cheat(
        "30.5",
        "the reference optimal_point",
        ec(ec_reference),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "30.5",
        "the reference's closed forms, rounded to the table",
        ec(ec_closed_forms),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("30.5", "the grader's truth", ec(ec_truth), match=TRUTH, error=ReferenceCalledError),
    cheat("30.5", "torch", ec(ec_torch), match="torch", error=ForbiddenCallError),
    cheat(
        "30.5",
        "the public cases looked up, the knee otherwise",
        ec(replay_public(energy.ENERGY, lambda *a: 1200.0)),
        match="fresh case",
    ),
    cheat(
        "30.5",
        "a float whose == says yes",
        ec(lambda *a: always_equal(600.0)),
        match="subclass|plain",
    ),
    cheat(
        "30.5",
        "empties TABLE and zeroes CHIP mid-check",
        rebinds_table_attempt,
        match="energy_clock returned 1200 MHz",
    ),
]


# 30.5, tried by the lab 33 reviewer: more honest forms, mistakes, cheats
def ec_recursive(cycles, mem_ns, activity, temp_c, table, chip):
    """The best of the rest, recursively, E expanded term by term."""
    leak = chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))
    t_m = mem_ns * 1e-9

    def joules(f, v):
        hz, dyn = f * 1e6, activity * chip["c_eff_f"] * v * v
        return dyn * cycles + dyn * hz * t_m + leak * cycles / hz + leak * t_m

    def best(points):
        if len(points) == 1:
            return points[0]
        rest = best(points[1:])
        return points[0] if joules(*points[0]) <= joules(*rest) else rest

    return best([tuple(p) for p in table])[0]


def ec_sorted(cycles, mem_ns, activity, temp_c, table, chip):
    """Every point's energy in a list of (E, f), sorted: the first one's clock."""
    c, e = chip, []
    for f, v in table:
        watts = activity * c["c_eff_f"] * v**2 * f * 1e6 + c["p_leak0_w"] * math.exp(
            c["beta_per_k"] * (temp_c - c["t_leak0_c"])
        )
        e.append((watts * (cycles / (f * 1e6) + mem_ns / 1e9), f))
    return sorted(e)[0][1]


def ec_variant(bug):
    def fn(cycles, mem_ns, activity, temp_c, table, chip):
        c = dict(chip, p_leak0_w=0.0) if bug == "no leak" else chip
        a = 1.0 if bug == "no activity" else activity
        leak = c["p_leak0_w"] * math.exp(c["beta_per_k"] * (temp_c - c["t_leak0_c"]))
        hz = 1.0 if bug == "mhz" else 1e6

        def joules(f, v):
            return (a * c["c_eff_f"] * v * v * f * hz + leak) * (cycles / (f * hz) + mem_ns * 1e-9)

        best = min(table, key=lambda p: joules(*p))
        return best[1] if bug == "volts" else best[0]

    return fn


def ec_lab_chip(cycles, mem_ns, activity, temp_c, table, chip):
    """The grader's CHIP imported (not called) instead of the chip handed over."""
    from a2s.checks.lab30._truth import CHIP

    return ec_ref(cycles, mem_ns, activity, temp_c, table, CHIP)


def ec_shrinks_args(cycles, mem_ns, activity, temp_c, table, chip):
    """Cuts the table it was handed to one point and zeroes the chip: its copy only."""
    table[:] = [(1200.0, 0.70)]
    chip.update(c_eff_f=0.0, p_leak0_w=0.0)
    return 1200.0


def rebinds_truth_attempt():
    """Rebinds the table's truth to the knee in the grader's own process, mid-check."""
    saved = energy.ENERGY.truth

    calls = itertools.count()

    def fn(*args):
        if next(calls) == 0:  # the first case answered right, the rest with the rebound truth
            object.__setattr__(energy.ENERGY, "truth", lambda *a: 1200.0)
            return ec_ref(*args)
        return 1200.0

    try:
        lab30.check_energy_clock(fn)
    finally:
        object.__setattr__(energy.ENERGY, "truth", saved)


ENERGY += [
    honest("30.5", "recursion, E expanded term by term", ec(ec_recursive)),
    honest("30.5", "a sorted list of (E, f)", ec(ec_sorted)),
    wrong("30.5", "the activity factor left out", ec(ec_variant("no activity")), "activity factor"),
    wrong("30.5", "the leakage left out", ec(ec_variant("no leak")), "paid for the whole time"),
    wrong("30.5", "f in MHz in power and time", ec(ec_variant("mhz")), "f is in Hz"),
    wrong("30.5", "the voltage returned", ec(ec_variant("volts")), "not a clock of the table"),
    cheat("30.5", "the grader's CHIP imported", ec(ec_lab_chip), match="chip dict"),
    cheat("30.5", "the handed table cut in place", ec(ec_shrinks_args), match="returned 1200 MHz"),
    cheat("30.5", "the truth rebound mid-check", rebinds_truth_attempt, match="returned 1200 MHz"),
]
PENDING.append(cheat("30.5", "the expected value from the runner's frame", ec(_from_frame)))

ATTEMPTS = COUNTERS + GOVERNOR + WATCHDOG + RECOVERY + ENERGY


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


@pytest.mark.parametrize("attempt", PENDING, ids=attempt_id)
@pytest.mark.xfail(strict=True, reason="reading the runner's frame: the sealed kernel vetoes it")
def test_pending(attempt):
    judge(attempt)
