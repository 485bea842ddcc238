"""The sealed grading kernel: verdicts that code in an exercise cell cannot forge or alter.

``a2s grade`` starts each notebook's kernel through this launcher instead of
``ipykernel_launcher``. Before any notebook code runs it

1. reads its configuration (a per-run secret key, the verdict file, the memory cap, the
   modules to preload) from a file that it deletes at once;
2. caps the address space (``RLIMIT_AS``) and imports the lab's graders, numpy and torch;
3. takes a *snapshot* of everything a verdict depends on: every function, class and module
   bound in the course's modules, numpy, torch, ``builtins``, ``math`` and friends, the
   code, defaults and closure cells of the course's functions, the methods of its classes;
4. installs an audit hook (``sys.addaudithook``: it cannot be removed, and it runs before
   anything the notebook can register) that
   * vetoes and records tampering by student code: swapping a course function's code,
     reading it during a check, creating functions or code objects, ``gc`` introspection,
     reading a frame of the course's code (or one below it) from the student's code or code
     it calls, profilers and tracers other than the guard's, ``ctypes``, ``exec``/``compile``
     from a notebook cell, opening the verdict file or ``/proc/*/mem``;
   * on the event ``a2s.verdict`` raised by the genuine check wrapper (checked by code
     identity of the two calling frames), compares the world with the snapshot and writes
     one line ``{seq, exercise, status, message}`` signed with HMAC-SHA256 to the verdict
     file. A vetoed attempt makes the next verdict (the exercise it was made for) say
     ``tampered``, and only that one; a change to the grader that is still there (found by
     comparing with the snapshot) makes every later verdict say ``tampered``.

Frame rules hold on every thread: code called by the student's (stdlib, libraries: typing,
sympy's imports) may read the frames of the student's own part of the stack, from the
accessing frame down to the first course frame, and no frame beyond it. A forked child
(the harness's ranks) keeps the hook and its rules, and cannot sign a verdict.

The key lives only inside an OpenSSL HMAC object referenced by the hook's closure, which
no Python code can reach without ``gc`` (vetoed). Where the line is: code that patches
memory through a native extension of its own, or an interpreter bug, is out of reach of any
in-process check; the OS sandbox (:mod:`a2s.sandbox`) bounds what it can touch.
"""

from __future__ import annotations

import sys

from a2s.sealed_cells import _course_cells, _frame_rules

__all__ = ["main"]

_PREFIXES = ("minitorch", "a2s", "numpy", "torch")
_EXTRA = ("builtins", "math", "operator", "functools", "itertools", "json", "hmac", "os", "re")
_RUNNERS = frozenset({"code", "codeop", "runpy", "types"})  # stdlib that runs code you pass
_QUIET = frozenset({"builtins.id", "import", "os.listdir", "os.scandir", "socket.__new__"})
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_ALWAYS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")
_STUDENT = (
    "code.__new__",
    "function.__new__",
    "exec",
    "compile",
    "sys.setprofile",
    "sys.settrace",
    "marshal.loads",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.cdata",
    "ctypes.string_at",
    "ctypes.wstring_at",
    "ctypes.addressof",
    "ctypes.call_function",
    "ctypes.create_string_buffer",
    "ctypes.PyObj_FromPtr",
    "ctypes.seh_exception",
    "ctypes.get_errno",
)


def _install(config: dict, verdict_fd: int) -> None:
    """Build the snapshot and install the hook; nothing it holds is reachable afterwards."""
    import _thread
    import hmac
    import importlib
    import json
    import os

    from a2s.snapshot import changes, snapshot, trusted_roots

    for name in config.get("preload", []):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    course_codes, run_cell = _course_cells(config.get("cells", {}))
    builtins = importlib.import_module("builtins")
    setattr(builtins, "__a2s_cell__", run_cell)  # noqa: B010 - before the snapshot
    core = importlib.import_module("a2s.checks.core")
    watch = importlib.import_module("a2s.checks.watch")
    guard = importlib.import_module("a2s.checks.guard")
    truth = importlib.import_module("a2s.checks.truth_guard")  # after guard: imports it
    profiler = importlib.import_module("a2s.checks.profiler")
    names = [m for m in sys.modules if m.split(".")[0] in _PREFIXES or m in _EXTRA]
    mods, funcs, classes = snapshot([sys.modules[m] for m in names if sys.modules.get(m)])
    protected = frozenset(id(f[0]) for f in funcs)
    verdict_code = core._verdict.__code__
    wrapper_code = core.grader("00.0")(lambda s: "").__code__  # every check wrapper's code
    guard_code = core._Guarded.__call__.__code__
    blocked_code = guard.blocked.__wrapped__.__code__
    keeper_code = truth._keeper.__code__  # the guard's own code swaps: blocked, the keeper
    truth_modules, handouts, handed_out = (
        truth.TRUTH_MODULES,
        truth._HANDOUTS,
        frozenset(truth._HANDOUTS),
    )  # what the default blocking of the graders' truth depends on (not callables)
    watch_code = watch.Watch.active.__wrapped__.__code__
    mac = hmac.new(bytes.fromhex(config["key"]), digestmod="sha256")
    verdict_path = os.path.realpath(config["verdicts"])
    dumps, write, getframe, realpath = json.dumps, os.write, sys._getframe, os.path.realpath
    trusted = trusted_roots()
    hit_code = next(
        c for c in profiler.profiler.__code__.co_consts if getattr(c, "co_name", "") == "hit"
    )
    pending: list[str] = []  # vetoed attempts since the last verdict: that verdict's
    seq = [0]  # verdicts signed so far
    busy: set[int] = set()  # threads in the hook: its own operations raise events too
    removing: set[int] = set()  # threads whose watch hook raised a forbidden call just now
    child = [False]  # this process was forked from the kernel
    ident = _thread.get_ident
    kind, origin, in_guarded_student_code, frame_given, frame_allowed = _frame_rules(
        course_codes, guard_code, trusted
    )

    def student_part(frame) -> list | None:
        """The frames from ``frame`` down to the first course frame, if student code is among
        them (the access is then made on the student's behalf) and that course frame is the
        grader's (a guard, a check, a simulator running a rank), else None. The same on
        every thread: a rank thread's bottom is the course code that runs the rank. At a
        cell's top level the course frame below is this launcher's: nothing to guard."""
        part, student = [], False
        while frame is not None and kind(frame) != "course":
            part.append(frame)
            student = student or kind(frame) == "student"
            frame = frame.f_back
        if frame is None or frame.f_globals.get("__name__") == __name__:
            return None
        return part if student else None

    def flag(what: str) -> None:
        pending.append(what)
        raise RuntimeError(f"a2s grader: {what} is not allowed while grading")

    def emit(exercise: str, status: str, message: str) -> None:
        seq[0] += 1
        body = dumps([seq[0], exercise, status, message], ensure_ascii=True)
        signer = mac.copy()
        signer.update(body.encode("ascii"))
        write(verdict_fd, (dumps({"v": body, "mac": signer.hexdigest()}) + "\n").encode())

    def verdict(args: tuple, frame) -> None:
        if child[0]:
            flag("a verdict from a child process of the kernel")
        if frame.f_code is not verdict_code or frame.f_back.f_code is not wrapper_code:
            flag("raising a verdict event outside the course's check")
        exercise, status, message = (str(a) for a in args[:3])
        # a vetoed attempt belongs to the exercise it was made for (made since the last
        # verdict); a change to the grader that is still there taints every later verdict
        found = pending + changes(mods, funcs, classes, trusted)
        if (
            truth.TRUTH_MODULES is not truth_modules
            or truth._HANDOUTS is not handouts
            or not handed_out.issuperset(handouts)
        ):
            found.append("the guard's list of ground-truth modules or handouts was changed")
        pending.clear()
        if found:
            status, message = "tampered", "; ".join(dict.fromkeys(found))[:600]
        emit(exercise, status, message)

    def dispatch(event: str, args: tuple, frame) -> None:
        if event == "a2s.verdict":
            verdict(args, frame)
        elif event == "a2s.watch.hit":
            if frame.f_code is hit_code:  # the watch's profile hook raises: CPython removes it
                removing.add(ident())
        elif event == "object.__setattr__":
            code = frame.f_code
            if id(args[0]) in protected and code is not blocked_code and code is not keeper_code:
                flag(f"changing {args[1]} of the course's function {args[0].__qualname__}")
        elif event == "object.__getattr__":
            if args[1] in _FRAME_ATTRS:
                part = student_part(frame)
                if part is not None and not frame_allowed(frame_given(args, event), part):
                    flag("frame access from code under check")
            elif (
                args[1] == "__code__"
                and id(args[0]) in protected
                and (kind(frame) == "student" or in_guarded_student_code(frame))
            ):
                flag(f"reading the code of the course's function {args[0].__qualname__}")
        elif event == "sys._getframe":
            part = student_part(frame)
            if part is not None and not frame_allowed(frame_given(args, event), part):
                flag("frame access from code under check")
        elif event in _ALWAYS:
            if origin(frame) == "student":
                flag(f"{event}()")
        elif event in ("sys.setprofile", "sys.settrace"):
            if event == "sys.setprofile" and ident() in removing:
                removing.discard(ident())  # the watch's hook raised a forbidden call: not yours
            elif frame.f_code is not watch_code and origin(frame) == "student":
                flag(f"{event}()")
        elif event in _STUDENT or event.startswith("ctypes."):
            caller = frame.f_globals.get("__name__")  # importlib, dataclasses: on your behalf
            if kind(frame) == "student" or (caller in _RUNNERS and origin(frame) == "student"):
                flag(f"{event}()")
        elif event == "open" and isinstance(args[0], str):
            path = args[0]
            if path.startswith("/proc/") and path.endswith("/mem"):
                flag(f"opening {path}")
            elif realpath(path) == verdict_path:
                flag("opening the grader's verdict file")

    def hook(event: str, args: tuple) -> None:
        if event in _QUIET:
            return
        me = ident()
        if me in busy:
            return
        busy.add(me)
        try:
            try:
                frame = getframe(1)
            except ValueError:  # raised from C with no Python frame above
                return
            dispatch(event, args, frame)
        finally:
            busy.discard(me)

    def in_child() -> None:
        """A forked child (the harness's rank): the same rules, and no verdict from it."""
        child[0] = True
        try:
            os.close(verdict_fd)
        except OSError:
            pass

    del config
    os.register_at_fork(after_in_child=in_child)
    sys.addaudithook(hook)


def main() -> None:
    """Entry point: ``python -c "from a2s.sealed import main; main()" -f FILE``.

    Not ``-m``: the launcher's own module must be ``a2s.sealed``, not __main__.
    """
    import json
    import os
    import resource

    path = os.environ.pop("A2S_SEAL", None)
    if path is None:
        raise SystemExit("a2s sealed kernel: A2S_SEAL is not set (run through `a2s grade`)")
    with open(path, encoding="utf-8") as fh:
        config = json.load(fh)
    os.unlink(path)
    limit = int(config.get("memory_limit", 0))
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    verdict_fd = os.open(config["verdicts"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _install(config, verdict_fd)
    del config
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
