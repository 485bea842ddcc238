"""Checkpoints that survive a crash: atomic writes, a manifest of checksums, torn files caught.

A checkpoint is one file: the magic ``A2SCKPT1``, an 8-byte header length, a JSON header (the
state's tree with every numpy array replaced by its dtype, shape and offset; tuples marked),
then the arrays' raw bytes. :func:`encode`/:func:`decode` round-trip a tree of dicts, lists,
tuples, numbers, strings and arrays to the last bit (JSON writes floats by ``repr``).

:func:`save` never leaves a half-written file under a checkpoint's name: it writes a temporary
name in the same folder, ``fsync``s it, ``os.replace``s it into place (atomic on POSIX), then
rewrites ``manifest.json`` the same way with the file's SHA-256 and size, and ``fsync``s the
folder. The manifest is the commit point: a file it does not list is not a checkpoint.
:func:`load_latest` walks the manifest newest first and takes the first entry whose file exists
with the recorded size and checksum; the entries it skipped are reported with the reason.

Two ways a save goes wrong, on purpose: :func:`save_in_place` is the naive writer (manifest
first, then the file written in place, chunk by chunk), so a crash leaves a torn file under
the right name, which the checksum catches; :func:`kill_during_save` forks a child that runs
either writer slowly and ``SIGKILL``s it after ``after`` bytes reached the disk.

Lab: 32_fault_tolerance_elastic
Paper: PyTorch Distributed Checkpoint (``torch.distributed.checkpoint``) documentation (data
files first, the metadata file written last); POSIX ``rename(2)`` for atomic replacement.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MANIFEST",
    "atomic_write",
    "decode",
    "encode",
    "kill_during_save",
    "load_latest",
    "read_manifest",
    "save",
    "save_in_place",
    "sha256",
]

MAGIC = b"A2SCKPT1"
MANIFEST = "manifest.json"


def _pack(x: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(x, np.ndarray):
        arrays.append(np.ascontiguousarray(x))
        return {"__array__": len(arrays) - 1}
    if isinstance(x, dict):
        return {"__dict__": [[k, _pack(v, arrays)] for k, v in x.items()]}
    if isinstance(x, tuple):
        return {"__tuple__": [_pack(v, arrays) for v in x]}
    if isinstance(x, list):
        return [_pack(v, arrays) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, bool | int | float | str):
        return x
    raise TypeError(f"cannot checkpoint a {type(x).__name__}")


def encode(state: Any) -> bytes:
    """The checkpoint bytes of a state tree (see the module docstring)."""
    arrays: list[np.ndarray] = []
    tree = _pack(state, arrays)
    offset, specs = 0, []
    for a in arrays:
        specs.append({"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
        offset += a.nbytes
    head = json.dumps({"tree": tree, "arrays": specs}).encode()
    parts = [MAGIC, len(head).to_bytes(8, "little"), head, *(a.tobytes() for a in arrays)]
    return b"".join(parts)


def _unpack(x: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(x, dict):
        if "__array__" in x:
            return arrays[x["__array__"]]
        if "__tuple__" in x:
            return tuple(_unpack(v, arrays) for v in x["__tuple__"])
        return {k: _unpack(v, arrays) for k, v in x["__dict__"]}
    if isinstance(x, list):
        return [_unpack(v, arrays) for v in x]
    return x


def decode(data: bytes) -> Any:
    """The state tree of checkpoint bytes; ``ValueError`` if they are not a whole checkpoint."""
    if data[:8] != MAGIC or len(data) < 16:
        raise ValueError("not a checkpoint (bad magic)")
    n = int.from_bytes(data[8:16], "little")
    try:
        head = json.loads(data[16 : 16 + n])
    except ValueError as e:
        raise ValueError(f"checkpoint header unreadable: {e}") from None
    base, arrays = 16 + n, []
    for spec in head["arrays"]:
        dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        start = base + spec["offset"]
        if start + size > len(data):
            raise ValueError("checkpoint truncated")
        arrays.append(
            np.frombuffer(data, dtype, count=size // dtype.itemsize, offset=start)
            .reshape(shape)
            .copy()
        )
    return _unpack(head["tree"], arrays)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path | str, data: bytes, chunk: int = 0, pause: float = 0.0) -> None:
    """Write ``data`` to a temporary name beside ``path``, fsync, rename over ``path``.

    ``chunk``/``pause`` write it ``chunk`` bytes at a time with a pause after each (to be
    killed mid-write in the tests and the lab)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    _write(tmp, data, chunk, pause)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _write(path: Path, data: bytes, chunk: int, pause: float) -> None:
    with open(path, "wb") as f:
        step = chunk or max(1, len(data))
        for i in range(0, len(data), step):
            f.write(data[i : i + step])
            if pause:
                f.flush()
                os.fsync(f.fileno())
                time.sleep(pause)
        f.flush()
        os.fsync(f.fileno())


def read_manifest(folder: Path | str) -> list[dict[str, Any]]:
    """The manifest's entries, oldest first (``[]`` when there is none yet)."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return []
    return list(json.loads(path.read_text())["checkpoints"])


def _name(step: int) -> str:
    return f"ckpt-{int(step):08d}.bin"


def _commit(folder: Path, entries: list[dict[str, Any]]) -> None:
    atomic_write(folder / MANIFEST, json.dumps({"checkpoints": entries}, indent=1).encode())


def save(folder: Path | str, step: int, state: Any, keep: int = 2, **slow: Any) -> Path:
    """Write a checkpoint of ``state`` at ``step`` atomically and commit it in the manifest;
    keep the newest ``keep`` checkpoints. ``slow``: ``chunk``/``pause`` of :func:`atomic_write`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = encode(state)
    path = folder / _name(step)
    atomic_write(path, data, **slow)
    entry = {"step": int(step), "file": path.name, "sha256": sha256(data), "bytes": len(data)}
    entries = [e for e in read_manifest(folder) if e["step"] != step] + [entry]
    entries.sort(key=lambda e: e["step"])
    old, entries = entries[:-keep], entries[-keep:]
    _commit(folder, entries)
    for e in old:
        (folder / e["file"]).unlink(missing_ok=True)
    return path


def save_in_place(
    folder: Path | str, step: int, state: Any, chunk: int = 0, pause: float = 0.0
) -> Path:
    """The naive writer: commit the manifest entry, then write the file in place (torn if
    killed). Its only defence is the checksum that :func:`load_latest` verifies."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = encode(state)
    path = folder / _name(step)
    entry = {"step": int(step), "file": path.name, "sha256": sha256(data), "bytes": len(data)}
    _commit(folder, [*(e for e in read_manifest(folder) if e["step"] != step), entry])
    _write(path, data, chunk, pause)
    return path


def load_latest(
    folder: Path | str, at_most: int | None = None
) -> tuple[int | None, Any, list[str]]:
    """``(step, state, skipped)``: the newest checkpoint (of step ``<= at_most`` if given)
    whose size and SHA-256 match the manifest; ``(None, None, skipped)`` when none does.
    ``skipped`` says why each newer one was refused."""
    folder = Path(folder)
    skipped = []
    for e in reversed(read_manifest(folder)):
        if at_most is not None and e["step"] > at_most:
            continue
        path = folder / e["file"]
        if not path.exists():
            skipped.append(f"step {e['step']}: {e['file']} missing")
            continue
        data = path.read_bytes()
        if len(data) != e["bytes"] or sha256(data) != e["sha256"]:
            why = f"{len(data)} of {e['bytes']} bytes" if len(data) != e["bytes"] else "checksum"
            skipped.append(f"step {e['step']}: {e['file']} torn ({why})")
            continue
        return int(e["step"]), decode(data), skipped
    return None, None, skipped


def _child(folder: str, step: int, state: Any, in_place: bool, chunk: int) -> None:
    writer = save_in_place if in_place else save
    writer(folder, step, state, chunk=chunk, pause=0.05)


def kill_during_save(
    folder: Path | str,
    step: int,
    state: Any,
    in_place: bool = False,
    after: int = 1,
    chunk: int = 4096,
    timeout: float = 20.0,
) -> int:
    """Fork a child that saves ``state`` slowly (``chunk`` bytes, then 50 ms) and SIGKILL it
    once ``after`` bytes of the new file are on disk; return the bytes it had written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / _name(step)
    proc = mp.get_context("fork").Process(
        target=_child, args=(str(folder), step, state, in_place, chunk)
    )
    proc.start()
    deadline, written = time.monotonic() + timeout, 0
    try:
        while time.monotonic() < deadline and proc.is_alive():
            files = [target] if in_place else list(folder.glob(f".{target.name}.tmp-*"))
            written = max((f.stat().st_size for f in files if f.exists()), default=0)
            if written >= after:
                break
            time.sleep(0.005)
        else:
            raise RuntimeError("the writer finished or timed out before it could be killed")
    finally:
        if proc.pid is not None and proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(5.0)
    return written
