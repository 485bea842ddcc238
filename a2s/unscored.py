"""Which cells ``a2s grade`` may skip: those that score nothing and that no check needs.

A lab's reference runs and experiments teach; they do not score. Lab 09's training run
(400 Adam steps) used to cost every submission, a stub included, over a minute. Under
``a2s grade`` such a cell is replaced by a one-line comment when nothing graded depends on
it. What is kept, by a backward pass over the code cells:

* setup, exercise and check cells (and anything tagged ``gpu`` stays as it is);
* every cell that binds a name a kept later cell reads (function bodies included, so a
  constant a learner's function uses keeps its cell), transitively;
* every cell that changes, in place, an object a kept later cell reads (``model.load(...)``,
  ``state["x"] = ...``, ``cfg.n += 1`` on a name bound by assignment): a side effect a static
  reader cannot rule out keeps the cell.

In JupyterLab every cell still runs; ``a2s grade --every-cell`` runs them all under the grader
too. The course's own test of each solution runs the skippable cells after all the others
(``RunOptions.unscored_last``): the checks see exactly what a skipping run gives them, and
every experiment still runs once in the suite.
"""

from __future__ import annotations

import ast

from nbformat import NotebookNode

from a2s.notebook import tags

__all__ = ["SKIPPED", "skip_unscored", "unscored_cells"]

SKIPPED = "# a2s grade skips this cell: it scores nothing and no check needs what it computes"
_KEEP = frozenset({"setup", "exercise", "check"})


def _parse(source: str) -> ast.Module | None:
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _bound(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names the cell binds at top level: (all of them, those bound to data by assignment)."""
    names: set[str] = set()
    data: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                    data.add(sub.id)
    return names, data


def _reads(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _changed_in_place(tree: ast.Module) -> set[str]:
    """Names whose object the cell may change: ``x.f(...)``, ``x[i] = ``, ``x.a = ``, ``x += ``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            target = node.value
        elif isinstance(node, ast.AugAssign):
            target = node.target
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name):
            found.add(target.id)
    return found


def unscored_cells(nb: NotebookNode) -> list[str]:
    """Ids of the code cells a grading run can skip (see the module docstring)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    trees = [_parse(c.source) for c in code]
    data: set[str] = set()
    for tree in trees:
        if tree is not None:
            data |= _bound(tree)[1]
    needed: set[str] = set()  # names read by the kept cells after the current one
    skipped: list[str] = []
    for cell, tree in zip(reversed(code), reversed(trees), strict=True):
        keep = tree is None or bool(_KEEP & set(tags(cell))) or "gpu" in tags(cell)
        if not keep and tree is not None:
            names, _ = _bound(tree)
            touched = _changed_in_place(tree) & data & needed
            keep = bool(names & needed) or bool(touched)
        if keep:
            needed |= _reads(tree) if tree is not None else set()
        else:
            skipped.append(str(cell.get("id")))
    return skipped[::-1]


def skip_unscored(nb: NotebookNode, last: bool = False) -> list[str]:
    """Replace the cells :func:`unscored_cells` finds by :data:`SKIPPED`; return their ids.

    ``last``: move them, in their order, behind every other cell instead, so one run grades
    exactly what a skipping run grades and then still runs every experiment (the course's
    own test of each solution does this).
    """
    ids = set(unscored_cells(nb))
    if last:
        nb.cells = [c for c in nb.cells if c.get("id") not in ids] + [
            c for c in nb.cells if c.get("id") in ids
        ]
        return sorted(ids)
    for cell in nb.cells:
        if cell.get("id") in ids:
            cell.source = SKIPPED
    return sorted(ids)
