"""Graders of lab 30: right answers pass; wrong answers, rule breakers, reference calls and
a tampered record fail."""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest

from a2s.checks import lab30
from a2s.checks.core import ReferenceCalledError
from a2s.checks.lab30 import _truth
from minitorch.driver import faults, power, recovery, telemetry
from tests.helpers.graders import rejects


# --------------------------------------------------------------------------- answers
def counter_rates(raw, interval_ns, width_bits, n_sm, clock_ghz, bug=""):
    raw = np.asarray(raw, dtype=np.int64)
    d = raw[1:] - raw[:-1]
    d = d if bug == "no wrap" else d % (1 << width_bits)
    util = d[:, 0] / interval_ns * (100 if bug == "percent" else 1)
    sm = d[:, 2] / (n_sm * (1.0 if bug == "no clock" else clock_ghz) * interval_ns)
    return util, d[:, 1] / interval_ns / (1e9 if bug == "GB" else 1), sm


def governor(activity, temp_c, cap_w, table, chip, bug=""):
    t = chip["t_leak0_c"] if bug == "cold" else temp_c
    leak = (
        0.0
        if bug == "no leak"
        else chip["p_leak0_w"] * np.exp(chip["beta_per_k"] * (t - chip["t_leak0_c"]))
    )
    fits = [f for f, v in table if activity * chip["c_eff_f"] * v * v * f * 1e6 + leak <= cap_w]
    if not fits:
        return max(f for f, _ in table) if bug == "top" else min(f for f, _ in table)
    return min(fits) if bug == "lowest" else max(fits)


def energy_clock(cycles, mem_ns, activity, temp_c, table, chip, bug=""):
    t = chip["t_leak0_c"] if bug == "cold" else temp_c
    leak = chip["p_leak0_w"] * np.exp(chip["beta_per_k"] * (t - chip["t_leak0_c"]))
    mem = 0.0 if bug == "no memory" else mem_ns * (1.0 if bug == "ns" else 1e-9)

    def energy(f, v):
        return (activity * chip["c_eff_f"] * v * v * f * 1e6 + leak) * (cycles / (f * 1e6) + mem)

    if bug == "race":
        return max(f for f, _ in table)
    if bug == "least power":
        return min(table, key=lambda p: activity * chip["c_eff_f"] * p[1] ** 2 * p[0])[0]
    return min(table, key=lambda p: energy(*p))[0]


def watchdog(beats, done, deadline, poll, horizon, bug=""):
    k = 1
    while k * poll <= horizon:
        t = k * poll
        if done is not None and done <= t:
            return None
        seen = beats if bug == "future" else [b for b in beats if b <= t]
        last = 0.0 if bug == "start" else max(seen, default=0.0)
        if t - last > deadline or (bug == ">=" and t - last >= deadline):
            return t
        k += 1
    return None


def run_commands(gpus, queues, max_retries, bug=""):
    pending = {d: list(q) for d, q in enumerate(queues)}
    completed, failed, errors = [], [], {}
    while any(pending.values()):
        d = next(d for d, q in pending.items() if q)
        c = pending[d][0]
        answer = gpus[d].submit(c)
        if answer == "ok":
            completed.append(c)
            pending[d].pop(0)
            if bug == "twice":
                gpus[d].submit(c)
        elif answer == "transient" or (bug == "no isolation"):
            errors[c] = errors.get(c, 0) + 1
            if bug == "wander" and c not in queues[d] and len(pending) > 1:
                pending[d].pop(0)  # a re-mapped command retried on yet another healthy GPU
                pending[next(g for g in pending if g != d)].insert(0, c)
            elif bug == "elsewhere" and len(pending) > 1:
                pending[d].pop(0)
                pending[next(g for g in pending if g != d)].insert(0, c)
            elif errors[c] > max_retries and bug != "forever":
                failed.append(c)
                pending[d].pop(0)
        else:
            if bug == "ecc is a retry":
                errors[c] = errors.get(c, 0) + 1
            orphans = pending.pop(d)
            if bug == "ecc is a retry" and errors[c] > max_retries:
                failed.append(orphans.pop(0))
            for o in orphans:
                if pending:
                    pending[min(pending, key=lambda g: len(pending[g]))].append(o)
                elif bug != "drop orphans":
                    failed.append(o)
    isolated = [d for d in range(len(gpus)) if d not in pending]
    if bug == "lie":
        completed, failed = completed + failed, []
    if bug == "no isolated":
        isolated = []
    return {"completed": completed, "failed": failed, "isolated": isolated}


def test_right_answers_pass(capsys):
    lab30.check_counter_rates(counter_rates)
    lab30.check_governor(governor)
    lab30.check_watchdog(watchdog)
    lab30.check_run_commands(run_commands)
    lab30.check_energy_clock(energy_clock)
    assert capsys.readouterr().out.count("passed") == 5


# --------------------------------------------------------------------------- 30.1
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("no wrap", "mod 2"),
        ("percent", "not a percent"),
        ("GB", "do not divide by 1e9"),
        ("no clock", "left out the clock"),
    ],
)
def test_counter_rates_rejects_wrong_answers(bug, match):
    rejects(lab30.check_counter_rates, lambda *a: counter_rates(*a, bug=bug), match=match)


def test_counter_rates_rejects_a_wrong_shape():
    rejects(lab30.check_counter_rates, lambda *a: counter_rates(*a)[0], match="three sequences")
    rejects(lab30.check_counter_rates, lambda *a: "fast", match="counter_rates")


def test_counter_rates_rejects_the_reference():
    def ref(raw, dt, w, n_sm, f):
        d = [
            [telemetry.decode_delta(a, b, w) for a, b in zip(p, c, strict=True)]
            for p, c in itertools.pairwise(raw)
        ]
        d = np.asarray(d, dtype=np.float64)
        return d[:, 0] / dt, d[:, 1] / dt, d[:, 2] / (n_sm * f * dt)

    rejects(lab30.check_counter_rates, ref, match="reference", error=ReferenceCalledError)
    rejects(
        lab30.check_counter_rates,
        _truth.decoded_rates,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 30.2
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("no leak", "add the leakage"),
        ("cold", "evaluate it at temp_c"),
        ("lowest", "highest"),
        ("top", "run at the lowest clock"),
    ],
)
def test_governor_rejects_wrong_answers(bug, match):
    rejects(lab30.check_governor, lambda *a: governor(*a, bug=bug), match=match)


def _after(calls: int, then):
    """A governor right on the table of decisions that changes its mind in the replay."""
    count = itertools.count()

    def gov(*args):
        return then(*args) if next(count) >= calls else governor(*args)

    return gov


def test_governor_rejects_a_run_over_the_cap():
    top = _after(12, lambda a, t, cap, table, chip: max(f for f, _ in table))
    rejects(lab30.check_governor, top, match="over the 400 W cap")


def test_governor_rejects_a_run_slower_than_the_least_slowdown():
    low = _after(12, lambda a, t, cap, table, chip: min(f for f, _ in table))
    rejects(lab30.check_governor, low, match="least slowdown")


def test_governor_rejects_a_clock_off_the_table():
    rejects(lab30.check_governor, _after(12, lambda *a: 1234.5), match="not a clock of the table")
    rejects(lab30.check_governor, lambda *a: "max", match="clock in MHz")


def test_governor_rejects_the_reference():
    def ref(activity, temp_c, cap_w, table, chip):
        gpu = __import__("minitorch.driver.governor", fromlist=["x"]).SimulatedGpu(
            power.PowerModel()
        )
        gpu.temp_c = temp_c
        gpu.set_power_limit_mw(cap_w * 1e3)
        return gpu.choose_point(activity).f_mhz

    rejects(lab30.check_governor, ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 30.5
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("race", "top clock is not the least energy"),
        ("least power", "least \\*power\\*"),
        ("no memory", "waits t_m on memory"),
        ("ns", "mem_ns is in nanoseconds"),
        ("cold", "evaluate it at temp_c"),
    ],
)
def test_energy_clock_rejects_wrong_answers(bug, match):
    rejects(lab30.check_energy_clock, lambda *a: energy_clock(*a, bug=bug), match=match)


def test_energy_clock_holds_the_closed_forms():
    """The named decode and prefill cases carry the closed form itself (f_min; the knee), and
    the scan of the truth agrees with the reference's closed forms on every named phase: the
    cube root above the knee on the hot die, the square root at the floor for the mixed one."""
    from a2s.checks.lab30 import energy

    model = power.PowerModel()
    table = [power.OperatingPoint(f, v) for f, v in lab30.TABLE]
    decode, prefill, *_, hot, mixed = (args for _, args, *_ in energy._NAMED)
    assert [row[-1] for row in energy._NAMED[:2]] == [600.0, 1200.0]
    assert _truth.least_energy_clock(*decode) == power.optimal_clock_memory_bound(table)
    assert _truth.least_energy_clock(*prefill) == power.optimal_clock_compute_bound(model, 0.8, 60)
    root = power.optimal_clock_compute_bound(model, 0.3, 95.0)
    assert 1200 < root < 1980 and abs(_truth.least_energy_clock(*hot) - root) <= 15
    phase = power.Phase("mixed", cycles=mixed[0], mem_ns=mixed[1], activity=mixed[2])
    f_star = power.optimal_clock_mixed(model, phase, 60.0)
    assert 600 < f_star < 1200 and abs(_truth.least_energy_clock(*mixed) - f_star) <= 15


def test_energy_clock_rejects_a_clock_off_the_table():
    rejects(lab30.check_energy_clock, lambda *a: 1234.5, match="not a clock of the table")
    rejects(lab30.check_energy_clock, lambda *a: "low", match="clock in MHz")


def test_energy_clock_rejects_the_reference():
    def ref(cycles, mem_ns, activity, temp_c, table, chip):
        model = power.PowerModel()
        phase = power.Phase("p", cycles=cycles, mem_ns=mem_ns, activity=activity)
        return power.optimal_point(model, phase, temp_c).f_mhz

    rejects(lab30.check_energy_clock, ref, match="reference", error=ReferenceCalledError)
    rejects(
        lab30.check_energy_clock,
        _truth.least_energy_clock,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 30.3
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("start", "slow kernel that still beats"),
        (">=", "exactly the deadline"),
        ("future", "in its future"),
    ],
)
def test_watchdog_rejects_wrong_answers(bug, match):
    rejects(lab30.check_watchdog, lambda *a: watchdog(*a, bug=bug), match=match)


def hang_first(beats, done, deadline, poll, horizon):  # checks the hang before the completion
    k = 1
    while k * poll <= horizon:
        t = k * poll
        if t - max([b for b in beats if b <= t], default=0.0) > deadline:
            return t
        if done is not None and done <= t:
            return None
        k += 1
    return None


def test_watchdog_rejects_a_hang_checked_before_the_completion():
    rejects(lab30.check_watchdog, hang_first, match="completion first")
    rejects(lab30.check_watchdog, lambda *a: "hung", match="or None")


def test_watchdog_rejects_the_reference():
    def ref(beats, done, deadline, poll, horizon):
        trace = faults.KernelTrace(tuple(beats), done)
        return recovery.Watchdog(deadline, poll).first_alarm_ns(trace, horizon)

    rejects(lab30.check_watchdog, ref, match="reference", error=ReferenceCalledError)
    rejects(lab30.check_watchdog, _truth.first_alarm, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 30.4
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("ecc is a retry", "never completed"),
        ("forever", "retried after"),
        ("elsewhere", "which is healthy, but ran on gpu"),
        ("wander", "was re-mapped and ran on gpu 0, which is healthy"),
        ("drop orphans", "you reported failed"),
        ("no isolation", "after it was isolated"),
        ("twice", "submitted again after it completed"),
        ("lie", "you reported completed"),
        ("no isolated", "you reported isolated"),
    ],
)
def test_run_commands_rejects_rule_breakers(bug, match):
    rejects(lab30.check_run_commands, lambda *a: run_commands(*a, bug=bug), match=match)


def test_run_commands_cannot_rewrite_the_graders_record():
    """The fleet lives in the grader's process: a copy found by gc in the learner's is not it."""

    def forge(gpus, queues, max_retries):
        for obj in gc.get_objects():
            if type(obj).__name__ == "Fleet":
                obj.completions = [1] * obj.n_commands
        return {"completed": [c for q in queues for c in q], "failed": [], "isolated": []}

    rejects(lab30.check_run_commands, forge, match="never completed")


def test_run_commands_rejects_a_bad_report():
    def bad(gpus, queues, max_retries):
        run_commands(gpus, queues, max_retries)
        return ["done"]

    rejects(lab30.check_run_commands, bad, match="must return a dict")


def test_run_commands_rejects_the_reference():
    def ref(gpus, queues, max_retries):
        recovery.Runtime(len(gpus), max_retries).run([1.0] * sum(map(len, queues)))
        return run_commands(gpus, queues, max_retries)

    rejects(lab30.check_run_commands, ref, match="reference", error=ReferenceCalledError)


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    (
        "30.1",
        "Exercise code may not call the `minitorch.driver` modules of this lab",
        "test_counter_rates_rejects_the_reference",
    ),
    (
        "30.1",
        "each increment is `(r1 - r0) mod 2**width_bits`",
        "test_counter_rates_rejects_wrong_answers",
    ),
    (
        "30.1",
        "utilisation is a fraction in [0, 1], not a percent",
        "test_counter_rates_rejects_wrong_answers",
    ),
    (
        "30.1",
        "bandwidth is bytes per ns (GB/s)",
        "test_counter_rates_rejects_wrong_answers",
    ),
    (
        "30.1",
        "SM activity divides by the SM-cycles the interval had",
        "test_counter_rates_rejects_wrong_answers",
    ),
    (
        "30.1",
        "three sequences of $n$ numbers, one per interval",
        "test_counter_rates_rejects_a_wrong_shape",
    ),
    ("30.1", "wraps in most intervals", "test_attempt"),
    ("30.2", "Return the **highest** clock", "test_governor_rejects_wrong_answers"),
    ("30.2", "with $f$ in Hz: `f_mhz * 1e6`", "test_attempt"),
    ("30.2", "at the die's temperature `temp_c`", "test_governor_rejects_wrong_answers"),
    ("30.2", "`table` is the list of `(f_mhz, volts)` operating points", "test_attempt"),
    (
        "30.2",
        "the clock (MHz) to run the next step at",
        "test_governor_rejects_a_clock_off_the_table",
    ),
    (
        "30.2",
        "**every** step of the replay must stay under the cap",
        "test_governor_rejects_a_run_over_the_cap",
    ),
    (
        "30.2",
        "the run must take exactly the least-slowdown time",
        "test_governor_rejects_a_run_slower_than_the_least_slowdown",
    ),
    ("30.2", "the lowest clock when no point fits", "test_governor_rejects_wrong_answers"),
    (
        "30.3",
        "a slow but progressing kernel must never raise an alarm",
        "test_watchdog_rejects_wrong_answers",
    ),
    (
        "30.3",
        "at a poll the host has seen only the heartbeats at or before $t$",
        "test_watchdog_rejects_wrong_answers",
    ),
    ("30.3", "`2 * poll_ns`, ... up to `horizon_ns`", "test_attempt"),
    (
        "30.3",
        "a gap of exactly the deadline is not a hang",
        "test_watchdog_rejects_wrong_answers",
    ),
    (
        "30.3",
        "once the kernel has completed (`completion_ns <= t`), it is not hung",
        "test_watchdog_rejects_a_hang_checked_before_the_completion",
    ),
    (
        "30.4",
        "Every submitted command completes exactly once or is reported failed",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "A command stays on its own GPU while that GPU is healthy",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "With no healthy GPU left, what is not done is reported failed",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "its remaining queue (this command included) is re-mapped to the healthy GPUs",
        "test_attempt",
    ),
    (
        "30.4",
        "an isolated GPU must get no more work",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "retry it on the same GPU, at most `max_retries` times",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "it uses none of the command's retries",
        "test_run_commands_rejects_rule_breakers",
    ),
    (
        "30.4",
        "the report must agree with the grader's record",
        "test_run_commands_cannot_rewrite_the_graders_record",
    ),
    ("30.5", "with $f$ in Hz (`f_mhz * 1e6`)", "test_energy_clock_rejects_wrong_answers"),
    ("30.5", "$t_m$ in seconds (`mem_ns * 1e-9`)", "test_energy_clock_rejects_wrong_answers"),
    ("30.5", "$V$ each point's own", "test_attempt"),
    ("30.5", "the leakage at the die's temperature", "test_energy_clock_rejects_wrong_answers"),
    (
        "30.5",
        "holds those two cases to exactly those closed forms",
        "test_energy_clock_holds_the_closed_forms",
    ),
    ("30.5", "the clock (MHz) of `table`", "test_energy_clock_rejects_a_clock_off_the_table"),
]
