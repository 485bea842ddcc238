"""The sealed kernel's parts that need no kernel: keys, verdict lines, cell sealing, sandbox."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from pathlib import Path

import nbformat
import pytest

from a2s.grade import grade_paths
from a2s.notebook import Exercise, read_notebook
from a2s.rebuild import add_extra_checks
from a2s.records import CellRecord
from a2s.runner import RunOptions, _seal_cells
from a2s.sandbox import sandboxed
from a2s.scoring import exercise_status
from a2s.syllabus import repo_root
from a2s.verdicts import Seal, Verdicts, new_seal, read_verdicts

ROOT = repo_root()


def _line(key: bytes, seq: int, exercise: str, status: str, message: str = "m") -> str:
    body = json.dumps([seq, exercise, status, message])
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"v": body, "mac": mac})


def test_the_seal_holds_a_fresh_key_readable_by_its_owner_only(tmp_path: Path) -> None:
    a = new_seal(tmp_path, 4096, ["numpy"], {"setup": "import numpy"})
    config = json.loads(a.config.read_text())
    assert bytes.fromhex(config["key"]) == a.key and len(a.key) == 32
    assert config["cells"] == {"setup": "import numpy"}
    assert a.config.stat().st_mode & 0o077 == 0
    b = new_seal(tmp_path / ".." / tmp_path.name, 4096, [])
    assert b.key != a.key


def test_only_signed_lines_in_sequence_count(tmp_path: Path) -> None:
    seal = new_seal(tmp_path, 4096, [])
    other = b"x" * 32
    lines = [
        _line(seal.key, 1, "00.1", "passed"),
        _line(other, 2, "00.2", "passed"),  # signed with another key: forged
        "not json at all",
        json.dumps({"v": json.dumps([2, "00.3", "passed", "m"]), "mac": "00"}),
        _line(seal.key, 2, "00.4", "failed"),
    ]
    seal.verdicts.write_text("\n".join(lines) + "\n")
    got = read_verdicts(seal)
    assert set(got.by_exercise) == {"00.1", "00.4"}
    assert got.by_exercise["00.1"].status == "passed"
    assert sorted(got.forged) == ["00.2", "00.3", "?"]


def test_a_removed_line_breaks_the_sequence(tmp_path: Path) -> None:
    seal = new_seal(tmp_path, 4096, [])
    seal.verdicts.write_text(
        _line(seal.key, 1, "00.1", "passed") + "\n" + _line(seal.key, 3, "00.2", "passed") + "\n"
    )
    assert read_verdicts(seal).forged == ["00.2"]


def test_a_failure_sticks_and_every_check_must_pass(tmp_path: Path) -> None:
    seal = new_seal(tmp_path, 4096, [])
    seal.verdicts.write_text(
        "\n".join(
            [
                _line(seal.key, 1, "00.1", "failed", "hidden check"),
                _line(seal.key, 2, "00.1", "passed"),
                _line(seal.key, 3, "00.2", "passed"),
                _line(seal.key, 4, "00.2", "tampered", "x was replaced"),
            ]
        )
    )
    got = read_verdicts(seal)
    assert got.by_exercise["00.1"].message == "hidden check"
    assert got.by_exercise["00.2"].status == "tampered"


def _records(check_outcome: str = "passed") -> dict[str, CellRecord]:
    return {
        "ex-00-1": CellRecord("ex-00-1", "00.1", ["exercise"]),
        "check-00-1": CellRecord(
            "check-00-1", "00.1", ["check"], check_outcome, stdout="✔ Exercise 00.1 passed: x"
        ),
    }


EX = Exercise("00.1", "t", "task", 1.0, "ex-00-1", "check-00-1", "architecture", "depth", ["x"])


def test_a_passing_cell_without_a_signed_verdict_is_tampering() -> None:
    status, message = exercise_status(EX, _records(), set(), {}, False, Verdicts())
    assert status == "tampered" and "without the course's check" in message
    # without the seal (unit use), the record decides as before
    assert exercise_status(EX, _records(), set(), {}, False)[0] == "passed"


def test_the_signed_message_wins_over_what_the_kernel_displayed(tmp_path: Path) -> None:
    seal = new_seal(tmp_path, 4096, [])
    seal.verdicts.write_text(_line(seal.key, 1, "00.1", "failed", "[case] got 3") + "\n")
    status, message = exercise_status(EX, _records("failed"), set(), {}, False, read_verdicts(seal))
    assert (status, message) == ("failed", "[case] got 3")
    seal.verdicts.write_text(_line(seal.key, 1, "00.1", "tampered", "gc.get_objects()") + "\n")
    status, message = exercise_status(EX, _records(), set(), {}, False, read_verdicts(seal))
    assert status == "tampered" and "gc.get_objects()" in message


def test_course_cells_are_sealed_and_exercise_cells_are_not() -> None:
    nb = read_notebook(ROOT / "solutions" / "00_orientation.ipynb")
    sealed, cells = _seal_cells(nb)
    for before, after in zip(nb.cells, sealed.cells, strict=True):
        if before.cell_type != "code" or not before.source.strip():
            assert after.source == before.source
        elif "exercise" in before.metadata.get("tags", []):
            assert after.source == before.source and before.id not in cells
        else:
            assert after.source == f"__a2s_cell__({before.id!r})"
            assert cells[before.id] == before.source


def test_extra_checks_follow_the_check_cells_they_extend(tmp_path: Path) -> None:
    (tmp_path / "lab00.py").write_text(
        "from a2s.checks.core import grader\n\n"
        "@grader('00.1')\ndef check_matmul_flops(student):\n    return 'hidden'\n"
    )
    nb = read_notebook(ROOT / "solutions" / "00_orientation.ipynb")
    assert add_extra_checks(nb, "00", tmp_path) == 1
    ids = [c.id for c in nb.cells]
    extra = nb.cells[ids.index("check-00-1") + 1]
    assert extra.id == "extra-check-00-1" and "check_matmul_flops(matmul_flops)" in extra.source
    assert add_extra_checks(nb, "01", tmp_path) == 0  # no lab01.py: nothing added


def test_the_sandbox_hides_the_batch_but_never_the_interpreter(tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "a.ipynb").write_text("{}")
    out = tmp_path / "out.json"
    out.write_text("{}")
    course = tmp_path / "course"
    hide = [batch, batch / "a.ipynb", out, Path(sys.prefix)]
    command = sandboxed(["true"], tmp_path / "run", course, hide, "namespaces")
    script = command[command.index("-ec") + 1]
    assert f"tmpfs '{batch}'" in script and "a.ipynb" not in script  # inside a hidden folder
    assert f"/dev/null '{out}'" in script
    assert f"tmpfs '{Path(sys.prefix).resolve()}'" not in script
    assert script.rstrip().endswith('exec "$@"') and command[-1] == "true"
    assert sandboxed(["true"], tmp_path, course, [batch], "none") == ["true"]


@pytest.mark.grader
def test_hidden_checks_and_a_replayed_seed(tmp_path: Path) -> None:
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "lab00.py").write_text(
        "from a2s.checks.core import assert_true, grader\n\n"
        "@grader('00.1')\ndef check_matmul_flops(student):\n"
        "    assert_true(student(1000, 999, 7) == 2 * 1000 * 999 * 7, 'hidden: big shapes')\n"
        "    return 'hidden'\n"
    )
    nb = json.loads((ROOT / "solutions" / "00_orientation.ipynb").read_text())
    for cell in nb["cells"]:
        if cell.get("id") == "ex-00-1":  # right on small shapes only
            cell["source"] = "def matmul_flops(m, n, k):\n    return 2 * m * n * k * (m < 500)\n"
    path = tmp_path / "small_only.ipynb"
    path.write_text(json.dumps(nb))
    opts = RunOptions(cell_timeout=30, timeout=120, seed=1234)
    (plain,) = grade_paths([str(path)], opts, ROOT)
    assert plain.score == 3 and plain.seed == 1234
    hidden_dir = str(tmp_path / "extra")
    extra = RunOptions(cell_timeout=30, timeout=120, seed=1234, extra_checks=hidden_dir)
    (hidden,) = grade_paths([str(path)], extra, ROOT)
    assert hidden.score == 2 and hidden.exercises[0].message == "hidden: big shapes"
    assert nbformat.reads(path.read_text(), 4).cells  # the submission is untouched and valid


_HOOK_SCRIPT = r"""
# run as a script: its functions are the "student's" (module __main__), as in a notebook
import json, os, sys, threading
import numpy as np
import a2s.checks.lab00 as lab00
import a2s.checks.lab01 as lab01
from minitorch.comm.simworld import SimWorld
from a2s.sealed import _install

key, path = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
_install({"key": key, "verdicts": path, "preload": ["a2s.checks.lab00",
          "a2s.checks.lab01", "minitorch.comm.simworld"]}, fd)
seen = {}

def run(label, check, fn):
    try:
        check(fn)
        seen[label] = "passed"
    except BaseException as exc:
        seen[label] = f"{type(exc).__name__}: {exc}"[:300]

def typed(m, n, k):  # typing and collections read their caller's frame: on the student's behalf
    from typing import NamedTuple
    import collections
    Shape = NamedTuple("Shape", [("m", int), ("n", int), ("k", int)])
    Pair = collections.namedtuple("Pair", "a b")
    return 2 * Shape(m, n, k).m * n * Pair(k, 0).a

def peek(m, n, k):  # reads the grader's frame: vetoed, this exercise only
    try:
        sys._getframe(1).f_locals
    except RuntimeError:
        pass
    return 2 * m * n * k

def fsum(x):
    import math
    return np.float32(math.fsum(x.tolist()))

matmul_flops = lambda m, n, k: 2 * m * n * k  # noqa: E731
run("1 typed", lab00.check_matmul_flops, typed)
run("2 peek", lab00.check_matmul_flops, peek)
run("3 honest after peek", lab00.check_arithmetic_intensity,
    lambda m, n, k, b: matmul_flops(m, n, k) / (b * (m * k + k * n + m * n)))
run("4 fsum", lab01.check_kahan_sum, fsum)

def kahan(x):
    s = c = np.float32(0.0)
    for v in x:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return s

from a2s.checks.core import guarded
try:  # a forbidden C function of numpy (as in lab 13): a forbidden call, nothing else
    guarded(lambda n: np.zeros(n), "13.1", (), forbid=("torch", "numpy:zeros"))(3)
    seen["4b zeros"] = "passed"
except BaseException as exc:
    seen["4b zeros"] = f"{type(exc).__name__}: {exc}"[:300]
run("5 honest after fsum", lab01.check_kahan_sum, kahan)

# a rank thread started by course code (SimWorld.run): its caller's frame is the course's
stolen = []
def rank(comm, x):
    try:
        stolen.append(sys._getframe(1).f_locals.get("args"))
    except RuntimeError as exc:
        stolen.append(str(exc))
    return x
SimWorld(2).run(rank, [1, 2], per_rank=True)
seen["6 rank frame"] = stolen

# a forked child keeps the rules and cannot sign a verdict
pid = os.fork()
if pid == 0:
    try:
        lab00.check_matmul_flops(lambda m, n, k: 2 * m * n * k)
        code = 0
    except BaseException:
        code = 3
    os._exit(code)
_, status = os.waitpid(pid, 0)
seen["7 child exit"] = os.waitstatus_to_exitcode(status)
print(json.dumps(seen))
"""


def test_the_hook_judges_each_exercise_alone_on_every_thread_and_in_a_child(
    tmp_path: Path,
) -> None:
    """The audit hook itself, in a child interpreter (it cannot be removed once installed):
    frames read for the student (typing, namedtuple) pass; a vetoed frame read taints its
    own exercise only; a forbidden C call is a forbidden call, and the next check passes;
    a rank thread started by course code cannot read its caller's frame; a forked child
    keeps the rules and signs no verdict."""
    import os
    import subprocess

    key = os.urandom(32)
    script, verdicts = tmp_path / "student.py", tmp_path / "verdicts.jsonl"
    script.write_text(_HOOK_SCRIPT)
    out = subprocess.run(
        [sys.executable, str(script), key.hex(), str(verdicts)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=True,
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["1 typed"] == "passed" and seen["3 honest after peek"] == "passed"
    assert seen["4 fsum"].startswith("ForbiddenCallError: your code called `math:fsum`")
    assert seen["4b zeros"].startswith("ForbiddenCallError: your code called `numpy:zeros`")
    assert seen["5 honest after fsum"] == "passed"
    assert (
        seen["6 rank frame"]
        == ["a2s grader: frame access from code under check is not allowed while grading"] * 2
    )
    assert seen["7 child exit"] == 3  # its check raised: no verdict from a child
    got = read_verdicts(Seal(key, tmp_path / "seal.json", verdicts))
    assert got.forged == []
    statuses = [json.loads(json.loads(ln)["v"])[1:3] for ln in verdicts.read_text().splitlines()]
    assert statuses == [
        ["00.1", "passed"],
        ["00.1", "tampered"],
        ["00.2", "passed"],
        ["01.4", "failed"],
        ["01.4", "passed"],
    ]
