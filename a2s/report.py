"""The skill matrix (docs/student_guide.md, "Your skill report") computed from grading results.

Each exercise carries a subject and a dimension. A cell of the matrix scores
``10 * earned / possible`` over the exercises in it; subject and dimension scores pool their
exercises the same way. The weighted total is

$$T = \\frac{\\sum_{s,d} w_s\\, w_d\\, S_{s,d}}{\\sum_{s,d \\text{ assessed}} w_s\\, w_d}$$

over the assessed cells only, with the dimension weights of the chosen profile. Levels:
S >= 8, A >= 6, B >= 4, C >= 2, else D, and a level describes only what was assessed. The
coverage $C = \\sum_{s,d \\text{ assessed}} w_s\\, w_d$ is the share of the course's weight
that graded exercises cover; $C \\cdot T$ is the score over the whole course with everything
unassessed counted as 0.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from a2s.notebook import NotebookError, exercises, read_notebook
from a2s.syllabus import DIMENSIONS, PROFILES, SUBJECTS, find_lab

__all__ = [
    "Pooled",
    "SkillReport",
    "level",
    "pool_results",
    "report_from_pool",
    "save_radar",
    "skill_report",
]


def level(score: float) -> str:
    """Map a score out of 10 to S/A/B/C/D."""
    for cut, name in ((8.0, "S"), (6.0, "A"), (4.0, "B"), (2.0, "C")):
        if score >= cut:
            return name
    return "D"


@dataclass(slots=True)
class SkillReport:
    subjects: dict[str, float | None]
    dimensions: dict[str, float | None]
    matrix: dict[tuple[str, str], float]
    total: float  # over the assessed cells only
    level: str  # of ``total``; "n/a" when nothing was assessed
    coverage: float = 0.0  # share of the course's weight that was assessed, 0..1
    profile: str | None = None
    profile_value: float | None = None
    profile_threshold: float | None = None
    profile_met: bool | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def course_total(self) -> float:
        """The score over the whole course, unassessed weight counted as 0."""
        return self.total * self.coverage

    @property
    def unassessed(self) -> list[str]:
        return [SUBJECTS[k][0] for k, v in self.subjects.items() if v is None]

    def summary(self) -> str:
        """One line: the score and level over what was assessed, and how much that is."""
        if not self.coverage:
            return "nothing assessed yet: no level"
        return (
            f"{self.total:.1f}/10, level {self.level}, over the {self.coverage:.1%} "
            "of the course's weight assessed so far"
        )

    def lines(self) -> list[str]:
        out = [f"{'subject':<37}{'score':>12}"]
        for key, (label, w) in SUBJECTS.items():
            v = self.subjects[key]
            shown = "not assessed" if v is None else f"{v:.1f}"
            out.append(f"  {label:<34} {shown:>12}  (weight {w:.0%})")
        out.append("dimension")
        for key, (label, _w) in DIMENSIONS.items():
            v = self.dimensions[key]
            out.append(f"  {label:<34} {'not assessed' if v is None else f'{v:.1f}':>12}")
        out.append(
            f"weighted total over what was assessed {self.total:.1f} / 10, level {self.level}"
        )
        out.append(
            f"  assessed: {self.coverage:.1%} of the course's weight; the level "
            "describes that part only"
        )
        out.append(f"  over the whole course (not assessed counts 0): {self.course_total:.1f} / 10")
        if self.profile:
            verdict = "met" if self.profile_met else "NOT met"
            shown = "n/a" if self.profile_value is None else f"{self.profile_value:.1f}"
            out.append(
                f"profile {PROFILES[self.profile].title}: {shown} vs threshold "
                f"{self.profile_threshold:.1f} -> {verdict}"
            )
        return out + [f"note: {n}" for n in self.notes]


def _exercise_meta(root: Path, lab_number: str) -> dict[str, tuple[str, str, str]]:
    lab = find_lab(lab_number)
    nb = read_notebook(lab.solution_path(root))
    return {ex.id: (ex.subject, ex.dimension, lab.layer) for ex in exercises(nb)}


def _exercise_points(root: Path, lab_number: str) -> dict[str, float]:
    nb = read_notebook(find_lab(lab_number).solution_path(root))
    return {ex.id: ex.points for ex in exercises(nb)}


def _lab_from_name(notebook: str) -> str | None:
    """The lab of a file the grader could not read, from its ``NN_`` name, if a lab has it."""
    match = re.match(r"(\d\d)_", Path(notebook).name)
    if match is None:
        return None
    try:
        return find_lab(match.group(1)).number
    except KeyError:
        return None


def _score(pairs: list[tuple[float, float]]) -> float | None:
    possible = sum(m for _, m in pairs)
    return None if possible == 0 else 10.0 * sum(p for p, _ in pairs) / possible


@dataclass(slots=True)
class Pooled:
    """Graded points pooled by subject, dimension, (subject, dimension) cell and layer."""

    by_s: defaultdict[str, list[tuple[float, float]]]
    by_d: defaultdict[str, list[tuple[float, float]]]
    by_cell: defaultdict[tuple[str, str], list[tuple[float, float]]]
    by_layer: defaultdict[str, list[tuple[float, float]]]
    notes: list[str]


def pool_results(results: dict, root: Path) -> Pooled:
    """Pool the exercises of a grading JSON document (``a2s grade --json``) by skill."""
    pooled = Pooled(defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list), [])
    meta_cache: dict[str, dict[str, tuple[str, str, str]] | None] = {}
    for res in results.get("results", []):
        if not res.get("lab"):
            number = _lab_from_name(str(res.get("notebook") or ""))
            if number is None:
                pooled.notes.append(f"{res.get('notebook')}: not graded ({res.get('error')})")
                continue
            # an unreadable file of a known lab scores 0 on that lab, as in the gradebook
            pooled.notes.append(
                f"{res.get('notebook')}: not graded ({res.get('error')}); lab {number} counts 0"
            )
            res = {**res, "lab": number, "exercises": []}
        if res["lab"] not in meta_cache:
            try:
                meta_cache[res["lab"]] = _exercise_meta(root, res["lab"])
            except (KeyError, FileNotFoundError, NotebookError):
                pooled.notes.append(
                    f"{res.get('notebook')}: lab {res['lab']!r} has no notebook here"
                )
                meta_cache[res["lab"]] = None
        meta = meta_cache[res["lab"]]
        if meta is None:
            continue
        graded = {ex["id"] for ex in res.get("exercises", [])}
        unscored = [
            {"id": i, "points": 0.0, "max_points": pts}
            for i, pts in _exercise_points(root, res["lab"]).items()
            if i not in graded
        ]
        for ex in [*res.get("exercises", []), *unscored]:
            subject, dim, layer = meta.get(ex["id"], ("fundamentals", "hands-on", "0"))
            pair = (float(ex["points"]), float(ex["max_points"]))
            pooled.by_s[subject].append(pair)
            pooled.by_d[dim].append(pair)
            pooled.by_cell[(subject, dim)].append(pair)
            pooled.by_layer[layer].append(pair)
    return pooled


def skill_report(results: dict, root: Path, profile: str | None = None) -> SkillReport:
    """Build the report from a grading JSON document (``a2s grade --json``)."""
    return report_from_pool(pool_results(results, root), profile)


def report_from_pool(pooled: Pooled, profile: str | None = None) -> SkillReport:
    """The report of already pooled points, with ``profile``'s dimension weights if given."""
    dim_w = (
        dict(PROFILES[profile].dimension_weights)
        if profile
        else {k: w for k, (_l, w) in DIMENSIONS.items()}
    )
    cells = pooled.by_cell
    matrix = {cell: s for cell, p in cells.items() if (s := _score(p)) is not None}
    weights = {c: SUBJECTS[c[0]][1] * dim_w.get(c[1], 0.0) for c in matrix}
    norm = sum(weights.values())
    whole = sum(w for _l, w in SUBJECTS.values()) * sum(dim_w.values())
    total = sum(weights[c] * matrix[c] for c in matrix) / norm if norm else 0.0
    rep = SkillReport(
        subjects={k: _score(pooled.by_s.get(k, [])) for k in SUBJECTS},
        dimensions={k: _score(pooled.by_d.get(k, [])) for k in DIMENSIONS},
        matrix=matrix,
        total=total,
        level=level(total) if norm else "n/a",
        coverage=norm / whole if whole else 0.0,
        notes=list(pooled.notes),
    )
    if profile:
        _apply_profile(rep, profile, pooled.by_layer)
    return rep


def _apply_profile(rep: SkillReport, key: str, by_layer: dict) -> None:
    prof = PROFILES[key]
    kind, _, arg = prof.on.partition(":")
    if kind == "layers":
        value = _score([p for layer in arg.split(",") for p in by_layer.get(layer, [])])
    elif kind == "subject":
        value = rep.subjects.get(arg)
    else:
        value = rep.total
    rep.profile, rep.profile_value, rep.profile_threshold = key, value, prof.threshold
    rep.profile_met = value is not None and value >= prof.threshold
    if value is None:
        rep.notes.append(f"profile {prof.title}: no graded exercise covers {prof.on}")


def save_radar(rep: SkillReport, path: Path, who: str | None = None) -> None:
    """Write the radar chart of ``rep`` as a PNG: unassessed subjects drawn as gaps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from a2s.viz.report import plot_skill_radar

    scores = {SUBJECTS[k][0]: v for k, v in rep.subjects.items()}
    weights = {SUBJECTS[k][0]: w for k, (_l, w) in SUBJECTS.items()}
    title = f"skill profile of {who}" if who else "skill profile"
    fig = plot_skill_radar(scores, title, weights=weights, summary=rep.summary())
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
