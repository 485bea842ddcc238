"""Read course notebooks safely and find their parts by cell id and metadata.

Nothing here writes to a notebook it was given: readers take bytes, writers take a path the
course owns (``labs/``, a temporary folder).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from a2s.syllabus import LABS, Lab, find_lab

__all__ = [
    "Exercise",
    "NotebookError",
    "a2s_meta",
    "dumps",
    "exercises",
    "lab_of",
    "read_notebook",
    "read_notebook_bytes",
    "tags",
]

_NAME = re.compile(r"^(\d\d)_")


class NotebookError(ValueError):
    """A file that cannot be used as a course notebook; the message says why and what to do."""


@dataclass(slots=True)
class Exercise:
    """An exercise as the lab declares it (from the exercise cell's ``metadata.a2s``)."""

    id: str
    title: str
    task: str
    points: float
    cell_id: str
    check_cell_id: str | None
    subject: str
    dimension: str
    topics: list[str] = field(default_factory=list)


def read_notebook_bytes(data: bytes, name: str) -> NotebookNode:
    """Parse ``data`` as an nbformat-4 notebook or raise :class:`NotebookError`."""
    if not data.strip():
        raise NotebookError(f"{name}: the file is empty (0 cells); re-download or re-save it")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"{name}: not a Jupyter notebook (not valid JSON: {exc})") from None
    if not isinstance(raw, dict) or "cells" not in raw or "nbformat" not in raw:
        raise NotebookError(f"{name}: not a Jupyter notebook (JSON without 'cells'/'nbformat')")
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as exc:
        raise NotebookError(
            f"{name}: not a readable notebook ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(nb.cells, list):
        raise NotebookError(f"{name}: 'cells' is not a list")
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell, dict) or "cell_type" not in cell or "source" not in cell:
            raise NotebookError(f"{name}: cell {i} is malformed (no cell_type/source)")
        if isinstance(cell["source"], list):
            cell["source"] = "".join(cell["source"])
    return nb


def read_notebook(path: Path) -> NotebookNode:
    """Read ``path`` (never modified) as a notebook, with clear errors for bad input."""
    if not path.exists():
        raise NotebookError(f"{path}: no such file")
    if path.is_dir():
        raise NotebookError(f"{path}: is a folder, not a notebook")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NotebookError(f"{path}: cannot read ({exc.strerror})") from None
    return read_notebook_bytes(data, str(path))


def lab_of(nb: NotebookNode, name: str) -> Lab:
    """Identify the lab of a notebook: ``metadata.a2s.lab``, else an ``NN_`` file name."""
    meta = nb.metadata.get("a2s", {}) if isinstance(nb.metadata, dict) else {}
    number = meta.get("lab") if isinstance(meta, dict) else None
    if number is None:
        match = _NAME.match(Path(name).name)
        number = match.group(1) if match else None
    if number is None:
        raise NotebookError(
            f"{name}: unknown lab (no metadata.a2s.lab and the file name does not start "
            "with a lab number such as 01_)"
        )
    try:
        return find_lab(str(number))
    except KeyError:
        known = ", ".join(lab.number for lab in LABS)
        raise NotebookError(f"{name}: unknown lab {number!r}; labs are {known}") from None


def tags(cell: NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def a2s_meta(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("a2s", {})
    return meta if isinstance(meta, dict) else {}


def exercises(nb: NotebookNode) -> list[Exercise]:
    """List the exercises of a course notebook in order, pairing each with its check cell."""
    checks = {a2s_meta(c).get("exercise"): c.get("id") for c in nb.cells if "check" in tags(c)}
    found = []
    for cell in nb.cells:
        if "exercise" not in tags(cell):
            continue
        meta = a2s_meta(cell)
        ex_id = str(meta.get("exercise", ""))
        found.append(
            Exercise(
                id=ex_id,
                title=str(meta.get("title", ex_id)),
                task=str(meta.get("task", meta.get("title", ""))),
                points=float(meta.get("points", 1)),
                cell_id=str(cell.get("id")),
                check_cell_id=checks.get(ex_id),
                subject=str(meta.get("subject", "fundamentals")),
                dimension=str(meta.get("dimension", "hands-on")),
                topics=list(meta.get("topics", [])),
            )
        )
    return found


def dumps(nb: NotebookNode) -> str:
    """Serialise deterministically (sorted keys, one-space indent, trailing newline)."""
    return nbformat.writes(nb, version=4).rstrip("\n") + "\n"
