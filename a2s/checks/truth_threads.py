"""Threads under the truth guard (part of :mod:`a2s.checks.truth_guard`).

A thread's stack starts in ``threading``'s own frames, so a grader truth handed to
``threading.Thread(target=...)``, ``threading.Timer`` or ``ThreadPoolExecutor.submit``
would be called from trusted library frames only. So every ``Thread`` and every thread
pool work item records, when it is made, what the guard's walk said of its maker's stack
(the grader's, or the learner's with what its guarded call was handed); the walk that
reaches a thread's bottom, or a work item's ``run``, goes on with that record. A bottom with
no record (a thread made before the guard was loaded, or by ``_thread.start_new_thread``)
is the learner's: the walk fails closed.

The records live in a generator's frame (frames are out of reach in the sealed kernel) and
are written only by the recording ``__init__``; a learner's call of it records the
learner's stack. A sealed rank process (:func:`a2s.checks.rank_seal.seal`) refuses the
learner's threads itself and turns recording off (:func:`stop`): recording reads frames,
which the seal would count against the learner.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
import weakref
from collections.abc import Callable, Generator
from concurrent.futures import thread as _pool
from typing import Any

__all__ = ["UNKNOWN", "install", "made_by", "stop"]

_BOTTOM = threading.Thread._bootstrap.__code__  # type: ignore[attr-defined]
_RUN = _pool._WorkItem.run.__code__
UNKNOWN = object()
_OFF = [False]


def _records() -> Generator[Any, Any, None]:
    """Thread or work item -> what the walk said of its maker (None: the grader's). Takes
    a write ``(obj, record)`` only from the recording ``__init__``; answers a read ``obj``."""
    made: weakref.WeakKeyDictionary[Any, frozenset[int] | None] = weakref.WeakKeyDictionary()
    writer = yield None  # the code of the recording __init__, sent once at install
    answer: Any = None
    while True:
        request = yield answer
        answer = UNKNOWN
        try:
            if type(request) is tuple and sys._getframe(1).f_code is writer:
                made[request[0]] = request[1]
            elif type(request) is not tuple:
                answer = made.get(request, UNKNOWN)
        except TypeError:  # not weakly referable
            pass


_KEEP = _records()
next(_KEEP)
_LOCK = threading.Lock()


def made_by(frame: types.FrameType) -> Any:
    """The record of the Thread whose bottom ``frame`` is, or of the work item whose ``run``
    it is: ``frozenset()`` (the learner's) when it has none; :data:`UNKNOWN` for any other
    frame."""
    if frame.f_code is not _BOTTOM and frame.f_code is not _RUN:
        return UNKNOWN
    with _LOCK:
        found = _KEEP.send(frame.f_locals.get("self"))
    return frozenset() if found is UNKNOWN else found


def _recording(init: Callable[..., None], origin: Callable[..., Any]) -> Callable[..., None]:
    @functools.wraps(init)
    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _OFF[0]:
            return
        try:
            record = origin(sys._getframe(1))  # who made it: its maker's stack
            with _LOCK:
                _KEEP.send((self, record))
        except Exception:  # never in the way of making a thread (no record: the learner's)
            pass

    return made


def install(origin: Callable[[types.FrameType | None], frozenset[int] | None]) -> None:
    """Record every Thread and work item made from now on (once; at the guard's import)."""
    classes: tuple[Any, ...] = (threading.Thread, _pool._WorkItem)
    for cls in classes:
        if "__a2s_made__" not in vars(cls):
            cls.__init__ = _recording(cls.__init__, origin)
            cls.__a2s_made__ = True
    _KEEP.send(threading.Thread.__init__.__code__)  # every class's recording __init__


def stop() -> None:
    """No more records in this process (a sealed rank: its learner may start no thread)."""
    _OFF[0] = True
