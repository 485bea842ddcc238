"""The shape of the repository: module sizes, allowed imports, markers, lint."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2s.build import marker_problems
from a2s.notebook import read_notebook
from a2s.syllabus import repo_root

ROOT = repo_root()
PACKAGE = ROOT / "minitorch"  # the stack the learner builds
COURSE = ROOT / "a2s"  # the course: its graders (checks), plots (viz), bench, and the CLI
MAX_LINES = 300

_REFERENCE = {
    "numerics",
    "hardware",
    "data",
    "autograd",
    "nn",
    "optim",
    "kernels",
    "model",
    "compiler",
    "runtime",
    "comm",
    "parallel",
    "driver",
    "cpu",
    "native",
    "rl",
    "elastic",
    "chip",
}

# subpackage -> the subpackages it may import: docs/architecture.md, "Import rules" (a test
# below keeps the two equal). Acyclic. Layer numbers are not an import order. The stack's
# subpackages are minitorch.X; checks, viz and bench are a2s.checks, a2s.viz, a2s.bench and
# "course" is the rest of a2s (the CLI): they import the stack, the stack never imports them.
ALLOWED: dict[str, set[str]] = {
    "numerics": set(),
    "hardware": set(),
    "data": set(),
    "autograd": {"numerics"},
    "nn": {"autograd", "numerics"},
    "optim": {"autograd", "nn", "numerics"},
    "kernels": {"numerics", "hardware"},
    "model": {"autograd", "nn", "kernels", "numerics"},
    "compiler": {"autograd", "nn", "model", "numerics", "hardware"},
    "runtime": {"model", "kernels", "autograd", "nn", "numerics"},
    "comm": {"numerics"},
    "parallel": {"comm", "runtime", "autograd", "nn", "optim", "model", "numerics", "hardware"},
    "driver": set(),
    "cpu": set(),
    "native": {"autograd", "kernels", "hardware"},
    "rl": {"model", "runtime", "autograd", "nn", "optim", "numerics"},
    "elastic": {"comm", "nn", "optim", "autograd", "numerics"},
    "chip": {"compiler"},
    "viz": _REFERENCE,
    "checks": _REFERENCE,
    "bench": _REFERENCE,
    "course": _REFERENCE | {"viz", "checks", "bench"},
}

MODULES = sorted(
    p for root in (PACKAGE, COURSE) for p in root.rglob("*.py") if "__pycache__" not in p.parts
)
_COURSE_SUBS = {"checks", "viz", "bench"}


def _subpackage(path: Path) -> str | None:
    if path.is_relative_to(COURSE):
        rel = path.relative_to(COURSE).parts
        return rel[0] if len(rel) > 1 and rel[0] in _COURSE_SUBS else "course"
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else None


def _of(name: str) -> str | None:
    """The subpackage an imported module name belongs to, in the table's terms."""
    parts = name.split(".")
    if parts[0] == "minitorch" and len(parts) > 1:
        return parts[1]
    if parts[0] == "a2s":
        return parts[1] if len(parts) > 1 and parts[1] in _COURSE_SUBS else "course"
    return None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found |= {sub for sub in map(_of, names) if sub is not None}
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


def _documented_import_table() -> dict[str, set[str]]:
    """The "Import rules" table of docs/architecture.md as ``{subpackage: allowed}``."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Import rules", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed = set(re.findall(r"`(\w+)`", cells[1]))
        if "every reference subpackage" in cells[1]:
            allowed |= _REFERENCE
        table[cells[0].strip("`")] = allowed
    return table


def test_import_table_is_the_documented_one() -> None:
    assert _documented_import_table() == ALLOWED, (
        "docs/architecture.md (Import rules) and ALLOWED differ: change both together"
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_respects_import_table_and_size(path: Path) -> None:
    sub = _subpackage(path)
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it (one concept per module)"
    if sub is None:
        return
    assert sub in ALLOWED, (
        f"new subpackage {sub!r}: add it to ALLOWED here and to docs/architecture.md"
    )
    illegal = _imports(path) - ALLOWED[sub] - {sub}
    assert not illegal, f"{sub} may not import {', '.join(sorted(illegal))}"


# The reference modules allowed to touch torch, lazily inside functions: the bridge from the
# Communicator protocol to torch.distributed (gloo), imported inside the spawned worker processes
# (or the workers torchrun starts: comm.torchrun),
# lab 37's torch C++ extension and profiler helpers (the exercise is about torch there),
# lab 32's gloo ranks (heartbeats in a TCPStore) and the training script torchrun launches, and
# lab 31's PyTorch backend for a new chip (torch is its subject: these modules import it at the
# top; the package's __init__ imports nothing, so preloading minitorch.chip stays cheap).
TORCH_BRIDGES = {
    "minitorch/comm/torchdist.py",
    "minitorch/comm/torchrun.py",
    "minitorch/native/torchext.py",
    "minitorch/native/profiled.py",
    "minitorch/elastic/detect.py",
    "minitorch/elastic/train.py",
    "minitorch/chip/fallback.py",
    "minitorch/chip/tensor.py",
    "minitorch/chip/lower.py",
    "minitorch/chip/compile_backend.py",
    "minitorch/chip/plugin.py",
}


def test_reference_package_does_not_import_torch() -> None:
    leaves = {"checks", "bench", "course", "viz"}
    offenders = []
    for path in MODULES:
        sub = _subpackage(path)
        if sub in leaves or path.relative_to(ROOT).as_posix() in TORCH_BRIDGES:
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


# A lab package a2s/checks/labNN/ holds graders (one module per exercise), _truth.py (the lab's
# trusted side: its ground truth and the helpers its graders share) and workers.py (rank
# programs run in other processes); nothing else. Code several labs could use is a shared module
# of a2s/checks/ (docs/authoring.md, "Graders").
LAB_HELPERS = {"__init__.py", "_truth.py", "workers.py"}


def _defines_grader(path: Path) -> bool:
    """Whether the module defines a function decorated with ``@grader(...)``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if getattr(target, "attr", getattr(target, "id", None)) == "grader":
                    return True
    return False


def test_lab_packages_hold_graders_truth_and_workers_only() -> None:
    checks = COURSE / "checks"
    labs = sorted(p for p in checks.glob("lab[0-9][0-9]*") if re.fullmatch(r"lab\d\d", p.stem))
    assert labs, "no lab graders found"
    offenders = []
    for lab in labs:
        files = [lab] if lab.is_file() else sorted(lab.iterdir())
        for path in files:
            rel = path.relative_to(checks).as_posix()
            if path.name == "__pycache__":
                continue
            if path.name in LAB_HELPERS:
                continue
            if path.suffix != ".py" or not path.is_file() or not _defines_grader(path):
                offenders.append(rel)
    assert not offenders, (
        f"{offenders} in a lab package but not a grader (no @grader function): a lab's shared "
        "helpers go in its _truth.py, rank programs in workers.py, code other labs could use in "
        "a shared module of a2s/checks/"
    )


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
        [ruff, "check", "minitorch", "a2s", "tests"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.mark.skipif(_RUFF is None, reason="ruff not installed (pip install -e '.[dev]')")
def test_one_formatting_style() -> None:
    """The formatter's style everywhere (``ruff format``, line length 100): nothing is
    formatted by hand, so no line needs a pragma that turns the formatter off."""
    proc = subprocess.run(
        [str(_RUFF), "format", "--check", "minitorch", "a2s", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    marked = [
        f"{p.relative_to(ROOT)}:{i}"
        for top in ("minitorch", "a2s", "tests")
        for p in sorted((ROOT / top).rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: " + "skip" in line or "fmt: " + "off" in line
    ]
    assert not marked, f"hand formatting kept from the formatter: {marked[:10]}"


def test_declared_python_versions_are_the_tested_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject.toml declares the Pythons that have run (the suite on 3.11, the smoke test on
    the others), and `a2s doctor` agrees."""
    import tomllib

    from a2s import doctor

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    major, minor = doctor.TESTED_PYTHON
    assert project["requires-python"] == f">={major}.{minor}"
    declared = {
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)
    }
    smoke = {f"{a}.{b}" for a, b in doctor.SMOKE_TESTED}
    assert declared == {f"{major}.{minor}"} | smoke
    assert sys.version_info[:2] == doctor.TESTED_PYTHON, "the suite runs on another Python"
    monkeypatch.setattr(doctor.sys, "version_info", (major, minor - 1, 0))
    assert not doctor._python().ok
    for version in doctor.SMOKE_TESTED:
        monkeypatch.setattr(doctor.sys, "version_info", (*version, 0))
        finding = doctor._python()
        assert finding.ok and "smoke test" in finding.detail
    monkeypatch.setattr(doctor.sys, "version_info", (major, 99, 0))
    finding = doctor._python()
    assert finding.ok and "untested" in finding.detail
