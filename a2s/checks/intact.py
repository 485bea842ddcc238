"""A lab's grader data kept intact while the learner's code runs.

The truth's and the graders' functions are blocked for the learner (their code is swapped),
but the data they read (opcode tables, fields, latencies, lists of cases) are plain dicts and
lists of modules the learner can import, and a grader's helpers are module attributes anyone
can rebind. ``with intact("a2s.checks.lab36"):`` snapshots every loaded module of that
package (and this one), and after the grading puts back what changed and fails the attempt.
Every check runs inside :func:`lab_intact` of its own lab (the ``@grader`` wrapper enters it),
so no lab has to remember to. A code swap (``fn.__code__ = ...``) is the sealed kernel's
(``a2s grade``).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from a2s.checks.errors import CheckFailure

__all__ = ["intact", "lab_intact"]

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
    # bound now: a helper rebound later changes nothing here
    restore, keep, refield = _restore, _keep, _refield
    snaps = []
    for module in _modules(package):
        names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
        snaps.append((module, names, {k: keep(v) for k, v in names.items()}))
    fields = _fields(snaps)
    done = False
    try:
        yield
        done = True
    finally:
        changed = [f"{m.__name__}.{k}" for m, names, kept in snaps for k in restore(m, names, kept)]
        changed += refield(fields)
    if changed and done:
        raise CheckFailure(
            f"your code changed the grader's own tables ({', '.join(changed)}): the grader "
            "computes every answer itself; leave it alone."
        )


def lab_intact(exercise: str) -> Any:
    """:func:`intact` over the grader package of ``exercise`` ("36.2" -> a2s.checks.lab36)."""
    return intact(f"a2s.checks.lab{exercise.split('.')[0]}")


def _fields(snaps: list) -> list[tuple[str, Any, dict[str, Any]]]:
    """The fields of the graders' own frozen dataclass objects (a ``Table``: its truth, cases),
    kept by identity: a frozen one can still be rewritten with ``object.__setattr__``."""
    out = []
    for module, names, _ in snaps:
        for k, v in names.items():
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                frozen = type(v).__dataclass_params__.frozen  # type: ignore[attr-defined]
                if frozen and type(v).__module__.startswith("a2s.checks"):
                    got = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
                    out.append((f"{module.__name__}.{k}", v, got))
    return out


def _refield(fields: list[tuple[str, Any, dict[str, Any]]]) -> list[str]:
    """Put back every field rewritten since :func:`_fields`; return their names."""
    changed = []
    for where, obj, kept in fields:
        for name, value in kept.items():
            if getattr(obj, name, None) is not value:
                object.__setattr__(obj, name, value)
                changed.append(f"{where}.{name}")
    return changed


def _keep(v: Any) -> Any:
    """What is compared after: a copy of plain data and of small arrays, else the object."""
    if isinstance(v, np.ndarray) and v.nbytes <= 1 << 20:
        return v.copy()
    if type(v) not in _DATA:
        return v
    try:
        return copy.deepcopy(v)
    except Exception:  # a container of something that cannot be copied: kept by identity
        return v


def _same(a: Any, b: Any) -> bool:
    """``a`` (now) is still ``b`` (what was kept): a function, class, module or alias is the
    same object; plain data and small arrays are equal by value (:func:`_equal`)."""
    if type(b) not in _DATA and not isinstance(b, np.ndarray):
        return a is b
    return _equal(a, b)


def _equal(a: Any, b: Any) -> bool:
    """Equal by value, into containers, whatever arrays or NaNs they hold."""
    if a is b:
        return True
    if isinstance(b, np.ndarray):
        return _arrays_same(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, float) and b != b:
        return a != a
    try:
        return bool(a == b)
    except Exception:
        return False


def _arrays_same(a: Any, b: np.ndarray) -> bool:
    return (
        isinstance(a, np.ndarray)
        and a.dtype == b.dtype
        and a.shape == b.shape
        and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    )


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
        elif isinstance(obj, np.ndarray) and obj is not was and obj.shape == was.shape:
            obj[...] = was
        now[k] = obj
    return changed
