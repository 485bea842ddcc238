"""What a check raises, how Jupyter shows it, and the names the scorer keys on.

A failed check is a teaching message, not a crash: in Jupyter it shows as a few lines (the
exercise, the case, what differs and what that usually means) instead of a traceback through
the grader. The full traceback stays one call away: ``a2s.checks.traceback()``.
Under nbval and ``a2s grade`` the exception's name and message are unchanged.
"""

from __future__ import annotations

import sys
import textwrap
import traceback as _tb
from typing import Final

__all__ = [
    "FAILED_NAMES",
    "NOT_IMPLEMENTED",
    "CheckFailure",
    "ForbiddenCallError",
    "ReferenceCalledError",
    "StudentError",
    "traceback",
]

NOT_IMPLEMENTED: Final = "not implemented yet"
_WIDTH: Final = 96
_FOOTER: Final = "(the full traceback: a2s.checks.traceback())"


def _course_file(filename: str) -> bool:
    """A frame of the course's own packages (the reference or the graders), not the learner's."""
    parts = filename.replace("\\", "/").split("/")
    return "minitorch" in parts or "a2s" in parts


def _short(kind: str, message: str) -> list[str]:
    """Render ``message`` as a few wrapped lines under a one-word heading."""
    lines = [f"\x1b[1;31m{kind}\x1b[0m"]
    for para in str(message).splitlines() or [""]:
        lines.extend(textwrap.wrap(para, _WIDTH, subsequent_indent="  ") or [""])
    lines.append(f"\x1b[2m{_FOOTER}\x1b[0m")
    return lines


class CheckFailure(AssertionError):
    """A wrong answer: the message says which case, what differs and what that usually means."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a trace
        return _short("✘ check failed", str(self))


class ReferenceCalledError(CheckFailure):
    """The student's code called the reference implementation it is meant to replace."""


class ForbiddenCallError(CheckFailure):
    """The student's code called a module or function the exercise forbids (e.g. torch)."""


class StudentError(Exception):
    """The student's code raised while the grader ran it (status ``error``, not ``failed``)."""

    def _render_traceback_(self) -> list[str]:
        cause = self.__cause__
        where = ""
        if cause is not None and cause.__traceback__ is not None:
            frames = [
                f for f in _tb.extract_tb(cause.__traceback__) if not _course_file(f.filename)
            ]
            if frames:
                last = frames[-1]
                where = f"\nin your code, line {last.lineno}: {(last.line or '').strip()}"
        return _short("! your code raised", str(self) + where)


# exception names (as IPython reports them) that mean "wrong answer", not "crashed"
FAILED_NAMES: Final = frozenset(
    {"AssertionError", "CheckFailure", "ReferenceCalledError", "ForbiddenCallError"}
)


def traceback() -> None:
    """Print the full traceback of the last failed cell (what the short message hides)."""
    exc = getattr(sys, "last_value", None)
    if exc is None:
        print("no failed cell yet")
        return
    _tb.print_exception(type(exc), exc, exc.__traceback__, file=sys.stdout)
