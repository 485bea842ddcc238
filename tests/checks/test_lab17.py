"""Lab 17 graders: the reference passes; wrong answers, budget breakers and reference calls fail."""

from __future__ import annotations

import pytest

from a2s.checks import lab17
from a2s.checks.core import ReferenceCalledError
from minitorch.runtime import allocator as A
from minitorch.runtime.allocator import Block
from tests.helpers.graders import rejects, unblocked_in

free = unblocked_in("minitorch.runtime")
MIB = 1 << 20


MUSTS = [
    ("17.1", "a multiple of 512 (at least 512)", "test_wrong_size_classes_are_rejected"),
    (
        "17.1",
        "2 MiB in the small pool; 20 MiB for large requests under 10 MiB",
        "test_wrong_size_classes_are_rejected",
    ),
    ("17.1", "`rounded >= nbytes`, `rounded % 512 == 0`, `segment >= rounded`", "test_attempt"),
    (
        "17.2",
        "find the **smallest** free block with `block.size >= size` (lowest address on ties)",
        "test_wrong_alloc_blocks_are_rejected",
    ),
    (
        "17.2",
        "split it when the rest is `>= 512` (small pool) or `> 1 MiB` (large pool)",
        "test_wrong_alloc_blocks_are_rejected",
    ),
    (
        "17.2",
        "must reserve no more than the best-fit splitting allocator",
        "test_alloc_block_over_the_reserved_budget_is_rejected",
    ),
    ("17.2", 'First fit, worst fit and "no split" fail with their name', "test_attempt"),
    ("17.3", "**if they belong to the same segment**", "test_wrong_free_blocks_are_rejected"),
    (
        "17.3",
        "no coalescing costs a second device allocation",
        "test_free_block_without_coalescing_costs_a_device_allocation",
    ),
    ("17.4", "every address inside a live segment, no two live blocks overlapping", "test_attempt"),
    ("17.4", "add its size to `allocated`", "test_attempt"),
    ("17.4", "The device is not told.", "test_attempt"),
    (
        "17.4",
        "**none in the third step**",
        "test_value_correct_allocator_over_the_reserved_budget_is_rejected",
    ),
    (
        "17.4",
        r"a reserved peak $\le 1.25\,L^\*$",
        "test_value_correct_allocator_over_the_reserved_budget_is_rejected",
    ),
    (
        "17.4",
        "the counters agree with the device (`peak_reserved` too, across an `empty_cache`)",
        "test_wrong_allocators_are_rejected",
    ),
    (
        "17.4",
        "with blocks still live releases only the segments that are one whole free block",
        "test_wrong_allocators_are_rejected",
    ),
    ("17.5", "over the **free** blocks of `pool`", "test_wrong_fragmentations_are_rejected"),
    ("17.5", "`0.0` when no block is free", "test_wrong_fragmentations_are_rejected"),
    ("17.5", "the ratio without `1 -`", "test_wrong_fragmentations_are_rejected"),
]


def test_reference_passes() -> None:
    lab17.check_size_class(free(A.size_class))
    lab17.check_alloc_block(free(A.alloc_block))
    lab17.check_free_block(free(A.free_block))
    lab17.check_caching_allocator(free(A.malloc), free(A.free), free(A.empty_cache))
    lab17.check_fragmentation(free(A.fragmentation))


# ---------------------------------------------------------------- 17.1 size classes
def size_pow2(n):
    size = 512
    while size < n:
        size *= 2
    return size, ("small" if size <= MIB else "large"), (2 * MIB if size <= MIB else 20 * MIB)


def size_strict(n):
    size = max(512, -(-n // 512) * 512)
    if size < MIB:
        return size, "small", 2 * MIB
    return size, "large", 20 * MIB if size < 10 * MIB else -(-size // (2 * MIB)) * 2 * MIB


def size_own_segment(n):
    size = max(512, -(-n // 512) * 512)
    return (size, "small", 2 * MIB) if size <= MIB else (size, "large", size)


def size_ok(n):
    size = max(512, -(-n // 512) * 512)
    if size <= MIB:
        return size, "small", 2 * MIB
    return size, "large", 20 * MIB if size < 10 * MIB else -(-size // (2 * MIB)) * 2 * MIB


def test_size_class_as_a_list_passes(capsys) -> None:
    lab17.check_size_class(lambda n: list(size_ok(n)))
    assert "✔ Exercise 17.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (size_pow2, "power of two"),
        (size_strict, "exactly 1 MiB"),
        (size_own_segment, "20 MiB"),
        # no minimum: an empty tensor rounds to 0 B
        (lambda n: (-(-n // 512) * 512, *size_ok(n)[1:]), "at least 512"),
        # 10 MiB itself still shares a 20 MiB segment
        (lambda n: (10 * MIB, "large", 20 * MIB) if n == 10 * MIB else size_ok(n), "under"),
    ],
)
def test_wrong_size_classes_are_rejected(wrong, hint: str) -> None:
    rejects(lab17.check_size_class, wrong, match=hint)


def test_size_class_calling_the_reference_is_rejected() -> None:
    rejects(lab17.check_size_class, A.size_class, match="size_class", error=ReferenceCalledError)


# ---------------------------------------------------------------- 17.2 best fit, split
def _taking(pool, i, size, split):
    b = pool[i]
    if split and b.size > size:
        pool.insert(i + 1, Block(b.addr + size, b.size - size, b.segment))
        b.size = size
    b.allocated = True
    return b


def alloc_first_fit(pool, size, small):
    for i, b in enumerate(pool):
        if not b.allocated and b.size >= size:
            rest = b.size - size
            return _taking(pool, i, size, rest >= 512 if small else rest > MIB)
    return None


def alloc_no_split(pool, size, small):
    fits = [i for i, b in enumerate(pool) if not b.allocated and b.size >= size]
    if not fits:
        return None
    return _taking(pool, min(fits, key=lambda i: pool[i].size), size, split=False)


def alloc_split_rule(small_split, large_split, tie=1):
    def alloc(pool, size, small):
        fits = [i for i, b in enumerate(pool) if not b.allocated and b.size >= size]
        if not fits:
            return None
        i = min(fits, key=lambda k: (pool[k].size, tie * pool[k].addr))
        rest = pool[i].size - size
        return _taking(pool, i, size, small_split(rest) if small else large_split(rest))

    return alloc


def alloc_always_split(pool, size, small):
    fits = [i for i, b in enumerate(pool) if not b.allocated and b.size >= size]
    if not fits:
        return None
    return _taking(pool, min(fits, key=lambda i: pool[i].size), size, split=True)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (alloc_first_fit, "first fit"),
        (alloc_no_split, "not split"),
        (alloc_always_split, "over 1 MiB"),
        (alloc_split_rule(lambda r: r > 512, lambda r: r > MIB), ">= 512 B"),
        (alloc_split_rule(lambda r: r >= 512, lambda r: r >= MIB), "exactly 1 MiB"),
        (alloc_split_rule(lambda r: r >= 512, lambda r: r > MIB, tie=-1), "lower"),
    ],
)
def test_wrong_alloc_blocks_are_rejected(wrong, hint: str) -> None:
    rejects(lab17.check_alloc_block, wrong, match=hint)


def test_alloc_block_over_the_reserved_budget_is_rejected(monkeypatch) -> None:
    """Past the block-exact cases, a pool that never splits reserves more on 40 requests."""
    from a2s.checks.lab17 import blocks

    monkeypatch.setattr(blocks, "_alloc_case", lambda *args: None)
    rejects(lab17.check_alloc_block, alloc_no_split, match="reserved .* MiB of segments")


def test_free_block_without_coalescing_costs_a_device_allocation(monkeypatch) -> None:
    """Past the block-exact cases, no coalescing needs a second segment for the 1 MiB."""
    from a2s.checks.lab17 import blocks

    monkeypatch.setattr(blocks, "_free_case", lambda *args: None)
    rejects(lab17.check_free_block, free_no_coalesce, match="needed 2 device allocations")


def test_alloc_block_calling_the_reference_is_rejected() -> None:
    rejects(lab17.check_alloc_block, A.alloc_block, match="alloc_block", error=ReferenceCalledError)


# ---------------------------------------------------------------- 17.3 free, coalesce
def free_no_coalesce(pool, block):
    block.allocated = False
    return block


def free_across_segments(pool, block):
    block.allocated = False
    i = pool.index(block)
    if i + 1 < len(pool) and not pool[i + 1].allocated:
        block.size += pool.pop(i + 1).size
    if i > 0 and not pool[i - 1].allocated:
        pool[i - 1].size += block.size
        del pool[i]
        return pool[i - 1]
    return block


def free_next_only(pool, block):
    block.allocated = False
    i = pool.index(block)
    after = pool[i + 1] if i + 1 < len(pool) else None
    if after is not None and not after.allocated and after.segment == block.segment:
        block.size += pool.pop(i + 1).size
    return block


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (free_no_coalesce, "not merged"),
        (free_across_segments, "two different segments"),
        (free_next_only, "before"),
    ],
)
def test_wrong_free_blocks_are_rejected(wrong, hint: str) -> None:
    rejects(lab17.check_free_block, wrong, match=hint)


def test_free_block_calling_the_reference_is_rejected() -> None:
    rejects(lab17.check_free_block, A.free_block, match="free_block", error=ReferenceCalledError)


# ---------------------------------------------------------------- 17.4 the allocator, replayed
def bump_malloc(state, nbytes):
    """Value-correct (valid, non-overlapping addresses) but never reuses a freed byte."""
    size, _, segment = A.size_class(nbytes)
    top = state.live.get(-1)
    if top is None or top[1] + size > top[0] + top[2]:
        base = state.device.malloc(max(segment, size))
        state.device_allocs += 1
        state.reserved += max(segment, size)
        state.peak_reserved = max(state.peak_reserved, state.reserved)
        top = (base, base, max(segment, size))
    state.live[-1] = (top[0], top[1] + size, top[2])
    state.live[top[1]] = (size,)
    state.allocated += size
    return top[1]


def bump_free(state, addr):
    state.allocated -= state.live.pop(addr)[0]


def naive_malloc(state, nbytes):
    """Value-correct: one device allocation per request, freed at once."""
    size = A.round_size(nbytes)
    addr = state.device.malloc(size)
    state.live[addr] = (size, "naive")
    state.device_allocs += 1
    state.reserved += size
    state.peak_reserved = max(state.peak_reserved, state.reserved)
    return addr


def naive_free(state, addr):
    size, _ = state.live.pop(addr)
    state.device.free(addr)
    state.reserved -= size


def no_empty_cache(state):
    return 0


def free_never_coalescing(state, addr):
    """Returns the block to its pool but never merges it with its free neighbours."""
    block, _ = state.live.pop(addr)
    state.allocated -= block.size
    block.allocated = False


good_malloc, good_free, good_empty = free(A.malloc), free(A.free), free(A.empty_cache)


def empty_first_block_free(state):
    """Releases every segment whose first block is free, live blocks behind it or not."""
    released = 0
    for pool in state.pools.values():
        for b in [b for b in pool if not b.allocated and b.addr == b.segment]:
            state.device.free(b.addr)
            pool.remove(b)
            released += b.size
    state.reserved -= released
    return released


def malloc_peak_is_reserved(state, nbytes):
    """peak_reserved set to reserved on each malloc: wrong once empty_cache lowered reserved."""
    addr = good_malloc(state, nbytes)
    state.peak_reserved = state.reserved
    return addr


@pytest.mark.parametrize(
    ("fns", "hint"),
    [
        ((bump_malloc, bump_free, good_empty), "device allocations"),
        ((naive_malloc, naive_free, good_empty), "device allocations"),
        ((good_malloc, good_free, no_empty_cache), "empty_cache .*released"),
        ((good_malloc, free_never_coalescing, good_empty), "device allocations"),
        ((good_malloc, good_free, empty_first_block_free), "still live"),
        ((malloc_peak_is_reserved, good_free, good_empty), "keep the max"),
    ],
)
def test_wrong_allocators_are_rejected(fns, hint: str) -> None:
    rejects(lab17.check_caching_allocator, *fns, match=hint)


def test_value_correct_allocator_over_the_reserved_budget_is_rejected(monkeypatch) -> None:
    """Exact on the small traces, but never reuses on the training trace: the budget rejects it."""
    from a2s.checks.lab17 import replay

    monkeypatch.setattr(replay, "plain_replay", lambda trace: (0, 0))
    monkeypatch.setattr(replay, "_traces", lambda g: [])
    rejects(
        lab17.check_caching_allocator,
        bump_malloc,
        bump_free,
        good_empty,
        match="device allocations|reserved peak",
    )


def test_allocator_calling_the_reference_is_rejected() -> None:
    rejects(
        lab17.check_caching_allocator,
        A.malloc,
        A.free,
        A.empty_cache,
        match="malloc|free|empty_cache",
        error=ReferenceCalledError,
    )


# ---------------------------------------------------------------- 17.5 fragmentation
def frag_free_share(pool):
    total = sum(b.size for b in pool)
    return sum(b.size for b in pool if not b.allocated) / total


def frag_ratio(pool):
    free_ = [b.size for b in pool if not b.allocated]
    return max(free_) / sum(free_) if free_ else 0.0


def frag_nan(pool):
    free_ = [b.size for b in pool if not b.allocated]
    return 1 - max(free_, default=float("nan")) / sum(free_) if free_ else float("nan")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [(frag_free_share, "free share"), (frag_ratio, "1 - largest"), (frag_nan, "NaN")],
)
def test_wrong_fragmentations_are_rejected(wrong, hint: str) -> None:
    rejects(lab17.check_fragmentation, wrong, match=hint)


def test_fragmentation_calling_the_reference_is_rejected() -> None:
    rejects(
        lab17.check_fragmentation,
        A.fragmentation,
        match="fragmentation",
        error=ReferenceCalledError,
    )


def test_the_graders_own_model_is_blocked() -> None:
    """The grader's plain model is importable; calling it is calling the reference."""
    from a2s.checks.lab17 import _truth as model
    from a2s.checks.lab17 import frag

    def alloc_by_model(pool, size, small):
        rows = model.pool_rows(pool)
        i = model.plain_alloc(rows, size, small)
        return None if i is None else Block(*rows[i])

    rejects(
        lab17.check_size_class,
        model.plain_size_class,
        match="reference",
        error=ReferenceCalledError,
    )
    rejects(lab17.check_alloc_block, alloc_by_model, match="reference", error=ReferenceCalledError)
    rejects(
        lab17.check_fragmentation,
        lambda pool: frag._plain(model.pool_rows(pool)),
        match="reference",
        error=ReferenceCalledError,
    )
