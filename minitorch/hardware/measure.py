"""Measure this machine: peak FLOP/s (a BLAS GEMM) and memory bandwidth (a large copy).

Both report the **median** of several timed repeats after a warm-up: the median ignores the
run a neighbour's process slowed down, where the best would flatter and the mean would
smear. ``threads`` pins the BLAS to that many threads (``None``: every core this process may
use); the copy is split into equal slices run by that many Python threads (numpy releases the
GIL while it copies).

The bandwidth counted is what the program asks to move, as STREAM's "copy" counts it: every
byte read plus every byte written, ``2 x nbytes`` per copy. (A cache that allocates on write
also reads the destination first, so the wires may carry a third more.)

Lab: 05_roofline
Paper: McCalpin 1995, "Memory bandwidth and machine balance in current high performance
computers" (STREAM)
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

__all__ = [
    "available_cores",
    "blas_threads",
    "measure_bandwidth",
    "measure_peak_flops",
    "median_seconds",
]


def available_cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # pragma: no cover


@contextmanager
def blas_threads(threads: int | None) -> Iterator[None]:
    """Pin numpy's BLAS to ``threads`` threads (``None``: all cores) inside the block."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - the BLAS keeps its own setting
        yield
        return
    with threadpool_limits(limits=threads or available_cores(), user_api="blas"):
        yield


def median_seconds(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after ``warmup`` untimed ones."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_peak_flops(
    n: int = 1024, *, dtype: type = np.float32, threads: int | None = 1, repeats: int = 5
) -> float:
    """FLOP/s of an ``n x n x n`` GEMM in ``dtype`` on ``threads`` BLAS threads (median)."""
    g = np.random.default_rng(0)
    a: np.ndarray = g.random((n, n)).astype(dtype)
    b: np.ndarray = g.random((n, n)).astype(dtype)
    out: np.ndarray = np.empty((n, n), dtype=dtype)
    with blas_threads(threads):
        seconds = median_seconds(lambda: np.matmul(a, b, out=out), repeats)
    return 2.0 * n**3 / seconds


def measure_bandwidth(nbytes: int = 1 << 27, *, threads: int | None = 1, repeats: int = 5) -> float:
    """Bytes/s of copying ``nbytes`` (read + write counted) on ``threads`` threads (median).

    Pick ``nbytes`` well above the last-level cache (the default, 128 MiB, is), or the copy
    measures the cache instead of main memory.
    """
    workers = threads or available_cores()
    src = np.ones(nbytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    bounds = np.linspace(0, src.size, workers + 1).astype(int)
    slices = [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(bounds)]

    def copy_slice(s: slice) -> None:
        np.copyto(dst[s], src[s])

    if workers == 1:
        seconds = median_seconds(lambda: np.copyto(dst, src), repeats)
    else:
        with ThreadPoolExecutor(workers) as pool:
            seconds = median_seconds(lambda: list(pool.map(copy_slice, slices)), repeats)
    return 2.0 * src.nbytes / seconds
