"""The forbidden-call watch: what the student's code may not call while a check runs it.

A :class:`Watch` is built once per checked function from the exercise's ``forbid`` list and
its blocked references, and is active around each call of the student's function:

* **torch** (the default ``forbid``): a ``TorchFunctionMode`` pushed for the call sees every
  torch function, method and operator on tensors (``t + t`` too), and importing torch during
  the call counts as well. It costs nothing for code that does not touch torch.
* **forbidden functions** (``"numpy:convolve"``, ``"math:fsum"``) and modules other than
  torch: a profile hook (``sys.setprofile``) on the call tree, with one dict lookup per call;
  used only by the exercises that declare such functions (it also sees reference clones).
* **threads** started during the call are profiled in full (``threading.setprofile``).
* **copies of the reference** (a clone of its function, a second import of its file) held by
  the student's function, its globals or closures are found before the call.

A hit is recorded and raised; the check fails naming it even if the student's code caught
the exception. Under ``a2s grade`` the sealed kernel also vetoes what would undo the watch
(``sys.setprofile``, reading a course function's ``__code__``, creating functions).
Overhead, measured per check on the solutions: see docs/trust.md.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from a2s.checks.guard import _stub, expand, functions_of, resolve
from a2s.checks.profiler import (
    Profile,
    forbidden_message,
    module_path,
    profiler,
    raise_hit,
)

__all__ = ["Watch", "forbidden_message"]


def _code_of(obj: Any) -> types.CodeType | None:
    obj = getattr(obj, "_implementation", obj)  # numpy's array-function dispatchers
    while isinstance(getattr(obj, "__wrapped__", None), types.FunctionType):
        obj = obj.__wrapped__
    return obj.__code__ if isinstance(obj, types.FunctionType) else None


GENERATED = "<generated>"  # the codes entry of a generated function: confirmed by identity


def _key(code: types.CodeType) -> tuple[str, str]:
    return os.path.realpath(code.co_filename), code.co_qualname


# the profile hooks of the watches running now, oldest first, and what threading had before
_THREAD_HOOKS: list[Any] = []
_THREAD_BASE: list[Any] = [None]


@dataclass(slots=True)
class Watch:
    """Forbidden calls and reference copies for one checked function (module docstring)."""

    forbid: Sequence[str]
    blocks: Sequence[str]
    allow: Sequence[str] = ()  # names of a blocked module that stay allowed
    torch: bool = False  # torch is forbidden
    files: tuple[str, ...] = ()  # forbidden module files and folders (besides torch)
    owners: tuple[str, ...] = ()  # forbidden module names, for C functions
    codes: dict[tuple[str, str], str] = field(default_factory=dict)  # (file, qualname) -> name
    builtins: list[tuple[Any, str]] = field(default_factory=list)  # forbidden C functions
    references: set[str] = field(default_factory=set)  # names in codes that are references
    originals: set[int] = field(default_factory=set)  # ids of the reference functions
    reference_files: set[str] = field(default_factory=set)
    hits: list[str] = field(default_factory=list)
    generated: list[tuple[types.CodeType, str]] = field(default_factory=list)  # see GENERATED
    profiled: bool = False  # a forbidden Python function: the profile hook is needed
    _profile: Profile | None = None
    _full: Profile | None = None

    def __post_init__(self) -> None:
        files: list[str] = []
        owners: list[str] = []
        for spec in self.forbid:
            module, _, attr = spec.partition(":")
            if attr:
                obj = resolve(spec)
                code = _code_of(obj)
                if code is not None:
                    self.codes[_key(code)] = spec
                    self.profiled = True
                else:
                    self.builtins.append((obj, spec))
            elif module == "torch":
                self.torch = True
            else:
                owners.append(module)
                files.extend(filter(None, [module_path(module)]))
        for obj in expand(self.blocks, self.allow):
            for fn in functions_of(obj):
                if fn.__code__.co_name == _stub.__code__.co_name:
                    continue  # already swapped by an enclosing guard
                name = f"{fn.__module__}.{fn.__qualname__}"
                if fn.__code__.co_filename.startswith("<"):
                    # generated (a dataclass __init__): every dataclass shares its (file, name),
                    # so the profiler confirms it by the identity of the code object
                    self.generated.append((fn.__code__, name))
                    self.codes[_key(fn.__code__)] = GENERATED
                else:
                    self.codes[_key(fn.__code__)] = name
                self.references.add(name)
                self.originals.add(id(fn))
                self.reference_files.add(_key(fn.__code__)[0])
        self.files, self.owners = tuple(files), tuple(owners)

    # ------------------------------------------------------------------ hits
    def hit(self, name: str) -> None:
        self.hits.append(name)
        raise_hit(self.hits[0], self.references)

    def raise_first(self) -> None:
        """Raise the error of the first recorded hit (a reference call, or a forbidden one)."""
        raise_hit(self.hits[0], self.references)

    def scan(self, fn: Any) -> None:
        """Find copies of a reference held by ``fn`` (globals, closure, defaults), one level."""
        if not self.codes:
            return
        seen: list[Any] = [fn]
        for value in _held(fn):
            for item in (value, *_held(value)) if _is_student(value, fn) else (value,):
                seen.append(item)
        for item in seen:  # type(), never isinstance: a learner's ``__class__`` would run here
            if type(item) is types.FunctionType and id(item) not in self.originals:
                name = self.codes.get(_key(item.__code__))
                if name in self.references:
                    self.hit(name)
            elif issubclass(type(item), types.ModuleType):
                path = os.path.realpath(getattr(item, "__file__", "") or "")
                real = sys.modules.get(item.__name__)
                if path in self.reference_files and real is not item:
                    name = f"{item.__name__} (a second import of its file)"
                    self.references.add(name)
                    self.hit(name)

    # ------------------------------------------------------------------ hooks
    @contextmanager
    def active(self) -> Iterator[None]:
        """Watch the current thread, and threads started meanwhile, while the block runs."""
        had_torch = "torch" in sys.modules
        old, old_thread = sys.getprofile(), threading.getprofile()
        with ExitStack() as stack:
            if self.torch and had_torch:
                stack.enter_context(_torch_mode(self))
            if self.profiled or self.files or self.owners or self.builtins:
                if self._profile is None:
                    self._profile = profiler(self, full=False)
                sys.setprofile(self._profile)
            if self._full is None:
                self._full = profiler(self, full=True)
            full = self._full
            if not _THREAD_HOOKS:
                _THREAD_BASE[0] = old_thread
            _THREAD_HOOKS.append(full)
            threading.setprofile(full)
            try:
                yield
            finally:
                sys.setprofile(old)
                # watches may end out of order (one per simulated rank thread): drop ours,
                # then hand new threads the newest watch still running, or what was there
                for i in range(len(_THREAD_HOOKS) - 1, -1, -1):
                    if _THREAD_HOOKS[i] is full:
                        del _THREAD_HOOKS[i]
                        break
                threading.setprofile(_THREAD_HOOKS[-1] if _THREAD_HOOKS else _THREAD_BASE[0])
                if self.torch and not had_torch and "torch" in sys.modules:
                    self.hits.append("import torch")


def _held(obj: Any) -> list[Any]:
    """What a function refers to: its globals, closure cells and default values (read with
    ``type`` and ``dict``'s own methods: no code of the learner's runs in the grader here)."""
    if type(obj) is not types.FunctionType:
        return []
    cells = []
    for cell in obj.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            continue
    names = obj.__code__.co_names
    g = obj.__globals__
    found = [dict.__getitem__(g, n) for n in names if dict.__contains__(g, n)]
    return found + cells + list(obj.__defaults__ or ())


def _is_student(value: Any, fn: Any) -> bool:
    return type(value) is types.FunctionType and value.__module__ == getattr(fn, "__module__", None)


_MODE: list[type] = []  # the TorchFunctionMode class, made once (a class per call is garbage)


@contextmanager
def _torch_mode(watch: Watch) -> Iterator[None]:
    if not _MODE:
        from torch.overrides import TorchFunctionMode

        class Forbidden(TorchFunctionMode):
            """Every torch function, method and tensor operator: a forbidden call."""

            def __init__(self, hits: list[str], references: set[str]) -> None:
                super().__init__()
                self.hits, self.references = hits, references

            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = str(getattr(func, "__qualname__", None) or getattr(func, "__name__", func))
                self.hits.append(name if name.startswith("torch") else f"torch.{name}")
                raise_hit(self.hits[0], self.references)

        _MODE.append(Forbidden)
    with _MODE[0](watch.hits, watch.references):
        yield
