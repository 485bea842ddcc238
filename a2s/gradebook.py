"""The class view of grading results: who submitted what, a gradebook, per-exercise statistics.

A student is named by a path pattern over each result's ``notebook``: ``submissions/<student>/``
finds ``alice`` in ``term/submissions/alice/03_autograd_tensor.ipynb``. ``*`` matches within one
path component. A lab's maximum comes from the course, so a lab that a student did not submit,
or submitted as an unreadable file, counts 0 of its maximum and stays in the denominator.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from a2s.notebook import NotebookError, exercises, read_notebook
from a2s.syllabus import find_lab

__all__ = [
    "DEFAULT_PATTERN",
    "ExerciseStats",
    "Gradebook",
    "build_gradebook",
    "exercise_stats",
    "load_results",
    "save_outcomes",
    "stats_lines",
    "student_of",
]

DEFAULT_PATTERN = "submissions/<student>/"
_LAB_FILE = re.compile(r"^(\d\d)_")
_LISTED = ("failed", "error", "timeout", "missing")  # columns; "other" is e.g. tampered
# a number standing alone: not part of a name (float32, ex-01-2, lab09) or a longer number
_NUMBER = re.compile(r"(?<![\w.])(?<!\w-)\d+(\.\d+)?(e[-+]?\d+)?(?![\w.])", re.IGNORECASE)


@functools.lru_cache(maxsize=16)
def _regex(pattern: str) -> re.Pattern[str]:
    if pattern.count("<student>") != 1:
        raise ValueError(f"student pattern {pattern!r} must hold <student> once")
    parts = [p for p in re.split(r"(<student>|\*)", pattern.replace("\\", "/")) if p]
    rx = ""
    for i, part in enumerate(parts):
        if part == "<student>":  # greedy when nothing follows it, else the shortest name
            rx += "(?P<student>[^/]+)" if i == len(parts) - 1 else "(?P<student>[^/]+?)"
        else:
            rx += "[^/]*" if part == "*" else re.escape(part)
    return re.compile(r"(?:^|/)" + rx)


def student_of(notebook: str, pattern: str = DEFAULT_PATTERN) -> str | None:
    """The student a notebook path belongs to under ``pattern``, or None if it doesn't match."""
    match = _regex(pattern).search(notebook.replace("\\", "/"))
    return match.group("student") if match else None


def load_results(paths: list[Path]) -> list[dict]:
    """Read and concatenate grading JSON files (``a2s grade --json``); ValueError if one is bad."""
    out: list[dict] = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a grading JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("version") != 1 or "results" not in data:
            raise ValueError(f"{path}: not a grading JSON (expected version 1 with 'results')")
        out.extend(data["results"])
    return out


def _lab_of_result(res: dict) -> str | None:
    if res.get("lab"):
        return str(res["lab"])
    match = _LAB_FILE.match(Path(str(res.get("notebook", ""))).name)
    return match.group(1) if match else None


def _course_exercises(root: Path, lab: str) -> list[tuple[str, str, float]] | None:
    try:
        nb = read_notebook(find_lab(lab).solution_path(root))
    except (KeyError, NotebookError):
        return None
    return [(e.id, e.title, e.points) for e in exercises(nb)]


@dataclass(slots=True)
class Gradebook:
    """One row per student: points per lab (0 where missing or unreadable) and the total."""

    labs: list[str]
    lab_max: dict[str, float]
    points: dict[str, dict[str, float]]  # student -> lab -> points
    counted: dict[str, dict[str, dict]]  # student -> lab -> the result that counts
    notes: dict[str, list[str]] = field(default_factory=dict)  # student -> notes
    class_notes: list[str] = field(default_factory=list)

    @property
    def students(self) -> list[str]:
        return sorted(self.points)

    @property
    def max_total(self) -> float:
        return sum(self.lab_max.values())

    def total(self, student: str) -> float:
        return sum(self.points[student].values())

    def percent(self, student: str) -> float:
        return 100.0 * self.total(student) / self.max_total if self.max_total else 0.0

    def header(self) -> list[str]:
        labs = [f"lab{lab} (out of {self.lab_max[lab]:g})" for lab in self.labs]
        return ["student", *labs, f"total (out of {self.max_total:g})", "percent", "notes"]

    def rows(self) -> list[list[str]]:
        return [
            [
                s,
                *(f"{self.points[s][lab]:g}" for lab in self.labs),
                f"{self.total(s):g}",
                f"{self.percent(s):.1f}",
                "; ".join(self.notes.get(s, [])),
            ]
            for s in self.students
        ]

    def write_csv(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(self.header())
            writer.writerows(self.rows())

    def lines(self) -> list[str]:
        width = max([7, *(len(s) for s in self.students)])
        head = f"{'student':<{width}} " + " ".join(f"{'lab' + lab:>6}" for lab in self.labs)
        out = [head + f" {'total':>7} {'%':>6}"]
        maxima = " ".join(f"{self.lab_max[lab]:>6g}" for lab in self.labs)
        out.append(f"{'(max)':<{width}} {maxima} {self.max_total:>7g}")
        for s in self.students:
            cells = " ".join(f"{self.points[s][lab]:>6g}" for lab in self.labs)
            out.append(f"{s:<{width}} {cells} {self.total(s):>7g} {self.percent(s):>6.1f}")
        for s in self.students:
            out += [f"note: {s}: {n}" for n in self.notes.get(s, [])]
        return out + [f"note: {n}" for n in self.class_notes]


def build_gradebook(
    results: list[dict], root: Path, pattern: str = DEFAULT_PATTERN, labs: list[str] | None = None
) -> Gradebook:
    """Group results by student and lab; the best submission of a lab counts."""
    by_student: dict[str, list[dict]] = defaultdict(list)
    class_notes = []
    for res in results:
        name = str(res.get("notebook", ""))
        student = student_of(name, pattern)
        if student is None:
            class_notes.append(
                f"{name}: no student in the path (pattern {pattern}); "
                "counted as a student of its own"
            )
            student = name
        by_student[student].append(res)
    wanted = [find_lab(x).number for x in labs] if labs else None
    seen = sorted({lab for res in results if (lab := _lab_of_result(res))})
    columns = wanted or seen
    lab_max = {}
    for lab in columns:
        exs = _course_exercises(root, lab)
        given = [float(r.get("max_score") or 0) for r in results if _lab_of_result(r) == lab]
        lab_max[lab] = sum(p for _, _, p in exs) if exs else max(given, default=0.0)
        if not exs:
            class_notes.append(
                f"lab {lab}: not in this course checkout; its maximum "
                f"({lab_max[lab]:g}) is taken from the results"
            )
    book = Gradebook(columns, lab_max, {}, {}, {}, class_notes)
    for student, mine in by_student.items():
        _fill_row(book, student, mine, wanted)
    return book


def _fill_row(book: Gradebook, student: str, mine: list[dict], wanted: list[str] | None) -> None:
    notes = book.notes.setdefault(student, [])
    book.points[student], book.counted[student] = {}, {}
    for res in mine:
        lab = _lab_of_result(res)
        if lab is None or (wanted is not None and lab not in wanted):
            why = "unknown lab" if lab is None else f"lab {lab} is not one of --labs"
            notes.append(f"{res.get('notebook')} not counted: {why} ({res.get('error') or 'ok'})")
    for lab in book.labs:
        subs = [r for r in mine if _lab_of_result(r) == lab]
        graded = [r for r in subs if r.get("exercises")]
        if not subs:
            notes.append(f"lab {lab} not submitted: 0 of {book.lab_max[lab]:g}")
        elif not graded:
            notes.append(f"lab {lab} could not be graded ({subs[0].get('error')}): 0")
        if len(subs) > 1:
            notes.append(f"lab {lab} submitted {len(subs)} times; the best counts")
        best = max(graded, key=lambda r: float(r.get("score") or 0), default=None)
        book.points[student][lab] = float(best.get("score") or 0) if best else 0.0
        if best is not None:
            book.counted[student][lab] = best


@dataclass(slots=True)
class ExerciseStats:
    """How the class did on one exercise; ``submitted`` counts students with a graded lab."""

    lab: str
    id: str
    title: str
    max_points: float
    students: int
    submitted: int
    statuses: Counter
    messages: list[tuple[str, int]]  # the most common failure messages, numbers as #

    @property
    def passed(self) -> int:
        return self.statuses.get("passed", 0)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.submitted if self.submitted else None


def _gist(message: str, ids: set[str]) -> str:
    """A failure message with its numbers (not exercise ids) blanked: one mistake, one line."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else "(none)"
    gist = _NUMBER.sub(lambda m: m.group() if m.group() in ids else "#", first)
    return gist if len(gist) <= 160 else gist[:157] + "..."


def exercise_stats(book: Gradebook, root: Path, top: int = 3) -> list[ExerciseStats]:
    """Pass rate and the most common failure messages of every exercise, over the students."""
    out = []
    for lab in book.labs:
        counted = [book.counted[s][lab] for s in book.students if lab in book.counted[s]]
        listed = _course_exercises(root, lab) or [
            (e["id"], e.get("title", ""), float(e.get("max_points", 0)))
            for e in (counted[0]["exercises"] if counted else [])
        ]
        for ex_id, title, points in listed:
            rows = [e for r in counted for e in r["exercises"] if e.get("id") == ex_id]
            statuses = Counter(e.get("status", "error") for e in rows)
            wrong = [e for e in rows if e.get("status") != "passed"]
            ids = {i for i, _t, _p in listed}
            failures = Counter(_gist(e.get("message", ""), ids) for e in wrong)
            counts = (len(book.students), len(rows), statuses, failures.most_common(top))
            out.append(ExerciseStats(lab, ex_id, title, points, *counts))
    return out


def stats_lines(stats: list[ExerciseStats]) -> list[str]:
    """The per-exercise table: pass rate over the students who submitted, then failures."""
    out = ["exercise  passed/submitted  rate  failed error timeout missing other  title"]
    for st in stats:
        rate = "  n/a" if st.pass_rate is None else f"{100 * st.pass_rate:4.0f}%"
        counts = " ".join(f"{st.statuses.get(k, 0):>6}" for k in ("failed", "error", "timeout"))
        other = st.submitted - st.passed - sum(st.statuses.get(k, 0) for k in _LISTED)
        out.append(
            f"{st.id:<8}  {st.passed:>6}/{st.submitted:<9} {rate} {counts} "
            f"{st.statuses.get('missing', 0):>7} {other:>5}  {st.title}"
        )
        out += [f"            {n:>3}x {msg}" for msg, n in st.messages]
    return out


def save_outcomes(stats: list[ExerciseStats], path: Path) -> None:
    """Write the class's outcome per exercise as a stacked bar chart (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from a2s.viz.gradebook import OUTCOMES, plot_exercise_outcomes

    rows = []
    for st in stats:
        counts = dict(st.statuses)
        counts["not submitted"] = st.students - st.submitted
        for status in [k for k in counts if k not in OUTCOMES]:  # a status the chart lacks
            counts["error"] = counts.get("error", 0) + counts.pop(status)
        rows.append((f"{st.id} {st.title}"[:48], counts))
    students = stats[0].students if stats else 0
    fig = plot_exercise_outcomes(rows, f"outcome of each exercise over {students} students")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
