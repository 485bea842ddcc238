"""Grade submissions: rebuild each from the canonical lab, run it, score its exercises.

Only the student's exercise cells are taken from a submission (matched by cell id, else by
``metadata.a2s.exercise``); every other cell comes from the course's solution notebook with
outputs cleared and exercises stubbed, so an edited or deleted check cell changes nothing.
An exercise that hangs or kills the kernel is marked and replaced by its stub, and the
notebook runs again so the exercises after it are still graded.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

from a2s.batch import course_identity, file_sha256, run_each
from a2s.build import grading_base
from a2s.notebook import (
    NotebookError,
    exercises,
    lab_of,
    read_notebook,
    tags,
)
from a2s.rebuild import add_extra_checks, culprit_of, merge, neutralise
from a2s.runner import RunOptions, run_notebook
from a2s.scoring import exercise_status
from a2s.syllabus import Lab, repo_root
from a2s.unscored import skip_unscored

__all__ = [
    "ExerciseResult",
    "SubmissionResult",
    "expand_paths",
    "grade_paths",
    "grade_submission",
]


@dataclass(slots=True)
class ExerciseResult:
    id: str
    title: str
    points: float
    max_points: float
    status: str  # passed | failed | error | timeout | missing | tampered
    message: str
    seconds: float | None = None  # run time of its exercise and check cells, if known

    @classmethod
    def from_dict(cls, data: dict) -> ExerciseResult:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass(slots=True)
class SubmissionResult:
    notebook: str
    lab: str | None
    score: float = 0.0
    max_score: float = 0.0
    error: str | None = None
    exercises: list[ExerciseResult] = field(default_factory=list)
    # audit: what was graded, by which course, when, how (docs/grading.md)
    sha256: str | None = None  # of the submission file's bytes
    course_version: str | None = None  # the algo2silicon distribution
    course_commit: str | None = None  # git commit of the course checkout ("-dirty" if edited)
    graded_at: str | None = None  # UTC, ISO 8601, when grading of this submission began
    wall_time: float | None = None  # seconds spent grading it, reruns included
    seed: int | None = None  # the grading seed of the random cases
    isolation: str | None = None  # how the submission was isolated while it ran

    def as_dict(self) -> dict:
        data = asdict(self)
        data["exercises"] = data.pop("exercises")  # the long list last, audit fields first
        return data

    @classmethod
    def from_dict(cls, data: dict) -> SubmissionResult:
        """Read a result back from the JSON (unknown keys ignored, missing ones defaulted)."""
        kw = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        kw["exercises"] = [ExerciseResult.from_dict(e) for e in data.get("exercises", [])]
        return cls(**kw)


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
    missing = merge(base, submission, exs)
    if not opts.every_cell:
        skip_unscored(base, last=opts.unscored_last)
    if opts.extra_checks:
        add_extra_checks(base, lab.number, Path(opts.extra_checks))
    fixed: dict[str, tuple[str, str]] = {}  # exercise -> (status, message) decided by a rerun
    n_code = sum(c.cell_type == "code" for c in base.cells)
    deadline = time.monotonic() + opts.timeout  # one budget for the notebook, reruns included
    seed = opts.seed if opts.seed is not None else int.from_bytes(os.urandom(3), "little")
    for _attempt in range(len(exs) + 2):
        left = dataclasses.replace(opts, timeout=max(1.0, deadline - time.monotonic()), seed=seed)
        run = run_notebook(base, left, (lambda n: progress(n, n_code)) if progress else None)
        culprit = culprit_of(run.records, run.order)
        if culprit is None or run.timed_out:
            break
        rec = run.records[culprit]
        exercise = rec.exercise
        status = "timeout" if rec.timeout else "error"
        why = (
            f"exceeded the cell timeout of {opts.cell_timeout:g} s and could not be interrupted"
            if rec.timeout
            else rec.message or "the kernel died"
        )
        if exercise is not None:
            fixed.setdefault(str(exercise), (status, why))
        neutralise(base, culprit, solution, None if exercise is None else str(exercise))
    result.seed, result.isolation = run.seed, run.isolation
    if run.timed_out:
        result.error = f"grading stopped: the notebook exceeded --timeout={opts.timeout:g} s"
    setup = [run.records[c.id] for c in base.cells if "setup" in tags(c) and c.id in run.records]
    bad = next((r for r in setup if r.outcome == "failed"), None)
    if bad is not None and not result.error:
        why = f"{bad.ename}: {bad.evalue}" if bad.ename else bad.message
        result.error = f"the course's setup cell failed, so nothing could be graded ({why}); "
        result.error += "run `a2s doctor`, or raise --memory-limit if it says MemoryError"
    for ex in exs:
        status, message = exercise_status(
            ex, run.records, missing, fixed, run.timed_out, run.verdicts
        )
        if bad is not None and status != "passed":
            status, message = "error", "not graded: the setup cell failed (see the error above)"
        points = ex.points if status == "passed" else 0.0
        cells = [run.records.get(c) for c in (ex.cell_id, ex.check_cell_id or "")]
        seconds = round(sum(r.seconds for r in cells if r), 3)
        result.exercises.append(
            ExerciseResult(ex.id, ex.title, points, ex.points, status, message, seconds)
        )
    result.score = sum(e.points for e in result.exercises)
    result.max_score = sum(e.max_points for e in result.exercises)
    return result


def grade_paths(
    paths: list[str],
    opts: RunOptions,
    root: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    jobs: int = 1,
    previous: dict[str, dict] | None = None,
    on_start: Callable[[str], None] | None = None,
    on_done: Callable[[SubmissionResult, list[SubmissionResult], bool], None] | None = None,
) -> list[SubmissionResult]:
    """Grade every notebook named by ``paths`` (files or folders), one result each, in order.

    ``previous`` maps notebook paths to results of an earlier run: one whose ``sha256``
    matches the file now is kept, not regraded (``--resume``). ``jobs`` notebooks are graded
    at once, each in its own subprocess; ``progress(cells_done, cells)`` only when ``jobs``
    is 1. ``on_done(result, finished, reused)`` is called, one call at a time, as each
    result is ready, with every finished result so far in argument order.
    """
    root = root or repo_root()
    items = expand_paths(paths)
    # no kernel of the batch may see the batch: every submission and folder named is hidden
    opts = dataclasses.replace(opts, hide=(*opts.hide, *paths, *(p for p, _ in items)))
    version, commit = course_identity(root)
    results: list[SubmissionResult | None] = [None] * len(items)
    lock = threading.Lock()

    def finish(i: int, res: SubmissionResult, reused: bool) -> None:
        with lock:
            results[i] = res
            if on_done is not None:
                on_done(res, [r for r in results if r is not None], reused)

    todo = []
    for i, (nb_path, problem) in enumerate(items):
        sha = None if problem else file_sha256(nb_path)
        old = (previous or {}).get(nb_path)
        if sha is not None and old is not None and old.get("sha256") == sha:
            finish(i, SubmissionResult.from_dict(old), True)
        else:
            todo.append((i, nb_path, problem, sha))

    def work(k: int) -> None:
        i, nb_path, problem, sha = todo[k]
        began, t0 = datetime.now(UTC), time.monotonic()
        if on_start is not None:
            on_start(nb_path)
        if problem is not None:
            res = SubmissionResult(notebook=nb_path, lab=None, error=problem)
        else:
            try:
                res = grade_submission(nb_path, opts, root, progress if jobs <= 1 else None)
            except Exception as exc:  # a grader bug must not cost the rest of the class
                res = SubmissionResult(notebook=nb_path, lab=None)
                res.error = f"the grader failed on this submission: {type(exc).__name__}: {exc}"
        res.sha256, res.course_version, res.course_commit = sha, version, commit
        res.graded_at = began.strftime("%Y-%m-%dT%H:%M:%SZ")
        res.wall_time = round(time.monotonic() - t0, 2)
        finish(i, res, False)

    run_each(len(todo), jobs, work)
    return [r for r in results if r is not None]
