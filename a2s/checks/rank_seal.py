"""The seal of a learner's child on a rank, and the learner's source.

See :mod:`a2s.checks.ranks`.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

LEARNER = "<learner "  # file name prefix of a learner's source compiled on a rank
_QUIET = frozenset(
    {
        "builtins.id",
        "os.listdir",
        "os.scandir",
        "time.sleep",
        "os.stat",
        "object.__getattr__",
        "glob.glob",
        "os.chmod",
    }
)
_THREADS = frozenset({"start_new_thread", "start_joinable_thread", "_start_new_thread"})
_FRAMES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_ON_BEHALF = frozenset({"exec", "compile", "sys._getframe"})
_RUNNERS = frozenset({"code", "codeop", "runpy", "types", "inspect", "traceback", "pdb", "bdb"})
_NEVER = frozenset(
    {
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "ctypes.dlopen",
        "sys._current_frames",
        "socket.connect",
        "os.system",
        "subprocess.Popen",
    }
)


def learner_source(source: str, name: str) -> Callable[[], Callable[..., Any]]:
    """A maker of the learner's function ``name`` from ``source``: call it where it runs.

    The source is compiled here (a syntax error shows at once) under a file name the seal
    knows as the learner's; it is executed only when the maker is called, in the sealed
    child (a decorator in the source is learner code too).
    """
    code = compile(source, f"{LEARNER}{name}>", "exec")

    def make() -> Callable[..., Any]:
        module = types.ModuleType("__a2s_rank__")  # a real module: dataclasses look it up
        module.__dict__.update(np=np, numpy=np)
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)
        return module.__dict__[name]  # type: ignore[no-any-return]

    return make


def seal(hits: list[str]) -> None:
    """Seal this process (a learner's child on a rank): record and refuse what
    learner code may not do; see the module docstring. ``hits`` receives a line per refusal
    (``"torch:<name>"`` for a forbidden torch call)."""
    import sysconfig

    import torch

    from a2s.checks import truth_threads

    truth_threads.stop()  # it reads frames when a thread is made; a rank may make none
    torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
    dist_dir = torch_dir + "distributed" + os.sep
    checks_dir = os.path.dirname(os.path.realpath(__file__)) + os.sep
    stdlib = tuple(
        os.path.realpath(sysconfig.get_path(k)) + os.sep for k in ("stdlib", "platstdlib")
    )
    frame_type, getframe, audit = types.FrameType, sys._getframe, sys.audit
    import_hooks = (tuple(sys.meta_path), tuple(sys.path_hooks))
    where_cache: dict[str, str] = {}
    busy = [False]

    def where(code: Any) -> str:
        name = code.co_filename
        found = where_cache.get(name)
        if found is None:
            real = name if name.startswith("<") else os.path.realpath(name)
            if name.startswith(LEARNER):
                found = "learner"
            elif real.startswith(dist_dir):
                found = "dist"
            elif real.startswith(torch_dir):
                found = "torch"
            elif real.startswith(checks_dir):
                found = "checks"
            elif name.startswith("<frozen ") or (
                real.startswith(stdlib) and "-packages" + os.sep not in real
            ):
                found = "stdlib"
            else:
                found = "other"
            where_cache[name] = found
        return found

    def origin(frame: Any) -> str:
        while frame is not None and where(frame.f_code) == "stdlib":
            frame = frame.f_back
        return "none" if frame is None else where(frame.f_code)

    def learner_below(frame: Any) -> bool:
        while frame is not None:
            if frame.f_code.co_filename.startswith(LEARNER):
                return True
            frame = frame.f_back
        return False

    def importing(frame: Any) -> str | None:
        if (tuple(sys.meta_path), tuple(sys.path_hooks)) != import_hooks:
            return None
        while frame is not None:
            code = frame.f_code
            if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen"):
                name = frame.f_locals.get("name")
                return name if isinstance(name, str) else None
            frame = frame.f_back
        return None

    def refuse(why: str) -> None:
        hits.append(why)
        raise PermissionError(f"not allowed on a rank: {why.removeprefix('torch:')}")

    def profiled(args: tuple) -> None:
        if len(args) != 3 or type(args[0]) is not frame_type:
            refuse("raised the seal's profile event itself")
        frame, what, arg = args
        if what == "call":
            code = frame.f_code
            kind = where(code)
            if (kind == "dist" and origin(frame.f_back) != "dist") or (
                kind == "torch" and origin(frame.f_back) not in ("torch", "dist", "checks")
            ):
                refuse(f"torch:{frame.f_globals.get('__name__', 'torch')}.{code.co_qualname}")
        elif what == "c_call":
            name = getattr(arg, "__name__", "")
            mod = getattr(arg, "__module__", None)
            owner = getattr(arg, "__self__", None)
            kind = type(owner).__name__
            if kind == "PyCapsule" or "function_record" in kind:  # pybind11: torch's by its doc
                mod = "torch._C" if "torch" in str(getattr(arg, "__doc__", ""))[:600] else "ext"
            elif mod is None:
                mod = type(owner).__module__
            mod = mod or ""
            if name in _THREADS and mod.lstrip("_") in ("thread", "threading"):
                if learner_below(frame):
                    refuse("started a thread")
            elif mod.startswith("torch") and origin(frame) not in ("torch", "dist", "checks"):
                refuse(f"torch:{mod}.{getattr(arg, '__qualname__', name)}")

    def allowed(event: str, args: tuple, frame: Any) -> bool:
        if event == "import":
            top = args[0].split(".")[0] if isinstance(args[0], str) else ""
            if top == "torch":
                refuse("torch:import torch")
            return True
        if event == "open":
            path, mode, flags = (*args, None, None)[:3]
            if not isinstance(path, str) or path.startswith(("/proc", "/dev", "/sys")):
                return False
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                return False
            return not (isinstance(flags, int) and flags & _WRITE)
        if event == "object.__setattr__":
            return not (len(args) > 1 and args[1] == "__code__")
        if event in _ON_BEHALF and where(frame.f_code) == "stdlib":
            module = frame.f_globals.get("__name__", "")
            if module not in _RUNNERS:  # dataclasses, namedtuple, enum: on the code's behalf
                return True
        name = importing(frame)  # a module's own code while it is imported (not torch)
        return name is not None and name.split(".")[0] != "torch" and event not in _NEVER

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        if event == "a2s.profile":
            busy[0] = True
            try:
                profiled(args)
            finally:
                busy[0] = False
            return
        if event == "a2s.refuse":  # a torch.distributed C++ method, refused by its stand-in
            refuse(f"torch:{args[0] if args and isinstance(args[0], str) else 'torch'}")
        if event in _QUIET and not (event == "object.__getattr__" and args[1] in _FRAMES):
            return
        busy[0] = True
        try:
            try:
                frame = getframe(1)
            except ValueError:
                return
            if learner_below(frame) and origin(frame) not in ("torch", "dist"):
                if not allowed(event, args, frame):
                    refuse(f"did what a rank's code may not do ({event})")
        finally:
            busy[0] = False

    _refuse_process_groups()
    sys.addaudithook(hook)
    profile = types.MethodType(audit, "a2s.profile")  # holds nothing to reach or change
    sys.setprofile(profile)
    import threading

    threading.setprofile(profile)


_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _refuse_process_groups() -> None:
    """In the learner's child: every method of torch.distributed's C++ classes (ProcessGroup,
    Backend, ProcessGroupGloo and every other concrete backend, Work, Store...) refuses.

    Their calls raise no profile event (pybind11 methods), and the child's copies of the rank's
    process group are not the learner's to use (their sockets are closed in the child anyway).
    """
    try:
        import torch._C._distributed_c10d as c10d_c
    except ImportError:  # a torch without distributed: nothing to refuse
        return

    def refusing(what: str, audit: Callable[..., None] = sys.audit) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            audit("a2s.refuse", what)  # the seal's hook records it and raises
            raise PermissionError(f"not allowed on a rank: {what}")

        return call

    for cls in list(vars(c10d_c).values()):
        if not isinstance(cls, type) or not cls.__module__.startswith("torch"):
            continue
        for name, attr in list(vars(cls).items()):
            if name.startswith("__") or type(attr).__name__ not in (
                "instancemethod",
                "builtin_function_or_method",
                "staticmethod",
                "classmethod",
            ):
                continue
            try:
                setattr(cls, name, refusing(f"torch.distributed.{cls.__name__}.{name}"))
            except (AttributeError, TypeError):
                continue


def _refusal(hits: list[str]) -> Exception:
    from a2s.checks.errors import CheckFailure, ForbiddenCallError
    from a2s.checks.profiler import forbidden_message

    first = hits[0]
    if first.startswith("torch:"):
        return ForbiddenCallError(forbidden_message(first.removeprefix("torch:")))
    return CheckFailure(
        f"on a rank your function {first}: a rank's code may move data only through the "
        "communicator it receives, and compute with numpy and plain Python."
    )
