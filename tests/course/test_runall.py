"""Run All reaches the end of a stub: check and experiment cells go on, and a cell that needs
an unwritten exercise says which in one line (``a2s.checks.runall``)."""

from __future__ import annotations

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from a2s.build import RUN_ON
from a2s.checks import runall
from a2s.notebook import read_notebook, tags
from a2s.syllabus import repo_root

ROOT = repo_root()


def test_student_copies_go_on_past_every_cell_but_setup_and_exercises():
    for path in sorted((ROOT / "labs").glob("[0-9][0-9]_*.ipynb")):
        for cell in read_notebook(path).cells:
            if cell.cell_type != "code":
                continue
            on = RUN_ON in tags(cell)
            assert on == (not {"setup", "exercise"} & set(tags(cell))), (path.name, cell.id)
    for path in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        assert not any(RUN_ON in tags(c) for c in read_notebook(path).cells), path.name


@pytest.fixture
def shell(capsys):
    ip = InteractiveShell.instance()
    runall._STOPPED.clear()
    ip._a2s_runall = False
    assert runall.install()
    yield ip
    ip.set_custom_exc((), None)
    ip.events.unregister("post_run_cell", runall._finished)
    InteractiveShell.clear_instance()


def _run(ip, capsys, source: str) -> str:
    ip.run_cell(source, store_history=True)
    return capsys.readouterr().out


def test_a_stopped_cell_and_what_depends_on_it_say_one_line(shell, capsys):
    _run(shell, capsys, 'def ring(x):\n    raise NotImplementedError("Exercise 21.1: write it")')
    out = _run(shell, capsys, "runs = {}\nfor k in range(2):\n    runs[k] = ring(k)")
    assert out.strip() == runall.needs_line("21.1")
    out = _run(shell, capsys, "total = sum(runs.values()) / len(runs)")  # ZeroDivisionError
    assert out.strip() == runall.unset_line("runs", "21.1", defined=True)
    out = _run(shell, capsys, "y = ring(3)")
    out = _run(shell, capsys, "print(y + 1)")  # a NameError: never set
    assert out.strip() == runall.unset_line("y", "21.1")
    _run(shell, capsys, "runs = {0: 1.0}")  # finished now: errors show as usual again
    out = _run(shell, capsys, "runs[5]")
    assert "KeyError" in out and "⏭" not in out


def test_other_errors_and_the_checks_messages_are_unchanged(shell, capsys):
    out = _run(shell, capsys, "1 / 0")
    assert "ZeroDivisionError" in out and "⏭" not in out
    out = _run(shell, capsys, 'raise NotImplementedError("not a stub")')
    assert "NotImplementedError" in out and "⏭" not in out
    out = _run(
        shell,
        capsys,
        "from a2s.checks.errors import CheckFailure\n"
        "raise CheckFailure('Exercise 21.1: case p=3 differs')",
    )
    assert "✘ check failed" in out and "case p=3" in out


def test_run_all_of_a_stub_reaches_the_last_cell():
    from nbclient import NotebookClient

    nb = read_notebook(ROOT / "labs" / "21_ring_allreduce.ipynb")
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(ROOT)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "Run All stopped before the last cell"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert errors and all(o.ename in {"CheckFailure", "NotImplementedError"} for o in errors)
    assert not any("Traceback" in "".join(o.traceback) for o in errors)
    assert nbformat.validate(nb) is None
