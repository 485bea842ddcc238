"""Faults a GPU reports: ECC errors, hung and slow kernels, a lost link; XID-like codes.

**ECC (SECDED).** HBM stores each 64-bit word with 8 check bits, an extended Hamming code:
data bits sit at the positions ``1..71`` that are not powers of two, check bit ``p_i`` (at
position ``2^i``) makes the XOR over all positions with bit ``i`` set zero, and bit 0 is the
parity of the whole word. On a read the **syndrome** ``s`` (XOR of the positions of all set
bits) and the overall parity ``q`` say:

* ``s = 0, q = 0``: no error;
* ``q = 1``: one bit flipped, at position ``s`` (``s = 0``: the parity bit itself); it is
  **corrected** and counted (a single-bit error, SBE: NVML's corrected ECC counter);
* ``s ≠ 0, q = 0``: two bits flipped: detected, **uncorrectable** (a double-bit error, DBE),
  reported as XID 48; the data is lost and the device is marked for isolation.

**Kernels as seen by the host.** A kernel writes a **heartbeat** (a progress counter in host
memory) every ``heartbeat_ns`` of its work and a completion at the end. :class:`KernelTrace`
is what the host can observe: heartbeat times and the completion time (``None``: never):

* :func:`ok_kernel`: beats every ``h``, completes at ``d``;
* :func:`slow_kernel`: everything ``slowdown`` times later (a throttled or contended kernel):
  beats every ``h · slowdown``, completes at ``d · slowdown``, *progressing*;
* :func:`hung_kernel`: beats until ``hang_at_ns``, then nothing: no completion, no progress.

**Codes.** :class:`Xid` mirrors real NVIDIA XID numbers (names from NVIDIA's Xid catalog):
8 ``ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT`` ("GPU stopped processing"; a hung channel),
48 double-bit ECC error, 79 "GPU has fallen off the bus" (these three checked against
NVIDIA's Xid documentation). ``NVLINK_ERROR`` stands for a lost link; its number, 74, is
taken from field reports and was not found in a primary NVIDIA source: illustrative only.
Single-bit errors raise no XID here: they are only counted (the driver reports a *high
rate* of them separately).

    mem = EccMemory(4)
    mem.write(0, 0xDEAD)
    mem.flip(0, 17)
    mem.read(0)          # (0xDEAD, "corrected"); mem.sbe == 1

Lab: 30_telemetry_power_and_faults
Reference: NVIDIA "Xid Errors" documentation and Xid catalog (docs.nvidia.com/deploy/xid-errors);
NVIDIA "Dynamic Page Retirement" (XID 48, 63, 64); NVML API Reference (nvmlDeviceGetTotalEccErrors);
Hamming, "Error detecting and error correcting codes", Bell Syst. Tech. J. 29 (1950).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

__all__ = [
    "DATA_POSITIONS",
    "EccMemory",
    "KernelTrace",
    "Xid",
    "decode",
    "encode",
    "hung_kernel",
    "ok_kernel",
    "slow_kernel",
]


class Xid(IntEnum):
    """The real XID numbers this model mirrors."""

    GPU_STOPPED_PROCESSING = 8  # ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT: a hung kernel
    DBE_ECC = 48  # an uncorrectable double-bit ECC error
    NVLINK_ERROR = 74  # a link down (number from field reports, not verified)
    FALLEN_OFF_BUS = 79  # the GPU no longer answers on PCIe


CODE_BITS = 72
DATA_POSITIONS = [p for p in range(1, CODE_BITS) if p & (p - 1)]  # 64 non-powers of two
CHECK_POSITIONS = [1 << i for i in range(7)]  # 1, 2, 4, ..., 64
assert len(DATA_POSITIONS) == 64


def _syndrome(bits: np.ndarray) -> int:
    s = 0
    for p in np.flatnonzero(bits[1:]) + 1:
        s ^= int(p)
    return s


def encode(value: int) -> np.ndarray:
    """The 72-bit SECDED codeword (uint8 array of bits) of a 64-bit ``value``."""
    bits = np.zeros(CODE_BITS, dtype=np.uint8)
    for i, p in enumerate(DATA_POSITIONS):
        bits[p] = (int(value) >> i) & 1
    s = _syndrome(bits)
    for p in CHECK_POSITIONS:  # set each check bit so that the syndrome becomes zero
        bits[p] = 1 if s & p else 0
    bits[0] = int(bits[1:].sum()) & 1  # overall parity: the whole word has even weight
    return bits


def decode(bits: np.ndarray) -> tuple[int, str]:
    """``(value, status)``, status ``"ok"``, ``"corrected"`` or ``"uncorrectable"``."""
    bits = bits.copy()
    s, q = _syndrome(bits), int(bits.sum()) & 1
    if q == 1 and s >= CODE_BITS:  # an odd number (>= 3) of flips: detected, not fixable
        status = "uncorrectable"
    elif q == 1:
        bits[s] ^= 1  # s == 0: the overall parity bit itself flipped
        status = "corrected"
    elif s != 0:
        status = "uncorrectable"
    else:
        status = "ok"
    value = sum(int(bits[p]) << i for i, p in enumerate(DATA_POSITIONS))
    return value, status


class EccMemory:
    """``n_words`` ECC-protected 64-bit words; SBEs corrected and counted, DBEs reported."""

    def __init__(self, n_words: int) -> None:
        self.words = np.tile(encode(0), (n_words, 1))
        self.sbe = 0  # corrected (NVML_MEMORY_ERROR_TYPE_CORRECTED)
        self.dbe = 0  # uncorrected (NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
        self.xids: list[Xid] = []
        self.needs_isolation = False

    def write(self, i: int, value: int) -> None:
        self.words[i] = encode(value)

    def flip(self, i: int, bit: int) -> None:
        """Fault injection: flip bit ``bit`` (0..71) of word ``i`` (a particle strike)."""
        self.words[i, bit] ^= 1

    def read(self, i: int) -> tuple[int, str]:
        """Decode word ``i``; a corrected word is scrubbed (written back corrected)."""
        value, status = decode(self.words[i])
        if status == "corrected":
            self.sbe += 1
            self.words[i] = encode(value)
        elif status == "uncorrectable":
            self.dbe += 1
            self.xids.append(Xid.DBE_ECC)
            self.needs_isolation = True
        return value, status


@dataclass(frozen=True)
class KernelTrace:
    """What the host observes of one kernel started at 0: heartbeat times, completion."""

    heartbeats_ns: tuple[float, ...] = field(default_factory=tuple)
    completion_ns: float | None = None


def ok_kernel(duration_ns: float, heartbeat_ns: float) -> KernelTrace:
    """Beats at ``h, 2h, ... < d``, completes at ``d``."""
    beats = tuple(float(t) for t in np.arange(heartbeat_ns, duration_ns, heartbeat_ns))
    return KernelTrace(beats, float(duration_ns))


def slow_kernel(duration_ns: float, heartbeat_ns: float, slowdown: float) -> KernelTrace:
    """The same kernel ``slowdown`` (>= 1) times slower: slow, but still progressing."""
    base = ok_kernel(duration_ns, heartbeat_ns)
    return KernelTrace(tuple(t * slowdown for t in base.heartbeats_ns), duration_ns * slowdown)


def hung_kernel(duration_ns: float, heartbeat_ns: float, hang_at_ns: float) -> KernelTrace:
    """Beats until ``hang_at_ns`` (< duration), then stops: no more beats, no completion."""
    base = ok_kernel(duration_ns, heartbeat_ns)
    return KernelTrace(tuple(t for t in base.heartbeats_ns if t <= hang_at_ns), None)
