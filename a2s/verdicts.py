"""The grader's side of the sealed kernel: a key per run, and verdicts checked against it.

:func:`new_seal` writes the kernel's configuration (a fresh 256-bit key, the verdict file,
the memory cap, the modules to preload) into the run's folder; the sealed launcher
(:mod:`a2s.sealed`) reads and deletes it before any notebook code runs.
:func:`read_verdicts` keeps the lines whose HMAC-SHA256 matches, in sequence; a line that
does not verify is a forgery attempt and is reported, never counted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Seal", "Verdict", "Verdicts", "new_seal", "read_verdicts"]


@dataclass(frozen=True, slots=True)
class Seal:
    """One run's secret and files (the key never enters the kernel's environment)."""

    key: bytes
    config: Path
    verdicts: Path


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the course's check decided for one exercise, as signed in the kernel."""

    exercise: str
    status: str  # passed | failed | error | tampered
    message: str
    seq: int


@dataclass(slots=True)
class Verdicts:
    """The verified verdicts of a run and the lines that failed to verify.

    Per exercise: the first verdict that did not pass (the course's check and an instructor's
    hidden check must both pass), else the last one.
    """

    by_exercise: dict[str, Verdict] = field(default_factory=dict)
    forged: list[str] = field(default_factory=list)  # exercise ids named by forged lines


def new_seal(
    folder: Path, memory_limit_mb: int, preload: list[str], cells: dict[str, str] | None = None
) -> Seal:
    """Write the sealed kernel's configuration into ``folder`` (mode 0600).

    ``cells`` maps each course cell's id to its source: the kernel compiles them at start.
    """
    key = os.urandom(32)
    seal = Seal(key, folder / "seal.json", folder / "verdicts.jsonl")
    config = {
        "key": key.hex(),
        "verdicts": str(seal.verdicts),
        "memory_limit": int(memory_limit_mb) * 1024 * 1024,
        "preload": preload,
        "cells": cells or {},
    }
    fd = os.open(seal.config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(config, fh)
    return seal


def _named(line: str) -> str:
    """The exercise a forged line claims, if it can be read at all."""
    try:
        row = json.loads(line)
        body = json.loads(row["v"]) if isinstance(row, dict) and "v" in row else row
        return str(body[1]) if isinstance(body, list) and len(body) > 1 else "?"
    except (ValueError, TypeError, KeyError, IndexError):
        return "?"


def read_verdicts(seal: Seal) -> Verdicts:
    """Verify every line of the verdict file; keep one verdict per exercise (see Verdicts)."""
    out = Verdicts()
    if not seal.verdicts.exists():
        return out
    expected = 1
    for line in seal.verdicts.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            body, mac = str(row["v"]), str(row["mac"])
        except (ValueError, TypeError, KeyError):
            out.forged.append(_named(line))
            continue
        good = hmac.new(seal.key, body.encode("ascii", "replace"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(good, mac):
            out.forged.append(_named(line))
            continue
        seq, exercise, status, message = json.loads(body)
        if seq != expected:  # a signed line removed or replayed
            out.forged.append(str(exercise))
        expected = seq + 1
        verdict = Verdict(str(exercise), str(status), str(message), seq)
        kept = out.by_exercise.get(verdict.exercise)
        if kept is None or kept.status == "passed" or verdict.status == "tampered":
            out.by_exercise[verdict.exercise] = verdict  # a failure sticks: every check must pass
    return out
