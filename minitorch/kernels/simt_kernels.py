"""Reference kernels for the SIMT simulator, naive and optimized side by side.

Each is ``kernel(ctx, *args)`` for :func:`minitorch.kernels.simt.launch`; the launch
configuration each expects is in its docstring. The naive versions compute the right
values and break a budget; the counters say which one:

| kernel | launch | global segments (float32, 32 B) | bank conflicts |
|---|---|---|---|
| ``vector_add`` | ``ceil(n/256)`` x 256 | 3 n / 8 (the minimum) | - |
| ``block_sum_interleaved`` | ``ceil(n/B)`` x B | n / 8 + blocks | 2-way .. 16-way |
| ``block_sum_divergent`` | same | n / 8 + blocks | 0, but 3.3x the shared budget |
| ``block_sum_sequential`` | same | n / 8 + blocks | 0 |
| ``matmul_naive`` | (n/16, m/16) x (16, 16) | m n k / 8 + m n / 8 | - |
| ``matmul_tiled`` | same | m n k / 64 + m n / 8 | 0 |
| ``transpose_naive`` | (c/32, r/32) x (32, 32) | r c / 8 + r c | - |
| ``transpose_shared`` | same | r c / 4 | 31 per warp access |
| ``transpose_padded`` | same | r c / 4 (the minimum) | 0 |

Lab: 07_gpu_programming_model
Paper: Harris 2007, *Optimizing Parallel Reduction in CUDA* (NVIDIA); Ruetsch & Micikevicius
2009, *Optimizing Matrix Transpose in CUDA*; Kirk & Hwu, *Programming Massively Parallel
Processors*, ch. 5 (tiled matmul).
"""

from __future__ import annotations

from minitorch.kernels.simt import DeviceArray, ThreadContext

__all__ = [
    "TILE",
    "block_sum_divergent",
    "block_sum_interleaved",
    "block_sum_sequential",
    "matmul_naive",
    "matmul_tiled",
    "strided_copy",
    "transpose_naive",
    "transpose_padded",
    "transpose_shared",
    "vector_add",
]

TILE = 16  # matmul tile: a 16x16 block computes a 16x16 tile of c


def vector_add(ctx: ThreadContext, a: DeviceArray, b: DeviceArray, c: DeviceArray, n: int) -> None:
    """c = a + b; one element per thread, consecutive threads on consecutive elements."""
    i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x  # (threads,)
    ok = i < n
    ctx.store(c, i, ctx.load(a, i, ok) + ctx.load(b, i, ok), ok)


def strided_copy(ctx: ThreadContext, src: DeviceArray, dst: DeviceArray, stride: int) -> None:
    """dst[i] = src[i * stride]: one warp of reads at ``stride`` elements apart."""
    i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
    ctx.store(dst, i, ctx.load(src, i * stride))


def _block_sum(ctx: ThreadContext, x: DeviceArray, out: DeviceArray, n: int, mode: str) -> None:
    b, t = ctx.blockDim.x, ctx.threadIdx.x
    i = ctx.blockIdx.x * b + t
    sdata = ctx.shared(b)
    ctx.store(sdata, t, ctx.load(x, i, i < n))  # out-of-range lanes add 0
    ctx.syncthreads()
    steps = [b >> e for e in range(1, b.bit_length())]  # b/2, b/4, ..., 1
    for s in steps if mode == "sequential" else steps[::-1]:
        if mode == "sequential":  # threads 0..s-1 add the upper half: contiguous, no conflicts
            j, on = t, t < s
        elif mode == "interleaved":  # thread t adds at 2*s*t: lanes 2s words apart, conflicts
            j, on = 2 * s * t, 2 * s * t < b
        else:  # divergent: threads t % 2s == 0, spread over every warp
            j, on = t, t % (2 * s) == 0
        ctx.store(sdata, j, ctx.load(sdata, j, on) + ctx.load(sdata, j + s, on), on)
        ctx.syncthreads()
    ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)


def block_sum_sequential(ctx: ThreadContext, x: DeviceArray, out: DeviceArray, n: int) -> None:
    """out[block] = sum of the block's blockDim.x elements; tree with sequential addressing."""
    _block_sum(ctx, x, out, n, "sequential")


def block_sum_interleaved(ctx: ThreadContext, x: DeviceArray, out: DeviceArray, n: int) -> None:
    """The same sum with interleaved addressing (index 2*s*t): strided, bank-conflicted."""
    _block_sum(ctx, x, out, n, "interleaved")


def block_sum_divergent(ctx: ThreadContext, x: DeviceArray, out: DeviceArray, n: int) -> None:
    """The same sum by threads with t % 2s == 0: no conflicts, but every warp issues each step."""
    _block_sum(ctx, x, out, n, "divergent")


def matmul_naive(
    ctx: ThreadContext, a: DeviceArray, b: DeviceArray, c: DeviceArray, m: int, n: int, k: int
) -> None:
    """c = a @ b, each thread reading a row of a and a column of b from global memory."""
    row = ctx.blockIdx.y * ctx.blockDim.y + ctx.threadIdx.y
    col = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
    acc = 0.0
    for p in range(k):
        acc = acc + ctx.load(a, (row, p)) * ctx.load(b, (p, col))
    ctx.store(c, (row, col), acc)


def matmul_tiled(
    ctx: ThreadContext, a: DeviceArray, b: DeviceArray, c: DeviceArray, m: int, n: int, k: int
) -> None:
    """c = a @ b; 16x16 tiles of a and b staged in shared memory, each read 16 times there.

    Shapes are multiples of TILE. Global traffic: every block reads k/16 tiles of a and of b,
    so each element of a is read n/16 times instead of n times.
    """
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    row, col = ctx.blockIdx.y * TILE + ty, ctx.blockIdx.x * TILE + tx
    a_s, b_s = ctx.shared((TILE, TILE)), ctx.shared((TILE, TILE))
    acc = 0.0
    for p0 in range(0, k, TILE):
        ctx.store(a_s, (ty, tx), ctx.load(a, (row, p0 + tx)))  # a row of 16: 2 sectors
        ctx.store(b_s, (ty, tx), ctx.load(b, (p0 + ty, col)))
        ctx.syncthreads()
        for p in range(TILE):
            acc = acc + ctx.load(a_s, (ty, p)) * ctx.load(b_s, (p, tx))  # broadcast, row
        ctx.syncthreads()  # nobody overwrites a tile another thread is still reading
    ctx.store(c, (row, col), acc)


def transpose_naive(
    ctx: ThreadContext, src: DeviceArray, dst: DeviceArray, rows: int, cols: int
) -> None:
    """dst = src.T directly: coalesced reads, writes 32 rows apart (32 segments a warp)."""
    r = ctx.blockIdx.y * 32 + ctx.threadIdx.y
    c = ctx.blockIdx.x * 32 + ctx.threadIdx.x
    ctx.store(dst, (c, r), ctx.load(src, (r, c)))


def _transpose_tile(ctx: ThreadContext, src: DeviceArray, dst: DeviceArray, width: int) -> None:
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    tile = ctx.shared((32, width))
    ctx.store(tile, (ty, tx), ctx.load(src, (ctx.blockIdx.y * 32 + ty, ctx.blockIdx.x * 32 + tx)))
    ctx.syncthreads()
    # write the transposed tile row by row (coalesced); read the shared tile by column
    ctx.store(dst, (ctx.blockIdx.x * 32 + ty, ctx.blockIdx.y * 32 + tx), ctx.load(tile, (tx, ty)))


def transpose_shared(
    ctx: ThreadContext, src: DeviceArray, dst: DeviceArray, rows: int, cols: int
) -> None:
    """Through a 32x32 shared tile: coalesced both ways, but a column read is one bank."""
    _transpose_tile(ctx, src, dst, 32)


def transpose_padded(
    ctx: ThreadContext, src: DeviceArray, dst: DeviceArray, rows: int, cols: int
) -> None:
    """Through a 32x33 tile: the padding column spreads a column over all 32 banks."""
    _transpose_tile(ctx, src, dst, 33)
