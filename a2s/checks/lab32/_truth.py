"""Lab 32's own ground truth: plain loops and closed forms, never ``minitorch.elastic``.

* checkpoints: a folder described by a spec (the manifest's entries, each with what happened
  to its file, and stray files the manifest does not list) is written by :func:`write_folder`
  in the reference's layout (``manifest.json`` with ``step``, ``file``, ``sha256``, ``bytes``);
  the answer is read from the spec itself (:func:`newest_intact`): the highest step whose
  file was left intact;
* the interval: Daly's higher-order optimum written out (:func:`daly`), and Young's;
* detection: a poll loop per rank over its heartbeats (:func:`declared`);
* stragglers: medians by sorting (:func:`slow_ranks`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from typing import Any

KINDS = ("ok", "truncated", "flipped", "missing", "resized")


# ----------------------------------------------------------------------------- checkpoints
def payload(step: int) -> bytes:
    """The bytes of step ``step``'s checkpoint: deterministic, distinct per step."""
    seed = hashlib.sha256(f"lab32 step {step}".encode()).digest()
    return (seed * (3 + step % 5))[: 40 + 7 * (step % 11)]


def file_name(step: int) -> str:
    return f"ckpt-{int(step):08d}.bin"


def write_folder(folder: str, entries: Sequence[tuple[int, str]], strays: Sequence[str]) -> None:
    """Write the checkpoints of ``entries`` (``(step, kind)`` in manifest order) and their
    manifest, then damage each file as its kind says; ``strays`` are files no entry lists."""
    rows = []
    for step, kind in entries:
        data = payload(step)
        rows.append(
            {
                "step": int(step),
                "file": file_name(step),
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
        )
        if kind == "missing":
            continue
        if kind == "truncated":
            data = data[: len(data) // 2]
        elif kind == "flipped":  # one bit, same size
            data = data[:5] + bytes([data[5] ^ 0x10]) + data[6:]
        elif kind == "resized":  # one byte more: a stale file of another save
            data = data + b"\0"
        with open(os.path.join(folder, file_name(step)), "wb") as f:
            f.write(data)
    for name in strays:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(payload(999))
    if entries or not strays:
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump({"checkpoints": rows}, f)


def newest_intact(entries: Sequence[tuple[int, str]], strays: Sequence[str]) -> tuple[Any, Any]:
    """``(step, bytes)`` of the highest step whose file is intact, else ``(None, None)``."""
    best = None
    for step, kind in entries:
        if kind == "ok" and (best is None or step > best):
            best = step
    return (None, None) if best is None else (best, payload(best))


# ----------------------------------------------------------------------------- interval
def young(cost: float, mtbf: float) -> float:
    return math.sqrt(2.0 * cost * mtbf)


def daly(cost: float, mtbf: float) -> float:
    """Daly (2006), eq. (37): sqrt(2δM)·[1 + (1/3)·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M,
    else M."""
    if cost >= 2.0 * mtbf:
        return float(mtbf)
    r = cost / (2.0 * mtbf)
    return young(cost, mtbf) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - cost


# ----------------------------------------------------------------------------- detection
def declared(
    beats: Sequence[Sequence[float]], deadline: float, poll: float, horizon: float
) -> dict[int, float]:
    """For each rank, the first poll ``t = k·poll <= horizon`` at which its last heartbeat at
    or before ``t`` (0 when none) is more than ``deadline`` old; ranks never declared are
    left out."""
    out: dict[int, float] = {}
    for rank, times in enumerate(beats):
        k = 1
        while k * poll <= horizon:
            t = k * poll
            last = 0.0
            for b in times:
                if b <= t and b > last:
                    last = b
            if t - last > deadline:
                out[rank] = t
                break
            k += 1
    return out


# ----------------------------------------------------------------------------- stragglers
def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def slow_ranks(compute: Sequence[Sequence[float]], factor: float) -> list[int]:
    """Ranks whose median compute time (``compute[step][rank]``) exceeds ``factor`` times the
    median of the other ranks' medians."""
    ranks = len(compute[0])
    med = [median([row[r] for row in compute]) for r in range(ranks)]
    out = []
    for r in range(ranks):
        others = [m for i, m in enumerate(med) if i != r]
        if med[r] > factor * median(others):
            out.append(r)
    return out


# ----------------------------------------------------------------------------- a disk that crashes
class Disk:
    """The grader's simulated folder: what was written, what was made durable, every call.

    ``write`` replaces a file's contents (not durable until ``fsync``); ``replace`` moves a
    file onto another name atomically, durability included (this disk's renames are durable
    at once; a real folder also needs an ``fsync`` of its own). After a crash a file whose
    contents were not made durable keeps only its first half (a torn write), or nothing."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.start = {k: (bytes(v), True) for k, v in files.items()}
        self.files = dict(self.start)
        self.ops: list[tuple[Any, ...]] = []

    def write(self, name: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray):
            raise TypeError(
                f"disk.write({name!r}, ...): data must be bytes, not {type(data).__name__}"
            )
        self.ops.append(("write", name, bytes(data)))
        self.files[name] = (bytes(data), False)

    def fsync(self, name: str) -> None:
        self.ops.append(("fsync", name))
        if name in self.files:
            self.files[name] = (self.files[name][0], True)

    def replace(self, src: str, dst: str) -> None:
        if src not in self.files:
            raise FileNotFoundError(f"disk.replace: no file {src!r} to move onto {dst!r}")
        self.ops.append(("replace", src, dst))
        self.files[dst] = self.files.pop(src)

    def read(self, name: str) -> bytes | None:
        got = self.files.get(name)
        return None if got is None else got[0]

    def listdir(self) -> list[str]:
        return sorted(self.files)


TEARS = ("half", "lost")  # what a crash leaves of a file not made durable


def crash_after(start: dict, ops: list, k: int, tear: str = "half") -> dict[str, bytes]:
    """The folder after the first ``k`` calls and a crash: undurable files torn in half
    (``tear="half"``) or emptied (``"lost"``: nothing of an unsynced write survives, so no
    padding of a file written in place can keep its first half whole)."""
    files = dict(start)
    for op in ops[:k]:
        if op[0] == "write":
            files[op[1]] = (op[2], False)
        elif op[0] == "fsync" and op[1] in files:
            files[op[1]] = (files[op[1]][0], True)
        elif op[0] == "replace":
            files[op[2]] = files.pop(op[1])
    keep = (lambda d: d[: len(d) // 2]) if tear == "half" else (lambda d: b"")
    return {n: (d if durable else keep(d)) for n, (d, durable) in files.items()}


def newest_in(files: dict[str, bytes]) -> tuple[Any, Any]:
    """The newest intact checkpoint of a folder held as ``{name: bytes}`` (32.1's rule)."""
    try:
        rows = json.loads(files["manifest.json"].decode())["checkpoints"]
    except (KeyError, ValueError, TypeError, AttributeError):
        return (None, None)
    best: tuple[Any, Any] = (None, None)
    for e in rows:
        try:
            data = files.get(e["file"])
            if data is None or len(data) != e["bytes"]:
                continue
            ok = hashlib.sha256(data).hexdigest() == e["sha256"]
            if ok and (best[0] is None or int(e["step"]) > best[0]):
                best = (int(e["step"]), data)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return best
