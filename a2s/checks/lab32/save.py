"""Grader of exercise 32.5: a save that a crash at any moment cannot turn into a lost job.

``save_checkpoint(disk, step, data)`` writes checkpoint ``step`` (its bytes ``data``) into a
folder that already holds the earlier checkpoints and their ``manifest.json`` (32.1's layout),
through ``disk``: ``write(name, data)``, ``fsync(name)``, ``replace(src, dst)``,
``read(name)``, ``listdir()``. The learner's function runs in a child process
(:func:`~a2s.checks.harness.run_apart`); ``disk`` is a proxy whose calls are requests to the
grader's :class:`~._truth.Disk`, which records every call. Judged from that record: the folder
after a crash after *every* call (undurable files torn in half, and then lost whole) still
resumes from the new checkpoint or the previous newest one (32.1's rule, the grader's loop),
and once the function has returned a crash loses nothing: the new checkpoint is the newest
intact one. Renames are durable at once on this disk (a real folder needs its own fsync) and
reads are not recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import remote, run_apart
from a2s.checks.lab32._truth import TEARS, Disk, crash_after, file_name, newest_in, payload

__all__ = ["check_save_checkpoint"]


def _folder(steps: list[int], extra: dict[str, bytes] | None = None) -> dict[str, bytes]:
    files = {file_name(s): payload(s) for s in steps}
    rows = [
        {
            "step": s,
            "file": file_name(s),
            "sha256": hashlib.sha256(payload(s)).hexdigest(),
            "bytes": len(payload(s)),
        }
        for s in steps
    ]
    if steps:
        files["manifest.json"] = json.dumps({"checkpoints": rows}).encode()
    return {**files, **(extra or {})}


_CASES = [
    ("an empty folder, the first save (step 10)", _folder([]), 10),
    ("steps 10 and 20 committed, save step 30", _folder([10, 20]), 30),
    (
        "a leftover temporary file of a crashed save, then save step 40",
        _folder([10, 30], {".ckpt-00000040.bin.tmp": b"torn"}),
        40,
    ),
]


def _show(op: tuple) -> str:
    return f"{op[0]}({', '.join(repr(a) for a in op[1:2] + op[2:3] if not isinstance(a, bytes))})"


def _judge(disk: Disk, label: str, step: int) -> None:
    before = newest_in({n: d for n, (d, _) in disk.start.items()})
    ops = disk.ops
    for k, tear in ((k, t) for k in range(len(ops) + 1) for t in TEARS):
        got = newest_in(crash_after(disk.start, ops, k, tear))
        if got[0] in (before[0], step) and (got[0] is None or got[1] is not None):
            if got[0] == step and got[1] != payload(step):
                raise CheckFailure(f"[{label}] step {step} resumed with other bytes than saved.")
            continue
        after = "before the first call" if k == 0 else f"right after call {k}, {_show(ops[k - 1])}"
        raise CheckFailure(
            f"[{label}] a crash {after} leaves no intact checkpoint to resume from (the "
            f"previous one was step {before[0]}). Never write a file in place that a resume "
            "reads (the manifest, a committed checkpoint): write a temporary name, fsync it, "
            "then replace."
        )
    final = min(
        (newest_in(crash_after(disk.start, ops, len(ops), t)) for t in TEARS),
        key=lambda got: got[0] == step,
    )
    if final[0] != step:
        listed = newest_in({n: d for n, (d, _) in disk.files.items()})[0] == step
        why = (
            "the files were not made durable: fsync each one before you replace it onto "
            "its name (a crash tears what was not fsynced)"
            if listed
            else "commit it in the manifest (an entry with step, file, sha256 and bytes)"
        )
        raise CheckFailure(
            f"[{label}] save_checkpoint returned, then a crash: the newest intact checkpoint "
            f"is step {final[0]}, not {step}: {why}."
        )


@grader("32.5", blocks=("minitorch.elastic.checkpoint", "minitorch.elastic.sharded"), hand="replay")
def check_save_checkpoint(save_checkpoint: Callable[..., object]) -> str:
    """Exercise 32.5: a crash after any call leaves a checkpoint; after the return, the new one."""
    calls = fsyncs = renames = 0
    for label, files, step in _CASES:
        disk = Disk(files)
        proxy, serve = remote(disk, ["write", "fsync", "replace", "read", "listdir"], "disk")
        run_apart(save_checkpoint, proxy, step, payload(step), serve=serve, timeout=30)
        _judge(disk, label, step)
        calls += len(disk.ops)
        fsyncs += sum(op[0] == "fsync" for op in disk.ops)
        renames += sum(op[0] == "replace" for op in disk.ops)
    return (
        f"{len(_CASES)} saves, a crash replayed after each of their {calls} calls: "
        f"{fsyncs} fsyncs, {renames} atomic renames, a checkpoint to resume from every time"
    )
