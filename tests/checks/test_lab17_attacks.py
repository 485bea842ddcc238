"""Lab 17 tried as a class would: answers written differently, usual mistakes, cheats.

Written against the graders, not from them: each wrong answer is a mistake a student makes
on the way (first fit, worst fit, no minimum size, bytes asked counted as allocated, a peak
that forgets), each cheat a shortcut (the reference, the grader's own model, a memorised
table, a fake device, the counting device rewritten from the learner's process, events
forged to the grader).
"""

from __future__ import annotations

import bisect
import gc
import math

import numpy as np
import pytest

from a2s.checks import lab17
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from a2s.checks.lab17 import _truth as model
from a2s.checks.lab17 import frag
from minitorch.runtime import allocator as A
from minitorch.runtime.allocator import Block
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab17

MIB = 1 << 20


# ------------------------------------------------------------------------------------ 17.1
def size_bits(n):
    """Round with a mask: 511 is 0b111111111."""
    size = max(512, (n + 511) & ~511)
    pool = "small" if size <= MIB else "large"
    if pool == "small":
        return size, pool, 2 * MIB
    return size, pool, 20 * MIB if size < 10 * MIB else ((size + 2 * MIB - 1) >> 21) << 21


def size_ceil(n):
    import math as m  # an import inside the function

    size = 512 * max(1, m.ceil(n / 512))
    if size <= 1024 * 1024:
        return [size, "small", 2 * 1024 * 1024]
    seg = 20 * MIB if size < 10 * MIB else 2 * MIB * m.ceil(size / (2 * MIB))
    return [size, "large", seg]


def size_floor(n):
    size = max(512, n // 512 * 512)
    return size_bits(size)[0:1] + size_bits(max(size, 1))[1:]


def size_no_minimum(n):
    size = -(-n // 512) * 512
    return (size, *size_bits(n)[1:])


def size_strict_mib(n):
    size, _, _ = size_bits(n)
    return (size, "small", 2 * MIB) if size < MIB else (size, "large", 20 * MIB)


def size_pow2(n):
    size = 512
    while size < n:
        size *= 2
    return (size, *size_bits(size)[1:])


_TABLE = {0: (512, "small", 2 * MIB), 1: (512, "small", 2 * MIB), 512: (512, "small", 2 * MIB)}

ATTEMPTS = [
    honest("17.1", "bit mask", lambda: lab17.check_size_class(size_bits)),
    honest("17.1", "math.ceil, lists", lambda: lab17.check_size_class(size_ceil)),
    wrong("17.1", "rounds down", lambda: lab17.check_size_class(size_floor), match="Round \\*up"),
    wrong(
        "17.1",
        "no 512 minimum",
        lambda: lab17.check_size_class(size_no_minimum),
        match="at least 512",
    ),
    wrong(
        "17.1",
        "1 MiB is large",
        lambda: lab17.check_size_class(size_strict_mib),
        match="exactly 1 MiB",
    ),
    wrong("17.1", "powers of two", lambda: lab17.check_size_class(size_pow2), match="power of two"),
    cheat(
        "17.1",
        "calls the reference",
        lambda: lab17.check_size_class(A.size_class),
        match="size_class",
        error=ReferenceCalledError,
    ),
    cheat(
        "17.1",
        "calls round_size",
        lambda: lab17.check_size_class(lambda n: (A.round_size(n), *size_bits(n)[1:])),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.1",
        "the grader's model",
        lambda: lab17.check_size_class(model.plain_size_class),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.1",
        "a memorised table",
        lambda: lab17.check_size_class(lambda n: _TABLE.get(n, (n, "small", 2 * MIB))),
    ),
    cheat(
        "17.1",
        "an int that equals anything",
        lambda: lab17.check_size_class(lambda n: (always_equal(512), "small", always_equal(0))),
    ),
]


# ------------------------------------------------------------------------------------ 17.2
def alloc_sorted(pool, size, small):
    """min() over the candidates, key (size, address)."""
    fits = [b for b in pool if not b.allocated and b.size >= size]
    if not fits:
        return None
    block = min(fits, key=lambda b: (b.size, b.addr))
    i = next(k for k, b in enumerate(pool) if b is block)
    rest = block.size - size
    if rest >= 512 if small else rest > MIB:
        pool[i + 1 : i + 1] = [Block(block.addr + size, rest, block.segment)]
        block.size = size
    block.allocated = True
    return block


class BestFit:
    """A class with a threshold per pool, called like a function."""

    def __init__(self):
        self.keep = {True: lambda r: r >= 512, False: lambda r: r > MIB}

    def __call__(self, pool, size, small):
        best = -1
        for i in range(len(pool)):
            b = pool[i]
            if b.allocated or b.size < size:
                continue
            if best < 0 or b.size < pool[best].size:
                best = i
        if best < 0:
            return None
        b = pool[best]
        if self.keep[bool(small)](b.size - size):
            pool.insert(best + 1, Block(b.addr + size, b.size - size, b.segment, False))
            b.size = size
        b.allocated = True
        return b


def _take(pool, i, size, small):
    b = pool[i]
    rest = b.size - size
    if rest >= 512 if small else rest > MIB:
        pool.insert(i + 1, Block(b.addr + size, rest, b.segment))
        b.size = size
    b.allocated = True
    return b


def alloc_first(pool, size, small):
    i = next((k for k, b in enumerate(pool) if not b.allocated and b.size >= size), None)
    return None if i is None else _take(pool, i, size, small)


def alloc_worst(pool, size, small):
    fits = [k for k, b in enumerate(pool) if not b.allocated and b.size >= size]
    return None if not fits else _take(pool, max(fits, key=lambda k: pool[k].size), size, small)


def alloc_no_split(pool, size, small):
    fits = [k for k, b in enumerate(pool) if not b.allocated and b.size >= size]
    if not fits:
        return None
    b = pool[min(fits, key=lambda k: (pool[k].size, pool[k].addr))]
    b.allocated = True
    return b


def alloc_last_tie(pool, size, small):
    fits = [k for k, b in enumerate(pool) if not b.allocated and b.size >= size]
    if not fits:
        return None
    return _take(pool, min(fits, key=lambda k: (pool[k].size, -pool[k].addr)), size, small)


def alloc_by_model(pool, size, small):
    rows = model.pool_rows(pool)
    i = model.plain_alloc(rows, size, small)
    pool[:] = [Block(*r) for r in rows]
    return None if i is None else pool[i]


class LyingBlock(Block):
    def __eq__(self, other):
        return True


def alloc_lying_blocks(pool, size, small):
    """Every block swapped for one that says it equals whatever it is compared with."""
    pool[:] = [LyingBlock(b.addr, b.size, b.segment, b.allocated) for b in pool]
    return pool[0] if pool else None


class CountingInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def alloc_lying_sizes(pool, size, small):
    b = alloc_first(pool, size, small)
    for x in pool:
        x.size = CountingInt(x.size)
    return b


ATTEMPTS += [
    honest(
        "17.2", "min over candidates, slice insert", lambda: lab17.check_alloc_block(alloc_sorted)
    ),
    honest("17.2", "a callable class", lambda: lab17.check_alloc_block(BestFit())),
    wrong("17.2", "first fit", lambda: lab17.check_alloc_block(alloc_first), match="first fit \\("),
    wrong("17.2", "worst fit", lambda: lab17.check_alloc_block(alloc_worst), match="worst fit \\("),
    wrong(
        "17.2", "never splits", lambda: lab17.check_alloc_block(alloc_no_split), match="not split"
    ),
    wrong(
        "17.2",
        "ties to the higher address",
        lambda: lab17.check_alloc_block(alloc_last_tie),
        match="lower",
    ),
    cheat(
        "17.2",
        "calls the reference",
        lambda: lab17.check_alloc_block(A.alloc_block),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.2",
        "the grader's model",
        lambda: lab17.check_alloc_block(alloc_by_model),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.2",
        "blocks that equal anything",
        lambda: lab17.check_alloc_block(alloc_lying_blocks),
        match="list of Block",
    ),
    cheat(
        "17.2",
        "sizes that equal anything",
        lambda: lab17.check_alloc_block(alloc_lying_sizes),
        match="CountingInt",
    ),
]


# ------------------------------------------------------------------------------------ 17.3
def free_left_first(pool, block):
    """Merge the left neighbour first, then the right one into it."""
    i = [id(b) for b in pool].index(id(block))
    block.allocated = False
    keep = block
    if i > 0 and not pool[i - 1].allocated and pool[i - 1].segment == block.segment:
        keep = pool[i - 1]
        keep.size += block.size
        del pool[i]
        i -= 1
    if i + 1 < len(pool) and not pool[i + 1].allocated and pool[i + 1].segment == keep.segment:
        keep.size += pool.pop(i + 1).size
    return keep


def free_rebuild(pool, block):
    """Find the run of free blocks of its segment around it, replace the run by one block."""
    i = next(k for k, b in enumerate(pool) if b is block)
    block.allocated = False

    def joins(k):
        return 0 <= k < len(pool) and not pool[k].allocated and pool[k].segment == block.segment

    lo = i - 1 if joins(i - 1) else i
    hi = i + 1 if joins(i + 1) else i
    merged = pool[lo]
    merged.size = sum(b.size for b in pool[lo : hi + 1])
    pool[lo : hi + 1] = [merged]
    return merged


def free_no_merge(pool, block):
    block.allocated = False
    return block


def free_any_segment(pool, block):
    i = next(k for k, b in enumerate(pool) if b is block)
    block.allocated = False
    if i + 1 < len(pool) and not pool[i + 1].allocated:
        block.size += pool.pop(i + 1).size
    if i > 0 and not pool[i - 1].allocated:
        pool[i - 1].size += pool.pop(i).size
        return pool[i - 1]
    return block


def free_right_only(pool, block):
    i = next(k for k, b in enumerate(pool) if b is block)
    block.allocated = False
    if i + 1 < len(pool) and not pool[i + 1].allocated and pool[i + 1].segment == block.segment:
        block.size += pool.pop(i + 1).size
    return block


def free_by_model(pool, block):
    rows = model.pool_rows(pool)
    j = model.plain_free(rows, next(k for k, b in enumerate(pool) if b is block))
    pool[:] = [Block(*r) for r in rows]
    return pool[j]


def free_through_malloc_free(pool, block):
    """The reference's free() on a state made around the pool."""
    state = A.CacheState(None, pools={"small": pool, "large": []})
    state.live[block.addr] = (block, "small")
    A.free(state, block.addr)
    return next(b for b in pool if b.addr <= block.addr < b.addr + b.size)


ATTEMPTS += [
    honest("17.3", "left neighbour first", lambda: lab17.check_free_block(free_left_first)),
    honest("17.3", "rebuild the list", lambda: lab17.check_free_block(free_rebuild)),
    wrong(
        "17.3", "no coalescing", lambda: lab17.check_free_block(free_no_merge), match="not merged"
    ),
    wrong(
        "17.3",
        "merges across segments",
        lambda: lab17.check_free_block(free_any_segment),
        match="two different segments",
    ),
    wrong(
        "17.3",
        "right neighbour only",
        lambda: lab17.check_free_block(free_right_only),
        match="before",
    ),
    cheat(
        "17.3",
        "calls the reference",
        lambda: lab17.check_free_block(A.free_block),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.3",
        "the grader's model",
        lambda: lab17.check_free_block(free_by_model),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.3",
        "the reference's free()",
        lambda: lab17.check_free_block(free_through_malloc_free),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.3",
        "blocks that equal anything",
        lambda: lab17.check_free_block(lambda pool, block: alloc_lying_blocks(pool, 0, True)),
        match="list of Block",
    ),
]


# ------------------------------------------------------------------------------------ 17.4
def _size(n):
    size = max(512, -(-n // 512) * 512)
    if size <= MIB:
        return size, "small", 2 * MIB
    return size, "large", 20 * MIB if size < 10 * MIB else -(-size // (2 * MIB)) * 2 * MIB


def _alloc(pool, size, small):
    return alloc_sorted(pool, size, small)


def _free(pool, block):
    return free_left_first(pool, block)


def malloc_ok(state, nbytes):
    size, name, segment = _size(nbytes)
    pool = state.pools[name]
    block = _alloc(pool, size, name == "small")
    if block is None:
        addr = state.device.malloc(segment)
        state.device_allocs += 1
        state.reserved += segment
        state.peak_reserved = max(state.peak_reserved, state.reserved)
        bisect.insort(pool, Block(addr, segment, addr), key=lambda b: b.addr)
        block = _alloc(pool, size, name == "small")
    state.live[block.addr] = (block, name)
    state.allocated += block.size
    return block.addr


def free_ok(state, addr):
    block, name = state.live.pop(addr)
    state.allocated -= block.size
    _free(state.pools[name], block)


def empty_ok(state):
    released = 0
    for pool in state.pools.values():
        per_segment = {}
        for b in pool:
            per_segment.setdefault(b.segment, []).append(b)
        for seg, blocks in per_segment.items():
            if len(blocks) == 1 and not blocks[0].allocated:
                state.device.free(seg)
                pool.remove(blocks[0])
                released += blocks[0].size
    state.reserved -= released
    return released


class Allocator:
    """The three functions as methods of one object (bound methods handed to the check)."""

    def malloc(self, state, nbytes):
        from minitorch.runtime.allocator import Block as B  # imported where it is used

        size, name, segment = _size(nbytes)
        pool = state.pools[name]
        block = _alloc(pool, size, name == "small")
        if block is None:
            addr = state.device.malloc(segment)
            state.device_allocs, state.reserved = state.device_allocs + 1, state.reserved + segment
            state.peak_reserved = max(state.peak_reserved, state.reserved)
            at = sum(1 for b in pool if b.addr < addr)
            pool.insert(at, B(addr, segment, addr))
            block = _alloc(pool, size, name == "small")
        state.live[block.addr] = (block, name)
        state.allocated += block.size
        return np.int64(block.addr)  # a numpy int is an int

    def free(self, state, addr):
        free_ok(state, int(addr))

    def empty_cache(self, state):
        return empty_ok(state)


def malloc_counts_request(state, nbytes):
    addr = malloc_ok(state, nbytes)
    state.allocated += nbytes - state.live[addr][0].size  # the bytes asked, not the block's
    return addr


def free_counts_request(state, addr):
    block, name = state.live.pop(addr)
    state.allocated -= block.size
    _free(state.pools[name], block)


def free_forgets_pool(state, addr):
    block, _ = state.live.pop(addr)
    state.allocated -= block.size  # never handed back to its pool


def empty_any_first_block(state):
    released = 0
    for pool in state.pools.values():
        for b in [b for b in pool if not b.allocated and b.addr == b.segment]:
            state.device.free(b.addr)
            pool.remove(b)
            released += b.size
    state.reserved -= released
    return released


def malloc_rounds_down(state, nbytes):
    """Rounds the request down to 512 B: the block is shorter than the tensor put in it."""
    return malloc_ok(state, max(512, nbytes // 512 * 512))


def malloc_peak_now(state, nbytes):
    addr = malloc_ok(state, nbytes)
    state.peak_reserved = state.reserved
    return addr


def empty_keeps_reserved(state):
    released = empty_ok(state)
    state.reserved += released
    return released


def naive_malloc(state, nbytes):
    size = _size(nbytes)[0]
    addr = state.device.malloc(size)
    state.live[addr] = (Block(addr, size, addr, True), "naive")
    state.allocated += size
    state.device_allocs += 1
    state.reserved += size
    state.peak_reserved = max(state.peak_reserved, state.reserved)
    return addr


def naive_free(state, addr):
    block, _ = state.live.pop(addr)
    state.device.free(addr)
    state.allocated -= block.size
    state.reserved -= block.size


def naive_malloc_rewriting_the_device(state, nbytes):
    """Naive, then every counting object this process can find is told a smaller story."""
    addr = naive_malloc(state, nbytes)
    for obj in gc.get_objects():
        if type(obj).__name__ == "_Device":
            obj.mallocs, obj.peak = 1, 2 * MIB
    return addr


def naive_malloc_through_the_proxy(state, nbytes):
    addr = naive_malloc(state, nbytes)
    state.device.mallocs = 1  # the proxy has no attributes to rewrite
    return addr


def bump_without_device(state, nbytes):
    """Addresses from a counter of its own: no device call at all."""
    addr = _BUMP[0]
    _BUMP[0] += _size(nbytes)[0]
    return addr


_BUMP = [1 << 40]


def malloc_forging_events(state, nbytes):
    from a2s.checks import harness

    addr = naive_malloc(state, nbytes)
    # events of its own on the device's channel, then a device call that carries them
    harness.request("device.free", [(0, addr, [4096, 0, 0, 0])], state.device.malloc(512))
    return addr


class FakeDevice:
    def __init__(self):
        self.next = 1 << 40

    def malloc(self, n):
        self.next += n
        return self.next - n

    def free(self, addr):
        pass


def malloc_own_device(state, nbytes):
    if not isinstance(state.device, FakeDevice):
        state.device = FakeDevice()
    return malloc_ok(state, nbytes)


def malloc_with_torch(state, nbytes):
    import torch

    torch.empty(nbytes, dtype=torch.uint8)
    return malloc_ok(state, nbytes)


def _alloc_check(*fns):
    return lambda: lab17.check_caching_allocator(*fns)


ATTEMPTS += [
    honest(
        "17.4", "insort and per-segment empty_cache", _alloc_check(malloc_ok, free_ok, empty_ok)
    ),
    honest(
        "17.4",
        "bound methods, numpy addresses",
        _alloc_check(Allocator().malloc, Allocator().free, Allocator().empty_cache),
    ),
    wrong(
        "17.4",
        "allocated counts the bytes asked",
        _alloc_check(malloc_counts_request, free_counts_request, empty_ok),
        match="not the bytes asked",
    ),
    wrong(
        "17.4",
        "free never returns the block",
        _alloc_check(malloc_ok, free_forgets_pool, empty_ok),
        match="device allocations",
    ),
    wrong(
        "17.4",
        "empty_cache frees live segments",
        _alloc_check(malloc_ok, free_ok, empty_any_first_block),
        match="still live",
    ),
    wrong(
        "17.4",
        "rounds down inside malloc",
        _alloc_check(malloc_rounds_down, free_ok, empty_ok),
        match="overlaps a live block|the live blocks hold",
    ),
    wrong(
        "17.4",
        "peak is the current reserved",
        _alloc_check(malloc_peak_now, free_ok, empty_ok),
        match="keep the max",
    ),
    wrong(
        "17.4",
        "empty_cache keeps reserved",
        _alloc_check(malloc_ok, free_ok, empty_keeps_reserved),
        match="subtract it from reserved|count it",
    ),
    cheat(
        "17.4",
        "calls the reference",
        _alloc_check(A.malloc, A.free, A.empty_cache),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.4",
        "naive, device counters rewritten through gc",
        _alloc_check(naive_malloc_rewriting_the_device, naive_free, empty_ok),
        match="device allocations",
    ),
    cheat(
        "17.4",
        "naive, the proxy's counter set",
        _alloc_check(naive_malloc_through_the_proxy, naive_free, empty_ok),
        match="mallocs",
        error=StudentError,
    ),
    cheat(
        "17.4",
        "addresses without the device",
        _alloc_check(bump_without_device, lambda s, a: None, lambda s: 0),
        match="not inside a segment",
    ),
    cheat(
        "17.4",
        "events forged to the grader",
        _alloc_check(malloc_forging_events, naive_free, empty_ok),
        match="out of order",
    ),
    cheat(
        "17.4",
        "a device of its own",
        _alloc_check(malloc_own_device, free_ok, empty_ok),
        match="not inside a segment",
    ),
    cheat(
        "17.4",
        "torch",
        _alloc_check(malloc_with_torch, free_ok, empty_ok),
        error=ForbiddenCallError,
    ),
]


# ------------------------------------------------------------------------------------ 17.5
def frag_sorted(pool):
    free_ = sorted(b.size for b in pool if not b.allocated)
    return 1.0 - free_[-1] / sum(free_) if free_ else 0.0


def frag_numpy(pool):
    sizes = np.array([b.size for b in pool if not b.allocated], dtype=np.float64)
    return float(1 - sizes.max() / sizes.sum()) if sizes.size else 0.0


def frag_share(pool):
    total = sum(b.size for b in pool)
    return sum(b.size for b in pool if not b.allocated) / total


def frag_ratio(pool):
    free_ = [b.size for b in pool if not b.allocated]
    return max(free_) / sum(free_) if free_ else 0.0


def frag_nan(pool):
    free_ = [b.size for b in pool if not b.allocated]
    return 1 - max(free_) / sum(free_) if free_ else math.nan


def frag_torch(pool):
    import torch

    t = torch.tensor([b.size for b in pool if not b.allocated] or [1], dtype=torch.float64)
    return float(1 - t.max() / t.sum())


ATTEMPTS += [
    honest("17.5", "sorted sizes", lambda: lab17.check_fragmentation(frag_sorted)),
    honest("17.5", "numpy", lambda: lab17.check_fragmentation(frag_numpy)),
    wrong(
        "17.5",
        "free share of reserved",
        lambda: lab17.check_fragmentation(frag_share),
        match="free share",
    ),
    wrong(
        "17.5",
        "the ratio without 1 -",
        lambda: lab17.check_fragmentation(frag_ratio),
        match="1 - largest",
    ),
    wrong(
        "17.5", "NaN when nothing is free", lambda: lab17.check_fragmentation(frag_nan), match="NaN"
    ),
    cheat(
        "17.5",
        "calls the reference",
        lambda: lab17.check_fragmentation(A.fragmentation),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.5",
        "the grader's formula",
        lambda: lab17.check_fragmentation(lambda pool: frag._plain(model.pool_rows(pool))),
        error=ReferenceCalledError,
    ),
    cheat(
        "17.5",
        "a float that equals anything",
        lambda: lab17.check_fragmentation(lambda pool: always_equal(0.5)),
        match="fragmentation",
    ),
    cheat("17.5", "torch", lambda: lab17.check_fragmentation(frag_torch), error=ForbiddenCallError),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
