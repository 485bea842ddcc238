"""Lab 07 tried as a class would: correct kernels written differently, realistic mistakes
(each must get the hint that names it) and cheats (the reference kernels, the simulator's
segment counter, the grader's own loop, torch, numpy moving values across lanes, the counters
or the device arrays reached through a private attribute or ``gc``, a host copy).

Kernels run in a forked child (:mod:`a2s.checks.harness`); every load, store, shared
allocation and barrier is a request to the grader's process, which runs the simulator and
keeps the counters, so what a cheat rewrites in its own process is a copy.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from a2s.checks import lab07
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from a2s.checks.lab07 import coalescing
from minitorch.kernels import simt_kernels as K
from minitorch.kernels import simt_memory
from tests.checks.test_lab07 import (
    _block_sum_across_lanes,
    _matmul_across_lanes,
    _transpose_across_lanes,
    block_sum,
    block_sum_divergent,
    matmul_tiled,
    transpose,
    vector_add,
    vector_add_strided,
    warp_transactions,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal, unblocked_in

unblocked = unblocked_in("minitorch.kernels")


def _zero_counters(*names):
    """What a cheat does after its kernel: every KernelStats in its process rewritten."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "KernelStats":
            for name in names:
                setattr(obj, name, 0)


def _then_zero(kernel, *names):
    def cheat_kernel(ctx, *args):
        kernel(ctx, *args)
        _zero_counters(*names)

    return cheat_kernel


def _torch_kernel(ctx, *args):
    import torch

    torch.zeros(1)


# --------------------------------------------------------------------------- 07.1
def predict_min_form(stride, itemsize=4, segment=32):
    import math  # an import inside

    if stride == 0:
        return 1
    return min(32, math.floor(31 * stride * itemsize / segment) + 1)


def predict_lane_loop(stride, itemsize=4, segment=32):
    return len({lane * stride * itemsize // segment for lane in range(32)})


_MEMO = {(1, 4, 32): 4, (8, 4, 32): 32}

PREDICT = [
    honest(
        "07.1",
        "the solution's closed form",
        lambda: lab07.check_warp_transactions(warp_transactions),
    ),
    honest("07.1", "min(32, floor + 1)", lambda: lab07.check_warp_transactions(predict_min_form)),
    wrong(
        "07.1",
        "float division",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: 1.0 if s == 0 else min(32.0, 31 * s * b / g + 1)
        ),
        match="integer division",
    ),
    wrong(
        "07.1",
        "no cap at 32",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: 1 if s == 0 else 31 * s * b // g + 1
        ),
        match="at most 32",
    ),
    wrong(
        "07.1",
        "stride 0 is zero segments",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: 0 if s == 0 else warp_transactions(s, b, g)
        ),
        match="broadcast",
    ),
    wrong(
        "07.1",
        "bytes over the segment",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: max(1, min(32, 32 * s * b // g))
        ),
        match="partly used|31 strides",
    ),
    cheat(
        "07.1",
        "the simulator's counter",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: int(
                simt_memory.warp_segments(np.arange(32) * s * b, np.ones(32, bool), g)[0]
            )
        ),
        match="warp_segments",
        error=ReferenceCalledError,
    ),
    cheat(
        "07.1",
        "the grader's own loop",
        lambda: lab07.check_warp_transactions(coalescing._loop_segments),
        match="_loop_segments",
        error=ReferenceCalledError,
    ),
    cheat(
        "07.1",
        "a loop over the lanes",
        lambda: lab07.check_warp_transactions(predict_lane_loop),
        match="loop over the 32 lanes",
    ),
    cheat(
        "07.1",
        "torch",
        lambda: lab07.check_warp_transactions(
            lambda s, b=4, g=32: int(__import__("torch").tensor(warp_transactions(s, b, g)))
        ),
        error=ForbiddenCallError,
    ),
    cheat(
        "07.1",
        "a memorised answer",
        lambda: lab07.check_warp_transactions(lambda s, b=4, g=32: _MEMO.get((s, b, g), 1)),
        match="predicted",
    ),
    cheat(
        "07.1",
        "an int that equals anything",
        lambda: lab07.check_warp_transactions(lambda *a: always_equal(1)),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 07.2
class VectorAdd:  # a class as the kernel
    def __call__(self, ctx, a, b, c, n):
        i = ctx.tid + ctx.blockIdx.x * ctx.blockDim.x
        ok = np.less(i, n)
        ctx.store(c, (i,), ctx.load(a, (i,), ok) + ctx.load(b, (i,), ok), mask=ok)


def vector_add_where(ctx, a, b, c, n):  # a clamped index and a mask from np.where
    i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
    ok = i < n
    safe = np.where(ok, i, 0)
    ctx.store(c, safe, ctx.load(a, safe, ok) + ctx.load(b, safe, ok), ok)


def vector_add_minus(ctx, a, b, c, n):
    i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
    ctx.store(c, i, ctx.load(a, i, i < n) - ctx.load(b, i, i < n), i < n)


def vector_add_first_block_only(ctx, a, b, c, n):  # forgets blockIdx: every block does block 0
    i = ctx.threadIdx.x
    ctx.store(c, i, ctx.load(a, i, i < n) + ctx.load(b, i, i < n), i < n)


def vector_add_private_stats(ctx, a, b, c, n):
    vector_add(ctx, a, b, c, n)
    ctx._stats.gld_transactions = 0


def vector_add_gc_arrays(ctx, a, b, c, n):  # writes the simulator's arrays it finds (gc)
    for arr in gc.get_objects():
        if (
            type(arr).__name__ == "DeviceArray"
            and arr.shape == c.shape
            and np.isnan(arr._data).all()
        ):
            arr._data[:] = 0.0
            arr.writes[:] = True


def vector_add_host_copy(ctx, a, b, c, n):
    ctx.store(c, ctx.tid, a.to_numpy()[: ctx.tid.size], ctx.tid < n)


VECTOR = [
    honest("07.2", "a class, tuple indices", lambda: lab07.check_vector_add(VectorAdd())),
    honest("07.2", "np.where clamped index", lambda: lab07.check_vector_add(vector_add_where)),
    wrong(
        "07.2",
        "a - b",
        lambda: lab07.check_vector_add(vector_add_minus),
        match="a\\[i\\] \\+ b\\[i\\]",
    ),
    wrong(
        "07.2",
        "strided mapping",
        lambda: lab07.check_vector_add(vector_add_strided),
        match="Consecutive threads",
    ),
    wrong(
        "07.2",
        "blockIdx forgotten",
        lambda: lab07.check_vector_add(vector_add_first_block_only),
        match="a\\[i\\] \\+ b\\[i\\]|never",
    ),
    cheat(
        "07.2",
        "the reference",
        lambda: lab07.check_vector_add(K.vector_add),
        error=ReferenceCalledError,
    ),
    cheat("07.2", "torch", lambda: lab07.check_vector_add(_torch_kernel), error=ForbiddenCallError),
    cheat(
        "07.2",
        "ctx._stats rewritten",
        lambda: lab07.check_vector_add(vector_add_private_stats),
        match="_stats",
        error=StudentError,
    ),
    cheat(
        "07.2",
        "strided, counters zeroed via gc",
        lambda: lab07.check_vector_add(
            _then_zero(vector_add_strided, "gld_transactions", "gst_transactions")
        ),
        match="gld_transactions = ",
    ),
    cheat(
        "07.2",
        "the arrays written via gc",
        lambda: lab07.check_vector_add(vector_add_gc_arrays),
        match="a\\[i\\] \\+ b\\[i\\]|never",
    ),
    cheat(
        "07.2",
        "a host copy",
        lambda: lab07.check_vector_add(vector_add_host_copy),
        match="cannot copy",
        error=StudentError,
    ),
]


# --------------------------------------------------------------------------- 07.3
def block_sum_recursive(ctx, x, out, n):  # the tree as a recursive helper
    b, t = ctx.blockDim.x, ctx.threadIdx.x
    i = ctx.blockIdx.x * b + t
    sdata = ctx.shared(b)
    ctx.store(sdata, t, ctx.load(x, i, i < n))
    ctx.syncthreads()

    def step(s):
        if s == 0:
            return
        on = t < s
        ctx.store(sdata, t, ctx.load(sdata, t, on) + ctx.load(sdata, t + s, on), on)
        ctx.syncthreads()
        step(s // 2)

    step(b // 2)
    ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)


def block_sum_first_half(ctx, x, out, n):  # sums only the first half of each block
    b, t = ctx.blockDim.x, ctx.threadIdx.x
    i = ctx.blockIdx.x * b + t
    sdata = ctx.shared(b)
    ctx.store(sdata, t, ctx.load(x, i, i < n))
    ctx.syncthreads()
    s = b // 4
    while s > 0:
        on = t < s
        ctx.store(sdata, t, ctx.load(sdata, t, on) + ctx.load(sdata, t + s, on), on)
        ctx.syncthreads()
        s //= 2
    ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)


def block_sum_private(ctx, x, out, n):
    block_sum(ctx, x, out, n)
    ctx._stats.bank_conflicts = 0


REDUCE = [
    honest("07.3", "sequential addressing", lambda: lab07.check_block_sum(block_sum)),
    honest("07.3", "a recursive tree", lambda: lab07.check_block_sum(block_sum_recursive)),
    wrong(
        "07.3",
        "interleaved addressing",
        lambda: lab07.check_block_sum(unblocked(K.block_sum_interleaved)),
        match="bank_conflicts = ",
    ),
    wrong(
        "07.3",
        "divergent addressing",
        lambda: lab07.check_block_sum(block_sum_divergent),
        match="divergence",
    ),
    wrong(
        "07.3",
        "half the block",
        lambda: lab07.check_block_sum(block_sum_first_half),
        match="sum of x",
    ),
    cheat(
        "07.3",
        "the reference",
        lambda: lab07.check_block_sum(K.block_sum_sequential),
        error=ReferenceCalledError,
    ),
    cheat("07.3", "torch", lambda: lab07.check_block_sum(_torch_kernel), error=ForbiddenCallError),
    cheat(
        "07.3",
        "numpy sums across lanes",
        lambda: lab07.check_block_sum(_block_sum_across_lanes),
        match="no GPU thread",
    ),
    cheat(
        "07.3",
        "interleaved, conflicts zeroed via gc",
        lambda: lab07.check_block_sum(
            _then_zero(
                unblocked(K.block_sum_interleaved),
                "shared_load_transactions",
                "shared_store_transactions",
            )
        ),
        match="bank_conflicts = ",
    ),
    cheat(
        "07.3",
        "ctx._stats rewritten",
        lambda: lab07.check_block_sum(block_sum_private),
        match="_stats",
        error=StudentError,
    ),
]


# --------------------------------------------------------------------------- 07.4
def matmul_while(ctx, a, b, c, m, n, k):  # while loops, separate reads, a helper
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    row, col = ctx.blockIdx.y * 16 + ty, ctx.blockIdx.x * 16 + tx
    a_s, b_s = ctx.shared((16, 16)), ctx.shared((16, 16))

    def dot16():
        total, p = np.zeros(ty.shape, np.float32), 0
        while p < 16:
            total = total + ctx.load(a_s, (ty, np.full_like(tx, p))) * ctx.load(
                b_s, (np.full_like(ty, p), tx)
            )
            p += 1
        return total

    acc, p0 = np.zeros(ty.shape, np.float32), 0
    while p0 < k:
        ctx.store(a_s, (ty, tx), ctx.load(a, (row, p0 + tx)))
        ctx.store(b_s, (ty, tx), ctx.load(b, (p0 + ty, col)))
        ctx.syncthreads()
        acc = acc + dot16()
        ctx.syncthreads()
        p0 += 16
    ctx.store(c, (row, col), acc)


def matmul_one_tile(ctx, a, b, c, m, n, k):  # only the first tile of the inner dimension
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    row, col = ctx.blockIdx.y * 16 + ty, ctx.blockIdx.x * 16 + tx
    a_s, b_s = ctx.shared((16, 16)), ctx.shared((16, 16))
    ctx.store(a_s, (ty, tx), ctx.load(a, (row, tx)))
    ctx.store(b_s, (ty, tx), ctx.load(b, (ty, col)))
    ctx.syncthreads()
    acc = sum(ctx.load(a_s, (ty, p)) * ctx.load(b_s, (p, tx)) for p in range(16))
    ctx.store(c, (row, col), acc)
    for p0 in range(16, k, 16):  # the rest of a and b loaded (so every element is read), unused
        ctx.load(a, (row, p0 + tx))
        ctx.load(b, (p0 + ty, col))


MATMUL = [
    honest("07.4", "shared tiles, for loops", lambda: lab07.check_matmul_tiled(matmul_tiled)),
    honest("07.4", "while loops and a helper", lambda: lab07.check_matmul_tiled(matmul_while)),
    wrong(
        "07.4",
        "untiled",
        lambda: lab07.check_matmul_tiled(unblocked(K.matmul_naive)),
        match="gld_transactions = .*once per \\*tile\\*",
    ),
    wrong(
        "07.4",
        "b tile read down a column",
        lambda: lab07.check_matmul_tiled(lambda *a: matmul_tiled(*a, b_transposed=True)),
        match="bank_conflicts = ",
    ),
    wrong(
        "07.4",
        "one inner tile",
        lambda: lab07.check_matmul_tiled(matmul_one_tile),
        match="sum over p",
    ),
    cheat(
        "07.4",
        "the reference",
        lambda: lab07.check_matmul_tiled(K.matmul_tiled),
        error=ReferenceCalledError,
    ),
    cheat(
        "07.4", "torch", lambda: lab07.check_matmul_tiled(_torch_kernel), error=ForbiddenCallError
    ),
    cheat(
        "07.4",
        "numpy matmul across lanes",
        lambda: lab07.check_matmul_tiled(_matmul_across_lanes),
        match="no GPU thread",
    ),
    cheat(
        "07.4",
        "untiled, counters zeroed via gc",
        lambda: lab07.check_matmul_tiled(_then_zero(unblocked(K.matmul_naive), "gld_transactions")),
        match="gld_transactions = ",
    ),
]


# --------------------------------------------------------------------------- 07.5
def transpose_swizzled(ctx, src, dst, rows, cols):
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    bx, by = ctx.blockIdx.x, ctx.blockIdx.y
    tile = ctx.shared((32, 32))
    ctx.store(tile, (ty, tx ^ ty), ctx.load(src, (by * 32 + ty, bx * 32 + tx)))
    ctx.syncthreads()
    ctx.store(dst, (bx * 32 + ty, by * 32 + tx), ctx.load(tile, (tx, ty ^ tx)))


def transpose_same_tile(ctx, src, dst, rows, cols):  # forgets to swap the block indices
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    bx, by = ctx.blockIdx.x, ctx.blockIdx.y
    tile = ctx.shared((32, 33))
    ctx.store(tile, (ty, tx), ctx.load(src, (by * 32 + ty, bx * 32 + tx)))
    ctx.syncthreads()
    ok = (by * 32 + ty < cols) & (bx * 32 + tx < rows)
    ctx.store(dst, (by * 32 + ty, bx * 32 + tx), ctx.load(tile, (tx, ty)), ok)


def transpose_host(ctx, src, dst, rows, cols):
    t = src.to_numpy().T.copy()
    ctx.store(dst, (ctx.threadIdx.y, ctx.threadIdx.x), t[ctx.threadIdx.y, ctx.threadIdx.x])


TRANSPOSE = [
    honest("07.5", "a padded tile", lambda: lab07.check_transpose(transpose)),
    honest("07.5", "an XOR swizzle", lambda: lab07.check_transpose(transpose_swizzled)),
    wrong(
        "07.5",
        "unpadded tile",
        lambda: lab07.check_transpose(lambda *a: transpose(*a, pad=0)),
        match="32-way conflict",
    ),
    wrong(
        "07.5",
        "direct transpose",
        lambda: lab07.check_transpose(unblocked(K.transpose_naive)),
        match="gst_transactions = ",
    ),
    wrong(
        "07.5",
        "block indices not swapped",
        lambda: lab07.check_transpose(transpose_same_tile),
        match="owns src's tile",
    ),
    cheat(
        "07.5",
        "the reference",
        lambda: lab07.check_transpose(K.transpose_padded),
        error=ReferenceCalledError,
    ),
    cheat("07.5", "torch", lambda: lab07.check_transpose(_torch_kernel), error=ForbiddenCallError),
    cheat(
        "07.5",
        "numpy .T across lanes",
        lambda: lab07.check_transpose(_transpose_across_lanes),
        match="no GPU thread",
    ),
    cheat(
        "07.5",
        "unpadded, conflicts zeroed via gc",
        lambda: lab07.check_transpose(
            _then_zero(lambda *a: transpose(*a, pad=0), "shared_load_transactions")
        ),
        match="32-way conflict",
    ),
    cheat(
        "07.5",
        "a host copy",
        lambda: lab07.check_transpose(transpose_host),
        match="cannot copy",
        error=StudentError,
    ),
]

ATTEMPTS = [*PREDICT, *VECTOR, *REDUCE, *MATMUL, *TRANSPOSE]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
