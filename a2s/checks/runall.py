"""What a cell shows when it needs an exercise that is not written yet (Run All on a stub).

In a fresh lab every exercise raises ``NotImplementedError("Exercise 21.3: ...")``. A cell
that calls it (a reference run, an experiment) would show a traceback through the learner's
stub, and a later cell that reads what the failed cell never finished would show a bare
``NameError`` (or whatever an empty result leads to). Installed into IPython when a grader
module is imported, these handlers show one line instead:

    ⏭ needs Exercise 21.3 (not written yet): finish it, run its cell, then run this one again.
    ⏭ `ring` was never set: the cell that sets it stopped at Exercise 21.3 (not written yet). ...

A name counts as unfinished from the moment a cell that assigns it stops at an exercise until a
cell that assigns it runs to the end.

Every other exception keeps IPython's usual traceback. The exception itself is unchanged, so
the cell still counts as failed (``a2s grade`` and the check cells do not depend on this).
JupyterLab goes on past such a cell because the student copies tag every cell after the
setup ``raises-exception`` (:func:`a2s.build.build_lab`).
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Any

__all__ = ["install", "needs_line", "unset_line"]

_EXERCISE = re.compile(r"^Exercise (\d\d\.\d+)\b")
_STOPPED: dict[str, str] = {}  # name a failed cell would have set -> the exercise it stopped at


def needs_line(exercise: str) -> str:
    return (
        f"⏭ needs Exercise {exercise} (not written yet): finish it, run its cell, "
        "then run this cell again."
    )


def unset_line(name: str, exercise: str, defined: bool = False) -> str:
    what = "was not finished" if defined else "was never set"
    return (
        f"⏭ `{name}` {what}: the cell that sets it stopped at Exercise {exercise} "
        "(not written yet). Finish that exercise, then run the cells from there again."
    )


def _read(source: str) -> list[str]:
    """Names a cell reads, in order of first use."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return list(dict.fromkeys(n.id for n in sorted(loads, key=lambda n: (n.lineno, n.col_offset))))


def _assigned(source: str) -> set[str]:
    """Names a cell assigns at its top level (what a later cell may read)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: the names of the plain lines are enough here
        return set()
    names: set[str] = set()
    for node in tree.body:
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = [getattr(node, "target", None) or node]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None):
    # IPython discards what a custom handler returns: show it here (ipykernel's _showtraceback
    # also sends the error, its name and value, as the cell's result)
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for errors.traceback()
    shell._showtraceback(etype, value, _lines(shell, etype, value, tb, tb_offset))


def _lines(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any) -> list[str]:
    match = _EXERCISE.match(str(value)) if isinstance(value, NotImplementedError) else None
    if match is not None:
        history = shell.user_ns.get("In") or [""]
        for name in _assigned(str(history[-1])):
            _STOPPED[name] = match.group(1)
        return [needs_line(match.group(1))]
    if hasattr(value, "_render_traceback_"):  # the checks' own short messages, as they are
        return value._render_traceback_()
    lines = _unfinished(shell, value)
    if lines is not None:
        return lines
    return shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)


def _unfinished(shell: Any, value: BaseException) -> list[str] | None:
    """One line when the failing cell reads what a cell stopped at an exercise left unset."""
    name = getattr(value, "name", None)
    if isinstance(value, NameError) and name in _STOPPED:
        return [unset_line(str(name), _STOPPED[name])]
    history = shell.user_ns.get("In") or [""]
    for read in _read(str(history[-1])):  # e.g. plotting a dict the stopped loop left empty
        if read in _STOPPED:
            return [unset_line(read, _STOPPED[read], defined=True)]
    return None


def _finished(result: Any) -> None:
    """After a cell ran to its end, the names it assigned are finished again."""
    if getattr(result, "success", False):
        for name in _assigned(str(getattr(result.info, "raw_cell", "") or "")):
            _STOPPED.pop(name, None)


def install() -> bool:
    """Show the one-line messages in this IPython kernel; False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "_a2s_runall", False):
        return shell is not None
    shell.set_custom_exc((Exception,), _handler)
    shell.events.register("post_run_cell", _finished)
    shell._a2s_runall = True
    return True
