"""The seal of a gloo rank in exercise 21.5: what the learner's code may do while it runs there.

The spawned ranks are not the sealed grading kernel, so :func:`install` gives each rank an
audit hook of its own (``sys.addaudithook``: it cannot be removed, and nothing in Python can
list it or reach its closure) before the learner's source is compiled. While a frame of the
learner's code (compiled under the file name ``<learner NAME>``) is on the stack, the hook

* stops the rank at once (``os._exit``: a caught exception would not undo it) on frame or
  ``gc`` access, profilers and tracers, ``ctypes``, creating code (``exec``/``compile``
  outside a standard-library import), writing files or opening ``/proc``, ``/dev`` or a raw
  file descriptor, sockets, new processes and threads, and other audited operations;
* during the learner's call (the *window*, opened and closed by :func:`grade_ring` only: the
  events are checked by code identity) receives every call as a profile event
  (``sys.setprofile`` of ``sys.audit`` itself, so ``sys.getprofile()`` holds nothing to
  change): it stops the rank on any torch.distributed collective (by code, however it was
  named or reached), ``comm.torch_all_reduce``, the course's reference all-reduces, and any
  torch function or method called from code other than torch's own or
  :class:`~minitorch.comm.torchdist.TorchDistComm`'s; it counts the bytes, messages and
  destinations of every point-to-point send at ``torch.distributed.isend`` itself, so the
  communicator's own counters (which the learner could reach) are not trusted.

The reason for a stop goes to ``report/rank<r>`` for the grader in the parent to show.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["LEARNER", "install"]

LEARNER = "<learner "  # file name prefix of the learner's compiled source
EXIT = 97
_WORDS = ("reduce", "broadcast", "gather", "scatter", "all_to_all", "alltoall", "coalesc")
_QUIET = frozenset({"builtins.id", "os.listdir", "os.scandir", "time.sleep", "os.stat"})
_IMPORTING = frozenset({"marshal.loads", "exec", "compile", "open", "os.listdir", "os.scandir"})
_THREADS = frozenset({"start_new_thread", "start_joinable_thread", "_start_new_thread"})
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def install(rank: int, world_size: int, report: str, grader_code: Any) -> None:
    """Install the hook once in this process; ``grader_code`` alone may open/close the window."""
    import sysconfig
    import types

    import torch
    import torch.distributed.distributed_c10d as c10d

    from minitorch.checks.guard import functions_of, resolve
    from minitorch.checks.lab21._world import BLOCKS
    from minitorch.comm import torchdist

    torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
    stdlib = tuple(
        os.path.realpath(sysconfig.get_path(k)) + os.sep for k in ("stdlib", "platstdlib")
    )
    course = os.path.realpath(torchdist.__file__)
    deny: dict[Any, str] = {}
    for name, fn in vars(c10d).items():
        if type(fn) is types.FunctionType and any(w in name for w in _WORDS):
            # the innermost function: the logging decorators' wrapper code is shared with isend
            deny[functions_of(fn)[-1].__code__] = f"the collective torch.distributed.{name}"
    for target in BLOCKS:
        for f in functions_of(resolve(target)):
            deny[f.__code__] = f"the course's reference {target.replace(':', '.')}"
    deny[torchdist.TorchDistComm.torch_all_reduce.__code__] = "comm.torch_all_reduce"
    isend_code = functions_of(c10d.isend)[-1].__code__
    frame_type, getframe, exit_, write, open_, close = (
        types.FrameType, sys._getframe, os._exit, os.write, os.open, os.close,
    )  # fmt: skip
    stdlib_names = frozenset(sys.stdlib_module_names)
    hooks = (tuple(sys.meta_path), tuple(sys.path_hooks))
    where_cache: dict[str, str] = {}
    window = [False]
    busy = [False]
    sent: list[Any] = [0, 0, [0] * world_size]  # payload bytes, messages, bytes per destination

    def where(code: Any) -> str:
        name = code.co_filename
        found = where_cache.get(name)
        if found is None:
            real = name if name.startswith("<") else os.path.realpath(name)
            if name.startswith(LEARNER):
                found = "learner"
            elif real.startswith(torch_dir):
                found = "torch"
            elif real == course:
                found = "course"
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

    def importing_stdlib(frame: Any) -> bool:
        if (tuple(sys.meta_path), tuple(sys.path_hooks)) != hooks:
            return False
        while frame is not None:
            code = frame.f_code
            if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen"):
                name = frame.f_locals.get("name")
                return isinstance(name, str) and name.split(".")[0] in stdlib_names
            frame = frame.f_back
        return False

    def stop(why: str) -> None:
        try:
            fd = open_(os.path.join(report, f"rank{rank}"), os.O_WRONLY | os.O_CREAT, 0o600)
            write(fd, why.encode("utf-8", "replace")[:1000])
            close(fd)
        finally:
            exit_(EXIT)

    def profiled(args: tuple) -> None:
        if len(args) != 3 or type(args[0]) is not frame_type:
            stop("raised the grader's profile event itself")
        frame, what, arg = args
        if what == "call":
            code = frame.f_code
            why = deny.get(code)
            if why is not None:
                stop(f"called {why}")
            if where(code) == "torch" and origin(frame.f_back) not in ("torch", "course"):
                stop(f"called torch ({code.co_qualname}) itself")
            if code is isend_code:
                f = frame.f_locals
                dst = f.get("dst") if f.get("dst") is not None else f.get("group_dst")
                tensor, tag = f.get("tensor"), f.get("tag") or 0
                if tag % 2 == 0:
                    sent[1] += 1
                else:
                    nbytes = int(tensor.numel()) * int(tensor.element_size())
                    sent[0] += nbytes
                    if isinstance(dst, int) and 0 <= dst < world_size:
                        sent[2][dst] += nbytes
        elif what == "c_call":
            name = getattr(arg, "__name__", "")
            mod = getattr(arg, "__module__", None)
            if mod is None:
                mod = type(getattr(arg, "__self__", None)).__module__
            mod = mod or ""
            if name in _THREADS and mod.lstrip("_") in ("thread", "threading"):
                stop("started a thread")
            if mod.startswith("torch") and origin(frame) not in ("torch", "course"):
                stop(f"called torch ({mod}.{name}) itself")

    def windowed(args: tuple, frame: Any) -> None:
        if frame.f_code is not grader_code or learner_below(frame):
            stop("raised the grader's window event itself")
        if args[0] == "open":
            sent[0], sent[1], sent[2] = 0, 0, [0] * world_size
            window[0] = True
        else:
            window[0] = False
            args[1].extend([sent[0], sent[1], list(sent[2])])

    def allowed(event: str, args: tuple, frame: Any) -> bool:
        if event in _QUIET:
            return True
        if event == "import":
            return isinstance(args[0], str) and args[0].split(".")[0] in stdlib_names
        if event == "open":
            path, mode, flags = (*args, None, None)[:3]
            if not isinstance(path, str) or path.startswith(("/proc", "/dev", "/sys")):
                return False
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                return False
            if isinstance(flags, int) and flags & _WRITE:
                return False
            return True
        return event in _IMPORTING and importing_stdlib(frame)

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        if event == "a2s.profile":
            if window[0]:
                busy[0] = True
                try:
                    profiled(args)
                finally:
                    busy[0] = False
            return
        if event in _QUIET:
            return
        busy[0] = True
        try:
            try:
                frame = getframe(1)
            except ValueError:
                return
            if event == "a2s.window":
                windowed(args, frame)
            elif learner_below(frame) and origin(frame) != "torch":
                if not allowed(event, args, frame):
                    stop(f"did what 21.5 does not allow ({event})")
        finally:
            busy[0] = False

    sys.addaudithook(hook)
