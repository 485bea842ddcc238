"""What a sealed kernel's verdict depends on, frozen before any notebook code runs.

:func:`snapshot` records every function, class and module bound in the given modules, and
the code, defaults and closure cells of the course's functions and the methods of its (and
torch's) classes; :func:`changes` lists what differs now. torch rebinds a few of its own
names lazily (``torch.manual_seed`` wrapped by dynamo, ``Optimizer.step`` by its hooks), so
a torch name may change to another object made by torch; everything else must be identical.
Part of :mod:`a2s.sealed`.
"""

from __future__ import annotations

__all__ = ["changes", "snapshot", "trusted_roots"]

# builtins that IPython's kernel binds after the snapshot
_KERNEL_BUILTINS = frozenset({"input", "quit", "exit", "help", "display", "get_ipython"})


def trusted_roots() -> tuple[str, ...]:
    """Where trusted code lives: the standard library, site-packages, the course copy."""
    import os
    import site
    import sysconfig

    import a2s
    import minitorch

    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages())
    paths |= {os.path.dirname(minitorch.__file__), os.path.dirname(a2s.__file__)}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


def snapshot(modules: list) -> tuple[list, list, list]:
    """(module, {name: object}), (function, code, defaults, kwdefaults, cells), (class, dict)."""
    import types

    mods, funcs, classes, seen = [], [], [], set()
    for module in modules:
        kept = {}
        skip = _KERNEL_BUILTINS if module.__name__ == "builtins" else ()
        for name, value in list(vars(module).items()):
            if name in skip:
                continue
            if callable(value) or isinstance(value, types.ModuleType):
                kept[name] = value
            if id(value) in seen:
                continue
            own = getattr(value, "__module__", "") or ""
            if isinstance(value, types.FunctionType) and own.startswith(("minitorch", "a2s")):
                seen.add(id(value))
                cells = tuple(c.cell_contents for c in value.__closure__ or () if _full(c))
                funcs.append(
                    (value, value.__code__, value.__defaults__, value.__kwdefaults__, cells)
                )
            elif isinstance(value, type) and own.startswith(("minitorch", "a2s", "torch")):
                seen.add(id(value))
                classes.append((value, {k: v for k, v in vars(value).items() if callable(v)}))
            elif _table(value):  # a grader written as data: its binding and every field
                kept[name] = value
                seen.add(id(value))
                classes.append((value, dict(vars(value))))
        mods.append((module, kept))
    return mods, funcs, classes


def _table(value: object) -> bool:
    """A course dataclass instance with fields (a grader's :class:`~a2s.checks.table.Table`)."""
    import dataclasses

    own = type(value).__module__
    data = dataclasses.is_dataclass(value) and not isinstance(value, type)
    return data and own.startswith("a2s") and hasattr(value, "__dict__")


def _full(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _torch_made(value: object, trusted: tuple[str, ...]) -> bool:
    """Whether torch itself made ``value`` (it rebinds a few of its own names lazily)."""
    import os
    import types

    if isinstance(value, types.FunctionType):
        home = str(value.__globals__.get("__name__", ""))
        path = os.path.realpath(value.__code__.co_filename)
        return home.split(".")[0] == "torch" and path.startswith(trusted)
    made = isinstance(value, (types.BuiltinFunctionType, type))
    return made and str(getattr(value, "__module__", "")).split(".")[0] == "torch"


def changes(mods: list, funcs: list, classes: list, trusted: tuple[str, ...]) -> list[str]:
    """What differs from the snapshot (at most a few names)."""
    missing = object()
    found = []
    for module, kept in mods:
        now = vars(module)
        lenient = module.__name__.split(".")[0] == "torch"
        for name, value in kept.items():
            new = now.get(name, missing)
            if new is not value and not (lenient and _torch_made(new, trusted)):
                found.append(f"{module.__name__}.{name} was replaced")
    for fn, code, defaults, kwdefaults, cells in funcs:
        now_cells = tuple(c.cell_contents for c in fn.__closure__ or () if _full(c))
        if fn.__code__ is not code or fn.__defaults__ is not defaults:
            found.append(f"the code of {fn.__module__}.{fn.__qualname__} was changed")
        elif (
            fn.__kwdefaults__ is not kwdefaults
            or len(now_cells) != len(cells)
            or any(a is not b for a, b in zip(now_cells, cells, strict=True))
        ):
            found.append(f"the closure of {fn.__module__}.{fn.__qualname__} was changed")
    for cls, kept in classes:
        now = vars(cls)
        lenient = cls.__module__.split(".")[0] == "torch"
        for name, value in kept.items():
            new = now.get(name, missing)
            if new is not value and not (lenient and _torch_made(new, trusted)):
                where = getattr(cls, "__qualname__", None) or type(cls).__qualname__
                found.append(f"{cls.__module__}.{where}.{name} was replaced")
    return found[:5]
