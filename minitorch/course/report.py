"""The skill matrix of SYLLABUS.md computed from grading results.

Each exercise carries a subject and a dimension. A cell of the matrix scores
``10 * earned / possible`` over the exercises in it; subject and dimension scores pool their
exercises the same way. The weighted total is

$$T = \\frac{\\sum_{s,d} w_s\\, w_d\\, S_{s,d}}{\\sum_{s,d \\text{ assessed}} w_s\\, w_d}$$

over the assessed cells only, with the dimension weights of the chosen profile. Levels:
S >= 8, A >= 6, B >= 4, C >= 2, else D.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.course.notebook import NotebookError, exercises, read_notebook
from minitorch.course.syllabus import DIMENSIONS, PROFILES, SUBJECTS, find_lab

__all__ = ["SkillReport", "level", "skill_report"]


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
    total: float
    level: str
    profile: str | None = None
    profile_value: float | None = None
    profile_threshold: float | None = None
    profile_met: bool | None = None
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = ["subject                               score"]
        for key, (label, w) in SUBJECTS.items():
            v = self.subjects[key]
            out.append(f"  {label:<34} {'  n/a' if v is None else f'{v:5.1f}'}   (weight {w:.0%})")
        out.append("dimension")
        for key, (label, _w) in DIMENSIONS.items():
            v = self.dimensions[key]
            out.append(f"  {label:<34} {'  n/a' if v is None else f'{v:5.1f}'}")
        out.append(
            f"weighted total                        {self.total:5.1f} / 10   level {self.level}"
        )
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


def _score(pairs: list[tuple[float, float]]) -> float | None:
    possible = sum(m for _, m in pairs)
    return None if possible == 0 else 10.0 * sum(p for p, _ in pairs) / possible


def skill_report(results: dict, root: Path, profile: str | None = None) -> SkillReport:
    """Build the report from a grading JSON document (``a2s grade --json``)."""
    dim_w = (
        dict(PROFILES[profile].dimension_weights)
        if profile
        else {k: w for k, (_l, w) in DIMENSIONS.items()}
    )
    by_s, by_d, by_cell, by_layer = (defaultdict(list) for _ in range(4))
    notes, meta_cache = [], {}
    for res in results.get("results", []):
        if not res.get("lab"):
            notes.append(f"{res.get('notebook')}: not graded ({res.get('error')})")
            continue
        if res["lab"] not in meta_cache:
            try:
                meta_cache[res["lab"]] = _exercise_meta(root, res["lab"])
            except (KeyError, FileNotFoundError, NotebookError):
                notes.append(f"{res.get('notebook')}: lab {res['lab']!r} has no notebook here")
                meta_cache[res["lab"]] = None
        if meta_cache[res["lab"]] is None:
            continue
        for ex in res.get("exercises", []):
            subject, dim, layer = meta_cache[res["lab"]].get(
                ex["id"], ("fundamentals", "hands-on", "0")
            )
            pair = (float(ex["points"]), float(ex["max_points"]))
            by_s[subject].append(pair)
            by_d[dim].append(pair)
            by_cell[(subject, dim)].append(pair)
            by_layer[layer].append(pair)
    matrix = {cell: _score(p) for cell, p in by_cell.items() if _score(p) is not None}
    weights = {c: SUBJECTS[c[0]][1] * dim_w.get(c[1], 0.0) for c in matrix}
    norm = sum(weights.values())
    total = sum(weights[c] * matrix[c] for c in matrix) / norm if norm else 0.0
    rep = SkillReport(
        subjects={k: _score(by_s[k]) for k in SUBJECTS},
        dimensions={k: _score(by_d[k]) for k in DIMENSIONS},
        matrix=matrix,
        total=total,
        level=level(total),
        notes=notes,
    )
    if profile:
        _apply_profile(rep, profile, by_layer)
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
