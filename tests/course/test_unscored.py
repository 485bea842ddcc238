"""``a2s grade`` skips the cells that score nothing and that no check needs."""

from __future__ import annotations

import nbformat

from a2s.build import grading_base
from a2s.notebook import read_notebook
from a2s.syllabus import repo_root
from a2s.unscored import SKIPPED, skip_unscored, unscored_cells


def _nb(*cells: tuple[str, str, list[str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for cid, source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"], cell.metadata["tags"] = cid, tags
        nb.cells.append(cell)
    return nb


def test_what_a_check_needs_stays_and_the_rest_is_skipped():
    nb = _nb(
        ("setup", "import numpy as np\nmodel = {'w': 1}", ["setup"]),
        ("demo-const", "SCALE = 3", []),  # read inside the learner's function body
        ("demo-train", "model['w'] = 2", []),  # changes what the check reads, in place
        ("demo-plain", "x = np.ones(3)\nprint(x.sum())", []),  # nothing later reads x
        ("ex-99-1", "def f(a):\n    return a * SCALE", ["exercise"]),
        ("check-99-1", "lab99.check_f(f, model)", ["check"]),
        ("exp-data", "runs = [f(i) for i in range(3)]", ["experiment"]),
        ("exp-plot", "plt.plot(runs)", ["experiment"]),  # needs exp-data, but is skipped
        ("gpu-cell", "import torch", ["gpu", "experiment"]),
    )
    assert unscored_cells(nb) == ["demo-plain", "exp-data", "exp-plot"]
    assert skip_unscored(nb) == ["demo-plain", "exp-data", "exp-plot"]
    assert [c.source == SKIPPED for c in nb.cells] == [False] * 3 + [True] + [False] * 2 + [
        True,
        True,
        False,
    ]


def test_last_moves_them_behind_every_other_cell_in_order():
    nb = _nb(
        ("setup", "x = 1", ["setup"]),
        ("exp-a", "a = x", ["experiment"]),
        ("ex-99-1", "def f():\n    return 1", ["exercise"]),
        ("exp-b", "print(a)", ["experiment"]),
        ("check-99-1", "lab99.check_f(f)", ["check"]),
    )
    skip_unscored(nb, last=True)
    assert [c.id for c in nb.cells] == ["setup", "ex-99-1", "check-99-1", "exp-a", "exp-b"]
    assert all(c.source != SKIPPED for c in nb.cells)


def test_lab_09s_training_run_is_skipped_and_every_lab_keeps_its_checks():
    root = repo_root()
    nine = grading_base(read_notebook(root / "solutions" / "09_transformer.ipynb"))
    assert "exp-train" in unscored_cells(nine)
    for path in sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb")):
        nb = read_notebook(path)
        skipped = set(unscored_cells(nb))
        roles = {"setup", "exercise", "check"}
        kept = {c.id for c in nb.cells if roles & set(c.metadata.get("tags", []))}
        assert not skipped & kept, path.name
