"""Bad input gets a clear message, the rest is still graded, and no submission byte changes.

All submissions are graded in one ``a2s grade`` call (as a course's CI would), then a few are
graded alone to show the scores do not depend on their neighbours.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat
import pytest

from a2s.cli import main
from a2s.notebook import dumps
from a2s.syllabus import repo_root

pytestmark = pytest.mark.grader

ROOT = repo_root()
SOLUTION = ROOT / "solutions" / "00_orientation.ipynb"
LIMITS = ["--cell-timeout", "4", "--timeout", "240", "--memory-limit", "3072"]


def _variant(edit) -> str:
    nb = nbformat.read(SOLUTION, as_version=4)
    edit(nb)
    return dumps(nb)


def _cell(nb, cid: str):
    return next(c for c in nb.cells if c.get("id") == cid)


def _set(cid: str, source: str):
    def edit(nb) -> None:
        _cell(nb, cid).source = source

    return edit


def _delete(*cids: str):
    def edit(nb) -> None:
        nb.cells = [c for c in nb.cells if c.get("id") not in cids]

    return edit


_OWN_INTENSITY = (
    "def arithmetic_intensity(m, n, k, s):\n"
    "    return 2 * m * n * k / (s * (m * k + k * n + m * n))"
)


def _set_both(cid: str, source: str):
    """Break exercise ``cid`` and give 00.2 code that does not call the broken 00.1."""

    def edit(nb) -> None:
        _cell(nb, cid).source = source
        _cell(nb, "ex-00-2").source = _OWN_INTENSITY

    return edit


def _checks_to_pass(nb) -> None:
    for c in nb.cells:
        if "check" in c.metadata.get("tags", []):
            c.source = "pass"


def _stub_with_checks_deleted(nb) -> None:
    _set("ex-00-1", "def matmul_flops(m, n, k):\n    return 0")(nb)
    _delete("check-00-1", "check-00-2")(nb)


SUBMISSIONS: dict[str, str | bytes] = {
    "not_json.ipynb": b"this is not json {",
    "not_notebook.ipynb": b'{"hello": "world"}',
    "empty.ipynb": b"",
    "unknown_lab.ipynb": _variant(lambda nb: nb.metadata.__setitem__("a2s", {"lab": "99"})),
    "deleted_exercise.ipynb": _variant(_delete("ex-00-2")),
    "checks_pass.ipynb": _variant(_checks_to_pass),
    "checks_deleted_wrong.ipynb": _variant(_stub_with_checks_deleted),
    "loops.ipynb": _variant(
        _set_both("ex-00-1", "def matmul_flops(m, n, k):\n    while True:\n        pass")
    ),
    "stubborn_loop.ipynb": _variant(
        _set_both(
            "ex-00-1",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        )
    ),
    "kills_kernel.ipynb": _variant(_set_both("ex-00-1", "import os\nos._exit(3)")),
    "memory_hog.ipynb": _variant(
        _set_both(
            "ex-00-1",
            "import numpy as np\nbig = np.ones(2 * 1024**3)\n"
            "def matmul_flops(m, n, k):\n    return 2 * m * n * k",
        )
    ),
    "calls_reference.ipynb": _variant(
        _set("ex-00-1", "from minitorch.hardware.costs import matmul_flops")
    ),
    "wrong_answer.ipynb": _variant(
        _set("ex-00-1", "def matmul_flops(m, n, k):\n    return m * n * k")
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict], dict]:
    folder = tmp_path_factory.mktemp("subs")
    for name, content in SUBMISSIONS.items():
        data = content.encode() if isinstance(content, str) else content
        (folder / name).write_bytes(data)
    (folder / "empty_dir").mkdir()
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.ipynb")}
    out = folder / "results.json"
    paths = [str(folder / n) for n in SUBMISSIONS] + [
        str(folder / "empty_dir"),
        str(folder / "gone.ipynb"),
    ]
    rc = main(
        ["grade", *paths, "--json", str(out), "--junit", str(folder / "r.xml"), "--quiet", *LIMITS]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    by_name = {Path(r["notebook"]).name: r for r in data["results"]}
    return folder, by_name, before


def _status(result: dict) -> dict[str, str]:
    return {e["id"]: e["status"] for e in result["exercises"]}


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("not_json.ipynb", "not valid JSON"),
        ("not_notebook.ipynb", "not a Jupyter notebook"),
        ("empty.ipynb", "empty"),
        ("unknown_lab.ipynb", "unknown lab"),
        ("empty_dir", "no .ipynb"),
        ("gone.ipynb", "no such file"),
    ],
)
def test_unreadable_input_gets_a_clear_error(graded, name: str, needle: str) -> None:
    _, results, _ = graded
    res = results[name]
    assert needle in res["error"]
    assert res["score"] == 0 and res["exercises"] == []


def test_every_submission_gets_a_result(graded) -> None:
    _, results, _ = graded
    assert set(results) == {*SUBMISSIONS, "empty_dir", "gone.ipynb"}


def test_deleted_exercise_is_missing_and_rest_graded(graded) -> None:
    res = graded[1]["deleted_exercise.ipynb"]
    assert _status(res) == {"00.1": "passed", "00.2": "missing"}
    assert res["score"] == 1


def test_edited_check_cells_change_nothing(graded) -> None:
    results = graded[1]
    assert results["checks_pass.ipynb"]["score"] == 3  # canonical checks ran, and passed
    wrong = results["checks_deleted_wrong.ipynb"]
    assert _status(wrong)["00.1"] == "failed"  # canonical checks ran, and caught it


def test_infinite_loop_times_out_and_later_exercise_is_graded(graded) -> None:
    for name in ("loops.ipynb", "stubborn_loop.ipynb"):
        res = graded[1][name]
        assert _status(res) == {"00.1": "timeout", "00.2": "passed"}, name
        assert res["score"] == 2


def test_kernel_death_is_an_error_with_reason(graded) -> None:
    res = graded[1]["kills_kernel.ipynb"]
    assert _status(res) == {"00.1": "error", "00.2": "passed"}
    assert "kernel died" in res["exercises"][0]["message"]


def test_memory_limit_is_an_error_with_reason(graded) -> None:
    res = graded[1]["memory_hog.ipynb"]
    assert _status(res)["00.1"] == "error"
    assert "memory" in res["exercises"][0]["message"]
    assert _status(res)["00.2"] == "passed"


def test_calling_the_reference_fails_and_says_so(graded) -> None:
    res = graded[1]["calls_reference.ipynb"]
    assert _status(res)["00.1"] == "failed"
    assert "reference" in res["exercises"][0]["message"]


def test_submission_bytes_never_change(graded) -> None:
    folder, _, before = graded
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.ipynb")}
    assert after == before


def test_junit_lists_every_exercise(graded) -> None:
    folder = graded[0]
    text = (folder / "r.xml").read_text()
    expected = sum(len(r["exercises"]) + bool(r["error"]) for r in graded[1].values())
    assert text.count("<testcase") == expected  # unreadable files show up as an error case


def test_scores_do_not_depend_on_neighbours(graded, tmp_path: Path) -> None:
    folder, results, _ = graded
    for name in ("wrong_answer.ipynb", "kills_kernel.ipynb"):
        out = tmp_path / f"{name}.json"
        assert main(["grade", str(folder / name), "--json", str(out), "--quiet", *LIMITS]) == 0
        alone = json.loads(out.read_text())["results"][0]
        assert _status(alone) == _status(results[name])
        assert alone["score"] == results[name]["score"]
