"""The benchmark registry and ``a2s bench``: figures with a name, value, unit and anchor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minitorch.bench import alternate, load, median_time, one_thread
from minitorch.course.cli import main


def test_every_registered_lab_exists() -> None:
    from minitorch.course.syllabus import find_lab

    for lab in load():
        find_lab(lab)


def test_alternate_and_median_return_positive_seconds() -> None:
    a, b = alternate(lambda: sum(range(100)), lambda: sum(range(10)), repeats=3)
    assert a > 0 and b > 0
    assert median_time(lambda: None, repeats=3) >= 0


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
