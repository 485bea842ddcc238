"""A lab's grader data kept intact while the learner's code runs.

The truth's and the graders' functions are blocked for the learner (their code is swapped),
but the data they read (opcode tables, fields, latencies, lists of cases) are plain dicts and
lists of modules the learner can import, and a grader's helpers are module attributes anyone
can rebind. ``with intact("a2s.checks.lab36"):`` snapshots every loaded module of that
package (and this one), and after the grading puts back what changed and fails the attempt.
A code swap (``fn.__code__ = ...``) is the sealed kernel's (``a2s grade``).
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


def _modules(package: str) -> list[types.ModuleType]:
    """The package, its loaded submodules (the truth, every grader) and this module."""
    names = sorted(n for n in sys.modules if n == package or n.startswith(package + "."))
    return [sys.modules[n] for n in [*names, __name__]]


@contextmanager
def intact(package: str) -> Iterator[None]:
    """Fail (and undo it) if the learner's code rebinds or rewrites the lab's grader data.

    The functions are blocked while the learner's code runs, but the tables they read (the
    opcodes, the fields, the latencies, the bad operands) are plain dicts and lists, and a
    grader's helpers are module attributes: one rewritten from the learner's call would
    change the truth or the checks of every later case.
    """
    restore, keep = _restore, _keep  # bound now: a helper rebound later changes nothing here
    snaps = []
    for module in _modules(package):
        names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
        snaps.append((module, names, {k: keep(v) for k, v in names.items()}))
    done = False
    try:
        yield
        done = True
    finally:
        changed = [f"{m.__name__}.{k}" for m, names, kept in snaps for k in restore(m, names, kept)]
    if changed and done:
        raise CheckFailure(
            f"your code changed the grader's own tables ({', '.join(changed)}): the grader "
            "computes every answer itself; leave it alone."
        )


def _keep(v: Any) -> Any:
    return copy.deepcopy(v) if type(v) in _DATA else v


def _same(a: Any, b: Any) -> bool:
    if type(b) not in _DATA:  # functions, classes, modules, aliases: the same object
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _restore(
    module: types.ModuleType, names: dict[str, Any], kept: dict[str, Any], same: Any = _same
) -> list[str]:
    """Put back what changed in ``module``; return the names that did."""
    now = vars(module)
    changed = sorted(
        k
        for k in kept.keys() | {k for k in now if not k.startswith("__")}
        if k not in now or k not in kept or not same(now[k], kept[k])
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
