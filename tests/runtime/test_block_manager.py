"""The block manager: tables and slots, copy-on-write, prefix caching, LRU eviction, and
Hypothesis invariants (ref counts never negative, a block free or owned, freed blocks reused)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.runtime.block_manager import BlockManager, NoFreeBlocksError, block_hash


def test_allocate_gives_ceil_blocks_and_slots_follow_the_table() -> None:
    bm = BlockManager(8, 4, prefix_caching=False)
    table = bm.allocate(0, list(range(6)))
    assert len(table) == 2 and bm.num_used_blocks() == 2
    assert bm.slot_mapping(0) == [table[p // 4] * 4 + p % 4 for p in range(6)]
    slot, copy = bm.append_slot(0, 6)
    assert (slot, copy) == (table[1] * 4 + 2, None)
    bm.append_slot(0, 7)
    slot, _ = bm.append_slot(0, 8)  # block 2 starts
    assert len(bm.block_table(0)) == 3 and slot == bm.block_table(0)[2] * 4


def test_fork_shares_blocks_and_append_copies_on_write() -> None:
    bm = BlockManager(8, 4, prefix_caching=False)
    bm.allocate(0, [1, 2, 3, 4, 5])
    bm.fork(0, 1)
    shared = bm.block_table(0)
    assert all(bm.ref_count[b] == 2 for b in shared)
    slot, copy = bm.append_slot(1, 9)
    assert copy is not None and copy[0] == shared[1]
    assert bm.block_table(1)[0] == shared[0] and bm.block_table(1)[1] == copy[1]
    assert bm.ref_count[shared[1]] == 1 and slot == copy[1] * 4 + 1
    assert bm.append_slot(0, 7) == (shared[1] * 4 + 1, None)  # now sole owner: in place


def test_prefix_cache_hits_chained_blocks_only() -> None:
    bm = BlockManager(16, 2)
    bm.allocate(0, [1, 2, 3, 4, 5])
    t1 = bm.allocate(1, [1, 2, 3, 4, 9])
    assert bm.hits == 2 and t1[:2] == bm.block_table(0)[:2] and bm.cached_tokens[1] == 4
    t2 = bm.allocate(2, [7, 7, 3, 4])  # same second block, different prefix: no hit
    assert bm.hits == 2 and t2[1] != t1[1]
    assert block_hash(None, [3, 4]) != block_hash(block_hash(None, [1, 2]), [3, 4])


def test_freed_cached_blocks_are_reused_then_evicted_lru() -> None:
    bm = BlockManager(3, 2)
    bm.allocate(0, [1, 2, 3, 4])
    bm.free(0)
    assert bm.num_free_blocks() == 3
    bm.allocate(1, [1, 2, 3, 4])  # both blocks come back from the cache
    assert bm.hits == 2 and bm.evictions == 0
    bm.free(1)
    bm.allocate(2, [5, 6, 7, 8, 9, 9])  # needs all 3 blocks: the 2 cached ones are evicted
    assert bm.evictions == 2
    with pytest.raises(NoFreeBlocksError):
        bm.allocate(3, [1])
    assert 3 not in bm.tables and bm.num_free_blocks() == 0


def _check_invariants(bm: BlockManager) -> None:
    owners = [0] * bm.num_blocks
    for table in bm.tables.values():
        for b in table:
            owners[b] += 1
    for b in range(bm.num_blocks):
        assert bm.ref_count[b] >= 0
        assert bm.ref_count[b] == owners[b]  # shared only through the ref count
        assert (b in bm.free_blocks) == (bm.ref_count[b] == 0)  # free or owned, never both
    for seq, table in bm.tables.items():
        assert len(table) == bm.blocks_needed(len(bm.tokens[seq]))


ops = st.lists(
    st.tuples(
        st.sampled_from(["alloc", "append", "fork", "free"]),
        st.integers(0, 5),
        st.lists(st.integers(0, 3), min_size=1, max_size=9),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_invariants_hold_under_any_operation_sequence(program) -> None:
    bm = BlockManager(10, 2)
    next_id = 100
    for op, seq, tokens in program:
        live = sorted(bm.tables)
        try:
            if op == "alloc":
                bm.allocate(next_id, tokens)
                next_id += 1
            elif live and op == "append":
                bm.append_slot(live[seq % len(live)], tokens[0])
            elif live and op == "fork":
                bm.fork(live[seq % len(live)], next_id)
                next_id += 1
            elif live and op == "free":
                bm.free(live[seq % len(live)])
        except NoFreeBlocksError:
            pass
        _check_invariants(bm)
    for seq in list(bm.tables):
        bm.free(seq)
    assert bm.num_free_blocks() == bm.num_blocks  # every block reusable again
