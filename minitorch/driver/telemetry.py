"""Hardware counters: finite-width, monotonically increasing, sampled over intervals.

A GPU does not report "utilisation"; it keeps **counters** that only go up (ns a kernel was
resident, DRAM bytes moved, SM-cycles with a warp resident) and a tool (NVML, DCGM, a
profiler) reads them at the start and end of a sample interval and divides:

* utilisation ``u = Δbusy_ns / Δt`` (NVML's ``utilization.gpu``: the fraction of the period
  during which one or more kernels was executing, not how busy the SMs were);
* memory bandwidth ``B = Δbytes / Δt`` in GB/s (bytes per ns; DCGM's ``DRAM_ACTIVE`` is this
  divided by the peak);
* SM activity ``s = Δsm_cycles / (n_sm · f · Δt)`` (DCGM's ``SM_ACTIVE``: SM-cycles with at
  least one warp resident, averaged over all SMs): a kernel on 4 of 132 SMs is
  ``u = 1`` but ``s = 0.03``, the classic trap of reading ``u`` as efficiency.

A counter of ``w`` bits holds ``c mod 2^w`` and **wraps around**. A reader never sees the
true count, only two raw readings, and decodes the increment as
``Δ = (r_1 − r_0) mod 2^w``, which is exact as long as the true increment is below ``2^w``:
sample at least once per wrap period ``2^w / max rate`` (a 32-bit byte counter at 3 TB/s
wraps every 1.4 ms, which is why DCGM's profiling counters are 64-bit).

A :class:`Segment` is a stretch of constant activity; :func:`truth` integrates the segments
exactly over each interval (the ground truth), :func:`sample` reads integer counters at the
interval edges and decodes them. A raw counter is the floor of the true cumulative count, so
decoded and true increments differ by less than one count.

    segs = [Segment(1000, busy=True, bytes_per_ns=2000.0, active_sms=132)]
    s = sample(segs, interval_ns=250, width_bits=32)   # 4 intervals, each u == 1.0

Lab: 30_telemetry_power_and_faults
Reference: NVIDIA NVML API Reference (nvmlDeviceGetUtilizationRates, nvmlUtilization_t);
NVIDIA DCGM User Guide, "Profiling Metrics" (DCGM_FI_PROF_SM_ACTIVE, DRAM_ACTIVE).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "HardwareCounter",
    "Sample",
    "Segment",
    "cumulative",
    "decode_delta",
    "sample",
    "truth",
]


def decode_delta(prev: int, cur: int, width_bits: int) -> int:
    """The increment between two raw readings of a ``width_bits`` counter:
    ``(cur − prev) mod 2^w``; exact when the true increment is below ``2^w``."""
    return (int(cur) - int(prev)) % (1 << width_bits)


class HardwareCounter:
    """A monotonically increasing counter of ``width_bits`` bits: it stores ``c mod 2^w``."""

    def __init__(self, width_bits: int = 32) -> None:
        if width_bits < 1:
            raise ValueError("a counter has at least one bit")
        self.width_bits = width_bits
        self.raw = 0
        self.wraps = 0  # how often it passed 2^w (the hardware does not keep this)

    def add(self, n: int) -> None:
        """Count ``n >= 0`` events (a counter never goes down)."""
        if n < 0:
            raise ValueError("hardware counters only increase")
        total = self.raw + int(n)
        self.wraps += total >> self.width_bits
        self.raw = total % (1 << self.width_bits)

    def read(self) -> int:
        return self.raw


@dataclass(frozen=True)
class Segment:
    """``duration_ns`` of constant activity: a kernel resident or not, DRAM traffic in GB/s
    (bytes per ns), and how many SMs hold at least one warp."""

    duration_ns: float
    busy: bool = False
    bytes_per_ns: float = 0.0
    active_sms: int = 0


@dataclass(frozen=True)
class Sample:
    """Per-interval metrics: utilisation, bandwidth (GB/s), SM activity; arrays of length
    ``n_intervals``."""

    util: np.ndarray
    bandwidth_gbps: np.ndarray
    sm_active: np.ndarray


def _rates(segments: Sequence[Segment], clock_ghz: float) -> np.ndarray:
    """Per-segment rates of the three counters: busy ns/ns, bytes/ns, SM-cycles/ns."""
    return np.array(
        [[float(s.busy), s.bytes_per_ns, s.active_sms * clock_ghz] for s in segments],
        dtype=np.float64,
    ).reshape(-1, 3)


def cumulative(segments: Sequence[Segment], t_ns: np.ndarray, clock_ghz: float) -> np.ndarray:
    """True cumulative counts at times ``t_ns``, shape ``(len(t_ns), 3)``: the integral of
    each rate, piecewise linear in ``t`` (constant after the last segment)."""
    rates = _rates(segments, clock_ghz)
    dur = np.array([s.duration_ns for s in segments], dtype=np.float64)
    edges = np.concatenate([[0.0], np.cumsum(dur)])
    t = np.asarray(t_ns, dtype=np.float64)
    # time spent inside each segment before t: clip(t - start, 0, duration)
    inside = np.clip(t[:, None] - edges[None, :-1], 0.0, dur[None, :])
    return inside @ rates


def _edges(segments: Sequence[Segment], interval_ns: float) -> np.ndarray:
    total = sum(s.duration_ns for s in segments)
    n = int(np.floor(total / interval_ns + 1e-9))
    return np.arange(n + 1, dtype=np.float64) * interval_ns


def truth(
    segments: Sequence[Segment], interval_ns: float, n_sm: int = 132, clock_ghz: float = 1.98
) -> Sample:
    """The ground truth per whole interval ``[k·Δt, (k+1)·Δt)``: exact integrals / ``Δt``."""
    d = np.diff(cumulative(segments, _edges(segments, interval_ns), clock_ghz), axis=0)
    return Sample(
        d[:, 0] / interval_ns, d[:, 1] / interval_ns, d[:, 2] / (n_sm * clock_ghz * interval_ns)
    )


def sample(
    segments: Sequence[Segment],
    interval_ns: float,
    width_bits: int = 32,
    n_sm: int = 132,
    clock_ghz: float = 1.98,
) -> Sample:
    """What a sampler sees: three ``width_bits`` counters (busy ns, DRAM bytes, SM-cycles)
    hold ``floor(true count) mod 2^w``; each interval's increment is decoded with
    :func:`decode_delta` and divided by ``Δt`` (and by ``n_sm · f`` for SM activity).
    Defaults: an H100 SXM (132 SMs, 1.98 GHz max boost clock)."""
    counts = np.floor(cumulative(segments, _edges(segments, interval_ns), clock_ghz) + 1e-9)
    raw = counts.astype(np.int64) % (1 << width_bits)
    d = np.array(
        [
            [decode_delta(a, b, width_bits) for a, b in zip(raw[k], raw[k + 1], strict=True)]
            for k in range(len(raw) - 1)
        ],
        dtype=np.float64,
    ).reshape(-1, 3)
    return Sample(
        d[:, 0] / interval_ns, d[:, 1] / interval_ns, d[:, 2] / (n_sm * clock_ghz * interval_ns)
    )
