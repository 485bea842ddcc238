"""End to end through `a2s grade`, one notebook per lab from 05 on: an honest answer and a cheat.

The in-process batteries (``tests/checks/test_labNN_attacks.py``) try each lab's answers
against its graders; this module takes one step more for every lab, through the sealed
kernel. Each notebook is the lab's *stub* with two exercise cells replaced:

* **the cheat**: an exercise whose function has a namesake in the reference package is
  answered by forwarding to it (``from minitorch.<pkg> import <name>``), the shortest way to
  "pass" without writing the op. It must not pass (the reference is blocked for it);
* **the honest answer**: another exercise gets the published solution written differently:
  each of its functions is wrapped by a decorator defined in the cell (``functools.wraps``)
  and imports what it needs inside the cell. It must pass, under the same kernel, after the
  cheat ran.

Every other exercise stays the stub (0 points), and no notebook byte changes. Every lab
from 05 on that exists (its notebook built) is in the plan, and all are graded in one batch
with two jobs.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import pkgutil
import textwrap
from pathlib import Path

import nbformat
import pytest

from a2s.build import existing_labs
from a2s.grade import grade_paths
from a2s.notebook import exercises, read_notebook
from a2s.runner import REFERENCE_PACKAGES, RunOptions
from a2s.syllabus import repo_root

ROOT = repo_root()
LABS = [(lab, path) for lab, path in existing_labs(ROOT) if 5 <= int(lab.number)]


def _reference_names() -> dict[str, list[str]]:
    """Public function name -> the reference modules that define it (in package order)."""
    found: dict[str, list[str]] = {}
    for pkg in REFERENCE_PACKAGES:
        base = importlib.import_module(f"minitorch.{pkg}")
        names = [base.__name__] + [
            m.name for m in pkgutil.walk_packages(base.__path__, base.__name__ + ".")
        ]
        for name in names:
            try:
                mod = importlib.import_module(name)
            except Exception:  # a module that needs what this process lacks: not a namesake
                continue
            for attr, value in vars(mod).items():
                if (
                    callable(value)
                    and not attr.startswith("_")
                    and getattr(value, "__module__", None) == name
                ):
                    found.setdefault(attr, []).append(name)
    return found


def _blocked_modules(number: str) -> dict[str, set[str]]:
    """Exercise id -> the reference modules its check blocks (from ``@grader(blocks=...)``)."""
    try:
        package = importlib.import_module(f"a2s.checks.lab{number}")
    except ModuleNotFoundError:
        return {}
    out: dict[str, set[str]] = {}
    for value in vars(package).values():
        exercise = getattr(value, "exercise", None)
        if isinstance(exercise, str):
            blocks = getattr(value, "blocks", ())
            out.setdefault(exercise, set()).update(b.split(":")[0] for b in blocks)
    return out


def _namesake(modules: list[str], blocked: set[str]) -> str:
    """The module to forward to: one the exercise's check blocks, else the first found."""
    return next((m for m in modules if m in blocked), modules[0])


def _functions(source: str) -> list[str]:
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


def _defined(source: str) -> set[str]:
    """Names a cell binds at top level (functions, classes, constants)."""
    out: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def _reads(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def _honest(source: str) -> str:
    """The solution with each top-level function wrapped by a decorator of the cell's own."""
    names = _functions(source)
    wrap = textwrap.dedent(
        """
        import functools as _ft


        def _mine(fn):
            @_ft.wraps(fn)
            def inner(*args, **kwargs):
                return fn(*args, **kwargs)

            return inner
        """
    )
    tail = "\n".join(f"{n} = _mine({n})" for n in names)
    return f"{wrap}\n\n{source.rstrip()}\n\n{tail}\n"


def _cheat(name: str, module: str) -> str:
    return (
        f"def {name}(*args, **kwargs):\n"
        f"    from {module} import {name} as _ref\n\n"
        "    return _ref(*args, **kwargs)\n"
    )


# labs none of whose exercises has a namesake in the reference: the cheat forwards by hand
_FORWARDS = {
    "30.3": (
        "def watchdog(heartbeats_ns, completion_ns, deadline_ns, poll_ns, horizon_ns):\n"
        "    from minitorch.driver.faults import KernelTrace\n"
        "    from minitorch.driver.recovery import Watchdog\n\n"
        "    trace = KernelTrace(tuple(heartbeats_ns), completion_ns)\n"
        "    return Watchdog(deadline_ns, poll_ns).first_alarm_ns(trace, horizon_ns)\n"
    ),
    "37.1": (
        "def offers_and_needs(nm_text):\n"
        "    from minitorch.native.symbols import parse_nm\n\n"
        "    rows = parse_nm(nm_text)\n"
        "    return {s.name for s in rows if s.defined and s.is_global}, {\n"
        "        s.name for s in rows if s.kind == 'U'\n"
        "    }\n"
    ),
}


def _plan() -> list[tuple[str, Path, dict[str, str], str, str]]:
    """Per lab: (lab number, stub path, cell sources to put in, cheat exercise, honest one)."""
    refs = _reference_names()
    plan = []
    for lab, _solution in LABS:
        solution = read_notebook(lab.solution_path(ROOT))
        cells = {c.get("id"): c.source for c in solution.cells}
        exs = exercises(solution)
        cheat = next((e for e in exs if any(f in refs for f in _functions(cells[e.cell_id]))), None)
        forward = next((e for e in exs if e.id in _FORWARDS), None)
        if cheat is None and forward is not None:
            defined = _defined(cells[forward.cell_id])
            honest = next(
                e for e in exs if e.id != forward.id and not _reads(cells[e.cell_id]) & defined
            )
            sources = {
                forward.cell_id: _FORWARDS[forward.id],
                honest.cell_id: _honest(cells[honest.cell_id]),
            }
            plan.append((lab.number, lab.lab_path(ROOT), sources, forward.id, honest.id))
            continue
        if cheat is None:
            continue
        defined = _defined(cells[cheat.cell_id])  # gone with the cheat: not for the honest one
        honest = next(
            (e for e in exs if e.id != cheat.id and not _reads(cells[e.cell_id]) & defined),
            None,
        )
        if honest is None:
            continue
        name = next(f for f in _functions(cells[cheat.cell_id]) if f in refs)
        module = _namesake(refs[name], _blocked_modules(lab.number).get(cheat.id, set()))
        sources = {
            cheat.cell_id: _cheat(name, module),
            honest.cell_id: _honest(cells[honest.cell_id]),
        }
        plan.append((lab.number, lab.lab_path(ROOT), sources, cheat.id, honest.id))
    return plan


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("e2e")
    plan = _plan()
    paths, digests = [], {}
    for number, stub, sources, _c, _h in plan:
        nb = read_notebook(stub)
        for cell in nb.cells:
            if cell.get("id") in sources:
                cell.source = sources[cell.id]
        target = folder / f"{number}.ipynb"
        nbformat.write(nb, target)
        paths.append(target)
        digests[number] = hashlib.sha256(target.read_bytes()).hexdigest()
    opts = RunOptions(cell_timeout=120, timeout=600, memory_limit_mb=6144)
    results = grade_paths([str(p) for p in paths], opts, ROOT, jobs=2)
    after = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
    return {"plan": plan, "results": results, "digests": digests, "after": after}


@pytest.mark.grader
def test_every_lab_is_tried_end_to_end(graded) -> None:
    tried = {number for number, *_ in graded["plan"]}
    assert len(tried) >= 20, sorted(tried)  # labs whose exercises have a reference namesake


@pytest.mark.grader
def test_the_cheat_earns_nothing_and_the_honest_answer_passes(graded) -> None:
    wrong = []
    for (number, _p, _s, cheat, honest), res in zip(graded["plan"], graded["results"], strict=True):
        if res.error is not None:
            wrong.append(f"lab {number}: {res.error}")
            continue
        by_id = {e.id: e for e in res.exercises}
        if by_id[cheat].status == "passed" or by_id[cheat].points:
            wrong.append(f"lab {number}: the cheat on {cheat} passed")
        if by_id[honest].status != "passed":
            wrong.append(
                f"lab {number}: the honest {honest} scored {by_id[honest].status}: "
                f"{(by_id[honest].message or '')[:200]}"
            )
        for ex in res.exercises:
            if ex.id not in (cheat, honest) and ex.points:
                wrong.append(f"lab {number}: the stub {ex.id} earned {ex.points}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.grader
def test_no_submission_byte_changes(graded) -> None:
    assert graded["after"] == graded["digests"]
