"""Grader of exercise 30.1: utilisation, bandwidth and SM activity from raw counter readings.

``counter_rates(raw, interval_ns, width_bits, n_sm, clock_ghz)`` gets the raw readings of
three ``width_bits`` counters (busy ns, DRAM bytes, SM-cycles) at the edges of each interval
and returns ``(util, bandwidth_gbps, sm_active)``, one value per interval. The readings are
made here from piecewise-constant activity integrated by the grader's own loop; the answer
must equal a plain decoding loop (``(r_1 − r_0) mod 2^w``), wrap-arounds included.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab30._truth import CLOCK_GHZ, N_SM, decoded_rates, raw_readings
from a2s.checks.table import Table

__all__ = ["RATES", "check_counter_rates"]

_TEL = "minitorch.driver.telemetry"
_T = "a2s.checks.lab30._truth"  # the truth, blocked even when handed in as the answer


def _named(label: str, segments: list, dt: float, width: int) -> tuple:
    return (label, (raw_readings(segments, dt, width), dt, width, N_SM, CLOCK_GHZ))


_NAMED = [
    _named("one kernel on every SM, 32-bit counters", [(1000, 1, 2000.0, 132)], 250, 32),
    _named("a kernel on 4 of 132 SMs: util 1, SM activity 0.03", [(1200, 1, 300.0, 4)], 300, 32),
    _named(
        "idle, then a memory-bound kernel: the 22-bit byte counter wraps",
        [(400, 0, 0.0, 0), (1600, 1, 3000.0, 66)],
        500,
        22,
    ),
    _named(
        "16-bit counters wrap in most intervals",
        [(300, 1, 100.0, 132), (300, 0, 50.0, 0), (600, 1, 180.0, 20)],
        120,
        16,
    ),
]


def _draw(gen: np.random.Generator, i: int) -> tuple:
    segs = [
        (
            float(gen.integers(50, 800)),
            int(gen.integers(0, 2)),
            float(gen.uniform(0, 3000)),
            int(gen.integers(0, 133)),
        )
        for _ in range(int(gen.integers(1, 5)))
    ]
    width = int(gen.choice([20, 24, 32]))
    return _named(
        f"random activity {i}, {width}-bit counters", segs, float(gen.integers(80, 300)), width
    )


def _draw_wrapping(gen: np.random.Generator, i: int) -> tuple:
    """A fresh case in which some counter wraps (a reading goes down): the edge of a named
    case that a lookup table of the public cases would otherwise skip."""
    while True:
        case = _draw(gen, i)
        raw = case[1][0]
        if any(
            c < p for prev, cur in itertools.pairwise(raw) for p, c in zip(prev, cur, strict=True)
        ):
            return case


def _no_wrap(raw: list, dt: float, w: int, n_sm: int, f: float) -> list:
    d = np.diff(np.asarray(raw, dtype=np.float64), axis=0)
    return [list(d[:, 0] / dt), list(d[:, 1] / dt), list(d[:, 2] / (n_sm * f * dt))]


def _scaled(part: int, factor: float) -> Callable[..., list]:
    def answer(*args: Any) -> list:
        out = decoded_rates(*args)
        out[part] = [v * factor for v in out[part]]
        return out

    return answer


def _no_clock(raw: list, dt: float, w: int, n_sm: int, f: float) -> list:
    return _scaled(2, f)(raw, dt, w, n_sm, f)


_MISTAKES = (
    Mistake(
        " A raw reading is the count mod 2^w: when it went down the counter wrapped; decode "
        "each increment as (r1 - r0) mod 2**width_bits.",
        answer=_no_wrap,
    ),
    Mistake(
        " Utilisation is a fraction of the interval (0..1), not a percent.",
        answer=_scaled(0, 100.0),
    ),
    Mistake(
        " Bytes per ns is already GB/s (1e9 bytes per 1e9 ns): do not divide by 1e9.",
        answer=_scaled(1, 1e-9),
    ),
    Mistake(
        " SM activity divides SM-cycles by the cycles available, n_sm * clock_ghz * dt "
        "(clock_ghz is cycles per ns): you left out the clock.",
        answer=_no_clock,
    ),
)


def _read(got: Any, label: str) -> np.ndarray:
    try:
        arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] counter_rates must return (util, bandwidth_gbps, sm_active), three "
            f"sequences of numbers; got {type(got).__name__}."
        ) from None
    if arr.ndim != 2 or arr.shape[0] != 3:
        raise CheckFailure(
            f"[{label}] counter_rates must return three sequences, one value per interval "
            f"each; got shape {arr.shape}."
        )
    return arr


def _same(got: np.ndarray, want: Any) -> bool:
    want = np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-9, atol=1e-12))


RATES = Table(
    "30.1",
    truth=decoded_rates,
    named=_NAMED,
    draw=_draw,
    seeded=4,
    fresh=2,
    draw_fresh=_draw_wrapping,
    mistakes=_MISTAKES,
    hint=" util = Δbusy/Δt, bandwidth = Δbytes/Δt (GB/s), SM activity = Δsm_cycles / "
    "(n_sm · clock_ghz · Δt), each Δ = (r1 - r0) mod 2**width_bits.",
    read=_read,
    same=_same,
    what="counter_rates",
    message=lambda case, got, want, hint: (
        f"[{case.label}] counter_rates returned {np.round(got, 4).tolist()}, the counters "
        f"give {np.round(np.asarray(want), 4).tolist()}.{hint}"
    ),
)


@grader("30.1", blocks=(_TEL, f"{_T}:decoded_rates", f"{_T}:raw_readings"))
def check_counter_rates(counter_rates: Callable[..., object]) -> str:
    """Exercise 30.1: decode wrapped counters into per-interval rates."""
    n = RATES.grade(counter_rates)
    return f"{n} traces decoded exactly, wrap-arounds of 16- to 32-bit counters included"
