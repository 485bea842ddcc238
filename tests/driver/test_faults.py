"""Faults and the response to them: SECDED over every single and double flip, the watchdog
against a closed-form alarm time and (Hypothesis) no false alarm on any slow-but-progressing
kernel, and (Hypothesis) every command completes exactly once or is reported failed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.faults import (
    DATA_POSITIONS,
    EccMemory,
    Xid,
    decode,
    encode,
    hung_kernel,
    ok_kernel,
    slow_kernel,
)
from minitorch.driver.recovery import DEVICE_FAULTS, FAULTS, Runtime, Watchdog

VALUES = [0, 1, 0xDEADBEEF, (1 << 64) - 1, 0x0123456789ABCDEF]


@pytest.mark.parametrize("value", VALUES)
def test_codeword_satisfies_every_parity_check(value: int) -> None:
    bits = encode(value)
    assert bits.shape == (72,) and int(bits.sum()) % 2 == 0
    for i in range(7):  # independent: XOR over positions with bit i set is zero
        assert sum(int(bits[p]) for p in range(1, 72) if p >> i & 1) % 2 == 0
    assert sum(int(bits[p]) << k for k, p in enumerate(DATA_POSITIONS)) == value


@pytest.mark.parametrize("value", VALUES[1:4])
def test_every_single_flip_is_corrected_every_double_flip_detected(value: int) -> None:
    bits = encode(value)
    assert decode(bits) == (value, "ok")
    for b in range(72):
        one = bits.copy()
        one[b] ^= 1
        assert decode(one) == (value, "corrected")
    for a, b in itertools.combinations(range(72), 2):
        two = bits.copy()
        two[a] ^= 1
        two[b] ^= 1
        assert decode(two)[1] == "uncorrectable"


def test_memory_counts_sbes_scrubs_and_reports_dbes() -> None:
    mem = EccMemory(3)
    mem.write(1, 42)
    mem.flip(1, 5)
    assert mem.read(1) == (42, "corrected") and mem.sbe == 1
    assert mem.read(1) == (42, "ok") and mem.sbe == 1  # scrubbed: written back corrected
    assert not mem.needs_isolation
    mem.flip(2, 0)
    mem.flip(2, 70)
    assert mem.read(2)[1] == "uncorrectable"
    assert mem.dbe == 1 and mem.xids == [Xid.DBE_ECC] and mem.needs_isolation
    assert int(Xid.DBE_ECC) == 48 and int(Xid.FALLEN_OFF_BUS) == 79


def test_kernel_traces() -> None:
    ok = ok_kernel(10.0, 3.0)
    assert ok.heartbeats_ns == (3.0, 6.0, 9.0) and ok.completion_ns == 10.0
    slow = slow_kernel(10.0, 3.0, 2.0)
    assert slow.heartbeats_ns == (6.0, 12.0, 18.0) and slow.completion_ns == 20.0
    hung = hung_kernel(10.0, 3.0, 7.0)
    assert hung.heartbeats_ns == (3.0, 6.0) and hung.completion_ns is None


@pytest.mark.parametrize("hang_at", [0.0, 5.0, 37.0])
def test_hung_kernel_alarm_is_the_first_poll_past_the_deadline(hang_at: float) -> None:
    wd = Watchdog(deadline_ns=20.0, poll_ns=3.0)
    trace = hung_kernel(100.0, 4.0, hang_at)
    last = max(trace.heartbeats_ns, default=0.0)
    expected = (math.floor((last + 20.0) / 3.0) + 1) * 3.0  # first poll t with t - last > 20
    assert wd.first_alarm_ns(trace, 1000.0) == pytest.approx(expected)
    assert last + 20.0 < expected <= last + 20.0 + 3.0


def test_a_completion_only_deadline_would_kill_a_slow_kernel() -> None:
    wd = Watchdog(deadline_ns=20.0, poll_ns=1.0)
    slow = slow_kernel(100.0, 4.0, 4.0)  # 400 ns long, beats every 16 ns
    assert wd.first_alarm_ns(slow, 1000.0) is None
    assert slow.completion_ns is not None and slow.completion_ns > wd.deadline_ns


@settings(max_examples=60, deadline=None)
@given(
    duration=st.floats(1.0, 200.0),
    heartbeat=st.floats(0.5, 10.0),
    slowdown=st.floats(1.0, 50.0),
    poll=st.floats(0.5, 30.0),
)
def test_no_false_alarm_on_any_slow_but_progressing_kernel(
    duration: float, heartbeat: float, slowdown: float, poll: float
) -> None:
    # the deadline covers the longest gap between beats (the last beat to completion too)
    deadline = heartbeat * slowdown * 1.0001
    trace = slow_kernel(duration, heartbeat, slowdown)
    assert Watchdog(deadline, poll).first_alarm_ns(trace, duration * slowdown * 2 + poll) is None


FAULT = st.sampled_from(FAULTS)


@settings(max_examples=150, deadline=None)
@given(
    n_dev=st.integers(1, 4),
    n_cmd=st.integers(0, 20),
    retries=st.integers(0, 3),
    plan=st.dictionaries(st.tuples(st.integers(0, 19), st.integers(0, 5)), FAULT, max_size=25),
)
def test_every_command_completes_exactly_once_or_is_reported_failed(
    n_dev: int, n_cmd: int, retries: int, plan: dict[tuple[int, int], str]
) -> None:
    rt = Runtime(n_dev, max_retries=retries, watchdog=Watchdog(100.0, 10.0))
    rep = rt.run([50.0 + c for c in range(n_cmd)], plan)
    assert len(rep.completions) == len(set(rep.completions)) == len(rep.completed)
    assert set(rep.completed).isdisjoint(rep.failed)
    assert set(rep.completed) | set(rep.failed) == set(range(n_cmd))
    device_faults = sum(1 for x in rep.events if x[2] in DEVICE_FAULTS.values())
    assert device_faults == len(rep.isolated) <= n_dev
    if len(rep.isolated) < n_dev:
        assert all(r.startswith("failed") for r in rep.failed.values())
    if not any(f in DEVICE_FAULTS for f in plan.values()):
        # no device faults: attempts are the command's own; it fails iff its first
        # retries + 1 attempts are all faulty (a plain count written here)
        for c in range(n_cmd):
            assert (c in rep.failed) == all((c, a) in plan for a in range(retries + 1))


def test_isolated_device_work_is_remapped_to_healthy_devices() -> None:
    rt = Runtime(3, max_retries=1)
    rep = rt.run([10.0] * 9, {(4, 0): "dbe"})  # command 4 starts on device 1
    assert rep.isolated == {1} and not rep.failed
    assert [c for c, d in rep.completed.items() if d == 1] == [1]  # only what ran before
    assert rep.completed[4] != 1 and rep.completed[7] != 1
    assert rep.events == [(10.0, 1, Xid.DBE_ECC, 4)]


def test_transient_errors_are_retried_k_times_then_reported() -> None:
    rt = Runtime(1, max_retries=2)
    ok = rt.run([10.0, 10.0], {(0, 0): "transient", (0, 1): "transient"})
    assert sorted(ok.completed) == [0, 1] and ok.retries == 2
    bad = rt.run([10.0, 10.0], {(0, a): "transient" for a in range(3)})
    assert bad.failed == {0: "failed 3 times"} and bad.completed == {1: 0}


def test_a_hang_costs_the_watchdog_time_then_retries() -> None:
    wd = Watchdog(deadline_ns=100.0, poll_ns=10.0)
    rt = Runtime(1, max_retries=1, watchdog=wd)
    base = rt.run([60.0]).makespan_ns
    hung = rt.run([60.0], {(0, 0): "hang"})
    assert hung.completed == {0: 0}
    assert hung.events[0][2] == Xid.GPU_STOPPED_PROCESSING
    assert hung.makespan_ns == pytest.approx(base + wd.detect_ns(rt.heartbeat_ns, 30.0))


def test_no_healthy_device_fails_everything_pending() -> None:
    rep = Runtime(3).run([1.0] * 6, {(0, 0): "link_down", (1, 0): "dbe", (2, 0): "fallen_off_bus"})
    assert rep.isolated == {0, 1, 2} and rep.completed == {}
    assert [e[2] for e in rep.events] == [Xid.NVLINK_ERROR, Xid.DBE_ECC, Xid.FALLEN_OFF_BUS]
    assert set(rep.failed) == set(range(6))
    assert set(rep.failed.values()) == {"no healthy device"}
    assert np.isclose(rep.makespan_ns, 0.0)
