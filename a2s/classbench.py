"""``a2s bench class``: grade a made-up class the way a teacher would, and time it.

A class of ``n`` notebooks from labs 09, 18 and 21 (the slowest to grade: a GPT trained in the
kernel, a paged KV cache, real gloo processes), a third each of solutions, stubs and "partial"
copies (the solution with its last exercise put back to the stub), is written to a temporary
folder and graded with ``grade_paths(..., jobs=2)``, as ``a2s grade FOLDER --jobs 2`` does.
Every expected score is known before grading (full marks, 0, full marks less the last
exercise's points), so the bench also counts the verdicts that are right.

    figures = class_bench(n=30, jobs=2)     # Figure("class of 30 ...", seconds, "s", "< 300")
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from a2s.bench import Figure
from a2s.grade import SubmissionResult, grade_paths
from a2s.notebook import dumps, exercises, read_notebook
from a2s.runner import RunOptions
from a2s.syllabus import find_lab, repo_root

__all__ = ["CLASS_LABS", "class_bench", "cmd_bench_class", "make_class"]

CLASS_LABS = ("09", "18", "21")
KINDS = ("solution", "stub", "partial")
TARGET_S = 300.0  # the whole class, --jobs 2, 2 cores
PER_SOLUTION_S = 60.0  # one notebook (30 s; 60 s for the labs that spawn processes, as 21)


def _partial(root: Path, number: str) -> tuple[str, float]:
    """The solution of lab ``number`` with its last exercise's cell from the stub, and the
    score that copy must get."""
    lab = find_lab(number)
    nb = read_notebook(lab.solution_path(root))
    stub = read_notebook(lab.lab_path(root))
    exs = exercises(nb)
    last = exs[-1]
    stub_src = next(c.source for c in stub.cells if c.get("id") == last.cell_id)
    for cell in nb.cells:
        if cell.get("id") == last.cell_id:
            cell.source = stub_src
    return dumps(nb), sum(e.points for e in exs) - last.points


def make_class(dest: Path, n: int = 30, root: Path | None = None) -> dict[str, float]:
    """Write ``n`` submissions under ``dest/sNN/``; return ``{notebook path: expected score}``."""
    root = root or repo_root()
    expected: dict[str, float] = {}
    for i in range(n):
        lab = find_lab(CLASS_LABS[i % len(CLASS_LABS)])
        kind = KINDS[(i // len(CLASS_LABS)) % len(KINDS)]
        full = sum(e.points for e in exercises(read_notebook(lab.solution_path(root))))
        if kind == "solution":
            text, score = lab.solution_path(root).read_text(encoding="utf-8"), full
        elif kind == "stub":
            text, score = lab.lab_path(root).read_text(encoding="utf-8"), 0.0
        else:
            text, score = _partial(root, lab.number)
        path = dest / f"s{i:02d}" / f"{lab.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        expected[str(path)] = score
    return expected


def class_bench(
    n: int = 30,
    jobs: int = 2,
    root: Path | None = None,
    on_done: Callable[[SubmissionResult, int, int], None] | None = None,
) -> list[Figure]:
    """Grade a class of ``n`` with ``jobs`` at once; the wall time, the slowest notebook, the
    slowest solution and the number of right verdicts, as bench figures."""
    with tempfile.TemporaryDirectory(prefix="a2s-class-") as tmp:
        folder = Path(tmp) / "submissions"
        expected = make_class(folder, n, root)
        done = 0

        def finished(res: SubmissionResult, _all: list, _reused: bool) -> None:
            nonlocal done
            done += 1
            if on_done is not None:
                on_done(res, done, n)

        t0 = time.monotonic()
        results = grade_paths([str(folder)], RunOptions(), root, jobs=jobs, on_done=finished)
        wall = time.monotonic() - t0
    right = sum(abs(r.score - expected.get(r.notebook, -1.0)) < 1e-9 for r in results)
    times = [(r.wall_time or 0.0, r) for r in results]
    slowest, slow_nb = max(times, key=lambda t: t[0])
    solutions = [t for t, r in times if abs(r.score - r.max_score) < 1e-9 and r.max_score > 0]
    labs = ", ".join(CLASS_LABS)
    return [
        Figure(f"class of {n} (labs {labs}), --jobs {jobs}", wall, "s", f"target < {TARGET_S:g}"),
        Figure(
            f"slowest notebook ({Path(slow_nb.notebook).name})",
            slowest,
            "s",
            f"target <= {PER_SOLUTION_S:g} (30 s; 60 s where processes are spawned)",
        ),
        Figure(
            "slowest full-marks solution",
            max(solutions, default=0.0),
            "s",
            f"target <= {PER_SOLUTION_S:g}",
        ),
        Figure("verdicts equal to the known score", right, "of", f"target >= {n}"),
    ]


def cmd_bench_class(args: argparse.Namespace) -> int:
    """``a2s bench class``: a class of 30 (labs 09, 18, 21) graded with --jobs 2, timed."""
    from a2s.commands import UsageError, _Progress, _root
    from a2s.figures import BENCH_HEADER, print_figure

    root = _root()
    if not (root / "solutions").is_dir():
        raise UsageError(
            "a2s bench class builds its class from solutions/: run it in a course checkout"
        )
    n = 30
    print(
        f"grading a made-up class of {n} notebooks (labs {', '.join(CLASS_LABS)}: solutions, "
        "stubs, solutions with the last exercise undone) with --jobs 2; a few minutes"
    )
    bar = _Progress("grading the class", quiet=False)
    try:
        figures = class_bench(n, 2, root, on_done=lambda res, done, total: bar.update(done, total))
    finally:
        bar.close()
    print(BENCH_HEADER)
    for fig in figures:
        fig.lab = "class"
        print_figure("class", fig)
    if args.json:
        figs = [f.as_dict() for f in figures]
        Path(args.json).write_text(json.dumps({"version": 1, "figures": figs}, indent=2) + "\n")
    return 0
