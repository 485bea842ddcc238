"""The tool report, perf stat's CSV, and the timing of the kernels next to BLAS."""

from __future__ import annotations

import shutil

import pytest

from minitorch.native import timing, toolchain
from tests.native.conftest import needs_gxx

PERF = """\
0.46,msec,task-clock,462968,100.00,0.390,CPUs utilized
50,,page-faults,462968,100.00,107.999,K/sec
<not supported>,,cycles,0,100.00,,
"""


def test_perf_stat_csv_is_parsed() -> None:
    assert toolchain.parse_perf_stat(PERF) == {
        "task-clock": 0.46,
        "page-faults": 50.0,
        "cycles": None,
    }


def test_the_report_names_every_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = toolchain.report()
    assert [t.name for t in tools] == list(toolchain.TOOLS)
    for t in tools:
        assert (t.path is None) == (shutil.which(t.name) is None) and t.purpose
    monkeypatch.setenv("PATH", "/nonexistent")
    assert all(t.path is None and t.version == "" for t in toolchain.report())
    assert toolchain.hardware_counters() == "perf is not installed"


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_software_events_count_where_perf_runs() -> None:
    counts = toolchain.perf_stat(["true"])
    if counts.get("page-faults") is None:
        pytest.skip("perf stat counts nothing here (perf_event_paranoid)")
    assert counts["page-faults"] > 0
    why = toolchain.hardware_counters()
    assert why is None or "hardware counters" in why or "does not run" in why


@needs_gxx
def test_matmul_times_cover_every_way() -> None:
    times = timing.matmul_times(24, tile=8, repeat=1)
    assert list(times) == ["c++ ijk", "c++ ikj", "c++ tiled 8", "numpy (BLAS)"]
    assert all(t > 0 for t in times.values())


def test_best_of_and_gflops() -> None:
    calls: list[int] = []
    assert timing.best_of(lambda: calls.append(1), repeat=2) >= 0 and len(calls) == 3
    assert timing.gflops(1000, 2.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="repeat"):
        timing.best_of(lambda: None, repeat=0)
