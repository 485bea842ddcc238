"""Threads under the truth guard (part of :mod:`a2s.checks.truth_guard`).

A thread's stack starts in ``threading``'s own frames, so a grader truth handed to
``threading.Thread(target=...)``, ``threading.Timer`` or ``ThreadPoolExecutor.submit``
would be called from trusted library frames only. So every ``Thread`` and every thread
pool work item records, when it is made, what the guard's walk said of its maker's stack
(the grader's, or the learner's with what its guarded call was handed); the walk that
reaches a thread's bottom, or a work item's ``run``, goes on with that record.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
import weakref
from collections.abc import Callable
from concurrent.futures import thread as _pool
from typing import Any

__all__ = ["install", "made_by"]

# a Thread or a pool's work item -> what the walk said of its maker (None: the grader's)
_MADE: weakref.WeakKeyDictionary[Any, frozenset[int] | None] = weakref.WeakKeyDictionary()
_BOTTOM = threading.Thread._bootstrap.__code__  # type: ignore[attr-defined]
_RUN = _pool._WorkItem.run.__code__
_UNKNOWN = object()


def made_by(frame: types.FrameType) -> Any:
    """The record of the Thread whose bottom ``frame`` is, or of the work item whose ``run``
    it is; ``_UNKNOWN`` for any other frame or an object made before the guard was loaded."""
    if frame.f_code is not _BOTTOM and frame.f_code is not _RUN:
        return _UNKNOWN
    try:
        return _MADE.get(frame.f_locals.get("self"), _UNKNOWN)
    except TypeError:  # not weakly referable
        return _UNKNOWN


def _recording(init: Callable[..., None], origin: Callable[..., Any]) -> Callable[..., None]:
    @functools.wraps(init)
    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        try:
            _MADE[self] = origin(sys._getframe(1))  # who made it: its maker's stack
        except Exception:  # never in the way of making a thread (no record: as before)
            pass

    return made


def install(origin: Callable[[types.FrameType | None], frozenset[int] | None]) -> None:
    """Record every Thread and work item made from now on (once; at the guard's import)."""
    classes: tuple[Any, ...] = (threading.Thread, _pool._WorkItem)
    for cls in classes:
        if "__a2s_made__" not in vars(cls):
            cls.__init__ = _recording(cls.__init__, origin)
            cls.__a2s_made__ = True
