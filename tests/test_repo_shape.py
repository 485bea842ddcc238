"""The shape of the repository: module sizes, allowed imports, markers, lint."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch.course.build import marker_problems
from minitorch.course.notebook import read_notebook
from minitorch.course.syllabus import repo_root

ROOT = repo_root()
PACKAGE = ROOT / "minitorch"
MAX_LINES = 300

_REFERENCE = {"numerics", "hardware", "data", "autograd", "nn", "optim", "kernels", "model",
              "compiler", "runtime", "comm", "parallel"}  # fmt: skip

# subpackage -> the minitorch subpackages it may import (DESIGN.md; acyclic).
# course, checks, viz and bench are leaves: only notebooks, tests and the CLI import them.
ALLOWED: dict[str, set[str]] = {
    "numerics": set(),
    "hardware": set(),
    "data": set(),
    "autograd": {"numerics"},
    "nn": {"autograd", "numerics"},
    "optim": {"autograd", "nn", "numerics"},
    "kernels": {"numerics", "hardware"},
    "model": {"autograd", "nn", "kernels", "numerics"},
    "compiler": {"autograd", "nn", "model", "numerics"},
    "runtime": {"model", "kernels", "numerics"},
    "comm": {"numerics"},
    "parallel": {"comm", "autograd", "nn", "optim", "model", "numerics"},
    "viz": _REFERENCE,
    "checks": _REFERENCE,
    "bench": _REFERENCE,
    "course": _REFERENCE | {"viz", "checks", "bench"},
}  # fmt: skip

MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _subpackage(path: Path) -> str | None:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "minitorch" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_allowed_imports_table_is_acyclic() -> None:
    seen: dict[str, int] = {}

    def visit(pkg: str) -> None:
        if seen.get(pkg) == 1:
            raise AssertionError(f"import cycle through {pkg}")
        if seen.get(pkg) == 2:
            return
        seen[pkg] = 1
        for dep in ALLOWED.get(pkg, ()):
            visit(dep)
        seen[pkg] = 2

    for pkg in ALLOWED:
        visit(pkg)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_respects_import_table_and_size(path: Path) -> None:
    sub = _subpackage(path)
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it (one concept per module)"
    if sub is None:
        return
    assert sub in ALLOWED, f"new subpackage {sub!r}: add it to ALLOWED in this test and DESIGN"
    illegal = _imports(path) - ALLOWED[sub] - {sub}
    assert not illegal, f"minitorch.{sub} may not import minitorch.{', minitorch.'.join(illegal)}"


def test_reference_package_does_not_import_torch() -> None:
    leaves = {"checks", "bench", "course", "viz"}
    offenders = []
    for path in MODULES:
        sub = _subpackage(path)
        if sub in leaves:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            )
            if any(m.split(".")[0] == "torch" for m in mods):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"the reference package is numpy-only; torch imported in {offenders}"


@pytest.mark.parametrize("path", sorted((ROOT / "solutions").glob("*.ipynb")), ids=lambda p: p.name)
def test_solution_markers_are_spelt_right(path: Path) -> None:
    nb = read_notebook(path)
    for cell in nb.cells:
        assert marker_problems(cell.source) == [], f"{path.name} cell {cell.get('id')}"


_RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(_RUFF is None, reason="ruff not installed (pip install -e '.[dev]')")
def test_ruff_is_clean() -> None:
    ruff = str(_RUFF)
    proc = subprocess.run(
        [ruff, "check", "minitorch", "tests"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
