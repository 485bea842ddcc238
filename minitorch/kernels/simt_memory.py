"""What one warp access costs: global-memory transactions and shared-memory bank conflicts.

A warp issues one memory instruction for its 32 lanes together. What that costs depends on
the *addresses* the active lanes present:

* **global memory** moves whole aligned segments (32-byte sectors on every GPU since
  Maxwell; 128-byte cache lines on the L1 path). The cost of one warp access is the number
  of distinct segments its addresses touch: 32 consecutive float32 = 128 bytes = 4 sectors
  (*coalesced*); the same 32 floats at a stride of 8 or more = 32 sectors.
* **shared memory** is split into 32 banks of 4-byte words (word ``w`` lives in bank
  ``w % 32``); each bank serves one word per cycle. Lanes reading the *same* word share it
  (broadcast); distinct words in one bank serialize. The degree of conflict of an access is
  the largest number of distinct words asked of one bank: 1 is conflict-free, 32 the worst.

Both counts work on every warp of a block at once (vectorised with numpy), so a lab can
simulate thousands of accesses per second.

Lab: 07_gpu_programming_model
Paper: NVIDIA, *CUDA C++ Programming Guide*, "Device Memory Accesses" and "Shared Memory"
(compute capability 5.x+); Harris 2013, *How to Access Global Memory Efficiently in CUDA C/C++*.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BANKS",
    "WARP_SIZE",
    "WORD_BYTES",
    "RaceError",
    "bank_degrees",
    "race_check",
    "warp_segments",
]

WARP_SIZE = 32
BANKS = 32
WORD_BYTES = 4


class RaceError(RuntimeError):
    """Two threads touched one shared word in the same phase, one of them writing."""


def _per_warp(keys: np.ndarray, warps: np.ndarray, n_warps: int) -> np.ndarray:
    """Number of distinct ``keys`` per warp: (n_warps,) int64."""
    if keys.size == 0:
        return np.zeros(n_warps, dtype=np.int64)
    span = int(keys.max()) + 1
    pairs = np.unique(warps.astype(np.int64) * span + keys)  # distinct (warp, key)
    return np.bincount(pairs // span, minlength=n_warps)


def warp_segments(
    addresses: np.ndarray, active: np.ndarray, segment: int = 32, warp_size: int = WARP_SIZE
) -> np.ndarray:
    """Segments of ``segment`` bytes each warp touches: (n_threads,) bytes -> (n_warps,) counts.

    Thread ``t`` is lane ``t % 32`` of warp ``t // 32``; inactive lanes issue nothing, and a
    warp with no active lane costs 0 (it skipped the instruction).
    """
    n_warps = -(-addresses.size // warp_size)
    lanes = np.flatnonzero(active)
    return _per_warp(addresses[lanes] // segment, lanes // warp_size, n_warps)


def bank_degrees(
    addresses: np.ndarray, active: np.ndarray, warp_size: int = WARP_SIZE
) -> np.ndarray:
    """Degree of bank conflict of each warp: (n_threads,) bytes -> (n_warps,) wavefronts.

    The degree is max over banks of the distinct 4-byte words asked of it (same word:
    broadcast, free); 0 for a warp with no active lane. ``degree - 1`` extra wavefronts are
    the conflicts.
    """
    n_warps = -(-addresses.size // warp_size)
    lanes = np.flatnonzero(active)
    if lanes.size == 0:
        return np.zeros(n_warps, dtype=np.int64)
    words = addresses[lanes] // WORD_BYTES
    warps = lanes // warp_size
    span = int(words.max()) + 1
    distinct = np.unique(warps.astype(np.int64) * span + words)  # distinct (warp, word)
    w_warp, w_word = distinct // span, distinct % span
    per_bank = np.bincount(w_warp * BANKS + w_word % BANKS, minlength=n_warps * BANKS)
    return per_bank.reshape(n_warps, BANKS).max(axis=1)


def race_check(
    writer: np.ndarray, reader: np.ndarray, idx: np.ndarray, who: np.ndarray, store: bool
) -> None:
    """Raise RaceError on a hazard with another thread in this phase; record this access.

    ``writer``/``reader``: per element, the thread that wrote/read it since the last barrier
    (-1 none, -2 several readers); ``idx``/``who``: element and thread of each active lane.
    Read-after-write, write-after-read and write-after-write by another thread all race.
    """
    clash = (writer[idx] >= 0) & (writer[idx] != who)
    if store:
        clash |= (reader[idx] == -2) | ((reader[idx] >= 0) & (reader[idx] != who))
        order = np.argsort(idx, kind="stable")  # two lanes of this store on one element
        clash[order[1:]] |= idx[order[1:]] == idx[order[:-1]]
    if clash.any():
        j = int(np.flatnonzero(clash)[0])
        raise RaceError(
            f"race on shared memory: thread {int(who[j])} {'wrote' if store else 'read'} "
            f"element {int(idx[j])} that another thread touched since the last syncthreads(); "
            "put ctx.syncthreads() between the write and the read"
        )
    if store:
        writer[idx] = who
        return
    prev = reader[idx]
    reader[idx] = np.where((prev == -1) | (prev == who), who, -2)
    uniq, counts = np.unique(idx, return_counts=True)  # one word, several lanes: many readers
    reader[uniq[counts > 1]] = -2
