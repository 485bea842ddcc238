"""2:4 semi-structured sparsity: the mask, the compressed format, a counted sparse matmul.

In every group of 4 consecutive weights along the input axis (a row of ``w`` (out, in), the
layer computing ``y = x @ w.T``), exactly 2 are kept: the two of largest magnitude (ties:
the lower index). The compressed form stores the kept values, ``(out, in/2)``, and for each a
2-bit index (0..3) of its position inside its group, packed 4 indices per byte ``(out,
in/8)``. Stored bytes, with ``s`` bytes per value:

$$B_{2:4} = \\tfrac{1}{2}\\,\\text{out}\\cdot\\text{in}\\cdot s + \\tfrac{1}{8}\\,\\text{out}\\cdot
\\text{in} \\qquad\\text{vs}\\qquad B_{\\text{dense}} = \\text{out}\\cdot\\text{in}\\cdot s .$$

The matmuls run on lab 08's counted-traffic model (:class:`minitorch.kernels.io_model.HBM`:
every load and store counted in bytes), and count their multiplies: the sparse kernel
gathers, for each kept weight, the one activation its index names, so it performs
``n * out * in / 2`` multiplies against the dense ``n * out * in``, reads half the weight
value bytes (plus the indices), and returns the dense product of the masked weight.

    sp = compress_24(w)                      # w already 2:4, or masked here
    y, cost = sparse24_matmul(x, sp)         # y == x @ (w * mask_24(w)).T
    cost.multiplies, cost.reads              # == sparse24_cost(n, out, in, itemsize)

Lab: 33_sparsity_distillation_qat
Paper: Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks" (arXiv:2104.08378):
2:4 fine-grained structured sparsity on NVIDIA Ampere's Sparse Tensor Cores (the packing
order of the indices here is the lab's own, not the hardware's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minitorch.kernels.io_model import HBM

__all__ = [
    "Cost",
    "Sparse24",
    "compress_24",
    "decompress_24",
    "dense_cost",
    "dense_matmul",
    "is_24",
    "mask_24",
    "pack_indices",
    "sparse24_cost",
    "sparse24_matmul",
    "unpack_indices",
]


def _groups(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w)
    if w.ndim != 2 or w.shape[1] % 4:
        raise ValueError(f"2:4 needs a 2-D weight with a multiple of 4 columns, got {w.shape}")
    return w.reshape(w.shape[0], -1, 4)


def mask_24(w: np.ndarray) -> np.ndarray:
    """A 0/1 mask (w's shape, bool) keeping the 2 largest |w| of every 4 (ties: lower index)."""
    g = np.abs(_groups(w))
    order = np.argsort(-g, axis=-1, kind="stable")  # descending magnitude, stable on ties
    keep = np.zeros(g.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :2], True, axis=-1)
    return keep.reshape(np.shape(w))


def is_24(w: np.ndarray) -> bool:
    """True when every group of 4 along a row has at most 2 nonzeros."""
    return bool(np.all((_groups(w) != 0).sum(axis=-1) <= 2))


def pack_indices(idx: np.ndarray) -> np.ndarray:
    """2-bit indices (out, m), m a multiple of 4, into bytes (out, m/4): index ``4k + j`` in
    bits ``2j..2j+1`` of byte ``k`` (the lab's order; a real kernel's layout differs)."""
    idx = np.asarray(idx, dtype=np.uint8)
    if idx.shape[-1] % 4 or np.any(idx > 3):
        raise ValueError("pack_indices needs values 0..3, a multiple of 4 per row")
    q = idx.reshape(*idx.shape[:-1], -1, 4)
    return (q[..., 0] | q[..., 1] << 2 | q[..., 2] << 4 | q[..., 3] << 6).astype(np.uint8)


def unpack_indices(packed: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_indices`: bytes (out, k) to indices (out, 4k) in 0..3."""
    p = np.asarray(packed, dtype=np.uint8)
    parts = [(p >> (2 * j)) & 3 for j in range(4)]
    return np.stack(parts, axis=-1).reshape(*p.shape[:-1], -1)


@dataclass(frozen=True, slots=True)
class Sparse24:
    """Kept values (out, in/2), packed 2-bit positions (out, in/8), the dense shape."""

    values: np.ndarray
    meta: np.ndarray
    shape: tuple[int, int]

    @property
    def indices(self) -> np.ndarray:
        """The position (0..3) inside its group of each kept value, (out, in/2)."""
        return unpack_indices(self.meta)

    def nbytes(self) -> int:
        """Bytes stored: the values plus the packed indices."""
        return int(self.values.nbytes + self.meta.nbytes)


def compress_24(w: np.ndarray, dtype: type | None = None) -> Sparse24:
    """Keep the 2:4 mask's values of ``w`` (out, in), in ``in`` a multiple of 8."""
    w = np.asarray(w)
    if w.ndim != 2 or w.shape[1] % 8:
        raise ValueError(f"compress_24 needs (out, in) with in a multiple of 8, got {w.shape}")
    keep = mask_24(w).reshape(w.shape[0], -1, 4)
    pos = np.argsort(~keep, axis=-1, kind="stable")[..., :2]  # kept positions, ascending
    vals = np.take_along_axis(_groups(w), pos, axis=-1).reshape(w.shape[0], -1)
    meta = pack_indices(pos.reshape(w.shape[0], -1))
    return Sparse24(vals.astype(dtype or w.dtype), meta, (int(w.shape[0]), int(w.shape[1])))


def decompress_24(sp: Sparse24) -> np.ndarray:
    """The dense (out, in) weight: each value back at its position, zeros elsewhere."""
    out, cols = sp.shape
    dense = np.zeros((out, cols // 4, 4), dtype=sp.values.dtype)
    pos = sp.indices.reshape(out, -1, 2).astype(np.intp)
    np.put_along_axis(dense, pos, sp.values.reshape(out, -1, 2), axis=-1)
    return dense.reshape(out, cols)


@dataclass(frozen=True, slots=True)
class Cost:
    """What a counted matmul did: HBM bytes read and written, multiplies performed."""

    reads: int
    writes: int
    multiplies: int


def dense_cost(n: int, out: int, cols: int, itemsize: int = 8) -> Cost:
    """Closed form of :func:`dense_matmul`: read x and w, write y; ``n out in`` multiplies."""
    return Cost((n * cols + out * cols) * itemsize, n * out * itemsize, n * out * cols)


def sparse24_cost(n: int, out: int, cols: int, itemsize: int = 8) -> Cost:
    """Closed form of :func:`sparse24_matmul`: x, half the weight values, ``out in / 8`` index
    bytes; write y; ``n out in / 2`` multiplies."""
    reads = n * cols * itemsize + out * cols // 2 * itemsize + out * cols // 8
    return Cost(reads, n * out * itemsize, n * out * cols // 2)


def _rows(out: int, block: int) -> list[slice]:
    if block < 1:
        raise ValueError("block must be at least 1")
    return [slice(r, min(r + block, out)) for r in range(0, out, block)]


def dense_matmul(x: np.ndarray, w: np.ndarray, block: int = 16) -> tuple[np.ndarray, Cost]:
    """``x (n, in) @ w.T`` streaming ``block`` weight rows at a time through the HBM model."""
    x, w = np.asarray(x), np.asarray(w)
    hbm = HBM({"x": x, "w": w})
    hbm.alloc("y", (x.shape[0], w.shape[0]), np.result_type(x, w))
    xs = hbm.load("x")  # the activations stay in SRAM for every weight block
    mults = 0
    for rows in _rows(w.shape[0], block):
        wt = hbm.load("w", rows)
        prod = xs[:, None, :] * wt[None, :, :]  # (n, rows, in): one multiply each
        mults += prod.size
        hbm.store("y", prod.sum(axis=-1), slice(None), rows)
    t = hbm.traffic()
    return hbm.array("y"), Cost(t.reads, t.writes, mults)


def sparse24_matmul(x: np.ndarray, sp: Sparse24, block: int = 16) -> tuple[np.ndarray, Cost]:
    """``x (n, in) @ decompress_24(sp).T`` from the compressed form: per kept weight, the
    activation its 2-bit index selects is gathered and multiplied once."""
    x = np.asarray(x)
    out, cols = sp.shape
    if x.ndim != 2 or x.shape[1] != cols:
        raise ValueError(f"x must be (n, {cols}), got {x.shape}")
    hbm = HBM({"x": x, "values": sp.values, "meta": sp.meta})
    hbm.alloc("y", (x.shape[0], out), np.result_type(x, sp.values))
    xs = hbm.load("x")
    base = 4 * np.repeat(np.arange(cols // 4), 2)  # group start of each kept value
    mults = 0
    for rows in _rows(out, block):
        vt, mt = hbm.load("values", rows), hbm.load("meta", rows)
        col = base[None, :] + unpack_indices(mt).astype(np.intp)  # (rows, in/2)
        prod = xs[:, col] * vt[None, :, :]  # (n, rows, in/2)
        mults += prod.size
        hbm.store("y", prod.sum(axis=-1), slice(None), rows)
    t = hbm.traffic()
    return hbm.array("y"), Cost(t.reads, t.writes, mults)
