"""Valgrind's cachegrind on the C++ matmul against lab 06's LRU simulator, same pattern.

Cachegrind runs a program on a synthetic CPU and simulates a first-level data cache (D1), an
instruction cache (I1) and a last-level cache (LL), each set-associative with LRU
replacement and write-allocate, sized by ``--D1=size,assoc,line`` (and ``--I1``, ``--LL``);
it counts, per function and source line, the instructions (``Ir``), data reads (``Dr``) and
writes (``Dw``) and the misses of each (``D1mr``, ``D1mw``, ``DLmr``, ``DLmw``). Lab 06's
simulator (:mod:`minitorch.hardware.cache`) models the same kind of cache on an address
trace of the loop nest (:mod:`minitorch.kernels.traces`), so the two should agree on the
misses of the kernel function: both start cold (``cg_main.cpp`` flushes first), both see
A, B and C at the same offsets of an aligned block. They differ where the compiled code does
not do exactly what the trace says (loop counters kept on the stack, a value kept in a
register instead of reloaded, the program's own start-up).

Measured (valgrind 3.19, g++ 12, D1 4 KiB 4-way, LL 32 KiB 8-way, 64-byte lines): the ijk
and ikj nests at n = 32 and 48 within 2 misses of the simulator at both levels; the tiled
nest 1-5 % more D1 misses (its loop bounds live on the stack, and those accesses, ~4 % more
than ``4 n^3``, take ways of D1's sets), LL within 1 %.

:func:`compare` builds ``cg_main.cpp`` with ``kernels.cpp`` (``-O1``, no vectorisation, so
every access of the source is one access of the machine code), runs it under cachegrind
with the given D1 and LL, reads the kernel function's counts from the output file (in a
temporary directory) and runs the simulator on the trace. Without valgrind,
:func:`available` says why and :func:`run` raises
:class:`~minitorch.native.build.ToolMissing`.

Lab: 37_python_to_machine_code
Paper: Nethercote, *Dynamic Binary Analysis and Instrumentation* (PhD thesis, Cambridge,
2004), ch. 3 (Cachegrind); the Valgrind manual, "Cachegrind: a cache and branch-prediction
profiler".
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from minitorch.hardware.cache import CacheConfig, simulate
from minitorch.kernels.traces import blocked_trace, loop_trace
from minitorch.native.build import ToolMissing, build, find_tool, kernel_source

__all__ = [
    "CG_FLAGS",
    "KERNELS",
    "Comparison",
    "Profile",
    "available",
    "compare",
    "measured_misses",
    "parse",
    "run",
    "simulated_misses",
]

KERNELS = {"ijk": "a2s_matmul_ijk", "ikj": "a2s_matmul_ikj", "tiled": "a2s_matmul_tiled"}
CG_FLAGS = ("-O1", "-fno-tree-vectorize", "-std=c++17")
I1 = CacheConfig(32768, 64, 8)  # fixed, so that a run does not depend on the host's caches


@dataclass(frozen=True)
class Profile:
    """A cachegrind output file: event names, counts per function and in total."""

    events: tuple[str, ...]
    functions: dict[str, dict[str, int]]

    def total(self, event: str) -> int:
        return sum(f.get(event, 0) for f in self.functions.values())


def parse(text: str) -> Profile:
    """Read a ``cachegrind.out`` file: ``events:``, then ``fn=`` blocks of count lines."""
    events: tuple[str, ...] = ()
    functions: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = tuple(line.split(":", 1)[1].split())
        elif line.startswith("fn="):
            current = functions.setdefault(line[3:].strip(), dict.fromkeys(events, 0))
        elif line[:1].isdigit() and current is not None:
            counts = [int(x) for x in line.split()[1:]]  # the first number is the line
            for name, count in zip(events, counts, strict=False):
                current[name] = current.get(name, 0) + count
    if not events:
        raise ValueError("not a cachegrind output file: no 'events:' line")
    return Profile(events, functions)


def available() -> str | None:
    """None where valgrind can run here, else the reason (for a clear skip)."""
    try:
        find_tool("valgrind", "lab 37 measures cache misses with valgrind --tool=cachegrind")
        find_tool("g++")
    except ToolMissing as err:
        return str(err)
    return None


def _spec(c: CacheConfig) -> str:
    return f"{c.size},{c.ways},{c.line}"


def run(program: Path, args: list[str], d1: CacheConfig, ll: CacheConfig) -> Profile:
    """Run ``program args`` under cachegrind with these caches; return its profile."""
    valgrind = find_tool("valgrind", "lab 37 measures cache misses with cachegrind")
    with tempfile.TemporaryDirectory(prefix="a2s-cg-") as tmp:
        out = Path(tmp) / "cachegrind.out"
        cmd = [
            valgrind,
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=no",
            f"--I1={_spec(I1)}",
            f"--D1={_spec(d1)}",
            f"--LL={_spec(ll)}",
            f"--cachegrind-out-file={out}",
            str(program),
            *args,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp)
        if done.returncode:
            raise RuntimeError(f"cachegrind failed ({done.returncode}): {done.stderr[-2000:]}")
        return parse(out.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Comparison:
    """Misses of one kernel: measured by cachegrind, simulated by lab 06's LRU model."""

    kernel: str
    n: int
    tile: int
    accesses: int  # cachegrind's Dr + Dw in the kernel function (C's += is a read and a write)
    trace_accesses: int  # the trace's length, 3 n^3 (one address per array per iteration)
    measured: tuple[int, int]  # (D1 misses, LL misses)
    simulated: tuple[int, int]

    @property
    def ratio(self) -> tuple[float, float]:
        """measured / simulated, for D1 and for LL (1.0 is perfect agreement)."""
        (md1, mll), (sd1, sll) = self.measured, self.simulated
        return (md1 / sd1 if sd1 else float("inf"), mll / sll if sll else float("inf"))


def _trace(kernel: str, n: int, tile: int) -> np.ndarray:
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {tuple(KERNELS)}, got {kernel!r}")
    return blocked_trace(n, tile) if kernel == "tiled" else loop_trace(n, kernel)


def simulated_misses(
    kernel: str, n: int, d1: CacheConfig, ll: CacheConfig, tile: int = 16
) -> tuple[int, int, int]:
    """(D1 misses, LL misses, accesses) of the kernel's trace in lab 06's simulator."""
    trace = _trace(kernel, n, tile)
    first, second = simulate(trace, d1, ll)
    return first.misses, second.misses, int(trace.size)


def measured_misses(
    kernel: str, n: int, d1: CacheConfig, ll: CacheConfig, tile: int = 16, cache: Path | None = None
) -> tuple[int, int, int]:
    """(D1 misses, LL misses, data accesses) of the kernel function under cachegrind."""
    _trace(kernel, n, tile)  # validates the kernel name
    main = (resources.files("minitorch.native") / "cg_main.cpp").read_text(encoding="utf-8")
    srcs = {"kernels.cpp": kernel_source(), "cg_main.cpp": main}
    prog = build(srcs, "cg_main", kind="executable", flags=CG_FLAGS, cache=cache).output
    fn = run(prog, [kernel, str(n), str(tile)], d1, ll).functions[KERNELS[kernel]]
    d1m = fn["D1mr"] + fn["D1mw"]
    llm = fn["DLmr"] + fn["DLmw"]
    return d1m, llm, fn["Dr"] + fn["Dw"]


def compare(
    kernel: str, n: int, d1: CacheConfig, ll: CacheConfig, tile: int = 16, cache: Path | None = None
) -> Comparison:
    """Cachegrind's misses of the kernel next to the simulator's, on the same pattern."""
    md1, mll, acc = measured_misses(kernel, n, d1, ll, tile, cache)
    sd1, sll, tacc = simulated_misses(kernel, n, d1, ll, tile)
    return Comparison(kernel, n, tile, acc, tacc, (md1, mll), (sd1, sll))
