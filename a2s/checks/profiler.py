"""The profile hook of the forbidden-call watch (:mod:`a2s.checks.watch`).

``sys.setprofile`` calls it on every Python and C call of the watched call tree, so it reads
only locals and does one dict lookup for an uninteresting call: a file is classified once
(a forbidden module's, or one holding a reference), a C function's owner module once.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from a2s.checks.guard import reference_called

if TYPE_CHECKING:
    from a2s.checks.watch import Watch

__all__ = ["Profile", "forbidden_message", "module_path", "profiler", "raise_hit"]

Profile = Callable[[types.FrameType, str, Any], None]


def module_path(name: str, load: bool = True) -> str | None:
    module = sys.modules.get(name)
    if module is None and not load:
        return None
    if module is None:
        try:
            module = importlib.import_module(name)
        except ImportError:
            return None
    path = getattr(module, "__file__", None)
    if path is None:
        return None
    path = os.path.realpath(path)
    return os.path.dirname(path) + os.sep if path.endswith("__init__.py") else path


def profiler(watch: Watch, full: bool) -> Profile:
    """The profile function: locals only, one dict lookup for an uninteresting call."""
    # no reference back to the Watch: a Watch and its profiler must not form a cycle (lab 02
    # counts the objects gc.collect() finds while the student's code runs)
    files = watch.files + (
        (module_path("torch", load=False) or "",) if full and watch.torch else ()
    )
    owners = watch.owners + (("torch",) if full and watch.torch else ())
    codes, builtins, hits, references = watch.codes, watch.builtins, watch.hits, watch.references
    generated = watch.generated

    def hit(name: str) -> None:
        hits.append(name)
        # the sealed kernel hears this: CPython removes a profile hook that raises, and that
        # removal is the watch's doing, not the student's (a2s.sealed)
        audit("a2s.watch.hit")
        raise_hit(hits[0], references)

    audit = sys.audit
    reference_files = {path for path, _ in codes}
    real: dict[str, str] = {}
    kinds: dict[str, int] = {}  # filename -> bit 1: forbidden module, bit 2: has a reference
    owned: dict[str | None, bool] = {}

    def kind_of(filename: str) -> int:
        path = real[filename] = os.path.realpath(filename)
        k = kinds[filename] = (1 if files and path.startswith(files) else 0) | (
            2 if path in reference_files else 0
        )
        return k

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            filename = code.co_filename
            k = kinds.get(filename)
            if k is None:
                k = kind_of(filename)
            if not k:
                return
            if k & 2:
                name = codes.get((real[filename], code.co_qualname))
                if name == "<generated>":  # watch.GENERATED: only that very code object counts
                    name = next((n for c, n in generated if c is code), None)
                if name is not None:
                    hit(name)
            if k & 1:
                caller = frame.f_back
                up = caller.f_code.co_filename if caller is not None else None
                if up is None or not (kinds.get(up) or kind_of(up)) & 1:
                    module = frame.f_globals.get("__name__", "?")
                    # a module's body runs when it is imported: name the import
                    hit(
                        f"import {module}"
                        if code.co_name == "<module>"
                        else f"{module}.{code.co_qualname}"
                    )
        elif event == "c_call":
            for obj, name in builtins:  # by identity: no hashing, no id() audit event
                if arg is obj:
                    hit(name)
            if owners:
                here = frame.f_code.co_filename
                inside = kinds.get(here)
                if inside is None:
                    inside = kind_of(here)
                if not inside & 1:  # a forbidden module's own C calls: its entry was counted
                    owned_hit(arg)

    def owned_hit(arg: Any) -> None:
        owner = getattr(arg, "__module__", None)
        if owner is None:
            inst = getattr(arg, "__self__", None)
            owner = inst.__name__ if isinstance(inst, types.ModuleType) else type(inst).__module__
        bad = owned.get(owner)
        if bad is None:
            bad = owned[owner] = bool(owner) and any(
                owner == o or owner.startswith(o + ".") for o in owners
            )
        if bad:
            hit(f"{owner}.{getattr(arg, '__qualname__', arg)}")

    return profile


def raise_hit(name: str, references: set[str]) -> None:
    from a2s.checks.errors import ForbiddenCallError

    if name in references:
        reference_called(name)
    raise ForbiddenCallError(forbidden_message(name))


def forbidden_message(name: str) -> str:
    """The teaching message for a forbidden call of ``name`` (``"import torch"``: an import)."""
    imported = name.startswith("import ")
    if imported:
        name = name[len("import ") :]
    if name.startswith("torch"):
        why = (
            "torch is the grader's ground truth, and this exercise asks you to write the "
            "computation yourself"
        )
    elif name.startswith(("minitorch", "a2s", "a second import")):
        why = "that is the course's reference for this exercise (a copy of it counts too)"
    else:
        why = "this exercise asks you to write what that routine does"
    return (
        f"your code {'imported' if imported else 'called'} `{name}`, which this exercise "
        f"forbids: {why}. "
        "Use numpy's basic array operations and plain Python instead."
    )
