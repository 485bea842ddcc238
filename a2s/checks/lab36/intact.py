"""The truth's tables kept intact while the learner's code runs.

The truth's functions are blocked for the learner (their code is swapped), but the data they
read (the opcodes, the fields, the latencies) are plain dicts and lists of a module the
learner can import: one rewritten from the learner's call would change the truth of every
later case. :func:`intact` snapshots the module's data, and after the grading undoes any
change and fails it.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from a2s.checks.errors import CheckFailure
from a2s.checks.lab36 import _truth

__all__ = ["intact"]

_DATA = (dict, list, tuple, set, frozenset, int, float, str, bool, bytes)  # kept by value


@contextmanager
def intact(module: types.ModuleType = _truth) -> Iterator[None]:
    """Fail (and undo it) if the learner's code rebinds or rewrites the truth module's data.

    The functions are blocked while the learner's code runs, but the tables they read (the
    opcodes, the fields, the latencies) are plain dicts: one rewritten from the learner's
    call would change the truth of every later case.
    """
    names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
    kept = {k: copy.deepcopy(v) if type(v) in _DATA else v for k, v in names.items()}
    yield_ok = False
    try:
        yield
        yield_ok = True
    finally:
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
    if changed and yield_ok:
        raise CheckFailure(
            f"your code changed the grader's own tables ({', '.join(changed)} of "
            f"{module.__name__}): the grader computes every answer itself; leave it alone."
        )


def _same(a: Any, b: Any) -> bool:
    if type(b) not in _DATA:  # functions, classes, modules, aliases: the same object
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False
