"""The course proves its own checks, for every lab that exists.

* labs/ is byte-identical to a fresh build of solutions/;
* every notebook follows the lab format (ids, tags, exercise metadata, one check per exercise);
* the generated lab fails every check because of its stub (graded end to end), and the
  solution gets full points from the same grader.

Each solution runs once in the suite, graded (every cell must run cleanly), and each stub
once: ``solutions/`` is not in ``testpaths`` (docs/authoring.md, "Test suite and CI budget").
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from a2s import grade
from a2s.build import build_all, existing_labs
from a2s.grade import grade_submission
from a2s.notebook import a2s_meta, exercises, read_notebook, tags
from a2s.runner import RunOptions, RunResult, run_notebook
from a2s.syllabus import DIMENSIONS, SUBJECTS, repo_root

ROOT = repo_root()
LABS = existing_labs(ROOT)
IDS = [lab.name for lab, _ in LABS]
_CELL_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
OPTS = RunOptions(cell_timeout=120, timeout=600, memory_limit_mb=6144)
# checks run on what a grading run that skips the unscored cells gives them, then those cells run
LAST = RunOptions(cell_timeout=120, timeout=600, memory_limit_mb=6144, unscored_last=True)


def test_labs_folder_matches_a_fresh_build() -> None:
    assert build_all(ROOT, check=True).differing == [], "run `a2s build` and commit labs/"


@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_notebook_follows_the_lab_format(lab, path) -> None:
    nb = read_notebook(path)
    assert nb.metadata.get("a2s", {}).get("lab") == lab.number
    ids = [c.get("id") for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    for cid in ids:
        assert cid and _CELL_ID.match(cid), f"cell id {cid!r} is not hand-picked (a-z, 0-9, -)"
    assert any("setup" in tags(c) for c in nb.cells), "a setup cell is required"
    assert ids[0] == "title" and nb.cells[0].cell_type == "markdown", "a lab opens with its title"
    built = next((c for c in nb.cells if c.get("id") == "built"), None)
    assert built is not None and "What you built" in built.source, "a lab closes with 'built'"
    exs = exercises(nb)
    assert exs, "a lab has at least one exercise"
    for ex in exs:
        number = ex.id.split(".")[0]
        assert number == lab.number and ex.cell_id == f"ex-{lab.number}-{ex.id.split('.')[1]}"
        assert ex.check_cell_id == f"check-{lab.number}-{ex.id.split('.')[1]}", ex.id
        assert ex.subject in SUBJECTS and ex.dimension in DIMENSIONS, ex.id
        assert ex.points > 0 and ex.task and ex.title and ex.topics
    for cell in nb.cells:
        if "check" in tags(cell):
            assert re.fullmatch(rf"lab{lab.number}\.check_\w+\(.*\)", cell.source.split("\n")[0])
            assert a2s_meta(cell).get("exercise") in {e.id for e in exs}
        if "exercise" in tags(cell):
            assert "### BEGIN SOLUTION" in cell.source
    plots = [c for c in nb.cells if c.cell_type == "code" and "plt.show()" in c.source]
    assert plots, "every lab has at least one plot"
    assert all(c.cell_type != "code" or c.execution_count for c in nb.cells if c.source.strip()), (
        "solutions are committed with outputs: run `a2s execute NN`"
    )


@pytest.mark.grader
@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_stub_lab_fails_every_check(lab, path) -> None:
    result = grade_submission(str(lab.lab_path(ROOT)), OPTS, ROOT)
    assert result.error is None, result.error
    assert result.score == 0
    for ex in result.exercises:
        assert ex.status == "failed", (ex.id, ex.status, ex.message)
        assert "not implemented yet" in ex.message, (ex.id, ex.message)


@pytest.mark.grader
@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_solution_gets_full_points(lab, path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one run of each solution: full points from the grader, and every code cell ran
    without an error (a broken experiment or plot cell fails here too, not only a check)."""
    runs: list[RunResult] = []

    def recorded(*args, **kwargs) -> RunResult:
        runs.append(run_notebook(*args, **kwargs))
        return runs[-1]

    monkeypatch.setattr(grade, "run_notebook", recorded)
    result = grade_submission(str(path), LAST, ROOT)  # experiments stay tested here
    assert result.error is None, result.error
    bad = [(e.id, e.status, e.message) for e in result.exercises if e.status != "passed"]
    assert not bad
    assert result.score == result.max_score > 0
    assert len(runs) == 1, "a cell hung or crashed the kernel, so the grader ran it again"
    records = runs[0].records
    failed = {
        cid: r.ename or r.message[:300] for cid, r in records.items() if r.outcome == "failed"
    }
    assert not failed, f"cells that raised: {failed}"
    cuda = importlib.import_module("torch").cuda.is_available()
    code = [
        c.get("id")
        for c in read_notebook(path).cells
        if c.cell_type == "code" and (cuda or "gpu" not in tags(c))
    ]
    assert [cid for cid in code if cid not in records] == [], "cells that never ran"


def test_readme_lab_table_matches_the_repository() -> None:
    from a2s.syllabus import LABS as ALL_LABS

    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    for lab in ALL_LABS:
        row = next((ln for ln in lines if ln.startswith(f"| {lab.number} |")), None)
        assert row is not None, f"README's lab table has no row for lab {lab.number}"
        ready = lab.solution_path(ROOT).exists()
        assert row.rstrip().endswith("| ready |" if ready else "| planned |"), row
        assert (f"(labs/{lab.name}.ipynb)" in row) == ready, row


# --------------------------------------------------------------------------- grader tests
# Which check functions does a test module call inside ``pytest.raises(CheckFailure)`` or
# ``pytest.raises(ReferenceCalledError)``? Read from the syntax tree, following module-level
# helpers (``rejects(lab01.check_decode, wrong, match)``), wrappers (``check_rules(...)`` that
# calls ``lab02.check_local_rules``), parametrize tables and imports from ``tests.*``.
_KINDS = ("CheckFailure", "ReferenceCalledError")


class _Scope:
    """One test or helper module: its functions, module-level values and imports."""

    def __init__(self, path: Path, root: Path, scopes: dict[Path, _Scope]) -> None:
        scopes[path] = self
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.values: dict[str, ast.expr] = {}
        self.checks: set[str] = set()  # names bound to a2s.checks modules
        self.check_fns: dict[str, str] = {}  # local name -> check function name
        self.imported: dict[str, tuple[_Scope, str]] = {}  # local name -> (scope, name)
        self.modules: dict[str, _Scope] = {}  # local name -> imported tests.* module
        for node in self.tree.body:
            members = node.body if isinstance(node, ast.ClassDef) else []
            for fn in [node, *members]:
                if isinstance(fn, ast.FunctionDef):
                    self.funcs[fn.name] = fn
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.values[target.id] = node.value
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node, path, root, scopes)

    def _import(self, node, path: Path, root: Path, scopes: dict[Path, _Scope]) -> None:
        def load(module: str) -> _Scope | None:
            base = root.joinpath(*module.split("."))
            for file in (base.with_suffix(".py"), base / "__init__.py"):
                if module.startswith("tests.") and file.is_file():
                    return scopes.get(file) or _Scope(file, root, scopes)
            return None

        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("a2s.checks.") and a.asname:
                    self.checks.add(a.asname)
                elif a.asname and (scope := load(a.name)):
                    self.modules[a.asname] = scope
            return
        parts = path.relative_to(root).with_suffix("").parts[: -node.level or None]
        module = ".".join([*parts, node.module or ""] if node.level else [node.module or ""])
        for a in node.names:
            local = a.asname or a.name
            if module == "a2s.checks" or module.startswith("a2s.checks.lab"):
                if a.name.startswith("check_"):
                    self.check_fns[local] = a.name
                else:
                    self.checks.add(local)
            elif (scope := load(f"{module}.{a.name}")) is not None:
                self.modules[local] = scope
            elif (scope := load(module)) is not None:
                self.imported[local] = (scope, a.name)

    def function(self, node: ast.expr) -> tuple[_Scope, ast.FunctionDef] | None:
        """The module-level function that ``node`` (a name or ``module.name``) denotes."""
        if isinstance(node, ast.Name):
            if node.id in self.funcs:
                return self, self.funcs[node.id]
            if node.id in self.imported:
                scope, name = self.imported[node.id]
                return scope.function(ast.Name(name))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in self.modules:
                return self.modules[node.value.id].function(ast.Name(node.attr))
        return None


def _bind(fn: ast.FunctionDef, call: ast.Call | None) -> dict[str, ast.expr]:
    """Parameter name -> the expression it holds: the call's argument, else its default."""
    args = fn.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    bound: dict[str, ast.expr] = dict(zip(positional[::-1], args.defaults[::-1], strict=False))
    bound |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
    if call is not None:
        for name, value in zip(positional, call.args, strict=False):
            if isinstance(value, ast.Starred):
                break
            bound[name] = value
        bound |= {k.arg: k.value for k in call.keywords if k.arg}
    return bound


class _Coverage:
    """``covered[kind]``: the check functions some test calls under ``pytest.raises(kind)``."""

    def __init__(self, test_file: Path, root: Path) -> None:
        self.scopes: dict[Path, _Scope] = {}
        self.main = _Scope(test_file, root, self.scopes)
        self.memo: dict[tuple[int, str], set[str]] = {}
        self.covered: dict[str, set[str]] = {k: set() for k in _KINDS}
        tests = [f for name, f in self.main.funcs.items() if name.startswith("test_")]
        live = self._reachable([(self.main, f) for f in tests])
        for scope, fn in live:
            self._visit(scope, fn)

    def _visit(self, scope: _Scope, fn: ast.FunctionDef) -> None:
        """Credit the checks that ``fn`` runs under ``pytest.raises``, its own or a helper's."""
        for kind, body in self._raises(fn):
            refs = self.reach_all(body, scope) | self.reach_all(fn.decorator_list, scope)
            self._credit(self._kinds(kind, fn, None), refs)
        for node in ast.walk(fn):
            target = scope.function(node.func) if isinstance(node, ast.Call) else None
            if target is None:
                continue
            callee_scope, callee = target
            args = self.reach_all([*node.args, *(k.value for k in node.keywords)], scope)
            for kind, body in self._raises(callee):  # rejects(lab01.check_decode, wrong, ...)
                refs = self.reach_all(body, callee_scope) | args
                self._credit(self._kinds(kind, callee, node), refs)
        for node in ast.walk(fn):  # with rejected("hint"): lab01.check_decode(wrong)
            for item in node.items if isinstance(node, ast.With) else []:
                call = item.context_expr
                target = scope.function(call.func) if isinstance(call, ast.Call) else None
                if target is None or not any(isinstance(n, ast.Yield) for n in ast.walk(target[1])):
                    continue
                for kind, _body in self._raises(target[1]):
                    self._credit(
                        self._kinds(kind, target[1], call), self.reach_all(node.body, scope)
                    )

    def _credit(self, kinds: set[str], refs: set[str]) -> None:
        for kind in kinds:
            self.covered[kind] |= refs

    def _reachable(self, start):
        seen, todo = {}, list(start)
        while todo:
            scope, fn = todo.pop()
            if id(fn) in seen:
                continue
            seen[id(fn)] = (scope, fn)
            for node in ast.walk(fn):
                if isinstance(node, ast.Name | ast.Attribute) and (hit := scope.function(node)):
                    todo.append(hit)
        return list(seen.values())

    @staticmethod
    def _raises(fn: ast.FunctionDef):
        """``(exception expression, statements run under it)`` for each pytest.raises."""

        def is_raises(node) -> bool:
            f = node.func if isinstance(node, ast.Call) else None
            return (isinstance(f, ast.Attribute) and f.attr == "raises") or (
                isinstance(f, ast.Name) and f.id == "raises"
            )

        for node in ast.walk(fn):
            if isinstance(node, ast.With):
                for item in node.items:
                    if is_raises(item.context_expr) and item.context_expr.args:
                        yield item.context_expr.args[0], node.body
            elif is_raises(node) and len(node.args) > 1:  # pytest.raises(E, fn, *args)
                yield node.args[0], node.args[1:]

    @staticmethod
    def _kinds(expr: ast.expr, fn: ast.FunctionDef, call: ast.Call | None) -> set[str]:
        """The exception names ``expr`` stands for; a parameter of ``fn`` takes its argument
        at ``call`` or else its default (``rejects(check, fn, error=CheckFailure)``)."""
        if isinstance(expr, ast.Name):
            expr = _bind(fn, call).get(expr.id, expr)
        found = {
            n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(expr)
            if isinstance(n, ast.Name | ast.Attribute)
        }
        return found & set(_KINDS)

    def reach_all(self, nodes, scope: _Scope) -> set[str]:
        return set().union(*(self.reach(n, scope) for n in nodes))

    def reach(self, node: ast.AST, scope: _Scope) -> set[str]:
        """Check functions that ``node`` names, directly or through module-level helpers."""
        found: set[str] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                if n.value.id in scope.checks and n.attr.startswith("check_"):
                    found.add(n.attr)
            if not isinstance(n, ast.Name | ast.Attribute):
                continue
            if isinstance(n, ast.Name) and n.id in scope.check_fns:
                found.add(scope.check_fns[n.id])
            key = (id(scope), ast.dump(n))
            if key in self.memo:
                found |= self.memo[key]
                continue
            self.memo[key] = set()  # cycle guard
            hit = scope.function(n)
            if hit is not None:
                self.memo[key] = self.reach(hit[1], hit[0])
            elif isinstance(n, ast.Name) and n.id in scope.values:
                self.memo[key] = self.reach(scope.values[n.id], scope)
            found |= self.memo[key]
        return found


def _lab_checks(path: Path, number: str) -> list[str]:
    nb = read_notebook(path)
    return [
        re.match(rf"lab{number}\.(check_\w+)", c.source).group(1)
        for c in nb.cells
        if "check" in tags(c)
    ]


@pytest.mark.parametrize(("lab", "path"), LABS, ids=IDS)
def test_every_grader_has_wrong_answer_and_reference_tests(lab, path) -> None:
    """Each check function of the lab is called by some test of tests/checks/test_labNN.py
    inside ``pytest.raises(CheckFailure)`` (a wrong answer fails) and, when it blocks
    reference entry points, inside ``pytest.raises(ReferenceCalledError)``."""
    test_file = ROOT / "tests" / "checks" / f"test_lab{lab.number}.py"
    assert test_file.exists(), f"{test_file.relative_to(ROOT)} is missing"
    covered = _Coverage(test_file, ROOT).covered
    graders = importlib.import_module(f"a2s.checks.lab{lab.number}")
    for name in _lab_checks(path, lab.number):
        kinds = {"CheckFailure": "a wrong answer"}
        if getattr(getattr(graders, name), "blocks", ()):
            kinds["ReferenceCalledError"] = "calling the reference"
        for kind, what in kinds.items():
            assert name in covered[kind], (
                f"{test_file.name}: no test shows that {what} fails lab{lab.number}.{name} "
                f"(call it inside `with pytest.raises({kind}):`, directly or through a helper)"
            )


_FAKE_LAB = """
import pytest
from a2s.checks import lab77
from a2s.checks.core import CheckFailure, ReferenceCalledError
from tests.helpers.fake import rejected, rejects

CASES = [(lab77.check_table, 1)]

def wrapped(**kw):
    lab77.check_wrapped(**kw)

def unused():
    with pytest.raises(CheckFailure):
        lab77.check_unused(1)

def test_direct():
    with pytest.raises((CheckFailure, TypeError)):
        lab77.check_direct(1)
    lab77.check_outside(1)

def test_helper():
    rejects(lab77.check_helper, 1)
    rejects(lab77.check_helper, 1, error=ReferenceCalledError)

def test_wrapper():
    with pytest.raises(ReferenceCalledError):
        wrapped(x=1)

@pytest.mark.parametrize(("check", "bad"), CASES)
def test_table(check, bad):
    with pytest.raises(CheckFailure):
        check(bad)

def test_context_manager():
    with rejected(ReferenceCalledError):
        lab77.check_managed(1)
"""
_FAKE_HELPER = """
import contextlib
import pytest
from a2s.checks.core import CheckFailure

def rejects(check, *fns, error=CheckFailure):
    with pytest.raises(error):
        check(*fns)

@contextlib.contextmanager
def rejected(error):
    with pytest.raises(error):
        yield
"""


def test_grader_test_coverage_follows_helpers_wrappers_and_tables(tmp_path: Path) -> None:
    (tmp_path / "tests" / "helpers").mkdir(parents=True)
    (tmp_path / "tests" / "checks").mkdir()
    (tmp_path / "tests" / "helpers" / "fake.py").write_text(_FAKE_HELPER)
    (tmp_path / "tests" / "checks" / "test_lab77.py").write_text(_FAKE_LAB)
    covered = _Coverage(tmp_path / "tests" / "checks" / "test_lab77.py", tmp_path).covered
    assert covered == {
        "CheckFailure": {"check_direct", "check_helper", "check_table"},
        "ReferenceCalledError": {"check_helper", "check_managed", "check_wrapped"},
    }
