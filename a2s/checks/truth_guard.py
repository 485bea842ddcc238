"""The graders' ground truth, blocked by default (part of :mod:`a2s.checks.guard`).

While a student's function runs (:class:`truth_blocked`), every function and class defined
in a grader module (the lab packages ``a2s.checks.labNN`` and the shared truth modules
in :data:`TRUTH_MODULES`) has its code swapped for a stub that asks who called it; see
:mod:`a2s.checks.guard` for the rules. Import it through :mod:`a2s.checks.guard`.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
from collections.abc import Generator, Iterable
from typing import Any

from a2s.checks.guard import _stub, reference_called
from a2s.checks.truth_threads import UNKNOWN, install, made_by

__all__ = ["TRUTH_MODULES", "handout", "truth_blocked"]

# the shared modules of ground truth (besides every lab package a2s.checks.labNN)
TRUTH_MODULES = (
    "a2s.checks.graphs",
    "a2s.checks.trajectory",
    "a2s.checks.truths",
    "a2s.checks.twins",
    "a2s.checks.vjp",
)


# --------------------------------------------------------------------------- ground truth
_HANDOUTS: set[int] = set()  # ids of functions and classes marked with handout()
_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # minitorch/
_FILES: dict[str, int] = {}  # filename -> 1 trusted (stdlib, libraries, the course), 0 not


def handout(obj: Any) -> Any:
    """Mark a grader's function or class as handed to the student: it stays callable.

    For what the student's code receives other than as an argument (the handle a handed-out
    device returns, a view class); whatever is passed to the student's function as an
    argument is a handout already. Only the module that defines ``obj`` may mark it.
    Returns ``obj``, so it works as a decorator.
    """
    caller = sys._getframe(1).f_globals.get("__name__")
    if caller != getattr(obj, "__module__", None):
        raise TypeError("handout(): only the module that defines an object may hand it out")
    _HANDOUTS.add(id(obj))
    return obj


def _grader_module(name: str) -> bool:
    return name in TRUTH_MODULES or (name.startswith("a2s.checks.lab") and name[14:16].isdigit())


def _truth(*args: Any, **kwargs: Any) -> Any:
    # swapped in for a grader function: asks _through who called, then runs the original
    slots: Any = "__A2S_TRUTH__"  # a constant swapped for the bound tuple in each stub
    through, name, shadow, key, owner = slots
    return through(name, shadow, key, owner)(*args, **kwargs)


def _library_roots() -> tuple[str, ...]:
    import site
    import sysconfig

    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages())
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_LIBS = _library_roots()


def _trusted_file(filename: str) -> int:
    kind = _FILES.get(filename)
    if kind is None:
        real = os.path.realpath(filename)
        kind = _FILES[filename] = int(
            filename.startswith("<frozen ") or real.startswith(_ROOT) or real.startswith(_LIBS)
        )
    return kind


def _through(name: str, shadow: Any, key: int, owner: int) -> Any:
    """The original of a grader function, unless the student's code is the one calling it
    (and the function or its class was not handed out: :func:`handout`, or an argument)."""
    if key in _HANDOUTS or owner in _HANDOUTS:
        return shadow
    try:
        caller: types.FrameType | None = sys._getframe(2)  # the stub's caller
    except ValueError:  # none: called from C at the bottom of a thread
        caller = None
    handed = _origin(caller)
    if handed is None or key in handed or owner in handed:
        return shadow
    reference_called(name)


def _origin(frame: types.FrameType | None) -> frozenset[int] | None:
    """Whose call this is: None, the grader's; else the ids its guarded call handed the student.

    Walks down: a grader module's frame (the grader, or a handed-out object it defines) is
    the grader's; the student's frame (a notebook cell, any file outside the course and its
    libraries) the student's. A thread's bottom, or a thread pool work item's ``run``, goes
    on with what the walk said where that Thread or work item was made
    (:mod:`a2s.checks.truth_threads`); the main thread's bottom is the grader's, another
    thread's with no record the student's.
    """
    while frame is not None:
        g = frame.f_globals
        module = g.get("__name__") or ""
        real = sys.modules.get(module)
        genuine = real is not None and getattr(real, "__dict__", None) is g
        if genuine and _grader_module(module):
            return None
        if not genuine or module == "__main__" or not _trusted_file(frame.f_code.co_filename):
            break
        made = made_by(frame)
        if made is not UNKNOWN:
            return made  # type: ignore[no-any-return]
        frame = frame.f_back
    else:  # the bottom of the main thread is the grader's; of a thread with no record, not
        return None if threading.current_thread() is threading.main_thread() else frozenset()
    guard: types.FrameType | None = frame
    while guard is not None:  # the guarded call the student's code runs in: its arguments
        if guard.f_code.co_name == "__call__" and guard.f_globals.get("__name__") == _CORE:
            given = (*guard.f_locals.get("args", ()), *guard.f_locals.get("kwargs", {}).values())
            return frozenset(_handed(given))
        made = made_by(guard)  # on a thread the student started: what its maker was handed
        if made is not UNKNOWN:
            return made or frozenset()  # type: ignore[no-any-return]
        guard = guard.f_back
    return frozenset()


_CORE = "a2s.checks.core"


def _stubs(cache: dict[str, tuple[int, list[Any]]]) -> tuple[list[Any], bool]:
    """(function, original, stub) for every swappable function of the grader modules loaded
    now (every lab's: another lab's truth answers some exercises; the shared truth modules),
    and whether all were kept in ``cache`` (the keeper's: a new import costs its own rows)."""
    rows: list[Any] = []
    seen: set[int] = set()
    complete = True
    for module_name, module in list(sys.modules.items()):
        if module is None or not _grader_module(module_name):
            continue
        held, mine = cache.get(module_name, (0, []))
        if held != id(module):
            mine, partial = _module_stubs(module_name, module, seen)
            complete &= not partial  # a function's original is out of sight: rebuilt next time
            if not partial:
                cache[module_name] = (id(module), mine)
        rows.extend(mine)
    return rows, complete


def _module_stubs(module_name: str, module: Any, seen: set[int]) -> tuple[list[Any], bool]:
    rows, partial = [], False
    for value in list(vars(module).values()):
        if getattr(value, "__module__", None) != module_name or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            members = [(value, 0)]
        elif isinstance(value, type):
            members = [(f, id(value)) for f in _methods(value)]
        else:
            continue
        for fn, owner in members:
            code = fn.__code__
            if code.co_code == _stub.__code__.co_code:  # blocked by a grader's blocks=:
                partial = True  # its original is out of sight; rebuild next time
            if code.co_freevars or code.co_code in _STUB_BYTES:
                continue  # a closure cannot take a stub; swapped already
            shadow = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__)
            shadow.__kwdefaults__ = fn.__kwdefaults__
            label = f"{fn.__module__}.{fn.__qualname__}"
            bound = (_through, label, shadow, id(fn), owner)
            consts = tuple(bound if c == "__A2S_TRUTH__" else c for c in _TRUTH_CONSTS)
            stub = _truth.__code__.replace(co_consts=consts, co_qualname=fn.__qualname__)
            rows.append((fn, code, stub))
    return rows, partial


_TRUTH_CONSTS = _truth.__code__.co_consts
_STUB_BYTES = frozenset({_stub.__code__.co_code, _truth.__code__.co_code})


def _methods(cls: type) -> list[types.FunctionType]:
    """A grader class's methods that compute (``__init__``/``__call__``, no other dunder:
    the grader's records still compare and print as usual)."""
    found = []
    for name, value in vars(cls).items():
        if name.startswith("__") and name not in ("__init__", "__call__"):
            continue
        raw = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        if isinstance(raw, property):
            raw = raw.fget
        if isinstance(raw, types.FunctionType):
            found.append(raw)
    return found


def _handed(values: Iterable[Any]) -> set[int]:
    """The ids of what a call hands the student: functions (and what a ``functools.partial``
    or a bound method wraps), instances' classes, one level into lists, tuples and dicts."""
    todo = list(values)
    for v in list(todo):
        if type(v) in (list, tuple):
            todo.extend(v)
        elif type(v) is dict:
            todo.extend(v.values())
    ids: set[int] = set()
    for v in todo:
        while isinstance(v, functools.partial):  # a grader function with its first arguments
            ids.update(id(c) for c in type(v).__mro__)
            v = v.func
        if isinstance(v, types.FunctionType):
            ids.add(id(v))
        elif isinstance(v, types.MethodType):
            ids.add(id(v.__func__))
            ids.update(id(c) for c in type(v.__self__).__mro__)
        elif isinstance(v, type):
            ids.update(id(c) for c in v.__mro__)
        else:
            ids.update(id(c) for c in type(v).__mro__)
    return ids


def _keeper() -> Generator[None, Any, None]:
    """Holds the stubs (each keeps the original it stands for) where no student code reaches:
    in this generator's frame (frames are out of reach in the sealed kernel). It takes
    requests only from :class:`truth_blocked`; guarded calls running at once share the swap."""
    cache: dict[str, tuple[int, list[Any]]] = {}  # module -> (id(module), its rows)
    built, rows = -1, list[Any]()  # len(sys.modules) when rows were gathered (-1: again)
    active: list[list[Any]] = []
    depth = 0
    enter: Any
    leave: Any
    enter, leave = yield None  # the codes of truth_blocked's methods, sent once at import
    yield None
    while True:
        caller = sys._getframe(1).f_code
        if caller is enter:
            depth += 1
            if built != len(sys.modules):
                rows, complete = _stubs(cache)
                built = len(sys.modules) if complete else -1
            if not any(r is rows for r in active):
                active.append(rows)
                for fn, code, stub in rows:
                    if fn.__code__ is code:
                        fn.__code__ = stub
        elif caller is leave and depth > 0:
            depth -= 1
            if depth == 0:
                for table in active:
                    for fn, code, stub in table:
                        if fn.__code__ is stub:
                            fn.__code__ = code
                active.clear()
        yield None


_KEEP = _keeper()
next(_KEEP)
_KEEP_LOCK = threading.Lock()


class truth_blocked:
    """While the block runs, the grader modules raise when the student's code calls them.

    Every loaded lab package ``a2s.checks.labNN`` (not the exercise's ``lab`` alone: lab 09's
    helpers would answer lab 12's attention) and the shared truth modules. Nested and
    concurrent blocks (one per simulated rank) share one swap.
    """

    __slots__ = ("lab",)

    def __init__(self, lab: str = "") -> None:
        self.lab = lab

    def __enter__(self) -> None:
        with _KEEP_LOCK:
            _KEEP.send(self.lab)

    def __exit__(self, *exc: object) -> None:
        with _KEEP_LOCK:
            _KEEP.send(self.lab)


_KEEP.send((truth_blocked.__enter__.__code__, truth_blocked.__exit__.__code__))

install(_origin)  # every Thread and thread pool work item made from now on
