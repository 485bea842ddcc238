"""Graders of lab 07: right kernels pass; wrong values, broken budgets and reference calls fail.

The point of the lab is enforced budgets, so every kernel exercise has a test where the
values are right and the traffic is not (untiled matmul, unpadded transpose, interleaved
and divergent reductions, an uncoalesced vector add).
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab07
from a2s.checks.core import ReferenceCalledError, StudentError, blocked
from minitorch.kernels import simt_kernels as K
from minitorch.kernels import simt_memory
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.kernels")


# --------------------------------------------------------------------------- 07.1 predict
def warp_transactions(stride, itemsize=4, segment=32):
    if stride == 0:
        return 1
    step = stride * itemsize
    return 32 if step >= segment else (31 * step) // segment + 1


def test_warp_transactions_passes(capsys):
    lab07.check_warp_transactions(warp_transactions)
    assert "✔ Exercise 07.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda s, b=4, g=32: -(-32 * s * b // g) if s else 1, "at most 32 segments"),
        (lambda s, b=4, g=32: min(32, -(-32 * s * b // g)), "Stride 0"),
        (lambda s, b=4, g=32: max(1, min(32, 32 * s * b // g)), "partly used"),
        (lambda s, b=4, g=32: always_equal(warp_transactions(s, b, g)), "subclass of int"),
    ],
)
def test_warp_transactions_rejects_wrong_predictions(wrong, match):
    rejects(lab07.check_warp_transactions, wrong, match=match)


def test_warp_transactions_rejects_the_simulator():
    def measured(stride, itemsize=4, segment=32):
        addresses = np.arange(32) * stride * itemsize
        return int(simt_memory.warp_segments(addresses, np.ones(32, bool), segment)[0])

    rejects(
        lab07.check_warp_transactions, measured, match="warp_segments", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 07.2 vector add
def vector_add(ctx, a, b, c, n):
    i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
    ok = i < n
    ctx.store(c, i, ctx.load(a, i, ok) + ctx.load(b, i, ok), ok)


def vector_add_strided(ctx, a, b, c, n):
    """Right values (a bijection of the indices), but a warp's lanes gridDim.x elements apart."""
    i = ctx.threadIdx.x * ctx.gridDim.x + ctx.blockIdx.x
    ok = i < n
    ctx.store(c, i, ctx.load(a, i, ok) + ctx.load(b, i, ok), ok)


def test_vector_add_passes_with_ours_and_the_reference(capsys):
    lab07.check_vector_add(vector_add)
    lab07.check_vector_add(unblocked(K.vector_add))
    assert capsys.readouterr().out.count("✔ Exercise 07.2 passed") == 2


def test_vector_add_rejects_wrong_values_and_uncoalesced_access():
    def minus(ctx, a, b, c, n):
        i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
        ctx.store(c, i, ctx.load(a, i, i < n) - ctx.load(b, i, i < n), i < n)

    rejects(lab07.check_vector_add, minus, match="a\\[i\\] \\+ b\\[i\\]")
    rejects(lab07.check_vector_add, vector_add_strided, match="gld_transactions = .* over the")


def test_vector_add_rejects_work_done_outside_the_kernel():
    def host_side(ctx, a, b, c, n):  # writes the answer into global memory behind the counters
        c._data[:] = a._data + b._data
        c.writes[:] = True

    def host_copy(ctx, a, b, c, n):  # copies device memory to the host inside the kernel
        ctx.store(c, ctx.tid, a.to_numpy()[: ctx.tid.size], ctx.tid < n)

    rejects(lab07.check_vector_add, host_side, match="no attribute '_data'", error=StudentError)

    def host_side_via_gc(ctx, a, b, c, n):  # the simulator's arrays, found in the kernel's process
        import gc

        for arr in gc.get_objects():
            if type(arr).__name__ == "DeviceArray" and arr.shape == c.shape:
                arr._data[:] = 1.0
                arr.writes[:] = True

    # those are the child's copies: the grader's arrays never got a value
    rejects(lab07.check_vector_add, host_side_via_gc, match="a\\[i\\] \\+ b\\[i\\]|never stored")
    rejects(lab07.check_vector_add, host_copy, match="cannot copy", error=StudentError)


def test_vector_add_without_a_bounds_guard_raises():
    def unguarded(ctx, a, b, c, n):
        i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
        ctx.store(c, i, ctx.load(a, i) + ctx.load(b, i))

    rejects(lab07.check_vector_add, unguarded, match="guard it with a mask", error=StudentError)


def test_vector_add_rejects_the_reference():
    def via_reference(ctx, a, b, c, n):
        K.vector_add(ctx, a, b, c, n)

    rejects(lab07.check_vector_add, via_reference, match="vector_add", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 07.3 reduction
def block_sum(ctx, x, out, n):
    b, t = ctx.blockDim.x, ctx.threadIdx.x
    i = ctx.blockIdx.x * b + t
    sdata = ctx.shared(b)
    ctx.store(sdata, t, ctx.load(x, i, i < n))
    ctx.syncthreads()
    s = b // 2
    while s > 0:
        on = t < s
        ctx.store(sdata, t, ctx.load(sdata, t, on) + ctx.load(sdata, t + s, on), on)
        ctx.syncthreads()
        s //= 2
    ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)


def block_sum_divergent(ctx, x, out, n, barrier=True):
    """Right sums, no bank conflicts, but every warp issues every step (t % 2s == 0)."""
    b, t = ctx.blockDim.x, ctx.threadIdx.x
    i = ctx.blockIdx.x * b + t
    sdata = ctx.shared(b)
    ctx.store(sdata, t, ctx.load(x, i, i < n))
    ctx.syncthreads()
    s = 1
    while s < b:
        on = t % (2 * s) == 0
        ctx.store(sdata, t, ctx.load(sdata, t, on) + ctx.load(sdata, t + s, on), on)
        if barrier:
            ctx.syncthreads()
        s *= 2
    ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)


def test_block_sum_passes_with_ours_and_the_reference(capsys):
    lab07.check_block_sum(block_sum)
    lab07.check_block_sum(unblocked(K.block_sum_sequential))
    assert capsys.readouterr().out.count("✔ Exercise 07.3 passed") == 2


def test_block_sum_rejects_budget_breaking_reductions_with_right_values():
    rejects(lab07.check_block_sum, unblocked(K.block_sum_interleaved), match="bank_conflicts = ")
    rejects(lab07.check_block_sum, block_sum_divergent, match="shared_transactions = .*divergence")
    rejects(lab07.check_block_sum, unblocked(K.block_sum_divergent), match="divergence")


def test_block_sum_rejects_wrong_sums_and_missing_barriers():
    def first_half_only(ctx, x, out, n):  # stops one step early
        b, t = ctx.blockDim.x, ctx.threadIdx.x
        i = ctx.blockIdx.x * b + t
        sdata = ctx.shared(b)
        ctx.store(sdata, t, ctx.load(x, i, i < n))
        ctx.syncthreads()
        s = b // 2
        while s > 1:
            on = t < s
            ctx.store(sdata, t, ctx.load(sdata, t, on) + ctx.load(sdata, t + s, on), on)
            ctx.syncthreads()
            s //= 2
        ctx.store(out, ctx.blockIdx.x, ctx.load(sdata, 0, t == 0), t == 0)

    rejects(lab07.check_block_sum, first_half_only, match="sum of x")
    no_barrier = lambda *a: block_sum_divergent(*a, barrier=False)  # noqa: E731
    rejects(lab07.check_block_sum, no_barrier, match="race on shared memory", error=StudentError)


def test_block_sum_rejects_the_reference():
    rejects(
        lab07.check_block_sum,
        K.block_sum_sequential,
        match="block_sum_sequential",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 07.4 matmul
T = 16


def matmul_tiled(ctx, a, b, c, m, n, k, b_transposed=False):
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    row, col = ctx.blockIdx.y * T + ty, ctx.blockIdx.x * T + tx
    a_s, b_s = ctx.shared((T, T)), ctx.shared((T, T))
    acc = 0.0
    for p0 in range(0, k, T):
        ctx.store(a_s, (ty, tx), ctx.load(a, (row, p0 + tx)))
        ctx.store(b_s, (tx, ty) if b_transposed else (ty, tx), ctx.load(b, (p0 + ty, col)))
        ctx.syncthreads()
        for p in range(T):
            b_val = ctx.load(b_s, (tx, p) if b_transposed else (p, tx))
            acc = acc + ctx.load(a_s, (ty, p)) * b_val
        ctx.syncthreads()
    ctx.store(c, (row, col), acc)


def test_matmul_tiled_passes_with_ours_and_the_reference(capsys):
    lab07.check_matmul_tiled(matmul_tiled)
    lab07.check_matmul_tiled(unblocked(K.matmul_tiled))
    assert capsys.readouterr().out.count("✔ Exercise 07.4 passed") == 2


def test_matmul_untiled_fails_even_with_right_values():
    rejects(lab07.check_matmul_tiled, unblocked(K.matmul_naive), match="gld_transactions = .*tile")


def test_matmul_rejects_bank_conflicts_and_wrong_values():
    conflicted = lambda *a: matmul_tiled(*a, b_transposed=True)  # noqa: E731
    rejects(lab07.check_matmul_tiled, conflicted, match="bank_conflicts = .*column")

    def one_tile_only(ctx, a, b, c, m, n, k):
        matmul_tiled(ctx, a, b, c, m, n, min(k, T))

    rejects(lab07.check_matmul_tiled, one_tile_only, match="sum over p")


def test_matmul_rejects_the_reference():
    rejects(lab07.check_matmul_tiled, K.matmul_tiled, match="matmul", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 07.5 transpose
def transpose(ctx, src, dst, rows, cols, pad=1):
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    bx, by = ctx.blockIdx.x, ctx.blockIdx.y
    tile = ctx.shared((32, 32 + pad))
    ctx.store(tile, (ty, tx), ctx.load(src, (by * 32 + ty, bx * 32 + tx)))
    ctx.syncthreads()
    ctx.store(dst, (bx * 32 + ty, by * 32 + tx), ctx.load(tile, (tx, ty)))


def test_transpose_passes_with_ours_and_the_reference(capsys):
    lab07.check_transpose(transpose)
    lab07.check_transpose(unblocked(K.transpose_padded))
    assert capsys.readouterr().out.count("✔ Exercise 07.5 passed") == 2


def test_transpose_rejects_right_values_with_conflicts_or_uncoalesced_stores():
    rejects(lab07.check_transpose, lambda *a: transpose(*a, pad=0), match="32-way conflict")
    rejects(lab07.check_transpose, unblocked(K.transpose_naive), match="gst_transactions = ")


def test_transpose_rejects_wrong_tiles_and_the_reference():
    def same_tile(ctx, src, dst, rows, cols):  # forgets to swap the block indices
        ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
        bx, by = ctx.blockIdx.x, ctx.blockIdx.y
        tile = ctx.shared((32, 33))
        ctx.store(tile, (ty, tx), ctx.load(src, (by * 32 + ty, bx * 32 + tx)))
        ctx.syncthreads()
        ok = (by * 32 + ty < cols) & (bx * 32 + tx < rows)
        ctx.store(dst, (by * 32 + ty, bx * 32 + tx), ctx.load(tile, (tx, ty)), ok)

    rejects(lab07.check_transpose, same_tile, match="owns src's tile")
    rejects(
        lab07.check_transpose, K.transpose_padded, match="transpose", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- all graders
def test_graders_are_registered_and_blocks_resolve():
    checks = [getattr(lab07, name) for name in lab07.__all__]
    assert sorted(c.exercise for c in checks) == [f"07.{i}" for i in range(1, 6)]
    for c in checks:
        assert "torch" in c.forbid and c.blocks
        with blocked(c.blocks):
            pass


def test_stub_is_reported():
    def stub(*args):
        raise NotImplementedError("Exercise 07.4: tiled matmul")

    rejects(lab07.check_matmul_tiled, stub, match="not implemented")


def test_a_kernel_that_fakes_its_counters_is_rejected():
    def zero_counters(ctx, a, b, c, n):  # right values, then the counters reset by hand
        i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
        ctx.store(c, i, ctx.load(a, i, i < n) + ctx.load(b, i, i < n), i < n)
        ctx._stats.gld_transactions = 0

    def strided_then_zeroed_via_gc(ctx, a, b, c, n):  # uncoalesced, then every stats object zeroed
        import gc

        vector_add_strided(ctx, a, b, c, n)
        for obj in gc.get_objects():
            if type(obj).__name__ == "KernelStats":
                obj.gld_transactions = obj.gst_transactions = 0

    # the context is a proxy of requests: no counters on it, and the grader's are elsewhere
    rejects(
        lab07.check_vector_add, zero_counters, match="no attribute '_stats'", error=StudentError
    )
    rejects(lab07.check_vector_add, strided_then_zeroed_via_gc, match="gld_transactions = .* over")


# --------------------------------------------------------------------------- review additions
def test_warp_transactions_rejects_the_graders_own_loop():
    from a2s.checks.lab07 import coalescing

    rejects(
        lab07.check_warp_transactions,
        coalescing._loop_segments,
        match="_loop_segments",
        error=ReferenceCalledError,
    )


def test_warp_transactions_in_floats_is_told_to_use_integer_division():
    rejects(
        lab07.check_warp_transactions,
        lambda s, b=4, g=32: 1.0 if s == 0 else min(32.0, 31 * s * b / g + 1),
        match="integer division",
    )


def _block_sum_across_lanes(ctx, x, out, n):
    """Right sums with no shared memory: numpy adds the whole thread vector at once."""
    t = ctx.threadIdx.x
    i = ctx.blockIdx.x * ctx.blockDim.x + t
    total = ctx.load(x, i, i < n).astype(np.float64).sum()
    ctx.store(out, ctx.blockIdx.x, np.full(t.size, total, np.float32), t == 0)


def _matmul_across_lanes(ctx, a, b, c, m, n, k):
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    row, col = ctx.blockIdx.y * 16 + ty, ctx.blockIdx.x * 16 + tx
    acc = np.zeros((16, 16), np.float32)
    for p0 in range(0, k, 16):
        a_tile = ctx.load(a, (row, p0 + tx)).reshape(16, 16)
        acc += a_tile @ ctx.load(b, (p0 + ty, col)).reshape(16, 16)
    ctx.store(c, (row, col), acc.reshape(-1))


def _transpose_across_lanes(ctx, src, dst, rows, cols):
    ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
    bx, by = ctx.blockIdx.x, ctx.blockIdx.y
    tile = ctx.load(src, (by * 32 + ty, bx * 32 + tx)).reshape(32, 32)
    ctx.store(dst, (bx * 32 + ty, by * 32 + tx), tile.T.reshape(-1))


def test_kernels_that_move_values_across_lanes_with_numpy_are_rejected():
    """On budget and right, but no thread could do it: shared memory was never used."""
    match = "no GPU thread can do"
    rejects(lab07.check_block_sum, _block_sum_across_lanes, match=match)
    rejects(lab07.check_matmul_tiled, _matmul_across_lanes, match=match)
    rejects(lab07.check_transpose, _transpose_across_lanes, match=match)


def test_transpose_with_a_swizzled_tile_passes(capsys):
    """An XOR swizzle instead of padding is conflict-free too."""

    def swizzled(ctx, src, dst, rows, cols):
        ty, tx = ctx.threadIdx.y, ctx.threadIdx.x
        bx, by = ctx.blockIdx.x, ctx.blockIdx.y
        tile = ctx.shared((32, 32))
        ctx.store(tile, (ty, tx ^ ty), ctx.load(src, (by * 32 + ty, bx * 32 + tx)))
        ctx.syncthreads()
        ctx.store(dst, (bx * 32 + ty, by * 32 + tx), ctx.load(tile, (tx, ty ^ tx)))

    lab07.check_transpose(swizzled)
    assert "✔ Exercise 07.5 passed" in capsys.readouterr().out


# --------------------------------------------------------------------------- issue 18 additions
def test_warp_transactions_rejects_a_loop_over_lanes():
    def lanes(stride, itemsize=4, segment=32):
        return len({lane * stride * itemsize // segment for lane in range(32)})

    rejects(lab07.check_warp_transactions, lanes, match="loop over the 32 lanes")


def test_prose_invariants_hold():
    """Each invariant of the prose: its closed form, and the count measured on the simulator."""
    from minitorch.kernels.simt import launch, to_device

    assert warp_transactions(1) == 32 * 4 // 32 == 4 and warp_transactions(8) == 32
    f32 = np.float32
    n = 1000
    a, b, c = (to_device(np.ones(n, f32)) for _ in range(3))
    assert (
        launch(vector_add, -(-n // 256), 256, (a, b, c, n)).gld_transactions
        == 2 * -(-4 * n // 32)
        == 250
    )
    x, out = to_device(np.ones(256, f32)), to_device(np.zeros(1, f32))
    st = launch(block_sum, 1, 256, (x, out, 256))
    # fill (8 warps) + 3 per step for each warp with an active lane (4, 2, 1 x 6) + the total
    assert st.shared_transactions == 8 + 3 * (4 + 2 + 1 * 6) + 1 == 45 and st.barriers == 1 + 8
    m = 64
    a, b, c = (
        to_device(np.ones((m, m), f32)),
        to_device(np.ones((m, m), f32)),
        to_device(np.zeros((m, m), f32)),
    )
    assert (
        launch(matmul_tiled, (4, 4), (16, 16), (a, b, c, m, m, m)).gld_transactions
        == 4 * m**3 // 16**2
        == 4096
    )
    src, dst = to_device(np.ones((64, 96), f32)), to_device(np.zeros((96, 64), f32))
    st = launch(transpose, (3, 2), (32, 32), (src, dst, 64, 96))
    assert st.gst_transactions == 4 * 64 * 96 // 32 == 768 and st.bank_conflicts == 0


MUSTS = [
    (
        "07.1",
        "as a **closed form** (no loop over lanes, no simulator; the simulator's counter is "
        "blocked)",
        "test_warp_transactions_rejects_a_loop_over_lanes",
    ),
    (
        "07.1",
        "`warp_transactions(1) == 4` and `warp_transactions(8) == 32`",
        "test_prose_invariants_hold",
    ),
    ("07.1", "Exercise code may not call torch", "test_attempt"),
    (
        "07.2",
        "requires exact `float32` values",
        "test_vector_add_rejects_wrong_values_and_uncoalesced_access",
    ),
    (
        "07.2",
        "every element loaded and stored through `ctx`",
        "test_vector_add_rejects_work_done_outside_the_kernel",
    ),
    (
        "07.2",
        "global traffic at the minimum above",
        "test_vector_add_rejects_wrong_values_and_uncoalesced_access",
    ),
    ("07.2", "for `n = 1000`, `gld_transactions == 250`", "test_prose_invariants_hold"),
    (
        "07.2",
        "every element must move through `ctx.load` / `ctx.store`",
        "test_vector_add_rejects_work_done_outside_the_kernel",
    ),
    (
        "07.3",
        "Stage the block's values in `ctx.shared(B)`",
        "test_kernels_that_move_values_across_lanes_with_numpy_are_rejected",
    ),
    (
        "07.3",
        "every element of `x` loaded once, **zero bank conflicts** and at most the "
        "shared-transaction budget",
        "test_block_sum_rejects_budget_breaking_reductions_with_right_values",
    ),
    (
        "07.3",
        "for $B = 256$, `shared_transactions == 45` per block and `barriers == 9`",
        "test_prose_invariants_hold",
    ),
    ("07.4", "load sectors $\\le 4mnk/T^2$", "test_matmul_untiled_fails_even_with_right_values"),
    (
        "07.4",
        "**zero bank conflicts**: the untiled kernel above fails, whatever its values",
        "test_matmul_rejects_bank_conflicts_and_wrong_values",
    ),
    ("07.4", "for $m = n = k = 64$, `gld_transactions == 4096`", "test_prose_invariants_hold"),
    (
        "07.5",
        "load and store sectors $\\le 4rc/32$ each, and **zero bank conflicts**",
        "test_transpose_rejects_right_values_with_conflicts_or_uncoalesced_stores",
    ),
    (
        "07.5",
        "for a 64x96 `src`, `gst_transactions == 768` and `bank_conflicts == 0`",
        "test_prose_invariants_hold",
    ),
]
