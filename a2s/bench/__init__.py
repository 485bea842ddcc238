"""Performance experiments that labs register, run by ``a2s bench [LAB]``.

The machine the course runs on is shared and noisy (a 2-thread BLAS call slows 10-50x when
another process takes a core). So every experiment pins one thread, runs both sides in one
process, alternates them, and reports medians and *ratios*; a bare absolute time is only
context. Tests never assert on these figures.

    @register                     # in a2s/bench/lab01.py: an experiment of lab 01
    def bf16_rounding() -> list[Figure]:
        a, b = alternate(lambda: ours(x), lambda: torch_ref(x), repeats=7)
        return [Figure("bf16 round, numpy vs torch", a / b, "x", "torch .to(bfloat16) = 1.0")]

Benchmarks live in ``a2s/bench/labNN.py`` (the file name gives the lab) and are imported
by :func:`load`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from minitorch.hardware.measure import median_seconds

__all__ = ["Figure", "alternate", "load", "median_time", "one_thread", "register", "registry"]


@dataclass(slots=True)
class Figure:
    """One measured figure: ``value`` in ``unit``, read against ``anchor`` (the comparison)."""

    name: str
    value: float
    unit: str
    anchor: str
    lab: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


Bench = Callable[[], list[Figure]]
_REGISTRY: dict[str, list[Bench]] = {}  # lab number -> experiments, filled at import time
_MODULE = re.compile(r"a2s\.bench\.lab(\d\d)")


def register(fn: Bench) -> Bench:
    """Register ``fn`` as a performance experiment of the lab its module is named after.

    ``a2s/bench/lab01.py`` registers lab "01": the lab number is written once, in the
    file name, and ``tests/bench`` checks that it is a lab of the syllabus.
    """
    if isinstance(fn, str):
        raise TypeError("use a bare @register: the lab number comes from the module name")
    match = _MODULE.fullmatch(fn.__module__)
    if match is None:
        raise ValueError(f"{fn.__qualname__} is in {fn.__module__}, not a2s.bench.labNN")
    _REGISTRY.setdefault(match.group(1), []).append(fn)
    return fn


def load() -> dict[str, list[Bench]]:
    """Import every ``a2s.bench.labNN`` module and return the registry."""
    import a2s.bench as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("lab"):
            importlib.import_module(f"a2s.bench.{info.name}")
    return registry()


def registry() -> dict[str, list[Bench]]:
    return {lab: list(fns) for lab, fns in sorted(_REGISTRY.items())}


@contextmanager
def one_thread() -> Iterator[None]:
    """Pin numpy's BLAS and torch's intra-op pool to one thread for the block."""
    from threadpoolctl import threadpool_limits

    torch = _maybe_torch()
    before = torch.get_num_threads() if torch else None
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with threadpool_limits(limits=1):
        if torch:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch and before:
                torch.set_num_threads(before)


def _maybe_torch():
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    return torch


median_time = median_seconds  # one implementation: minitorch.hardware.measure


def alternate(
    a: Callable[[], object], b: Callable[[], object], repeats: int = 7, warmup: int = 1
) -> tuple[float, float]:
    """Time ``a`` and ``b`` alternately (a, b, a, b, ...); return their median seconds.

    Alternating spreads a noisy neighbour's load over both sides, so the ratio is stable even
    when the absolute times are not.
    """
    for _ in range(warmup):
        a()
        b()
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(repeats):
        for fn, acc in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)
