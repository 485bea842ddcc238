"""The benchmark registry and ``a2s bench``: figures with a name, value, unit and anchor."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import a2s.bench as bench
from a2s.bench import alternate, load, median_time, one_thread
from a2s.cli import main


def test_every_registered_lab_exists() -> None:
    from a2s.syllabus import find_lab

    for lab in load():
        find_lab(lab)


class FakeClock:
    """``time.perf_counter`` stand-in: each timed call advances it by its next duration."""

    def __init__(self, durations: dict[str, list[float]]) -> None:
        self.now, self.durations, self.calls = 100.0, durations, []

    def __call__(self) -> float:
        return self.now

    def work(self, name: str):
        def fn() -> None:
            self.calls.append(name)
            self.now += self.durations[name].pop(0)

        return fn


def test_median_time_is_the_median_of_the_timed_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock({"f": [50.0, 5.0, 1.0, 3.0]})  # the warm-up (50 s) is not timed
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    assert median_time(clock.work("f"), repeats=3, warmup=1) == pytest.approx(3.0)
    assert clock.calls == ["f"] * 4


def test_alternate_interleaves_and_keeps_sides_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock({"a": [9.0, 2.0, 4.0, 3.0], "b": [9.0, 0.5, 0.1, 0.3]})
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    a, b = alternate(clock.work("a"), clock.work("b"), repeats=3, warmup=1)
    assert (a, b) == (pytest.approx(3.0), pytest.approx(0.3))
    assert clock.calls == ["a", "b"] * 4  # alternated, warm-up first


def test_median_time_measures_real_time() -> None:
    assert median_time(lambda: time.sleep(0.002), repeats=3, warmup=0) >= 0.002


def test_register_keys_by_module_and_checks_the_syllabus() -> None:
    from a2s.syllabus import LABS

    numbers = {lab.number for lab in LABS}
    benched = load()
    assert set(benched) <= numbers
    for lab, fns in benched.items():
        assert all(fn.__module__ == f"a2s.bench.lab{lab}" for fn in fns), lab
    with pytest.raises(ValueError, match=r"a2s\.bench\.labNN"):
        bench.register(lambda: [])  # defined outside a a2s.bench.labNN module


def test_one_thread_pins_torch_and_restores() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_cli_bench_writes_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", "00", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())["figures"]
    assert figures and all({"name", "value", "unit", "anchor", "lab"} <= set(f) for f in figures)
    assert "[00]" in capsys.readouterr().out
