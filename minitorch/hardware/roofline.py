"""The roofline model: attainable FLOP/s = min(peak, intensity x bandwidth).

A kernel of arithmetic intensity ``I`` (FLOPs per byte of memory traffic) on a chip with peak
``P`` FLOP/s and memory bandwidth ``B`` bytes/s can at best run at

$$\\text{attainable}(I) = \\min(P,\\; I B).$$

Left of the **ridge point** ``I* = P / B`` the slanted roof binds: the op is memory-bound and
only more bandwidth (or fewer bytes: fusion, tiling) makes it faster. Right of it the flat roof
binds: compute-bound. The same model predicts a lower bound on time,
``max(FLOPs / P, bytes / B)``: compute and memory traffic overlap perfectly, so the slower
of the two sets the time.

Lab: 05_roofline
Paper: Williams, Waterman, Patterson 2009, "Roofline: an insightful visual performance model
for multicore architectures", CACM 52(4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Roofline", "attainable", "bound", "predicted_seconds", "roofline_bound"]


def attainable(intensity: float, peak: float, bandwidth: float) -> float:
    """FLOP/s a kernel of ``intensity`` FLOP/byte can reach: ``min(peak, intensity * bw)``."""
    return min(peak, intensity * bandwidth)


def bound(intensity: float, peak: float, bandwidth: float) -> str:
    """``"memory"`` left of the ridge point ``peak / bandwidth``, else ``"compute"``."""
    return "memory" if intensity * bandwidth < peak else "compute"


def roofline_bound(intensity: float, peak: float, bandwidth: float) -> tuple[float, str]:
    """``(attainable FLOP/s, "memory" or "compute")``: where ``intensity`` sits on the roof."""
    return attainable(intensity, peak, bandwidth), bound(intensity, peak, bandwidth)


def predicted_seconds(flops: float, nbytes: float, peak: float, bandwidth: float) -> float:
    """Roofline lower bound on time: ``max(flops / peak, bytes / bandwidth)``."""
    return max(flops / peak, nbytes / bandwidth)


@dataclass(frozen=True, slots=True)
class Roofline:
    """One machine's roofline: ``peak`` FLOP/s, ``bandwidth`` bytes/s, and a name to plot."""

    name: str
    peak: float
    bandwidth: float

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two roofs meet."""
        return self.peak / self.bandwidth

    def attainable(self, intensity: float) -> float:
        return attainable(intensity, self.peak, self.bandwidth)

    def bound(self, intensity: float) -> str:
        return bound(intensity, self.peak, self.bandwidth)

    def seconds(self, flops: float, nbytes: float) -> float:
        return predicted_seconds(flops, nbytes, self.peak, self.bandwidth)

    def curve(self, lo: float = 1 / 16, hi: float = 4096, points: int = 200) -> np.ndarray:
        """``(points, 2)`` array of (intensity, attainable FLOP/s), log-spaced: the roof to plot."""
        x = np.geomspace(lo, hi, points)
        return np.stack([x, np.minimum(self.peak, x * self.bandwidth)], axis=1)
