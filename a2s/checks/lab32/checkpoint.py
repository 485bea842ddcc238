"""Grader of exercise 32.1: resume from the newest checkpoint that survived, never a torn one.

``load_latest(folder)`` returns ``(step, data)``: the step and the bytes of the newest
checkpoint the manifest (``folder/manifest.json``, ``{"checkpoints": [{"step", "file",
"sha256", "bytes"}, ...]}``) lists whose file exists with the recorded size and SHA-256;
``(None, None)`` when none does. For every case the grader writes a fresh folder itself and
damages it as the case says: a file truncated (killed mid-write), one bit flipped (same size),
a file missing, a stale file one byte long, a committed entry out of step order, and files
the manifest does not list (a leftover temporary name, a newer file whose manifest commit
never happened). The truth reads that folder with a loop of its own (``json`` and
``hashlib``), and agrees with the spec it was written from.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab32._truth import KINDS, write_folder
from a2s.checks.table import Table

__all__ = ["LATEST", "check_load_latest"]

_CKPT = "minitorch.elastic.checkpoint"
_TMP = ".ckpt-{:08d}.bin.tmp-4242"
_LATE = "ckpt-{:08d}.bin"


def _entries(folder: str) -> list[dict[str, Any]]:
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(json.load(f)["checkpoints"])


def _scan(folder: str, accept: Callable[[bytes, dict[str, Any]], bool], order: str) -> Any:
    """The first entry (newest by step, or last in the manifest) whose file ``accept``s."""
    rows = _entries(folder)
    rows = rows[::-1] if order == "position" else sorted(rows, key=lambda e: -e["step"])
    for e in rows:
        path = os.path.join(folder, e["file"])
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            if accept(data, e):
                return (int(e["step"]), data)
    return (None, None)


def _intact(data: bytes, e: dict[str, Any]) -> bool:
    return len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"]


def _on_disk(fn: Callable[[str], Any]) -> Callable[..., Any]:
    """``fn`` of a folder, callable with a folder or with a case's spec (written to disk)."""

    def call(*args: Any) -> Any:
        if len(args) == 1 and isinstance(args[0], str):
            return fn(args[0])
        with tempfile.TemporaryDirectory(prefix="a2s-lab32-") as folder:
            write_folder(folder, *args)
            return fn(folder)

    return call


def _files_first(folder: str) -> Any:
    """Trusts the folder over the manifest: the newest ``ckpt-*`` file, verified if listed."""
    listed = {e["file"]: e for e in _entries(folder)}
    for name in sorted((n for n in os.listdir(folder) if n.startswith("ckpt-")), reverse=True):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        if name not in listed or _intact(data, listed[name]):
            return (int(name[5:13]), data)
    return (None, None)


def _newest(folder: str) -> Any:
    return _scan(folder, _intact, "step")


def _truth(*args: Any) -> Any:
    """The truth of a case (a module-level function, not a closure: the guard can block it)."""
    return _on_disk(_newest)(*args)


_MISTAKES = (
    Mistake(
        " A flipped bit keeps the size: the size alone does not show a corrupted file, the "
        "SHA-256 of its bytes does.",
        answer=_on_disk(lambda d: _scan(d, lambda data, e: len(data) == e["bytes"], "step")),
    ),
    Mistake(
        " A file that exists is not yet a checkpoint: a save killed mid-write leaves a short "
        "file under the right name; compare its size and SHA-256 with the manifest's.",
        answer=_on_disk(lambda d: _scan(d, lambda data, e: True, "step")),
    ),
    Mistake(
        " The newest checkpoint is the highest step, not the last entry of the manifest.",
        answer=_on_disk(lambda d: _scan(d, _intact, "position")),
    ),
    Mistake(
        " The manifest is the commit point: a file it does not list (a save whose manifest "
        "was never rewritten) is not a checkpoint.",
        answer=_on_disk(_files_first),
    ),
)


def _case(label: str, entries: list, strays: Sequence[str] = ()) -> tuple:
    return (label, (entries, list(strays)))


_NAMED = [
    _case("two intact checkpoints", [(10, "ok"), (20, "ok")]),
    _case("the newest truncated (killed mid-write)", [(10, "ok"), (20, "truncated")]),
    _case("the newest with one flipped bit (same size)", [(10, "ok"), (20, "flipped")]),
    _case("the newest file missing", [(10, "ok"), (20, "missing")]),
    _case("the newest one byte too long", [(10, "ok"), (20, "resized")]),
    _case("the newest two damaged", [(10, "ok"), (20, "missing"), (30, "flipped")]),
    _case("an older one torn, the newest fine", [(10, "truncated"), (20, "ok")]),
    _case("the manifest out of step order", [(30, "ok"), (10, "ok"), (20, "ok")]),
    _case("a leftover temporary file of a newer save", [(10, "ok")], [_TMP.format(20)]),
    _case("a newer file the manifest never listed", [(10, "ok"), (20, "ok")], [_LATE.format(30)]),
    _case("every checkpoint damaged", [(10, "truncated"), (20, "flipped")]),
    _case("no manifest yet, one unlisted file", [], [_LATE.format(5)]),
    _case("an empty folder", []),
]


def _draw(gen: Any, i: int) -> tuple:
    n = int(gen.integers(1, 6))
    steps = sorted(int(s) for s in gen.choice(range(1, 100), size=n, replace=False) * 10)
    kinds = [str(gen.choice(KINDS, p=[0.4, 0.15, 0.15, 0.15, 0.15])) for _ in steps]
    entries = list(zip(steps, kinds, strict=True))
    if gen.random() < 0.3:
        entries = [entries[j] for j in gen.permutation(n)]
    strays = []
    if gen.random() < 0.5:
        strays.append((_TMP if gen.random() < 0.5 else _LATE).format(steps[-1] + 10))
    return _case(f"random folder {i}: {entries}, unlisted {strays}", entries, strays)


def _draw_fresh(gen: Any, i: int) -> tuple:
    """A random folder that holds, by turns, what each mistake misses (drawn folders alone
    often do not: a lookup of the public cases with a wrong fallback would pass): the newest
    file flipped, the newest truncated, the newest listed first, a newer unlisted file."""
    _, (entries, strays) = _draw(gen, i)
    entries, top = list(entries), max(s for s, _ in entries)
    turn = i % 4
    kind = {0: "flipped", 1: "truncated"}.get(turn, "ok")
    entries = [(s, kind if s == top else k) for s, k in entries]
    if turn == 2:
        entries = [(top, "ok"), *[(s, k) for s, k in entries if s != top], (top - 5, "ok")]
    if turn == 3:
        strays = [_LATE.format(top + 10)]
    return _case(f"fresh folder {i}: {entries}, unlisted {strays}", entries, strays)


def _read(got: Any, label: str) -> tuple[Any, Any]:
    if not (isinstance(got, tuple | list) and len(got) == 2):
        raise CheckFailure(
            f"[{label}] load_latest must return a pair (step, data), or (None, None); got "
            f"{type(got).__name__} {str(got)[:60]}."
        )
    step, data = got
    if step is None or data is None:
        if step is not None or data is not None:
            raise CheckFailure(f"[{label}] (None, None) when no checkpoint is intact, not {got!r}.")
        return (None, None)
    if not isinstance(data, bytes) or isinstance(step, bool) or not isinstance(step, int):
        raise CheckFailure(
            f"[{label}] load_latest must return (step as an int, the file's bytes); got "
            f"({type(step).__name__}, {type(data).__name__})."
        )
    return (step, data)


def _show(x: Any) -> str:
    step, data = x
    return "(None, None)" if data is None else f"(step {step}, {len(data)} bytes)"


LATEST = Table(
    "32.1",
    truth=_truth,
    named=_NAMED,
    draw=_draw,
    seeded=8,
    fresh=4,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Walk the manifest's entries from the highest step down; take the first whose file "
    "exists with the recorded size and SHA-256.",
    read=_read,
    same=lambda got, want: tuple(got) == tuple(want),
    what="load_latest",
    message=lambda case, got, want, hint: (
        f"[{case.label}] load_latest returned {_show(got)}, the newest intact checkpoint is "
        f"{_show(want)}.{hint}"
    ),
    prepare=lambda student: _on_disk(student),
)


@grader(
    "32.1",
    blocks=(
        _CKPT,
        "minitorch.elastic.sharded",
        "a2s.checks.lab32._truth:newest_intact",
        "a2s.checks.lab32.checkpoint:_truth",
    ),
)
def check_load_latest(load_latest: Callable[[str], object]) -> str:
    """Exercise 32.1: the newest intact checkpoint, never a torn, corrupted or unlisted one."""
    n = LATEST.grade(load_latest)
    return f"{n} folders: every torn, corrupted, missing and uncommitted file skipped"
