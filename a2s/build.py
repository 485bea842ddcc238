"""Generate the student labs from the solutions: stubs for solution regions, no outputs.

``### BEGIN SOLUTION`` ... ``### END SOLUTION`` becomes
``raise NotImplementedError("Exercise 01.2: <task>")`` at the indentation of the BEGIN line;
``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` is removed. Notebook metadata is
``a2s`` plus the ``kernelspec`` and ``language_info`` JupyterLab would write, so a fresh lab
opens unmodified. The result is byte-deterministic, so ``a2s build --check`` can compare it
with ``labs/``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from a2s.notebook import (
    NotebookError,
    a2s_meta,
    dumps,
    read_notebook,
    read_notebook_bytes,
    tags,
)
from a2s.syllabus import LABS, Lab

__all__ = [
    "BEGIN",
    "END",
    "KERNELSPEC",
    "LANGUAGE_INFO",
    "build_all",
    "build_lab",
    "existing_labs",
    "grading_base",
    "marker_problems",
    "stub_source",
]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
RUN_ON = "raises-exception"  # JupyterLab and nbclient go on past such a cell on Run All
# The kernel metadata JupyterLab writes into a notebook when it opens it with the pip-installed
# ipykernel. A notebook that already holds exactly these values opens unmodified; without them
# it is marked modified (and asks to be saved) before the learner has typed anything.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {  # ipykernel's; "version" comes from the solution, as its kernel reported it
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}
_NEAR_MARKER = re.compile(r"#+\s*(BEGIN|END)\s+(SOLUTION|HIDDEN\s+TESTS)", re.IGNORECASE)


def marker_problems(source: str) -> list[str]:
    """Return misspelt or unbalanced markers in ``source`` (empty when all is well)."""
    problems, open_marker = [], None
    for n, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        if text in (BEGIN, HIDDEN_BEGIN):
            if open_marker:
                problems.append(f"line {n}: {text!r} inside an open {open_marker!r}")
            open_marker = text
        elif text in (END, HIDDEN_END):
            expected = BEGIN if text == END else HIDDEN_BEGIN
            if open_marker != expected:
                problems.append(f"line {n}: {text!r} without {expected!r}")
            open_marker = None
        elif _NEAR_MARKER.search(text):
            problems.append(f"line {n}: misspelt marker {text!r} (use {BEGIN!r} / {END!r})")
    if open_marker:
        problems.append(f"{open_marker!r} is never closed")
    return problems


def stub_source(source: str, message: str) -> str:
    """Replace each solution region with ``raise NotImplementedError(message)``."""
    out, inside = [], False
    for line in source.splitlines():
        text = line.strip()
        if text == BEGIN:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}raise NotImplementedError({message!r})")
            inside = True
        elif text == END:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _strip_hidden(source: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            inside = True
        elif line.strip() == HIDDEN_END:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).rstrip("\n")


def _clean(nb: NotebookNode) -> NotebookNode:
    """Copy without outputs, execution counts or run-time metadata; kernel metadata canonical."""
    nb = copy.deepcopy(nb)
    language = {**LANGUAGE_INFO, **nb.metadata.get("language_info", {})}
    nb.metadata = {k: v for k, v in nb.metadata.items() if k == "a2s"}
    nb.metadata.update(kernelspec=dict(KERNELSPEC), language_info=language)
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("a2s", "tags")}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def stub_message(cell: NotebookNode) -> str:
    meta = a2s_meta(cell)
    return f"Exercise {meta.get('exercise', '?')}: {meta.get('task') or meta.get('title', '')}"


def build_lab(solution: NotebookNode, name: str = "notebook") -> NotebookNode:
    """Return the student copy of a solution notebook."""
    nb = _clean(solution)
    for cell in nb.cells:
        problems = marker_problems(cell.source)
        if problems:
            raise NotebookError(f"{name}, cell {cell.get('id')}: " + "; ".join(problems))
        if "exercise" in tags(cell):
            cell.source = stub_source(cell.source, stub_message(cell))
        cell.source = _strip_hidden(cell.source)
        if cell.cell_type == "code" and not {"setup", "exercise"} & set(tags(cell)):
            # Run All goes on past a check or experiment that needs an unwritten exercise
            cell.metadata["tags"] = [*tags(cell), RUN_ON]
    return nb


def grading_base(solution: NotebookNode) -> NotebookNode:
    """The notebook a submission is graded in: the solution, cleaned, exercises stubbed.

    Hidden tests are kept (they are part of grading). The grader then puts the student's
    exercise cells in place of the stubs.
    """
    nb = _clean(solution)
    for cell in nb.cells:
        if "exercise" in tags(cell):
            cell.source = stub_source(cell.source, stub_message(cell))
    return nb


@dataclass(slots=True)
class Built:
    lab: Lab
    target: Path
    text: str


def existing_labs(root: Path) -> list[tuple[Lab, Path]]:
    """The labs whose solution notebook exists, in number order."""
    return [(lab, lab.solution_path(root)) for lab in LABS if lab.solution_path(root).exists()]


def holds_student_work(text: str) -> bool:
    """True when a lab file has outputs or an exercise cell that is no longer a stub."""
    try:
        nb = read_notebook_bytes(text.encode("utf-8"), "lab")
    except NotebookError:
        return True  # unreadable: never overwrite what we do not understand
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            return True
        if "exercise" in tags(cell) and "raise NotImplementedError(" not in cell.source:
            return True
    return False


def build_all(root: Path, check: bool = False, force: bool = False) -> BuildReport:
    """Write ``labs/`` from ``solutions/``; with ``check`` write nothing.

    ``differing`` names labs whose file differs from (or would differ from) a fresh build,
    stray notebooks in ``labs/`` included. A lab file that holds a student's work (outputs, or
    an exercise cell that is not a stub) is left alone and listed in ``kept`` unless ``force``;
    stray notebooks are only deleted with ``force``.
    """
    built = [
        Built(lab, lab.lab_path(root), dumps(build_lab(read_notebook(path), path.name)))
        for lab, path in existing_labs(root)
    ]
    report = BuildReport()
    for item in built:
        current = item.target.read_text(encoding="utf-8") if item.target.exists() else None
        if current == item.text:
            continue
        report.differing.append(item.lab.name)
        if check:
            continue
        if current is not None and not force and holds_student_work(current):
            report.kept.append(item.target)
            continue
        item.target.parent.mkdir(parents=True, exist_ok=True)
        item.target.write_text(item.text, encoding="utf-8")
        report.written.append(item.lab.name)
    expected = {item.target.name for item in built}
    labs_dir = root / "labs"
    for stray in sorted(labs_dir.glob("*.ipynb")) if labs_dir.is_dir() else []:
        if stray.name not in expected:
            report.differing.append(f"{stray.stem} (no solution)")
            if force and not check:
                stray.unlink()
            else:
                report.kept.append(stray)
    return report


@dataclass(slots=True)
class BuildReport:
    differing: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # left alone: student work or strays
