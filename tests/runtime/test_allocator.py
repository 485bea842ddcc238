"""The caching allocator against plain models: rounding, best fit, splits, coalescing."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.runtime.allocator import (
    Block,
    CachingAllocator,
    Device,
    NaiveAllocator,
    alloc_block,
    fragmentation,
    free_block,
    round_size,
    size_class,
)

MiB = 1 << 20


def test_round_size_and_pools() -> None:
    assert [round_size(n) for n in (0, 1, 512, 513, 1024)] == [512, 512, 512, 1024, 1024]
    assert size_class(MiB) == (MiB, "small", 2 * MiB)
    assert size_class(MiB + 1) == (MiB + 512, "large", 20 * MiB)
    assert size_class(10 * MiB) == (10 * MiB, "large", 10 * MiB)
    assert size_class(11 * MiB + 3) == (11 * MiB + 512, "large", 12 * MiB)


def state(pool: list[Block]) -> list[tuple[int, int, int, bool]]:
    return [(b.addr, b.size, b.segment, b.allocated) for b in pool]


def test_best_fit_takes_the_smallest_block_and_splits() -> None:
    pool = [Block(0, 4096, 0), Block(4096, 1024, 0, True), Block(5120, 2048, 0)]
    got = alloc_block(pool, 1536, small=True)
    assert got is pool[2] and state(pool)[2:] == [(5120, 1536, 0, True), (6656, 512, 0, False)]
    assert alloc_block(pool, 8192, small=True) is None


def test_large_pool_keeps_a_small_rest_unsplit() -> None:
    pool = [Block(0, 3 * MiB, 0)]
    alloc_block(pool, 2 * MiB, small=False)
    assert state(pool) == [(0, 3 * MiB, 0, True)]


def test_free_coalesces_within_a_segment_only() -> None:
    pool = [Block(0, 512, 0), Block(512, 512, 0, True), Block(1024, 512, 0), Block(1536, 512, 1536)]
    merged = free_block(pool, pool[1])
    assert state(pool) == [(0, 1536, 0, False), (1536, 512, 1536, False)] and merged is pool[0]
    assert fragmentation(pool) == 1 - 1536 / 2048


def test_second_step_needs_no_device_allocation() -> None:
    dev = Device()
    a = CachingAllocator(dev)
    for _ in range(2):
        addrs = [a.malloc(n) for n in (100, 3000, 2 * MiB, 700_000)]
        for x in addrs:
            a.free(x)
    assert dev.mallocs == 2 and a.stats()["allocated"] == 0
    assert a.empty_cache() == 2 * MiB + 20 * MiB and dev.reserved == 0 and a.state.reserved == 0


def test_naive_allocator_asks_the_device_every_time() -> None:
    dev = Device()
    a = NaiveAllocator(dev)
    for n in (1, 2, 3):
        a.free(a.malloc(n))
    assert dev.mallocs == 3 and a.stats()["peak_reserved"] == 512


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3 * MiB), st.integers(0, 99)), max_size=60))
def test_live_blocks_never_overlap(ops: list[tuple[bool, int, int]]) -> None:
    dev = Device()
    a = CachingAllocator(dev)
    live: dict[int, int] = {}
    for is_free, n, pick in ops:
        if is_free and live:
            addr = sorted(live)[pick % len(live)]
            a.free(addr)
            del live[addr]
        else:
            addr = a.malloc(n)
            assert addr not in live
            live[addr] = round_size(n)
        spans = sorted(live.items())
        assert all(x + s <= y for (x, s), (y, _) in itertools.pairwise(spans))
        st_ = a.stats()
        assert st_["reserved"] >= st_["allocated"] >= sum(live.values())
        assert st_["reserved"] == dev.reserved == sum(b.size for b in a.blocks())
        blocks = a.blocks()
        assert all(b.addr + b.size <= c.addr for b, c in itertools.pairwise(blocks))
        for b, c in itertools.pairwise(blocks):  # free neighbours of one segment are merged
            assert b.allocated or c.allocated or b.segment != c.segment
