"""Ground truth of lab 16's graders: plain loops written here, never ``minitorch.runtime``.

Each function computes a schedule directly from its rules; the ``waits``/``streams``/
``syncs``/``overlap``/``fifo`` switches produce the known mistakes the hints name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, plain

__all__ = ["intervals", "prefetch_rows", "program_times", "schedule", "step_time"]


def program_times(
    prog: Sequence[tuple[Any, ...]],
    *,
    waits: bool = True,
    streams: bool = True,
    syncs: bool = True,
    host_waits: bool = False,
    record_host: bool = False,
    host_back: bool = False,
    wait_sets: bool = False,
) -> list[tuple[float, float]]:
    """(start, end) of every op: FIFO per stream, events, host syncs (or a known mistake:
    ``host_waits`` makes a wait block the host, ``record_host`` times an event at the host's
    clock instead of the end of its stream's work, ``host_back`` sets the host's clock to the
    synchronised stream's end even when that is earlier, ``wait_sets`` sets the stream's
    clock to the event's time even when the stream is busy later)."""
    free: dict[str, float] = {}
    marks: dict[str, float] = {}
    host = 0.0
    out = []
    for ins in prog:
        lane = (ins[1] if streams else "all") if len(ins) > 1 else None
        if ins[0] == "op":
            begin = max(free.get(lane, 0.0), host)  # type: ignore[arg-type]
            out.append((begin, begin + ins[3]))
            free[lane] = begin + ins[3]  # type: ignore[index]
        elif ins[0] == "record":
            marks[ins[2]] = host if record_host else max(free.get(lane, 0.0), host)  # type: ignore[arg-type]
        elif ins[0] == "wait" and waits:
            free[lane] = (  # type: ignore[index]
                marks[ins[2]] if wait_sets else max(free.get(lane, 0.0), marks[ins[2]])  # type: ignore[arg-type]
            )
            if host_waits:
                host = max(host, marks[ins[2]])
        elif ins[0] == "sync" and syncs:
            ends = list(free.values()) if lane is None else [free.get(lane, 0.0)]
            host = max(ends, default=0.0) if host_back else max([host, *ends])
    return out


def schedule(
    t: Sequence[float],
    g: Sequence[int],
    cap: float,
    alpha: float,
    beta: float,
    *,
    overlap: bool = True,
    fifo: bool = True,
    strict: bool = False,
) -> list[tuple[float, float]]:
    """(start, end) of each bucket's all-reduce; ``strict`` closes at ``> cap`` (a mistake)."""
    out: list[tuple[float, float]] = []
    clock, comm, size, total = 0.0, 0.0, 0, float(sum(t))
    for i, (ti, gi) in enumerate(zip(t, g, strict=True)):
        clock += ti
        size += gi
        if (size > cap if strict else size >= cap) or i == len(t) - 1:
            ready = clock if overlap else total
            start = max(ready, comm) if fifo else ready
            comm = start + alpha + beta * size
            out.append((start, comm))
            size = 0
    return out


def step_time(t: Sequence[float], g: Sequence[int], cap: float, alpha: float, beta: float) -> float:
    """Backward and all-reduces both done."""
    return max(float(sum(t)), schedule(t, g, cap, alpha, beta)[-1][1])


def prefetch_rows(
    f: Sequence[float], p: Sequence[int], alpha: float, beta: float, depth: int = 1
) -> list[tuple[float, float, float, float]]:
    """(gather start, gather end, compute start, compute end), at most depth+1 layers held."""
    rows: list[tuple[float, float, float, float]] = []
    for i, (fi, pi) in enumerate(zip(f, p, strict=True)):
        gs = max(rows[-1][1] if rows else 0.0, rows[i - depth - 1][3] if i > depth else 0.0)
        ge = gs + alpha + beta * pi
        cs = max(rows[-1][3] if rows else 0.0, ge)
        rows.append((gs, ge, cs, cs + fi))
    return rows


def intervals(got: Any, n: int, width: int, case: str, what: str) -> np.ndarray:
    """The student's list of ``n`` tuples of ``width`` numbers as an (n, width) float array."""
    got = plain(got, what=what, case=case)
    try:
        arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{case}] {what}: expected a list of {width}-tuples of numbers."
        ) from None
    if arr.shape != (n, width):
        raise CheckFailure(
            f"[{case}] {what}: expected {n} tuples of {width} numbers, got shape {arr.shape}."
        )
    return arr
