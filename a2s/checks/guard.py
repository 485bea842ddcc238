"""The reference guard: while a check runs the student's code, the reference raises.

:func:`blocked` swaps the ``__code__`` of each reference function for a stub that raises,
so the reference fails however it was imported or renamed. A target may name a whole module
(``"minitorch.numerics.summation"``): every public function and class defined there, less
the names in ``allow``. Calls into forbidden modules and copies of the reference are caught
by :mod:`a2s.checks.watch`.

**The graders' own ground truth is blocked by default** (:func:`truth_blocked`): while a
student's function runs, every function and class defined in a grader module (the lab
packages ``a2s.checks.labNN`` and the shared truth modules in :data:`TRUTH_MODULES`)
has its code swapped for a stub that asks who called it. The grader itself (code of a
grader module) and the objects it hands the student pass through; a call from the
student's code (directly, or through the reference package or the checks' helpers) raises
:class:`~a2s.checks.errors.ReferenceCalledError`. What the grader hands out passes:
anything given to the student's function as an argument (a function, an instance: its
class's methods, one level into lists, tuples and dicts), and whatever is marked with
:func:`handout` (the objects a handed-out object returns: a handle, a view).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = [
    "TRUTH_MODULES",
    "blocked",
    "expand",
    "functions_of",
    "handout",
    "reference_called",
    "resolve",
    "truth_blocked",
]


def resolve(target: str) -> Any:
    """Import ``"pkg.module:qual.name"`` (or a bare module ``"pkg.module"``) and return it."""
    module_name, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def _stub(*args: Any, **kwargs: Any) -> Any:
    # runs with the *reference module's* globals once swapped in: reaches the guard through
    # __import__ and learns its own name from a replaced constant
    raise __import__("a2s.checks.guard", fromlist=["_"]).reference_called("__A2S_NAME__")


_CALLS: list[str] = []  # blocked references called while a guard is active


def reference_called(name: str) -> None:
    """Record and raise: the student's code called the blocked reference ``name``."""
    from a2s.checks.errors import ReferenceCalledError

    _CALLS.append(name)
    raise ReferenceCalledError(
        f"your code called the reference `{name}` instead of computing the answer itself. "
        "The course's minitorch package is there to read and to build on in later labs, "
        "but this exercise asks you to write it: implement it with numpy / plain Python."
    )


def functions_of(obj: Any) -> list[types.FunctionType]:
    """The plain functions behind ``obj``: itself (and what it wraps), or a class's methods."""
    if isinstance(obj, types.FunctionType):
        found = [obj]
        while isinstance(wrapped := getattr(found[-1], "__wrapped__", None), types.FunctionType):
            found.append(wrapped)  # functools.wraps decorators
        return found
    if isinstance(obj, type):
        found = []
        for value in vars(obj).values():
            raw = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            if isinstance(raw, property):
                raw = raw.fget
            if isinstance(raw, types.FunctionType):
                found.append(raw)
        return found
    raise TypeError(f"cannot block {obj!r}: not a plain function or class (fix the grader)")


def expand(targets: Sequence[str], allow: Sequence[str] = ()) -> list[Any]:
    """The objects ``targets`` name: ``"pkg.module:name"`` one, ``"pkg.module"`` every public
    function and class defined in that module, less the names in ``allow``."""
    found: list[Any] = []
    for target in targets:
        obj = resolve(target)
        if isinstance(obj, types.ModuleType):
            for name, value in vars(obj).items():
                if name.startswith("_") or name in allow or f"{obj.__name__}:{name}" in allow:
                    continue
                if (
                    isinstance(value, (types.FunctionType, type))
                    and getattr(value, "__module__", None) == obj.__name__
                ):
                    found.append(value)
        else:
            found.append(obj)
    return found


@contextmanager
def blocked(targets: Sequence[str], allow: Sequence[str] = ()) -> Iterator[None]:
    """Make every target (``"pkg.module:name"``, a function or a class) raise when called.

    A target without ``:`` is a module: every public function and class defined in it,
    less the names in ``allow``. The function objects themselves are patched (their
    ``__code__`` is swapped), so a reference imported under another name, or bound before
    the guard, is blocked too.
    """
    saved: list[tuple[types.FunctionType, types.CodeType]] = []
    try:
        for obj in expand(targets, allow):
            for fn in functions_of(obj):
                if fn.__code__.co_code == _stub.__code__.co_code:
                    continue  # blocked already: the guard that swapped it restores it
                if fn.__code__.co_freevars:  # a swapped code object must keep the closure's size
                    if not isinstance(obj, type):
                        raise TypeError(f"cannot block closure {fn.__qualname__}; block its maker")
                    continue  # a method using super(): its class's other methods stay blocked
                name = f"{fn.__module__}.{fn.__qualname__}"
                consts = tuple(name if c == "__A2S_NAME__" else c for c in _stub.__code__.co_consts)
                saved.append((fn, fn.__code__))
                fn.__code__ = _stub.__code__.replace(
                    co_consts=consts, co_name=fn.__code__.co_name, co_qualname=fn.__qualname__
                )
        yield
    finally:
        for fn, code in reversed(saved):
            fn.__code__ = code


# the blocking of the graders' ground truth by default lives in its own module
from a2s.checks.truth_guard import (  # noqa: E402
    _HANDOUTS,  # noqa: F401 - read by the sealed kernel
    TRUTH_MODULES,
    _keeper,  # noqa: F401 - read by the sealed kernel
    handout,
    truth_blocked,
)
