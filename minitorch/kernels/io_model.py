"""The IO model of a GPU kernel: HBM holds the arrays, SRAM holds tiles, and bytes are counted.

Dao et al. (2022) analyse attention by counting accesses to HBM (high-bandwidth memory, the
GPU's DRAM) while tiles live in SRAM (on-chip shared memory, ``M`` bytes). The course uses
that model with exact accounting:

* a kernel sees its arrays only through :class:`HBM`; ``load`` copies a contiguous tile into
  "SRAM" (a numpy array the kernel owns) and counts its bytes as *read*; ``store`` writes a
  tile back and counts its bytes as *written*; allocating or reading results on the host
  (``alloc``, ``array``) is free, as a ``cudaMalloc`` and a final copy are not the kernel's;
* ``limits`` caps the elements of one load or store per array: the tile must fit in SRAM;
* everything a kernel holds in SRAM between accesses is free to reuse; nothing else is.

The formulas below are the counts of the course's kernels under this model, tile by tile
(lengths that are not a multiple of the block give a smaller last tile).

Lab: 08_fused_kernels_flash_attention
Paper: Dao, Fu, Ermon, Rudra & Ré 2022, FlashAttention: Fast and Memory-Efficient Exact
Attention with IO-Awareness (Section 3.2, Theorem 2); Dao 2023, FlashAttention-2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "HBM",
    "TileTooLarge",
    "Traffic",
    "block_sizes",
    "flash_backward_traffic",
    "flash_forward_traffic",
    "kv_blocks",
    "naive_attention_traffic",
    "q_blocks",
]


class TileTooLarge(ValueError):
    """A load or store bigger than the SRAM tile allowed for that array."""


@dataclass(slots=True, frozen=True)
class Traffic:
    """HBM bytes read and written by one kernel."""

    reads: int
    writes: int

    @property
    def total(self) -> int:
        return self.reads + self.writes


def _index(x: np.ndarray, rows: slice, cols: slice) -> tuple[slice, ...]:
    for s in (rows, cols):
        if not isinstance(s, slice) or s.step not in (None, 1):
            raise TypeError("HBM tiles are contiguous: index with slices like slice(i0, i1)")
    return (rows,) if x.ndim == 1 else (rows, cols)


class HBM:
    """Named arrays in HBM; every kernel access goes through :meth:`load` / :meth:`store`.

    ``limits[name]`` is the most elements one load or store of ``name`` may move (its SRAM
    tile); ``reads`` / ``writes`` are bytes per array name.
    """

    __slots__ = ("_arrays", "limits", "reads", "writes")

    def __init__(self, arrays: dict[str, np.ndarray], limits: dict[str, int] | None = None):
        self._arrays = {k: np.ascontiguousarray(v).copy() for k, v in arrays.items()}
        self.limits: dict[str, int] = dict(limits or {})
        self.reads: dict[str, int] = {}
        self.writes: dict[str, int] = {}

    def alloc(self, name: str, shape: tuple[int, ...], dtype: np.dtype | type = np.float64) -> None:
        """Allocate a zero-filled array on the host side (not counted)."""
        self._arrays[name] = np.zeros(shape, dtype=dtype)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._arrays[name].shape

    def array(self, name: str) -> np.ndarray:
        """A host copy of ``name`` (reading results after the kernel; not counted)."""
        return self._arrays[name].copy()

    def _check(self, name: str, size: int, what: str) -> None:
        limit = self.limits.get(name)
        if limit is not None and size > limit:
            raise TileTooLarge(
                f"{what} of {size} elements of {name!r}: its SRAM tile holds at most {limit}"
            )

    def load(self, name: str, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """Copy the tile ``name[rows, cols]`` from HBM into SRAM; count its bytes as read."""
        x = self._arrays[name]
        tile = x[_index(x, rows, cols)].copy()
        self._check(name, tile.size, "a load")
        self.reads[name] = self.reads.get(name, 0) + tile.nbytes
        return tile

    def store(
        self, name: str, value: np.ndarray, rows: slice = slice(None), cols: slice = slice(None)
    ) -> None:
        """Write ``value`` to the tile ``name[rows, cols]``; count its bytes as written."""
        x = self._arrays[name]
        view = x[_index(x, rows, cols)]
        value = np.asarray(value)
        if value.shape != view.shape:
            raise ValueError(
                f"store of shape {value.shape} into {name}[tile] of shape {view.shape}"
            )
        self._check(name, view.size, "a store")
        view[...] = value
        self.writes[name] = self.writes.get(name, 0) + view.nbytes

    def traffic(self) -> Traffic:
        return Traffic(sum(self.reads.values()), sum(self.writes.values()))


def block_sizes(sram_bytes: int, d: int, itemsize: int = 4) -> tuple[int, int]:
    """(B_r, B_c) of Dao et al. Algorithm 1: B_c = ceil(M / 4d), B_r = min(B_c, d).

    ``M`` is counted in elements there; here ``sram_bytes / itemsize``. Q_i, K_j, V_j and O_i
    tiles, 4 of about B x d elements, then fill the SRAM.
    """
    m = sram_bytes // itemsize
    bc = max(1, -(-m // (4 * d)))
    return min(bc, d), bc


def q_blocks(n: int, block_q: int) -> list[tuple[int, int]]:
    """The row ranges [i0, i1) of the query blocks (the last one may be short)."""
    return [(i, min(i + block_q, n)) for i in range(0, n, block_q)]


def kv_blocks(
    n: int, block_kv: int, i1: int | None = None, causal: bool = False
) -> list[tuple[int, int]]:
    """The key/value blocks a query block ending at row ``i1`` sees (all, or causal: j0 < i1)."""
    end = n if i1 is None or not causal else i1
    return [(j, min(j + block_kv, n)) for j in range(0, end, block_kv)]


def naive_attention_traffic(n: int, d: int, itemsize: int = 8) -> Traffic:
    """Standard attention (Dao et al. Algorithm 0): S = QK^T, P = softmax(S), O = PV via HBM.

    reads Q, K (2nd), S (n^2), P and V (n^2 + nd); writes S, P (2n^2) and O (nd).
    """
    return Traffic((3 * n * d + 2 * n * n) * itemsize, (2 * n * n + n * d) * itemsize)


def flash_forward_traffic(
    n: int, d: int, block_q: int, block_kv: int, causal: bool = False, itemsize: int = 8
) -> Traffic:
    """FlashAttention forward, query blocks outside, key/value blocks inside (FA-2 order).

    Per query block i: read Q_i once, K_j and V_j for every block j it sees (causal: the
    blocks that start before its last row), write O_i and its logsumexp L_i once.
    """
    reads = writes = 0
    for i0, i1 in q_blocks(n, block_q):
        rq = i1 - i0
        reads += rq * d + sum(2 * (j1 - j0) * d for j0, j1 in kv_blocks(n, block_kv, i1, causal))
        writes += rq * d + rq
    return Traffic(reads * itemsize, writes * itemsize)


def flash_backward_traffic(
    n: int, d: int, block_q: int, block_kv: int, causal: bool = False, itemsize: int = 8
) -> Traffic:
    """FlashAttention backward, key/value blocks outside, query blocks inside (recomputation).

    First D = rowsum(dO * O): read O, dO, write D. Per key/value block j: read K_j, V_j; for
    each query block i that sees it, read Q_i, dO_i, L_i, D_i and dQ_i, write dQ_i back
    (accumulated in HBM); then write dK_j, dV_j once.
    """
    reads, writes = 2 * n * d, n
    for j0, j1 in kv_blocks(n, block_kv):
        rk = j1 - j0
        reads += 2 * rk * d
        for i0, i1 in q_blocks(n, block_q):
            if causal and i1 <= j0:  # every row of block i is above the diagonal of block j
                continue
            rq = i1 - i0
            reads += 3 * rq * d + 2 * rq
            writes += rq * d
        writes += 2 * rk * d
    return Traffic(reads * itemsize, writes * itemsize)
