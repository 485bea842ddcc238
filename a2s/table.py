"""The results table that ``a2s check`` and ``a2s grade`` print: every message in full.

A grader's message ends with what usually causes the failure and how to fix it, so it is
never cut; long lines are wrapped at word boundaries (paths and code stay whole).
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2s.grade import SubmissionResult

__all__ = ["results_table", "shown_path"]

_MARK = {
    "passed": "✔",
    "failed": "✘",
    "error": "!",
    "timeout": "⏱",
    "missing": "?",
    "tampered": "✘",
}
_INDENT = " " * 11  # under the exercise id


def results_table(result: SubmissionResult, width: int | None = None) -> list[str]:
    """Return one submission's results as lines, messages wrapped to ``width`` columns."""
    width = width or min(120, max(60, shutil.get_terminal_size((100, 24)).columns))
    lines = [f"{result.notebook}: lab {result.lab}, {result.score:g}/{result.max_score:g} points"]
    if result.error:
        lines += _wrapped(f"error: {result.error}", "  ", width)
    for ex in result.exercises:
        lines.append(
            f"  {_MARK.get(ex.status, ' ')} {ex.id}  {ex.status:<8} "
            f"{ex.points:g}/{ex.max_points:g}  {ex.title}"
        )
        if ex.status != "passed" and ex.message:
            lines += _wrapped(ex.message, _INDENT, width)
    return lines


def _wrapped(text: str, indent: str, width: int) -> list[str]:
    """Wrap each line of ``text`` at ``width``, never splitting a word."""
    out: list[str] = []
    for para in text.splitlines() or [""]:
        out += textwrap.wrap(
            para,
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [indent.rstrip()]
    return out


def shown_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies inside it, else absolute."""
    path = path.resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
