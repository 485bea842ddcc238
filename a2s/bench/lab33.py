"""Lab 33 experiments: the 2:4 compressed matmul against the dense one, counted and timed.

1. Counted, on lab 08's traffic model (``minitorch.model.sparse24``, float16 weights): the
   weight bytes the 2:4 kernel reads over the dense kernel's (values at half the count plus a
   2-bit index each: (1/2 + 1/16) / 1 = 9/16 at 2 bytes a value), and its multiplies over the
   dense ones (1/2). Both are counts of the run, not closed forms; the closed forms are the
   anchors.
2. Wall clock, one thread, alternated: the same two kernels in float32 on numpy. Reported
   only: numpy has no sparse tensor core, so the gather the compressed form needs may cost more
   than the multiplies it saves (the lab's point: 2:4 pays where the hardware does the select).

Lab: 33_sparsity_distillation_qat
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.sparse24 import compress_24, dense_matmul, mask_24, sparse24_matmul


def _operands(n: int, out: int, cols: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x: np.ndarray = rng.standard_normal((n, cols)).astype(dtype)
    w: np.ndarray = rng.standard_normal((out, cols)).astype(dtype)
    return x, np.where(mask_24(w), w, 0).astype(dtype)  # already 2:4: both compute one product


@register
def sparse24_counted(n: int = 16, out: int = 256, cols: int = 512) -> list[Figure]:
    x, w = _operands(n, out, cols, np.float16)
    y_d, dense = dense_matmul(x, w)
    y_s, sparse = sparse24_matmul(x, compress_24(w))
    x_bytes = x.nbytes  # both kernels read the activations once; the weights are the difference
    w_dense, w_sparse = dense.reads - x_bytes, sparse.reads - x_bytes
    gap = np.abs(y_d.astype(np.float64) - y_s).max() / np.abs(y_d).max()  # fp16 sums differ
    same = bool(gap < 1e-2)
    return [
        Figure(
            f"2:4 / dense weight bytes read, fp16 {out}x{cols}",
            w_sparse / w_dense,
            "x",
            f"closed form 9/16 = 0.5625 ({w_sparse:,} of {w_dense:,} B)",
        ),
        Figure(
            f"2:4 / dense multiplies, n = {n}",
            sparse.multiplies / dense.multiplies,
            "x",
            f"closed form 1/2 ({sparse.multiplies:,} of {dense.multiplies:,}); same y: {same}",
        ),
    ]


@register
def sparse24_wall_clock(
    n: int = 16, out: int = 256, cols: int = 512, repeats: int = 7
) -> list[Figure]:
    x, w = _operands(n, out, cols, np.float32)
    sp = compress_24(w)
    with one_thread():
        t_s, t_d = alternate(lambda: sparse24_matmul(x, sp), lambda: dense_matmul(x, w), repeats)
    return [
        Figure(
            f"2:4 / dense counted matmul, fp32 {n}x{cols} @ {cols}x{out}",
            t_s / t_d,
            "x",
            f"numpy, no sparse hardware; dense {t_d * 1e3:.2f} ms = 1.0",
        )
    ]
