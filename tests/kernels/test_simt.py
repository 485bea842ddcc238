"""The SIMT machine: indices, masks, shared memory limits, barriers, counters."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.kernels.simt import Dim3, RaceError, launch, to_device


def test_thread_and_block_indices_cover_the_grid_once():
    seen = []

    def record(ctx, out):
        gx = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
        gy = ctx.blockIdx.y * ctx.blockDim.y + ctx.threadIdx.y
        ctx.store(out, (gy, gx), gy * 100 + gx)
        seen.append((ctx.blockIdx, ctx.gridDim, ctx.blockDim))

    out = to_device(np.zeros((6, 8), np.int32))
    stats = launch(record, (2, 3), (4, 2), (out,))
    want = np.arange(6)[:, None] * 100 + np.arange(8)
    assert np.array_equal(out.to_numpy(), want)
    assert stats.blocks == 6 and seen[1][0] == Dim3(1, 0, 0) and seen[0][1] == Dim3(2, 3, 1)


def test_thread_index_order_is_x_fastest():
    def record(ctx, out):
        ctx.store(out, ctx.tid, ctx.threadIdx.x + 10 * ctx.threadIdx.y + 100 * ctx.threadIdx.z)

    out = to_device(np.zeros(12, np.int64))
    launch(record, 1, (2, 3, 2), (out,))
    assert out.to_numpy()[:7].tolist() == [0, 1, 10, 11, 20, 21, 100]


def test_masked_lanes_issue_nothing_and_read_zero():
    def kernel(ctx, x, y):
        on = ctx.tid < 40  # warp 0 whole, warp 1 partly, warps 2-3 idle
        ctx.store(y, ctx.tid, ctx.load(x, ctx.tid, on) + 1, on)

    x, y = to_device(np.arange(128, dtype=np.float32)), to_device(np.zeros(128, np.float32))
    stats = launch(kernel, 1, 128, (x, y))
    assert stats.gld_requests == 2 and stats.gld_transactions == 4 + 1
    assert y.to_numpy()[39] == 40 and y.to_numpy()[40] == 0
    assert x.reads.sum() == 40 and y.writes.sum() == 40


def test_out_of_bounds_active_lane_raises():
    def kernel(ctx, x):
        ctx.load(x, ctx.tid)

    with pytest.raises(IndexError, match="thread 10 indexed 10"):
        launch(kernel, 1, 32, (to_device(np.zeros(10, np.float32)),))


def test_shared_memory_limit_and_barriers():
    def big(ctx):
        ctx.shared(12 * 1024)  # 48 KiB of float32
        ctx.shared(1)

    with pytest.raises(MemoryError, match="per block"):
        launch(big, 1, 32)

    def fine(ctx):
        s = ctx.shared((32, 33))
        ctx.store(s, (ctx.tid, 0), 1.0)
        ctx.syncthreads()
        ctx.load(s, (31 - ctx.tid, 0))

    stats = launch(fine, 2, 32)
    assert stats.barriers == 2 and stats.shared_bytes == 32 * 33 * 4
    assert stats.bank_conflicts == 0  # stride 33 words: 32 different banks


def test_a_missing_barrier_is_a_race():
    def kernel(ctx):
        s = ctx.shared(32)
        ctx.store(s, ctx.tid, 1.0)
        ctx.load(s, (ctx.tid + 1) % 32)

    with pytest.raises(RaceError):
        launch(kernel, 1, 32)


def test_launch_rejects_oversized_blocks():
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        launch(lambda ctx: None, 1, (32, 33))
