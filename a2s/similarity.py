"""Find submissions whose exercise cells are the same code, for the instructor to look at.

Each exercise cell is reduced to a canonical form: parsed with :mod:`ast`, comments,
docstrings and layout dropped (``ast.unparse``), and every identifier the cell binds
(variables, arguments, functions, classes, import aliases) renamed ``v0, v1, ...`` in order of
appearance. Names it only uses (``np.zeros``, ``range``, attributes) stay. Two cells with the
same canonical form differ at most in names, comments and whitespace.

This is a report, never a penalty: short exercises have few natural answers, so each match
says how many students share that code, and cells whose own code (beyond the lab's stub) is
under ``min_size`` syntax nodes are not compared at all.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbformat import NotebookNode

from a2s.build import grading_base
from a2s.grade import expand_paths
from a2s.gradebook import DEFAULT_PATTERN, student_of
from a2s.notebook import (
    NotebookError,
    a2s_meta,
    exercises,
    lab_of,
    read_notebook,
    tags,
)
from a2s.syllabus import Lab

__all__ = ["SOLUTION", "Match", "canonical", "find_matches", "match_lines", "write_csv"]

SOLUTION = "(published solution)"
_MAGIC = re.compile(r"^\s*[%!]")


class _Canon(ast.NodeTransformer):
    """Rename bound identifiers by first appearance; drop docstrings and bare strings."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound
        self.names: dict[str, str] = {}

    def _name(self, name: Any) -> Any:  # str in, str out; None stays None
        if name is None or name not in self.bound:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def _body(self, node: Any) -> ast.AST:
        node.body = [
            s
            for s in node.body
            if not (
                isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Constant)
                and isinstance(s.value.value, str)
            )
        ] or [ast.Pass()]
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.name = self._name(node.name)
        elif isinstance(node, ast.Name):
            node.id = self._name(node.id)
        elif isinstance(node, ast.arg):
            node.arg = self._name(node.arg)
        elif isinstance(node, ast.alias):
            node.asname = self._name(node.asname)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [self._name(n) for n in node.names]
        elif isinstance(node, ast.ExceptHandler):
            node.name = self._name(node.name)
        if isinstance(getattr(node, "body", None), list):
            self._body(node)
        return super().generic_visit(node)


def _bound(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def canonical(source: str) -> tuple[str, int]:
    """Return ``(canonical text, syntax nodes)`` of a code cell.

    Code that does not parse is compared as its text without comments and spaces.
    """
    code = "\n".join(ln for ln in source.splitlines() if not _MAGIC.match(ln))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        text = re.sub(r"#[^\n]*", "", code)
        return "unparsed:" + re.sub(r"\s+", "", text), len(text.split())
    tree = _Canon(_bound(tree)).visit(tree)
    return ast.unparse(tree), sum(1 for _ in ast.walk(tree))


@dataclass(slots=True)
class _Cell:
    student: str
    notebook: str
    key: str  # hash of the canonical form
    size: int  # syntax nodes beyond the stub's


@dataclass(slots=True)
class Match:
    """Two submissions (or one and the published solution) with the same code for exercises."""

    lab: str
    student_a: str
    notebook_a: str
    student_b: str  # SOLUTION for a match with the published solution
    notebook_b: str
    exercises: list[str]  # ids with the same canonical code
    shared_by: dict[str, int]  # exercise id -> students with that same code
    compared: int  # exercises both attempted and large enough to compare


def _cells_of(nb: NotebookNode, solution: NotebookNode) -> dict[str, str]:
    """The exercise cells of ``nb`` by exercise id, found as the grader finds them."""
    by_id = {c.get("id"): c for c in nb.cells if c.get("cell_type") == "code"}
    by_ex = {
        str(a2s_meta(c).get("exercise")): c
        for c in nb.cells
        if c.get("cell_type") == "code" and "exercise" in tags(c)
    }
    out = {}
    for ex in exercises(solution):
        cell = by_id.get(ex.cell_id) or by_ex.get(ex.id)
        if cell is not None:
            out[ex.id] = cell.source
    return out


def _reference(lab: Lab, root: Path) -> tuple[Lab, NotebookNode, dict[str, tuple[str, int]]]:
    solution = read_notebook(lab.solution_path(root))
    stubs = {k: canonical(v) for k, v in _cells_of(grading_base(solution), solution).items()}
    return lab, solution, stubs


def _index(paths, root, pattern, min_size, notes):
    """``lab -> exercise -> [cells]``, with the published solutions among them."""
    cells: dict[str, dict[str, list[_Cell]]] = defaultdict(lambda: defaultdict(list))
    refs: dict[str, tuple] = {}

    def add(lab: Lab, student: str, name: str, nb: NotebookNode) -> None:
        if lab.number not in refs:
            refs[lab.number] = _reference(lab, root)
        _lab, solution, stubs = refs[lab.number]
        for ex_id, source in _cells_of(nb, solution).items():
            text, size = canonical(source)
            stub_text, stub_size = stubs.get(ex_id, ("", 0))
            if text != stub_text and size - stub_size >= min_size:
                key = hashlib.sha256(text.encode()).hexdigest()
                cells[lab.number][ex_id].append(_Cell(student, name, key, size - stub_size))

    for name, problem in expand_paths(paths):
        try:
            if problem:
                raise NotebookError(problem)
            nb = read_notebook(Path(name))
            add(lab_of(nb, name), student_of(name, pattern) or name, name, nb)
        except (NotebookError, FileNotFoundError) as exc:
            notes.append(f"skipped {exc}")
    for lab, solution, _stubs in list(refs.values()):
        add(lab, SOLUTION, str(lab.solution_path(root)), solution)
    return cells


def _pairs(members: list[_Cell]):
    """Every two cells of different students, the solution always second."""
    for i, first in enumerate(members):
        for second in members[i + 1 :]:
            if first.student != second.student:
                yield sorted((first, second), key=lambda c: (c.student == SOLUTION, c.student))


def find_matches(
    paths: list[str], root: Path, pattern: str = DEFAULT_PATTERN, min_size: int = 20
) -> tuple[list[Match], list[str]]:
    """Pairs of submissions with identical canonical exercise cells, most matches first."""
    notes: list[str] = []
    cells = _index(paths, root, pattern, min_size, notes)
    pairs: dict[tuple[str, str, str], Match] = {}
    skipped = 0
    for lab, by_ex in cells.items():
        compared: dict[str, set[str]] = defaultdict(set)  # notebook -> exercises compared
        for ex_id, group in by_ex.items():
            for c in group:
                compared[c.notebook].add(ex_id)
        for ex_id, group in sorted(by_ex.items()):
            same: dict[str, list[_Cell]] = defaultdict(list)
            for c in group:
                same[c.key].append(c)
            for members in same.values():
                sharing = len({c.student for c in members if c.student != SOLUTION})
                published = any(c.student == SOLUTION for c in members)
                for a, b in _pairs(members):
                    if published and b.student != SOLUTION:
                        skipped += 1  # both equal the published solution: listed there once
                        continue
                    key = (lab, a.notebook, b.notebook)
                    if key not in pairs:
                        both = len(compared[a.notebook] & compared[b.notebook])
                        pairs[key] = Match(
                            lab, a.student, a.notebook, b.student, b.notebook, [], {}, both
                        )
                    m = pairs[key]
                    m.exercises.append(ex_id)
                    m.shared_by[ex_id] = sharing
    found = sorted(pairs.values(), key=lambda m: (-len(m.exercises), m.lab, m.student_a))
    if skipped:
        notes.append(
            f"{skipped} matching exercise(s) of two students who both handed in the "
            "published solution are listed only under 'equal to the published "
            "solution'"
        )
    return found, notes


def match_lines(matches: list[Match]) -> list[str]:
    """The report as text: pairs of students first, then matches with the solutions."""
    if not matches:
        return ["no two submissions share the code of an exercise (after normalising)"]
    out = []
    for kind, rows in (
        ("pairs of submissions", [m for m in matches if m.student_b != SOLUTION]),
        ("equal to the published solution", [m for m in matches if m.student_b == SOLUTION]),
    ):
        if not rows:
            continue
        out.append(f"{kind}: lab, students, exercises with the same code (students sharing it)")
        for m in rows:
            shared = ", ".join(f"{e} ({m.shared_by[e]})" for e in m.exercises)
            who = m.student_a if m.student_b == SOLUTION else f"{m.student_a} ~ {m.student_b}"
            out.append(
                f"  lab {m.lab}  {who}: {len(m.exercises)} of {m.compared} compared: {shared}"
            )
    return out


def write_csv(matches: list[Match], path: Path) -> None:
    """One row per matching exercise of each pair."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(
            [
                "kind",
                "lab",
                "exercise",
                "student_a",
                "notebook_a",
                "student_b",
                "notebook_b",
                "students_sharing",
                "compared",
            ]
        )
        for m in matches:
            kind = "solution" if m.student_b == SOLUTION else "pair"
            for ex in m.exercises:
                out.writerow(
                    [
                        kind,
                        m.lab,
                        ex,
                        m.student_a,
                        m.notebook_a,
                        m.student_b,
                        m.notebook_b,
                        m.shared_by[ex],
                        m.compared,
                    ]
                )
