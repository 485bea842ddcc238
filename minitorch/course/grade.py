"""Grade submissions: rebuild each from the canonical lab, run it, score its exercises.

Only the student's exercise cells are taken from a submission (matched by cell id, else by
``metadata.a2s.exercise``); every other cell comes from the course's solution notebook with
outputs cleared and exercises stubbed, so an edited or deleted check cell changes nothing.
An exercise that hangs or kills the kernel is marked and replaced by its stub, and the
notebook runs again so the exercises after it are still graded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from minitorch.course.build import grading_base
from minitorch.course.notebook import (
    Exercise,
    NotebookError,
    a2s_meta,
    exercises,
    lab_of,
    read_notebook,
    tags,
)
from minitorch.course.runner import RunOptions, run_notebook
from minitorch.course.scoring import exercise_status
from minitorch.course.syllabus import Lab, repo_root

__all__ = ["ExerciseResult", "SubmissionResult", "expand_paths", "grade_paths", "grade_submission"]


@dataclass(slots=True)
class ExerciseResult:
    id: str
    title: str
    points: float
    max_points: float
    status: str  # passed | failed | error | timeout | missing
    message: str


@dataclass(slots=True)
class SubmissionResult:
    notebook: str
    lab: str | None
    score: float = 0.0
    max_score: float = 0.0
    error: str | None = None
    exercises: list[ExerciseResult] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def expand_paths(paths: list[str]) -> list[tuple[str, str | None]]:
    """Turn arguments into ``(notebook, problem)``; folders give their notebooks, sorted."""
    items: list[tuple[str, str | None]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if not found:
                items.append((raw, f"{raw}: folder contains no .ipynb notebooks"))
            items.extend((str(p), None) for p in found)
        elif not path.exists():
            items.append((raw, f"{raw}: no such file or folder"))
        else:
            items.append((raw, None))
    return items


def _merge(base: NotebookNode, submission: NotebookNode, exs: list[Exercise]) -> set[str]:
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


def _neutralise(
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


def _culprit(records: dict[str, dict], order: list[str]) -> str | None:
    """The cell that hung without recovery or killed the kernel, if any."""
    for i, cid in enumerate(order):
        rec = records[cid]
        later_dead = any(records[c]["kernel_dead"] for c in order[i + 1 :])
        if rec["kernel_dead"] or (rec["timeout"] and later_dead):
            return cid
    return None


def grade_submission(
    path: str,
    opts: RunOptions,
    root: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SubmissionResult:
    """Grade one notebook file; problems become ``error`` on the result, never exceptions."""
    result = SubmissionResult(notebook=path, lab=None)
    try:
        submission = read_notebook(Path(path))
        lab: Lab = lab_of(submission, path)
        result.lab = lab.number
        solution_path = lab.solution_path(root or repo_root())
        solution = read_notebook(solution_path)
    except (NotebookError, FileNotFoundError) as exc:
        result.error = str(exc)
        return result
    exs = exercises(solution)
    base = grading_base(solution)
    missing = _merge(base, submission, exs)
    fixed: dict[str, tuple[str, str]] = {}  # exercise -> (status, message) decided by a rerun
    n_code = sum(c.cell_type == "code" for c in base.cells)
    deadline = time.monotonic() + opts.timeout  # one budget for the notebook, reruns included
    for _attempt in range(len(exs) + 2):
        left = RunOptions(
            opts.cell_timeout, max(1.0, deadline - time.monotonic()), opts.memory_limit_mb
        )
        run = run_notebook(base, left, (lambda n: progress(n, n_code)) if progress else None)
        culprit = _culprit(run.records, run.order)
        if culprit is None or run.timed_out:
            break
        rec = run.records[culprit]
        exercise = rec.get("exercise")
        status = "timeout" if rec["timeout"] else "error"
        why = (
            f"exceeded the cell timeout of {opts.cell_timeout:g} s and could not be interrupted"
            if rec["timeout"]
            else rec["message"] or "the kernel died"
        )
        if exercise is not None:
            fixed.setdefault(str(exercise), (status, why))
        _neutralise(base, culprit, solution, None if exercise is None else str(exercise))
    if run.timed_out:
        result.error = f"grading stopped: the notebook exceeded --timeout={opts.timeout:g} s"
    setup = [run.records[c.id] for c in base.cells if "setup" in tags(c) and c.id in run.records]
    bad = next((r for r in setup if r["outcome"] == "failed"), None)
    if bad is not None and not result.error:
        why = f"{bad['ename']}: {bad['evalue']}" if bad["ename"] else bad["message"]
        result.error = f"the course's setup cell failed, so nothing could be graded ({why}); "
        result.error += "run `a2s doctor`, or raise --memory-limit if it says MemoryError"
    for ex in exs:
        status, message = exercise_status(ex, run.records, missing, fixed, run.timed_out)
        if bad is not None and status != "passed":
            status, message = "error", "not graded: the setup cell failed (see the error above)"
        points = ex.points if status == "passed" else 0.0
        result.exercises.append(ExerciseResult(ex.id, ex.title, points, ex.points, status, message))
    result.score = sum(e.points for e in result.exercises)
    result.max_score = sum(e.max_points for e in result.exercises)
    return result


def grade_paths(
    paths: list[str], opts: RunOptions, root: Path | None = None, progress=None
) -> list[SubmissionResult]:
    """Grade every notebook named by ``paths`` (files or folders), one result each."""
    results = []
    for nb_path, problem in expand_paths(paths):
        if problem is not None:
            results.append(SubmissionResult(notebook=nb_path, lab=None, error=problem))
            continue
        results.append(grade_submission(nb_path, opts, root, progress))
    return results
