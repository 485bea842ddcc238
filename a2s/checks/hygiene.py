"""Code that is measured must use only the public API of what measures it.

The kernel labs grade *counts* (transactions, bank conflicts, bytes moved) kept by the
objects the student's code receives: a simulator context, an instrumented array. Python has
no private attributes, so a kernel could write ``ctx._stats`` or ``arr._data`` and fake its
counters. :func:`assert_public_api` reads the bytecode of the student's function and of every
function of theirs it reaches (globals, closures, nested code) and rejects a private
attribute (``x._name``, dunders included) and the reflective builtins that reach one by
name (``getattr``, ``setattr``, ``vars``, ``__import__``, ``exec``, ...).
"""

from __future__ import annotations

import builtins
import dis
import types
from typing import Any

from a2s.checks.errors import CheckFailure

__all__ = ["assert_public_api"]

_ATTR_OPS = frozenset({"LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR", "LOAD_METHOD"})
_NAME_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST"})
_REFLECTIVE = frozenset(
    {
        "getattr",
        "setattr",
        "delattr",
        "vars",
        "globals",
        "locals",
        "eval",
        "exec",
        "compile",
        "__import__",
        "object",
    }
)


_OBJECTS = tuple(getattr(builtins, n) for n in sorted(_REFLECTIVE))  # aliases count too


def _reflective(f: types.FunctionType, ins: dis.Instruction) -> bool:
    name = ins.argval if isinstance(ins.argval, str) else ""
    if ins.opname not in _NAME_OPS:
        return False
    if name in _REFLECTIVE:
        return True
    if ins.opname == "LOAD_GLOBAL":
        value = f.__globals__.get(name, getattr(builtins, name, None))
    elif ins.opname == "LOAD_DEREF" and name in f.__code__.co_freevars and f.__closure__:
        try:
            value = f.__closure__[f.__code__.co_freevars.index(name)].cell_contents
        except ValueError:  # an empty cell
            return False
    else:
        return False
    return any(value is obj for obj in _OBJECTS)


def _codes(code: types.CodeType) -> list[types.CodeType]:
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_codes(const))
    return found


def _student_functions(fn: Any, module: str) -> list[types.FunctionType]:
    """``fn`` and the functions of the same module it refers to, transitively."""
    seen: dict[int, types.FunctionType] = {}
    todo = [fn]
    while todo:
        f = todo.pop()
        if not isinstance(f, types.FunctionType) or id(f) in seen or f.__module__ != module:
            continue
        seen[id(f)] = f
        names = {n for c in _codes(f.__code__) for n in c.co_names}
        todo.extend(f.__globals__[n] for n in names if n in f.__globals__)
        for cell in f.__closure__ or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:
                continue
    return list(seen.values())


def assert_public_api(fn: Any, *, what: str, api: str, deny: frozenset[str] = frozenset()) -> None:
    """Fail unless ``fn`` (and the student's functions it uses) touch only public names.

    ``what`` names the code in the message ("your kernel"); ``api`` says what it may use;
    ``deny`` adds public attributes it may not touch either (the counters themselves).
    """
    inner = getattr(fn, "fn", fn)  # a guarded student function
    module = getattr(inner, "__module__", None)
    for f in _student_functions(inner, str(module)):
        for code in _codes(f.__code__):
            for ins in dis.get_instructions(code):
                name = ins.argval if isinstance(ins.argval, str) else ""
                private = ins.opname in _ATTR_OPS and (name.startswith("_") or name in deny)
                reflective = _reflective(f, ins)
                if private or reflective:
                    shown = f".{name}" if private else f"{name}(...)"
                    raise CheckFailure(
                        f"{what} uses `{shown}` (in {f.__qualname__}): the counts this check "
                        f"grades are kept by the objects it receives, so it may use only {api}, "
                        "never their private attributes or reflection."
                    )
