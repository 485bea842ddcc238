"""The sealed kernel's course cells and frame rules (part of :mod:`a2s.sealed`).

:func:`_course_cells` compiles the course's own notebook cells before any student code runs;
:func:`_frame_rules` builds the hook's classification of frames (student, course, stdlib,
library) and the rules for which frames the student's code may read.
"""

from __future__ import annotations

import sys


def _frame_rules(course_codes: frozenset, guard_code: object, trusted: tuple) -> tuple:
    """The hook's frame helpers: ``kind, origin, in_guarded_student_code, frame_given,
    frame_allowed``, closed over what they depend on (taken now, before any student code)."""
    import os

    realpath = os.path.realpath
    stdlib = frozenset(sys.stdlib_module_names)
    files: dict[str, bool] = {}

    def kind(frame) -> str:
        """student | course | stdlib | library, by the frame's module *and* file."""
        if frame.f_code in course_codes:
            return "course"
        g = frame.f_globals
        name = g.get("__name__") or "__main__"
        if name == "__main__":
            return "student"
        filename = frame.f_code.co_filename
        ok = files.get(filename)
        if ok is None:
            ok = files[filename] = filename.startswith("<frozen ") or realpath(filename).startswith(
                trusted
            )
        if not ok:  # generated code (dataclasses): only in its genuine module's globals
            module = sys.modules.get(name)
            if filename != "<string>" or module is None or vars(module) is not g:
                return "student"
        top = name.split(".")[0]
        return "course" if top in ("minitorch", "a2s") else "stdlib" if top in stdlib else "library"

    def origin(frame) -> str:
        while frame is not None and kind(frame) == "stdlib":
            frame = frame.f_back
        return "library" if frame is None else kind(frame)

    def in_guarded_student_code(frame) -> bool:
        student = False
        while frame is not None:
            if frame.f_code is guard_code:
                return student
            student = student or kind(frame) == "student"
            frame = frame.f_back
        return False

    def frame_given(args: tuple, event: str):
        """The frame an event hands out: sys._getframe's, or the one an attribute reads."""
        if event == "sys._getframe":
            return args[0] if args else None
        obj, name = args[0], args[1]
        try:
            return getattr(obj, name)
        except (AttributeError, ValueError):
            return None

    def frame_allowed(given, part: list) -> bool:
        """Whether ``given`` belongs to the student's own part of the stack: one of ``part``,
        or a frame that has left the stack (a finished helper, a generator's) whose callers
        reach ``part`` or end without passing course code."""
        ids = {id(f) for f in part}
        while given is not None:
            if id(given) in ids:
                return True
            if kind(given) == "course":
                return False
            given = given.f_back
        return True

    return kind, origin, in_guarded_student_code, frame_given, frame_allowed


def _course_cells(cells: dict[str, str]) -> tuple[frozenset, object]:
    """Compile the course's own cells now; return their code objects and the cell runner.

    In the graded notebook each course cell reads ``__a2s_cell__("id")``: its code runs from
    here, compiled before any student code, so it is known by identity (with every function
    it defines) and no input transformer or rebinding of the student's can alter it.
    """
    import sys
    import types

    from IPython.core.inputtransformer2 import TransformerManager

    plain = TransformerManager().transform_cell
    compiled = {
        cid: compile(plain(src), f"<a2s course cell {cid}>", "exec") for cid, src in cells.items()
    }
    codes: set = set()
    todo = list(compiled.values())
    while todo:
        code = todo.pop()
        codes.add(code)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    getframe = sys._getframe

    def run_cell(cell_id: str) -> None:
        """Run the course cell ``cell_id`` in the notebook's namespace."""
        exec(compiled[cell_id], getframe(1).f_globals)

    return frozenset(codes), run_cell
