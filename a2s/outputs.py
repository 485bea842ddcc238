"""Clean a notebook's saved outputs so they read as the final screen, not as a recording.

A progress bar redraws itself by writing ``\\r`` and the new frame; the kernel sends these
writes in chunks as it flushes, and every chunk is saved as its own stream output. A viewer
that shows saved outputs one by one (GitHub, nbviewer, some editors) then shows every frame,
and a bar with ``leave=False`` leaves the blank line it cleared itself with. The cleaner does
what a terminal does instead:

1. consecutive stream outputs of the same name (stdout, stderr) are merged;
2. each line keeps what was written after its last carriage return, overwriting earlier
   frames (``"\\rbar  3%\\rbar 100%"`` -> ``"bar 100%"``); a line that a bar erased with
   spaces is dropped, and trailing spaces on redrawn lines are removed;
3. stream outputs left empty (or only whitespace) are dropped, and the outputs around them
   merged again.

Everything else (images, errors, results, lines printed without ``\\r``) is kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["clean_notebook_outputs", "clean_outputs", "final_text", "progress_frames"]


def _text(output: Mapping[str, Any]) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _final_line(line: str) -> str:
    """What a terminal shows after ``line`` (no newline inside): later frames overwrite."""
    shown = ""
    for frame in line.replace("\r\n", "\n").split("\r"):
        shown = frame + shown[len(frame) :]
    return shown


def final_text(text: str) -> str:
    """Return ``text`` as a terminal leaves it: every ``\\r`` applied, erased lines dropped."""
    lines = text.replace("\r\n", "\n").split("\n")
    out = []
    for i, line in enumerate(lines):
        if "\r" in line:
            line = _final_line(line).rstrip()
            if not line:  # a bar that erased itself (leave=False): nothing was left here
                continue
        out.append(line if i == len(lines) - 1 else line + "\n")
    return "".join(out)


def progress_frames(output: Mapping[str, Any]) -> int:
    """How many redrawn frames a stream output holds (its carriage returns); 0 otherwise."""
    if output.get("output_type") != "stream":
        return 0
    return _text(output).replace("\r\n", "\n").count("\r")


def _merged(outputs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    out: list[MutableMapping[str, Any]] = []
    for o in outputs:
        prev = out[-1] if out else None
        stream = o.get("output_type") == "stream"
        if (
            stream
            and prev is not None
            and prev.get("output_type") == "stream"
            and (prev.get("name") == o.get("name"))
        ):
            prev["text"] = _text(prev) + _text(o)
        else:
            out.append(o)
    return out


def clean_outputs(outputs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    """Return one cell's outputs cleaned (see the module docstring); the items are reused."""
    cleaned = []
    for o in _merged(list(outputs)):
        if o.get("output_type") == "stream":
            o["text"] = final_text(_text(o))
            if not o["text"].strip():
                continue
        cleaned.append(o)
    return _merged(cleaned)  # streams that a dropped one separated


def clean_notebook_outputs(nb: MutableMapping[str, Any]) -> int:
    """Clean every code cell's outputs in place; return how many outputs were removed."""
    removed = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and cell.get("outputs"):
            before = len(cell["outputs"])
            cell["outputs"] = clean_outputs(cell["outputs"])
            removed += before - len(cell["outputs"])
    return removed
