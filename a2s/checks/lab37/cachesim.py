"""Grader of exercise 37.6: the address trace of the compiled tiled kernel, checked exactly and
then measured against valgrind's cachegrind through lab 06's simulator.

The truth (``_truth.tiled_trace``) is a plain loop of ``a2s_matmul_tiled``'s C: tiles
``(i0, k0, j0)`` outside, ``i, p, j`` inside, each bounded by ``min(start + tile, n)``, and
per iteration the byte addresses of ``A[i, p]``, ``B[p, j]``, ``C[i, j]`` (A at 0, B at
``8 n^2``, C at ``16 n^2``). Named edges (a tile that does not divide n, a tile larger than
n, tile 1, n = 1) and seeded and fresh shapes are compared element by element. Then, at
n = 32 (tile 8) and n = 40 (tile 12), the grader feeds the learner's trace to lab 06's LRU
simulator (:mod:`minitorch.hardware.cache`, D1 4 KiB 4-way, LL 32 KiB 8-way, 64-byte lines)
and runs its own build of the kernel (``-O1``, no vectorisation, cold caches) under
cachegrind with the same caches; the two must agree within the tolerance measured in
:mod:`minitorch.native.cachegrind`: D1 at most 12 % (+ 8 lines) above the model, never
below it by more than 8 lines (the compiled loop keeps its bounds on the stack), LL within
1 % + 8 lines. Without valgrind the check says so and cannot grade.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import _ENV, NATIVE, _run, tool
from a2s.checks.table import Table
from minitorch.hardware.cache import CacheConfig, simulate


# --------------------------------------------------------------------------- 37.6
def tiled_trace(
    n: int, tile: int, b_transposed: bool = False, inclusive: bool = False, no_c: bool = False
) -> list[int]:
    """Byte addresses of ``a2s_matmul_tiled(a, b, c, n, n, n, tile)``, a plain loop of its C
    (A at 0, B at 8 n^2, C at 16 n^2; per iteration A, B, C; the switches: mistakes)."""
    b0, c0, out = 8 * n * n, 16 * n * n, []
    stop = 1 if inclusive else 0
    for i0 in range(0, n, tile):
        for k0 in range(0, n, tile):
            for j0 in range(0, n, tile):
                for i in range(i0, min(i0 + tile + stop, n)):
                    for p in range(k0, min(k0 + tile + stop, n)):
                        for j in range(j0, min(j0 + tile + stop, n)):
                            out.append(8 * (i * n + p))
                            out.append(b0 + 8 * ((j * n + p) if b_transposed else (p * n + j)))
                            if not no_c:
                                out.append(c0 + 8 * (i * n + j))
    return out


# the kernel and its driver, the grader's own copies (kernels.cpp's tiled nest, cg_main.cpp's
# cold start), built once per process in a private directory
_CG_KERNEL = r"""
#include <cstdio>
#include <cstdlib>
static long lo(long a, long b) { return a < b ? a : b; }
extern "C" __attribute__((noinline)) void lab37_tiled(const double* a, const double* b,
                                                     double* c, long n, long tile) {
  for (long i0 = 0; i0 < n; i0 += tile)
    for (long k0 = 0; k0 < n; k0 += tile)
      for (long j0 = 0; j0 < n; j0 += tile)
        for (long i = i0; i < lo(i0 + tile, n); ++i)
          for (long p = k0; p < lo(k0 + tile, n); ++p)
            for (long j = j0; j < lo(j0 + tile, n); ++j)
              c[i * n + j] += a[i * n + p] * b[p * n + j];
}
extern "C" __attribute__((noinline)) double lab37_flush(const double* junk, long count) {
  double s = 0.0;
  for (long i = 0; i < count; i += 8) s += junk[i];
  return s;
}
int main(int argc, char** argv) {
  const long n = std::atol(argv[1]), tile = std::atol(argv[2]);
  const size_t align = size_t(1) << 21, bytes = 3 * size_t(n) * size_t(n) * sizeof(double);
  const size_t padded = (bytes + align - 1) / align * align;
  double* base = static_cast<double*>(std::aligned_alloc(align, padded));
  double* junk = static_cast<double*>(std::calloc(1L << 20, sizeof(double)));
  for (long i = 0; i < 3 * n * n; ++i) base[i] = double(i % 7);
  double sink = lab37_flush(junk, 1L << 20);
  lab37_tiled(base, base + n * n, base + 2 * n * n, n, tile);
  for (long i = 0; i < n * n; ++i) sink += base[2 * n * n + i];
  std::printf("%f\n", sink);
  return 0;
}
"""
CG_FLAGS = ("-O1", "-fno-tree-vectorize", "-std=c++17")


def valgrind() -> str:
    """valgrind's path, or a clear failure saying exercise 37.6 needs it."""
    path = shutil.which("valgrind", path=_ENV["PATH"])
    if path is None:
        raise CheckFailure(
            "exercise 37.6 needs valgrind (apt-get install valgrind): this check runs the "
            "kernel under cachegrind and cannot grade without it."
        )
    return path


@functools.lru_cache(maxsize=1)
def _cg_program() -> Path:
    gxx = tool("g++")
    tmp = Path(tempfile.mkdtemp(prefix="a2s37-cg-"))
    atexit.register(shutil.rmtree, tmp, True)
    src, exe = tmp / "tiled.cpp", tmp / "tiled"
    src.write_text(_CG_KERNEL, encoding="utf-8")
    done = _run([gxx, *CG_FLAGS, str(src), "-o", str(exe)], cwd=tmp)
    if done.returncode:
        raise CheckFailure(f"the grader's own build failed: {done.stderr.strip()[-800:]}")
    return exe


def _geometry(size: int, ways: int, line: int) -> str:
    return f"{size},{ways},{line}"


@functools.lru_cache(maxsize=64)
def cachegrind_misses(
    n: int, tile: int, d1: tuple[int, int, int], ll: tuple[int, int, int]
) -> tuple[int, int]:
    """(D1 misses, LL misses) of ``lab37_tiled`` alone, reads and writes, under cachegrind
    with D1 and LL given as (size, ways, line); I1 fixed at 32 KiB 8-way."""
    vg, exe = valgrind(), _cg_program()
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            vg,
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=no",
            "--I1=32768,8,64",
            f"--D1={_geometry(*d1)}",
            f"--LL={_geometry(*ll)}",
            f"--cachegrind-out-file={out}",
            str(exe),
            str(n),
            str(tile),
        ]
        done = _run(cmd, cwd=Path(tmp))
        if done.returncode:
            raise CheckFailure(f"the grader's cachegrind run failed: {done.stderr.strip()[-800:]}")
        text = out.read_text(encoding="utf-8")
    events: list[str] = []
    counts: dict[str, int] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split(":", 1)[1].split()
        elif line.startswith("fn="):
            inside = line[3:].strip() == "lab37_tiled"
        elif inside and line[:1].isdigit():
            for name, value in zip(events, line.split()[1:], strict=False):
                counts[name] = counts.get(name, 0) + int(value)
    if not counts:
        raise CheckFailure("the grader's cachegrind run has no counts for lab37_tiled")
    return counts["D1mr"] + counts["D1mw"], counts["DLmr"] + counts["DLmw"]


__all__ = ["D1", "LL", "MEASURED", "check_tiled_trace"]

D1, LL = (4096, 4, 64), (32768, 8, 64)  # (size, ways, line)
MEASURED = ((32, 8), (40, 12))

_NAMED = [
    ("n = 1", (1, 1)),
    ("n = 4, tile 2", (4, 2)),
    ("n = 5, tile 2 (the last tile is short)", (5, 2)),
    ("n = 3, tile 8 (one tile)", (3, 8)),
    ("n = 3, tile 1", (3, 1)),
    ("n = 7, tile 3", (7, 3)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple[int, int]]:
    n = int(g.integers(2, 13))
    tile = int(g.integers(1, n + 3))
    return (f"n = {n}, tile {tile}", (n, tile))


def _read(got: Any, label: str) -> np.ndarray:
    arr = np.asarray(got)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise CheckFailure(
            f"[{label}] tiled_trace must return a 1-D sequence of int byte addresses, "
            f"got {type(got).__name__} of shape {arr.shape} and dtype {arr.dtype}"
        )
    return arr.astype(np.int64)


def _same(got: Any, want: Any) -> bool:
    return bool(np.array_equal(np.asarray(got, np.int64), np.asarray(want, np.int64)))


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    g, w = np.asarray(got, np.int64), np.asarray(want, np.int64)
    if g.size != w.size:
        head = f"has {g.size} addresses, the kernel makes {w.size}"
    else:
        at = int(np.flatnonzero(g != w)[0])
        head = f"address {at} (iteration {at // 3}) is {g[at]}, the kernel touches {w[at]}"
    return f"[{case.label}] tiled_trace {head}.{' ' + hint.lstrip() if hint else ''}"


_MISTAKES = (
    Mistake(
        " B is row-major too: B[p, j] is at 8 n^2 + 8 (p n + j), not 8 (j n + p).",
        answer=lambda n, tile: tiled_trace(n, tile, b_transposed=True),
    ),
    Mistake(
        " A tile ends before start + tile: the bound is min(start + tile, n), exclusive (an "
        "inclusive bound visits the first row of the next tile twice).",
        answer=lambda n, tile: tiled_trace(n, tile, inclusive=True),
    ),
    Mistake(
        " C[i, j] += ... is an access too: the cache allocates a line on a write miss "
        "(write-allocate), so C belongs in the trace, once per iteration.",
        answer=lambda n, tile: tiled_trace(n, tile, no_c=True),
    ),
    Mistake(
        " One address per array per iteration: C's read and write of += touch the same line "
        "back to back (the write always hits), so lab 06's trace lists C once.",
        when=lambda got, n, tile: len(got) == 4 * len(tiled_trace(n, tile)) // 3,
    ),
)

TRACE = Table(
    "37.6",
    truth=tiled_trace,
    named=_NAMED,
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    read=_read,
    same=_same,
    hint="for i0, k0, j0 in tiles; for i, p, j in min(start + tile, n): A[i,p], B[p,j], C[i,j].",
    what="tiled_trace",
    message=_message,
)


def _config(g: tuple[int, int, int]) -> CacheConfig:
    size, ways, line = g
    return CacheConfig(size, line, ways)


# lab 06's traces, and lab 15's loop nests (a tiled matmul nest's ``trace`` is this trace)
_BLOCKS = (
    *NATIVE,
    "minitorch.kernels.traces",
    "minitorch.compiler.loops:trace",
    "minitorch.compiler.loops:iteration_order",
)


@grader("37.6", blocks=_BLOCKS, hand="measure")
def check_tiled_trace(student: Callable[..., Any]) -> str:
    """Exercise 37.6: tiled_trace(n, tile) -> the byte addresses a2s_matmul_tiled touches."""
    valgrind()  # before any case: without valgrind this exercise cannot be graded
    n_cases = TRACE.grade(student)
    rows = []
    for n, tile in MEASURED:
        got = _read(plain(student(n, tile), what="tiled_trace"), f"n = {n}, tile {tile}")
        if not _same(got, tiled_trace(n, tile)):
            raise CheckFailure(f"[n = {n}, tile {tile}] tiled_trace differs from the kernel's.")
        first, second = simulate(got, _config(D1), _config(LL))
        sd1, sll = first.misses, second.misses
        md1, mll = cachegrind_misses(n, tile, D1, LL)
        if not (sd1 - 8 <= md1 <= 1.12 * sd1 + 8 and abs(mll - sll) <= 0.01 * sll + 8):
            raise CheckFailure(
                f"[n = {n}, tile {tile}] cachegrind measured D1 {md1}, LL {mll} misses; lab 06's "
                f"model on your trace {sd1}, {sll}: outside the stated tolerance (this machine's "
                "compiler or valgrind differs from the one the tolerance was measured with)."
            )
        rows.append(
            f"n={n} tile {tile}: D1 {sd1} vs {md1} ({md1 / sd1 - 1:+.1%}), LL {sll} vs {mll}"
        )
    return f"{n_cases} traces exact; model vs cachegrind: " + "; ".join(rows)
