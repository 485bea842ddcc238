"""Failure detection: the heartbeat monitor, and one spawn of gloo ranks (dead, hung, slow)."""

from __future__ import annotations

import importlib.util

import pytest

from minitorch.elastic.detect import HeartbeatMonitor, run_detection

pytestmark = pytest.mark.lab32


def test_monitor_names_the_silent_ranks_only() -> None:
    mon = HeartbeatMonitor(4, deadline=1.0, start=0.0)
    for t in (0.5, 1.0, 1.5):
        mon.beat(0, int(t * 2), t)
        mon.beat(3, int(t * 2), t)
    mon.beat(1, 1, 0.4)
    assert mon.failed(1.2) == [2]  # rank 2 never beat since 0.0
    assert mon.failed(1.6) == [1, 2]
    assert mon.failed(1.6, exclude=[2]) == [1]
    assert mon.failed(2.5) == [1, 2]  # ranks 0, 3 last beat at 1.5: within the deadline
    mon.beat(1, 0, 0.1)  # a late, older beat changes nothing
    assert mon.last[1] == (1, 0.4)


def test_monitor_behind_is_the_collective_timeout_view() -> None:
    mon = HeartbeatMonitor(3, deadline=1.0)
    mon.beat(0, 5, 1.0)
    mon.beat(1, 4, 1.0)
    mon.beat(2, 5, 1.0)
    assert mon.behind(5) == [1] and mon.behind(5, exclude=[1]) == []


def test_failures_must_not_be_planted_on_the_store_host() -> None:
    with pytest.raises(ValueError):
        run_detection(world=2, dead=(0,), hung=())


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")
def test_dead_and_hung_ranks_found_within_the_deadline_slow_rank_not_named() -> None:
    deadline = 1.0
    got = run_detection(
        world=4, dead=(1,), hung=(2,), slow=(3,), deadline=deadline, slow_factor=6.0, step_s=0.05
    )
    assert got["errors"] == {}, got["errors"]
    assert sorted(got["reports"]) == [0, 3]  # both survivors, the slow one included, report
    for rank, rep in got["reports"].items():
        assert rep["failed"] == [1, 2], rep  # named; slow rank 3 (0.3 s steps) is not
        assert rep["how"].startswith("heartbeat") and rep["step"] == 3
        for r in (1, 2):
            assert 0.5 * deadline < rep["latency"][r] < deadline + 10.0, (rank, rep)
    assert got["exitcodes"][0] == 0 and got["exitcodes"][3] == 0  # survivors exit cleanly
    assert got["exitcodes"][1] == -9  # the dead rank killed itself; the hung one was killed


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")
def test_without_heartbeats_the_collective_timeout_names_who_never_arrived() -> None:
    timeout = 2.0
    got = run_detection(
        world=3,
        dead=(),
        hung=(1,),
        slow=(2,),
        heartbeats=False,
        collective_timeout=timeout,
        slow_factor=6.0,
    )
    assert got["errors"] == {}, got["errors"]
    assert sorted(got["reports"]) == [0, 2]
    for rep in got["reports"].values():
        assert rep["failed"] == [1] and rep["how"] == "collective timeout", rep
        assert 0.8 * timeout <= rep["latency"][1] < timeout + 10.0, rep  # found at the timeout
    assert got["exitcodes"][0] == 0 and got["exitcodes"][2] == 0
