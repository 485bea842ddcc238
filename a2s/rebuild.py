"""Rebuild a submission from the canonical lab, and take out what hung or crashed.

Only the student's exercise cells are taken from a submission (matched by cell id, else by
``metadata.a2s.exercise``); every other cell comes from the course's solution notebook with
outputs cleared and exercises stubbed (:func:`a2s.build.grading_base`).
An instructor's hidden checks are added after the check cells they extend.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from a2s.build import grading_base
from a2s.notebook import Exercise, a2s_meta, tags
from a2s.records import CellRecord

__all__ = ["add_extra_checks", "culprit_of", "merge", "neutralise"]


def merge(base: NotebookNode, submission: NotebookNode, exs: list[Exercise]) -> set[str]:
    """Put the student's exercise cells into ``base``; return the ids of missing exercises."""
    by_id = {c.get("id"): c for c in submission.cells if c.get("cell_type") == "code"}
    by_ex = {
        str(a2s_meta(c).get("exercise")): c
        for c in submission.cells
        if c.get("cell_type") == "code" and "exercise" in tags(c)
    }
    cells = {c.get("id"): c for c in base.cells}
    missing = set()
    for ex in exs:
        student = by_id.get(ex.cell_id) or by_ex.get(ex.id)
        if student is None:
            missing.add(ex.id)
        else:
            cells[ex.cell_id].source = student.source
    return missing


def neutralise(
    nb: NotebookNode, cell_id: str, solution: NotebookNode, exercise: str | None
) -> None:
    """Replace a cell that hung or crashed: an exercise by its stub, anything else by a no-op."""
    stubbed = {c.get("id"): c.source for c in grading_base(solution).cells}
    for cell in nb.cells:
        if cell.get("id") == cell_id:
            if exercise is not None and "exercise" in tags(cell):
                cell.source = stubbed[cell_id]
            else:
                cell.source = "# removed by the grader: this cell hung or crashed the kernel"
    if exercise is not None:  # the exercise cell itself, when the check cell was the culprit
        for cell in nb.cells:
            if "exercise" in tags(cell) and str(a2s_meta(cell).get("exercise")) == exercise:
                cell.source = stubbed[cell.get("id")]


_CHECK_CALL = re.compile(r"^(lab\d\d)\.(check_\w+)\((.*)\)\s*$")


def add_extra_checks(base: NotebookNode, lab: str, folder: Path) -> int:
    """After each check cell, call the instructor's hidden check of the same name, if any.

    ``folder/labNN.py`` defines graders (``@grader("NN.k")``) named like the course's
    (``check_matmul_flops``); each runs on the same arguments, and both must pass.
    """
    source = folder / f"lab{lab}.py"
    if not source.is_file():
        return 0
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    added, cells = 0, []
    for cell in base.cells:
        cells.append(cell)
        match = _CHECK_CALL.match(cell.source.split("\n")[0]) if "check" in tags(cell) else None
        if match and match.group(2) in names:
            extra = nbformat.v4.new_code_cell(
                f'__import__("a2s_extra.lab{lab}", fromlist=["_"]).{match.group(2)}'
                f"({match.group(3)})"
            )
            extra["id"] = f"extra-{cell['id']}"
            extra.metadata = {"tags": ["check"], "a2s": dict(a2s_meta(cell))}
            cells.append(extra)
            added += 1
    base.cells = cells
    return added


def culprit_of(records: dict[str, CellRecord], order: list[str]) -> str | None:
    """The cell that hung without recovery or killed the kernel, if any."""
    for i, cid in enumerate(order):
        rec = records[cid]
        later_dead = any(records[c].kernel_dead for c in order[i + 1 :])
        if rec.kernel_dead or (rec.timeout and later_dead):
            return cid
    return None
