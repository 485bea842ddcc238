"""The lab's grader data kept intact while the learner's code runs.

The truth's and the graders' functions are blocked for the learner (their code is swapped),
but the data they read (the opcodes, the fields, the latencies, the bad operands) are plain
dicts and lists of modules the learner can import, and a grader's helpers are module
attributes anyone can rebind. :func:`intact` snapshots every module of ``a2s.checks.lab36``,
and after the grading puts back what changed and fails the attempt.
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from a2s.checks.errors import CheckFailure

__all__ = ["intact"]

_DATA = (dict, list, tuple, set, frozenset, int, float, str, bool, bytes)  # kept by value


def _modules() -> list[types.ModuleType]:
    """The truth and every grader module of the lab (the package's loaded submodules)."""
    package = __name__.rpartition(".")[0]
    return [m for n, m in sorted(sys.modules.items()) if n.startswith(package + ".")]


@contextmanager
def intact() -> Iterator[None]:
    """Fail (and undo it) if the learner's code rebinds or rewrites the lab's grader data.

    The functions are blocked while the learner's code runs, but the tables they read (the
    opcodes, the fields, the latencies, the bad operands) are plain dicts and lists, and a
    grader's helpers are module attributes: one rewritten from the learner's call would
    change the truth or the checks of every later case.
    """
    snaps = []
    for module in _modules():
        names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
        snaps.append((module, names, {k: _keep(v) for k, v in names.items()}))
    done = False
    try:
        yield
        done = True
    finally:
        changed = [
            f"{m.__name__}.{k}" for m, names, kept in snaps for k in _restore(m, names, kept)
        ]
    if changed and done:
        raise CheckFailure(
            f"your code changed the grader's own tables ({', '.join(changed)}): the grader "
            "computes every answer itself; leave it alone."
        )


def _keep(v: Any) -> Any:
    return copy.deepcopy(v) if type(v) in _DATA else v


def _restore(module: types.ModuleType, names: dict[str, Any], kept: dict[str, Any]) -> list[str]:
    """Put back what changed in ``module``; return the names that did."""
    now = vars(module)
    changed = sorted(
        k
        for k in kept.keys() | {k for k in now if not k.startswith("__")}
        if k not in now or k not in kept or not _same(now[k], kept[k])
    )
    for k in changed:
        now.pop(k, None)
        if k not in names:
            continue
        obj, was = names[k], kept[k]
        if isinstance(obj, dict) and obj is not was:  # rewritten in place: undo in place
            obj.clear()
            obj.update(was)
        elif isinstance(obj, list) and obj is not was:
            obj[:] = was
        now[k] = obj
    return changed


def _same(a: Any, b: Any) -> bool:
    if type(b) not in _DATA:  # functions, classes, modules, aliases: the same object
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False
