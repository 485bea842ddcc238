"""Which native tools this machine has, and ``perf stat`` where its counters exist.

Lab 37 installs nothing at run time: each part looks its tool up when it runs and says what
is missing. :func:`report` lists them all at once (for ``a2s doctor`` and the lab's first
cell): the compiler, binutils (``nm``, ``objdump``, ``c++filt``), valgrind, ninja (for
torch's C++ extensions) and perf, each with its version or why it is absent.

``perf stat -x,`` prints one CSV line per event: ``value,unit,event,run time,percentage,...``,
with ``<not supported>`` (or ``<not counted>``) in place of the value where the kernel
exposes no hardware counter (in most virtual machines and containers). Software events
(``task-clock``, ``page-faults``, ``context-switches``) are counted by the kernel itself and
work everywhere perf runs; :func:`hardware_counters` says whether ``cycles`` does.

Lab: 37_python_to_machine_code
Paper: the Linux ``perf-stat(1)`` manual; ``perf_event_open(2)`` (``perf_event_paranoid``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TOOLS", "Tool", "hardware_counters", "parse_perf_stat", "perf_stat", "report"]

# name -> (the flag that prints a version, what lab 37 uses it for)
TOOLS = {
    "g++": ("--version", "compiles, assembles and links the kernels"),
    "nm": ("--version", "lists an object's symbols"),
    "objdump": ("--version", "lists an object's relocations"),
    "c++filt": ("--version", "demangles C++ names"),
    "valgrind": ("--version", "measures cache misses (cachegrind)"),
    "ninja": ("--version", "builds torch C++ extensions"),
    "perf": ("--version", "counts events (perf stat)"),
}


@dataclass(frozen=True)
class Tool:
    """One tool: where it is (None: absent), its version line and what it is for."""

    name: str
    path: str | None
    version: str
    purpose: str


def report() -> list[Tool]:
    """Every tool of :data:`TOOLS`, found or not (nothing raises)."""
    out = []
    for name, (flag, purpose) in TOOLS.items():
        path = shutil.which(name)
        version = ""
        if path is not None:
            try:
                done = subprocess.run([path, flag], capture_output=True, text=True, timeout=20)
                lines = (done.stdout or done.stderr).splitlines()
                version = lines[0].strip() if lines else ""
            except (OSError, subprocess.TimeoutExpired) as err:
                version = f"does not run: {err}"
        out.append(Tool(name, path, version, purpose))
    return out


def parse_perf_stat(text: str) -> dict[str, float | None]:
    """``{event: value}`` from ``perf stat -x,`` output; None where it was not counted."""
    found: dict[str, float | None] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[2]:
            continue
        value = parts[0].strip()
        try:
            found[parts[2]] = float(value)
        except ValueError:
            found[parts[2]] = None  # <not supported>, <not counted>
    return found


def perf_stat(
    argv: Sequence[str], events: Sequence[str] = ("task-clock", "page-faults")
) -> dict[str, float | None]:
    """Run ``argv`` under ``perf stat -x, -e events``; RuntimeError if perf is missing."""
    perf = shutil.which("perf")
    if perf is None:
        raise RuntimeError("perf is not installed (Debian: apt-get install linux-perf)")
    cmd = [perf, "stat", "-x,", "-e", ",".join(events), "--", *argv]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    counts = parse_perf_stat(done.stderr)
    if done.returncode and not counts:
        raise RuntimeError(f"perf stat failed: {done.stderr.strip()[-500:]}")
    return counts


def hardware_counters() -> str | None:
    """None where ``perf stat -e cycles`` counts here, else why not (for a clear skip)."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    try:
        cycles = perf_stat(["true"], ("cycles",)).get("cycles")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        return f"perf stat does not run here: {err}"
    if cycles is None:
        return "the kernel exposes no hardware counters here (perf stat: cycles <not supported>)"
    return None
