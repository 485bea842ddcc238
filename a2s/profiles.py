"""The capstone section of ``a2s report``: the skill matrix over all labs and the three profiles.

Printed when the grades cover lab 28 (the capstone) or with ``--profiles``. Every hiring profile
of :data:`~a2s.syllabus.PROFILES` is computed on the same grades: its dimension
weights re-weight the total, and its threshold is tested on what it measures (layers, a
subject or the total). A profile whose area has no graded exercise is ``n/a``, with the
reason, never a 0. A profile's score of subject ``s`` (the radar) re-weights the assessed
cells of that subject by the profile's dimension weights:

$$S^{p}_s = \\frac{\\sum_{d} w^{p}_d\\, S_{s,d}}{\\sum_{d} w^{p}_d}$$

over the dimensions ``d`` assessed in subject ``s``.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from a2s.notebook import NotebookError
from a2s.report import (
    SkillReport,
    _exercise_meta,
    pool_results,
    report_from_pool,
)
from a2s.syllabus import DIMENSIONS, LABS, LAYERS, PROFILES, SUBJECTS, find_lab

if TYPE_CHECKING:
    from a2s.gradebook import Gradebook

__all__ = [
    "CAPSTONE_LAB",
    "Capstone",
    "ProfileRow",
    "capstone_section",
    "covers_capstone",
    "profiles_png",
    "save_profiles_radar",
    "write_gradebook_csv",
]

CAPSTONE_LAB = find_lab("capstone").number
_SHORT = {
    "breadth": "breadth",
    "depth": "depth",
    "hands-on": "hands-on",
    "architecture": "arch.",
    "transfer": "transfer",
}


def _pct(x: float) -> str:
    return f"{round(x, 9):.1%}"  # the same share summed in another order prints the same


def _ranges(labs: list[str]) -> str:
    """``["00", "01", "02", "05"]`` -> ``"00-02, 05"`` (runs of three or more joined)."""
    runs: list[list[str]] = []
    for lab in labs:
        if runs and lab.isdigit() and runs[-1][-1].isdigit() and int(lab) == int(runs[-1][-1]) + 1:
            runs[-1].append(lab)
        else:
            runs.append([lab])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(r) for r in runs)


def covers_capstone(results: list[dict]) -> bool:
    """Whether a result of the capstone lab (28) is among ``results``."""
    return any(str(r.get("lab") or "").zfill(2) == CAPSTONE_LAB for r in results)


def measured_on(on: str) -> str:
    """What a profile's threshold is tested on, in words: ``layers:3,4`` -> ``layers 3, 4``."""
    kind, _, arg = on.partition(":")
    if kind == "layers":
        names = ", ".join(LAYERS[x] for x in arg.split(","))
        return f"layers {arg.replace(',', ' and ')} ({names})"
    if kind == "subject":
        return SUBJECTS[arg][0]
    return "weighted total"


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """One hiring profile computed on the grades: its value, threshold and verdict."""

    key: str
    title: str
    on: str  # in words
    value: float | None  # None: nothing graded in the profile's area
    threshold: float
    total: float  # the weighted total with the profile's dimension weights
    coverage: float  # the share of the course's weight assessed, with those weights
    subjects: dict[str, float | None]  # subject key -> re-weighted score (the radar)

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "n/a"
        return "met" if self.value >= self.threshold else "NOT met"

    @property
    def reason(self) -> str:
        if self.value is None:
            return f"no graded exercise in {self.on.split(' (')[0]}"
        if self.value >= self.threshold:
            return f"{self.value:.1f} >= {self.threshold:.1f}"
        return f"{self.threshold - self.value:.1f} short of {self.threshold:.1f}"


def _reweighted(
    matrix: dict[tuple[str, str], float], weights: dict[str, float]
) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for s in SUBJECTS:
        cells = [(weights.get(d, 0.0), v) for (s2, d), v in matrix.items() if s2 == s]
        norm = sum(w for w, _ in cells)
        out[s] = sum(w * v for w, v in cells) / norm if norm else None
    return out


def profile_row(key: str, rep: SkillReport) -> ProfileRow:
    """The row of profile ``key`` from a report built with that profile."""
    prof = PROFILES[key]
    return ProfileRow(
        key,
        prof.title,
        measured_on(prof.on),
        rep.profile_value,
        prof.threshold,
        rep.total,
        rep.coverage,
        _reweighted(rep.matrix, prof.dimension_weights),
    )


@dataclass(slots=True)
class Capstone:
    """The skill matrix over all labs and every profile, from one set of grades."""

    report: SkillReport  # with the course's dimension weights
    profiles: list[ProfileRow]
    labs: list[str]  # the labs graded
    course_cells: set[tuple[str, str]] = field(default_factory=set)  # with any exercise
    course_labs: int = len(LABS)  # the labs that exist (a planned lab has no notebook)

    @property
    def course_coverage(self) -> float:
        """The share of the course's weight that the course's exercises can assess."""
        return sum(SUBJECTS[s][1] * DIMENSIONS[d][1] for s, d in self.course_cells)

    def matrix_lines(self) -> list[str]:
        rep, n, w = self.report, self.course_labs, 36
        shown = _ranges(self.labs)
        head = "".join(f"{_SHORT[d]:>9}" for d in DIMENSIONS)
        out = [
            f"capstone: the skill matrix over all labs ({len(self.labs)} of {n} labs graded: "
            f"{shown or 'none'})",
            f"  {'subject':<{w}}{'weight':>7}{head}{'subject':>9}",
        ]
        for s, (label, weight) in SUBJECTS.items():
            cells = []
            for d in DIMENSIONS:
                v = rep.matrix.get((s, d))
                cells.append(
                    f"{v:.1f}" if v is not None else ("." if (s, d) in self.course_cells else "-")
                )
            v = rep.subjects[s]
            out.append(
                f"  {label:<{w}}{weight:>7.0%}"
                + "".join(f"{c:>9}" for c in cells)
                + f"{'.' if v is None else f'{v:.1f}':>9}"
            )
        dims = ["." if (v := rep.dimensions[d]) is None else f"{v:.1f}" for d in DIMENSIONS]
        out.append(f"  {'dimension':<{w}}{'':>7}" + "".join(f"{c:>9}" for c in dims))
        out.append(
            f"  {'  (weight)':<{w}}{'':>7}" + "".join(f"{x:>9.0%}" for _l, x in DIMENSIONS.values())
        )
        out.append("  a cell is a score out of 10; '.': none of your graded exercises is in it;")
        out.append("  '-': no exercise of the course is in it")
        out.append(
            f"  assessed: {_pct(rep.coverage)} of the course's weight (the course's "
            f"exercises reach {_pct(self.course_coverage)}); total {rep.total:.1f} / 10, "
            f"level {rep.level}"
        )
        return out

    def profile_lines(self) -> list[str]:
        on = max(len("measured on"), *(len(p.on) for p in self.profiles))
        title = max(len("title"), *(len(p.title) for p in self.profiles))
        out = [
            "hiring profiles (the same grades, the dimensions re-weighted per profile)",
            f"  {'profile':<10}{'title':<{title}}  {'measured on':<{on}}{'value':>7}"
            f"{'threshold':>11}  verdict",
        ]
        for p in self.profiles:
            value = "n/a" if p.value is None else f"{p.value:.1f}"
            out.append(
                f"  {p.key:<10}{p.title:<{title}}  {p.on:<{on}}{value:>7}"
                f"{p.threshold:>11.1f}  {p.verdict} ({p.reason})"
            )
        return out

    def lines(self) -> list[str]:
        return [*self.matrix_lines(), *self.profile_lines()]


@functools.lru_cache(maxsize=4)
def _course_cells(root: Path) -> frozenset[tuple[str, str]]:
    cells: set[tuple[str, str]] = set()
    for lab in LABS:
        if not lab.solution_path(root).exists():
            continue
        try:
            cells |= {(s, d) for s, d, _layer in _exercise_meta(root, lab.number).values()}
        except (FileNotFoundError, NotebookError):
            continue
    return frozenset(cells)


def capstone_section(results: list[dict], root: Path) -> Capstone:
    """The capstone section of ``results`` (the ``results`` list of grading JSON)."""
    pooled = pool_results({"version": 1, "results": results}, root)
    labs = sorted({str(r["lab"]).zfill(2) for r in results if r.get("lab")})
    rows = [profile_row(k, report_from_pool(pooled, k)) for k in PROFILES]
    ready = sum(lab.solution_path(root).exists() for lab in LABS)
    return Capstone(report_from_pool(pooled), rows, labs, set(_course_cells(root)), ready)


def save_profiles_radar(cap: Capstone, path: Path, who: str | None = None) -> None:
    """Write the radar of every profile's re-weighted subject scores, overlaid, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from a2s.viz.report import plot_profiles_radar

    series = {
        f"{p.title}: {p.verdict} ({p.reason})": {SUBJECTS[k][0]: v for k, v in p.subjects.items()}
        for p in cap.profiles
    }
    title = f"hiring profiles of {who}" if who else "hiring profiles"
    fig = plot_profiles_radar(series, title, summary=cap.report.summary())
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def profiles_png(path: Path) -> Path:
    """Where ``--png FILE`` puts the profiles radar: ``FILE`` with ``-profiles`` in its stem."""
    return path.with_name(f"{path.stem}-profiles{path.suffix or '.png'}")


def write_gradebook_csv(book: Gradebook, path: Path, caps: dict[str, Capstone]) -> None:
    """The gradebook CSV; with ``caps`` (student -> section), two columns per profile.

    ``<profile> value (threshold T)`` holds the value measured (empty when n/a) and
    ``<profile> verdict`` holds ``met``, ``NOT met`` or ``n/a``, then the reason; both go
    before ``notes``, which stays last.
    """
    header, rows = book.header(), book.rows()
    if caps:
        extra = [
            c
            for p in PROFILES.values()
            for c in (f"{p.key} value (threshold {p.threshold:g})", f"{p.key} verdict")
        ]
        header = [*header[:-1], *extra, header[-1]]
        for row, student in zip(rows, book.students, strict=True):
            cells = [
                c
                for p in caps[student].profiles
                for c in ("" if p.value is None else f"{p.value:.1f}", f"{p.verdict}: {p.reason}")
            ]
            row[-1:] = [*cells, row[-1]]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
