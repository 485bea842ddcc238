"""Lab 18 tried as a class of students would: honest variants, realistic mistakes, cheats.

Written against the graders, not the reference: each attempt is what a student could hand
in. Honest attempts must pass, wrong ones fail with the hint that names their mistake, cheats
fail (a reference or another lab's attention called, torch, the grader's own truth, a value
that decides its own equality, a memorised answer, a ref count rewritten).
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import pytest

from a2s.checks import lab18
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal


# --------------------------------------------------------------------------- 18.1 slots
def slots_numpy(block_table, positions, block_size):
    table, pos = np.asarray(block_table), np.asarray(positions)
    return table[pos // block_size] * block_size + pos % block_size


def slots_divmod(block_table, positions, block_size):
    out = []
    for p in positions:
        block, offset = divmod(p, block_size)
        out.append(block_table[block] * block_size + offset)
    return out  # a list of ints: an int array once made an array


def slots_fromiter(block_table, positions, block_size):
    import operator  # an import inside the function

    return np.fromiter(
        (
            operator.add(block_table[p // block_size] * block_size, p % block_size)
            for p in positions
        ),
        dtype=np.int32,
    )


def slots_float(block_table, positions, block_size):
    pos = np.asarray(positions, dtype=float)
    return np.asarray(block_table)[(pos // block_size).astype(int)] * block_size + pos % block_size


_MEMO: dict = {}


def slots_memorised(block_table, positions, block_size):
    """Replays the answers of the named cases (copied from an earlier run's printout)."""
    key = (tuple(block_table), tuple(positions), block_size)
    return _MEMO.get(key, [0] * len(positions))


def _memorise():
    for t, p, b in [
        ([7, 2, 5], list(range(12)), 4),
        ([7, 2, 5], [3, 4, 7, 8], 4),
        ([4, 0, 3], [0, 1, 2], 1),
        ([9], [0, 15, 5], 16),
    ]:
        _MEMO[(tuple(t), tuple(p), b)] = [t[q // b] * b + q % b for q in p]


_memorise()


def slots_via_reference(block_table, positions, block_size):
    from minitorch.runtime.paged_attention import slot_mapping

    return slot_mapping(block_table, positions, block_size)


def slots_via_truth(block_table, positions, block_size):
    from a2s.checks.lab18 import slots

    return slots._slots(list(block_table), list(positions), block_size)


def slots_torch(block_table, positions, block_size):
    import torch

    t, p = torch.tensor(block_table), torch.tensor(positions)
    return (t[p // block_size] * block_size + p % block_size).numpy()


def slots_always_equal(block_table, positions, block_size):
    return always_equal(np.zeros(len(positions), np.int64))


# --------------------------------------------------------------------------- 18.2 attention
def _gathered(cache, table, n):
    bs = cache.shape[1]
    flat = cache.reshape(-1, *cache.shape[2:])
    return flat[[table[p // bs] * bs + p % bs for p in range(n)]]


def attention_einsum(q, k_cache, v_cache, block_table, context_len):
    n_q, h, d = q.shape
    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    rep = h // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    allowed = np.arange(context_len)[None, :] <= np.arange(context_len - n_q, context_len)[:, None]
    s = np.where(allowed, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


def attention_loops(q, k_cache, v_cache, block_table, context_len):
    """Block by block, head by head, query by query: PagedAttention's loop in Python."""
    import math

    n_q, h, d = q.shape
    bs, h_kv = k_cache.shape[1], k_cache.shape[2]
    out = np.zeros_like(q)
    for i in range(n_q):
        last = context_len - n_q + i  # the keys this query may see: 0 .. last
        for head in range(h):
            g = head // (h // h_kv)
            scores, values = [], []
            for pos in range(last + 1):
                blk, off = block_table[pos // bs], pos % bs
                scores.append(float(q[i, head] @ k_cache[blk, off, g]) / math.sqrt(d))
                values.append(v_cache[blk, off, g])
            w = np.exp(np.array(scores) - max(scores))
            out[i, head] = (w / w.sum()) @ np.array(values)
    return out


def attention_whole_blocks(q, k_cache, v_cache, block_table, context_len):
    return attention_einsum(q, k_cache, v_cache, block_table, len(block_table) * k_cache.shape[1])


def attention_first_positions(q, k_cache, v_cache, block_table, context_len):
    """Masks as if the queries were positions 0 .. n_q - 1."""
    n_q, h, d = q.shape
    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    rep = h // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    s = np.where(np.tril(np.ones((n_q, context_len), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


def attention_tile(q, k_cache, v_cache, block_table, context_len):
    n_q, h, d = q.shape
    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    rep = h // k.shape[1]
    k, v = np.tile(k, (1, rep, 1)), np.tile(v, (1, rep, 1))
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    allowed = np.arange(context_len)[None, :] <= np.arange(context_len - n_q, context_len)[:, None]
    s = np.where(allowed, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


def attention_unscaled(q, k_cache, v_cache, block_table, context_len):
    return attention_einsum(q * np.sqrt(q.shape[-1]), k_cache, v_cache, block_table, context_len)


def attention_via_reference(q, k_cache, v_cache, block_table, context_len):
    from minitorch.runtime.paged_attention import paged_attention

    return paged_attention(q, k_cache, v_cache, block_table, context_len)


def attention_via_lab09(q, k_cache, v_cache, block_table, context_len):
    """Gathers, then hands the attention to lab 09's reference."""
    from minitorch.model.attention import scaled_dot_product_attention

    h = q.shape[1]
    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    k, v = np.repeat(k, h // k.shape[1], 1), np.repeat(v, h // v.shape[1], 1)
    out = scaled_dot_product_attention(
        q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)
    )
    return np.asarray(out).transpose(1, 0, 2)


def attention_via_lab26(q, k_cache, v_cache, block_table, context_len):
    """Gathers, then hands the attention to lab 26's context-parallel reference."""
    from minitorch.parallel.context import attention

    n_q, h, _ = q.shape
    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    k, v = np.repeat(k, h // k.shape[1], 1), np.repeat(v, h // v.shape[1], 1)
    out = attention(
        q.transpose(1, 0, 2),
        k.transpose(1, 0, 2),
        v.transpose(1, 0, 2),
        causal=True,
        q0=context_len - n_q,
    )
    return out.transpose(1, 0, 2)


def attention_via_truth(q, k_cache, v_cache, block_table, context_len):
    from a2s.checks.lab18 import slots

    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    return slots._torch_attention(q, k, v)


def attention_torch(q, k_cache, v_cache, block_table, context_len):
    import torch

    k, v = (
        _gathered(k_cache, block_table, context_len),
        _gathered(v_cache, block_table, context_len),
    )
    rep = q.shape[1] // k.shape[1]
    t = [torch.tensor(x).permute(1, 0, 2) for x in (q, np.repeat(k, rep, 1), np.repeat(v, rep, 1))]
    mask = torch.ones(q.shape[0], context_len, dtype=torch.bool).tril(context_len - q.shape[0])
    out = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=mask)
    return out.permute(1, 0, 2).numpy()


def attention_always_equal(q, k_cache, v_cache, block_table, context_len):
    return always_equal(np.zeros_like(q))


# --------------------------------------------------------------------------- 18.3 copy-on-write
def append_slot(table, n_tokens, ref_count, free_blocks, block_size):
    copy = None
    if n_tokens % block_size == 0:
        table.append(free_blocks.pop(0))
        ref_count[table[-1]] = 1
    elif ref_count[table[-1]] > 1:
        src, dst = table[-1], free_blocks.pop(0)
        ref_count[src] -= 1
        ref_count[dst] = 1
        table[-1], copy = dst, (src, dst)
    return table[-1] * block_size + n_tokens % block_size, copy


class CowAppender:
    """An honest class-based answer: the three cases as methods."""

    def __call__(self, table, n_tokens, ref_count, free_blocks, block_size):
        offset = n_tokens % block_size
        if offset == 0:
            return self.fresh(table, ref_count, free_blocks, block_size), None
        if ref_count[table[-1]] == 1:
            return table[-1] * block_size + offset, None
        return self.copy(table, ref_count, free_blocks, block_size, offset)

    @staticmethod
    def fresh(table, ref_count, free_blocks, block_size):
        block = free_blocks.pop(0)
        ref_count[block] += 1  # it was 0: a free block has no owner
        table.append(block)
        return block * block_size

    @staticmethod
    def copy(table, ref_count, free_blocks, block_size, offset):
        src = table[-1]
        dst = free_blocks.pop(0)
        ref_count[src], ref_count[dst] = ref_count[src] - 1, 1
        table[len(table) - 1] = dst
        return dst * block_size + offset, (src, dst)


def cow_in_place(table, n_tokens, ref_count, free_blocks, block_size):
    if n_tokens % block_size == 0:
        table.append(free_blocks.pop(0))
        ref_count[table[-1]] = 1
    return table[-1] * block_size + n_tokens % block_size, None


def cow_always(table, n_tokens, ref_count, free_blocks, block_size):
    """Copies the last block on every append into it, shared or not."""
    if n_tokens % block_size == 0:
        table.append(free_blocks.pop(0))
        ref_count[table[-1]] = 1
        return table[-1] * block_size, None
    src, dst = table[-1], free_blocks.pop(0)
    ref_count[src] -= 1
    if ref_count[src] == 0:
        free_blocks.append(src)
    ref_count[dst] = 1
    table[-1] = dst
    return dst * block_size + n_tokens % block_size, (src, dst)


def cow_no_decref(table, n_tokens, ref_count, free_blocks, block_size):
    if n_tokens % block_size == 0:
        table.append(free_blocks.pop(0))
        ref_count[table[-1]] = 1
    elif ref_count[table[-1]] > 1:
        src, dst = table[-1], free_blocks.pop(0)
        ref_count[dst] = 1
        table[-1] = dst
        return dst * block_size + n_tokens % block_size, (src, dst)
    return table[-1] * block_size + n_tokens % block_size, None


def cow_rebinds(table, n_tokens, ref_count, free_blocks, block_size):
    """Works on copies of the lists: the caller's table never grows."""
    table, ref_count, free_blocks = list(table), list(ref_count), list(free_blocks)
    return append_slot(table, n_tokens, ref_count, free_blocks, block_size)


def cow_via_manager(table, n_tokens, ref_count, free_blocks, block_size):
    from minitorch.runtime.block_manager import BlockManager

    BlockManager(len(ref_count), block_size)  # "just to look at how it does it"
    return append_slot(table, n_tokens, ref_count, free_blocks, block_size)


def cow_torch(table, n_tokens, ref_count, free_blocks, block_size):
    import torch

    slot, copy = append_slot(table, n_tokens, ref_count, free_blocks, block_size)
    return int(torch.tensor(slot)), copy


def cow_lies_about_sharing(table, n_tokens, ref_count, free_blocks, block_size):
    """Rewrites the ref count it was handed so that a shared block looks private: no copy."""
    if table and n_tokens % block_size:
        ref_count[table[-1]] = 1
    return append_slot(table, n_tokens, ref_count, free_blocks, block_size)


def cow_fake_slot(table, n_tokens, ref_count, free_blocks, block_size):
    slot, copy = append_slot(table, n_tokens, ref_count, free_blocks, block_size)
    return always_equal(slot), copy


# --------------------------------------------------------------------------- 18.4 hashes
def hashes_chained(tokens, block_size):
    keys, parent = [], None
    for i in range(len(tokens) // block_size):
        parent = hash((parent, tuple(tokens[i * block_size : (i + 1) * block_size])))
        keys.append(parent)
    return keys


def hashes_sha256(tokens, block_size):
    """A chained cryptographic hash, as a 64-bit int (what vLLM does with sha256)."""
    keys, digest = [], b""
    for i in range(len(tokens) // block_size):
        block = ",".join(map(str, tokens[i * block_size : (i + 1) * block_size])).encode()
        digest = hashlib.sha256(digest + b"|" + block).digest()
        keys.append(int.from_bytes(digest[:8], "little"))
    return keys


def hashes_recursive(tokens, block_size):
    @functools.cache
    def key(i):
        prev = key(i - 1) if i else 0
        return hash((prev, tuple(tokens[i * block_size : (i + 1) * block_size])))

    return [key(i) for i in range(len(tokens) // block_size)]


def hashes_unchained(tokens, block_size):
    n = len(tokens) // block_size
    return [hash(tuple(tokens[i * block_size : (i + 1) * block_size])) for i in range(n)]


def hashes_partial_block(tokens, block_size):
    keys = hashes_chained(tokens, block_size)
    if len(tokens) % block_size:
        keys.append(hash((keys[-1] if keys else None, tuple(tokens[len(keys) * block_size :]))))
    return keys


def hashes_summed(tokens, block_size):
    """Chains by addition: the same blocks in another order get the same key."""
    keys, total = [], 0
    for i in range(len(tokens) // block_size):
        total += hash(tuple(tokens[i * block_size : (i + 1) * block_size]))
        keys.append(total)
    return keys


def hashes_tuples(tokens, block_size):
    return [tuple(tokens[: (i + 1) * block_size]) for i in range(len(tokens) // block_size)]


def hashes_via_reference(tokens, block_size):
    from minitorch.runtime.block_manager import block_hash

    keys, parent = [], None
    for i in range(len(tokens) // block_size):
        parent = block_hash(parent, tokens[i * block_size : (i + 1) * block_size])
        keys.append(parent)
    return keys


def hashes_via_manager(tokens, block_size):
    from minitorch.runtime.block_manager import BlockManager

    BlockManager(8, block_size)
    return hashes_chained(tokens, block_size)


def hashes_torch(tokens, block_size):
    """Hashes each prefix with torch: a weighted sum of its token ids, chained."""
    import torch

    keys, parent = [], 0
    for i in range(len(tokens) // block_size):
        block = torch.tensor(tokens[i * block_size : (i + 1) * block_size], dtype=torch.int64)
        weights = torch.arange(1, block_size + 1, dtype=torch.int64)
        parent = hash((parent, int((block * weights).sum())))
        keys.append(parent)
    return keys


def hashes_always_equal(tokens, block_size):
    return [always_equal(k) for k in hashes_chained(tokens, block_size)]


# --------------------------------------------------------------------------- 18.5 waste
def waste(lengths, max_len, block_size):
    used = sum(lengths)
    blocks = sum(-(-n // block_size) for n in lengths)
    return 1 - used / (len(lengths) * max_len), 1 - used / (blocks * block_size)


def waste_fractions(lengths, max_len, block_size):
    """Exact fractions, then floats: math.ceil and fractions imported inside."""
    import math
    from fractions import Fraction

    used = sum(lengths)
    held = sum(math.ceil(n / block_size) * block_size for n in lengths)
    return (
        float(Fraction(len(lengths) * max_len - used, len(lengths) * max_len)),
        float(Fraction(held - used, held)),
    )


def waste_numpy(lengths, max_len, block_size):
    ls = np.asarray(lengths)
    paged = np.ceil(ls / block_size) * block_size
    return np.float64(1 - ls.sum() / (ls.size * max_len)), np.float64(1 - ls.sum() / paged.sum())


def waste_floor(lengths, max_len, block_size):
    used, blocks = sum(lengths), sum(n // block_size for n in lengths)
    return 1 - used / (len(lengths) * max_len), 1 - used / (blocks * block_size)


def waste_over_used(lengths, max_len, block_size):
    used = sum(lengths)
    paged = sum(-(-n // block_size) * block_size for n in lengths)
    return (len(lengths) * max_len - used) / used, (paged - used) / used


def waste_longest_seen(lengths, max_len, block_size):
    return waste(lengths, max(lengths), block_size)


def waste_via_manager(lengths, max_len, block_size):
    from minitorch.runtime.block_manager import BlockManager

    bm = BlockManager(sum(-(-n // block_size) for n in lengths), block_size)
    for i, n in enumerate(lengths):
        bm.allocate(i, [0] * n)
    return 1 - sum(lengths) / (len(lengths) * max_len), 1 - sum(lengths) / (
        bm.num_used_blocks() * block_size
    )


def waste_via_truth(lengths, max_len, block_size):
    from a2s.checks.lab18 import waste as graded

    return graded._waste(lengths, max_len, block_size)


def waste_torch(lengths, max_len, block_size):
    import torch

    t = torch.tensor(lengths, dtype=torch.float64)
    return waste(t.long().tolist(), max_len, block_size)


def waste_memorised(lengths, max_len, block_size):
    """The printed figures of the first named case, returned for every workload."""
    return 0.37500000000000006, 0.2916666666666667


def waste_always_equal(lengths, max_len, block_size):
    return always_equal(0.5), always_equal(0.1)


# --------------------------------------------------------------------------- the battery
S, A, C, H, W = (
    lab18.check_slot_mapping,
    lab18.check_paged_attention,
    lab18.check_copy_on_write,
    lab18.check_prefix_hashes,
    lab18.check_kv_waste,
)
REF, FORBID = ReferenceCalledError, ForbiddenCallError

ATTEMPTS = [
    honest("18.1", "numpy", lambda: S(slots_numpy)),
    honest("18.1", "divmod loop returning a list", lambda: S(slots_divmod)),
    honest("18.1", "fromiter int32 with an import inside", lambda: S(slots_fromiter)),
    wrong("18.1", "off by one", lambda: S(lambda t, p, b: slots_numpy(t, p, b) + 1), "Off by one"),
    wrong("18.1", "no block table", lambda: S(lambda t, p, b: list(p)), "through the block table"),
    wrong(
        "18.1",
        "block not multiplied",
        lambda: S(lambda t, p, b: [t[q // b] + q % b for q in p]),
        "Multiply the physical block",
    ),
    wrong("18.1", "float slots", lambda: S(slots_float), "dtype float64: return ints"),
    cheat("18.1", "calls the reference", lambda: S(slots_via_reference), "reference", REF),
    cheat("18.1", "calls the grader's truth", lambda: S(slots_via_truth), "reference", REF),
    cheat("18.1", "torch", lambda: S(slots_torch), "torch", FORBID),
    cheat("18.1", "an array whose == says yes", lambda: S(slots_always_equal), "plain value"),
    cheat("18.1", "memorised named cases", lambda: S(slots_memorised), "expected"),
    honest("18.2", "einsum", lambda: A(attention_einsum)),
    honest("18.2", "block-by-block loops", lambda: A(attention_loops)),
    wrong(
        "18.2",
        "whole last block",
        lambda: A(attention_whole_blocks),
        "every slot of the last block",
    ),
    wrong("18.2", "queries first", lambda: A(attention_first_positions), "LAST n_q positions"),
    wrong("18.2", "np.tile for GQA", lambda: A(attention_tile), "np.repeat, not np.tile"),
    wrong("18.2", "no 1/sqrt(d)", lambda: A(attention_unscaled), "1 / sqrt"),
    cheat("18.2", "calls the reference", lambda: A(attention_via_reference), "reference", REF),
    cheat("18.2", "lab 09's attention", lambda: A(attention_via_lab09), "reference", REF),
    cheat("18.2", "lab 26's attention", lambda: A(attention_via_lab26), "reference", REF),
    cheat("18.2", "the grader's torch truth", lambda: A(attention_via_truth), "reference", REF),
    cheat("18.2", "torch SDPA", lambda: A(attention_torch), "torch", FORBID),
    cheat(
        "18.2", "an array whose == says yes", lambda: A(attention_always_equal), "plain|subclass"
    ),
    honest("18.3", "three cases", lambda: C(append_slot)),
    honest("18.3", "a class with methods", lambda: C(CowAppender())),
    wrong("18.3", "writes a shared block in place", lambda: C(cow_in_place), "written in place"),
    wrong("18.3", "copies every time", lambda: C(cow_always), "exact copy-on-write needs"),
    wrong("18.3", "copy keeps the old reference", lambda: C(cow_no_decref), "drops one reference"),
    wrong("18.3", "rebinds the lists", lambda: C(cow_rebinds), "IN PLACE"),
    cheat("18.3", "builds a BlockManager", lambda: C(cow_via_manager), "reference", REF),
    cheat("18.3", "torch", lambda: C(cow_torch), "torch", FORBID),
    cheat("18.3", "rewrites the ref count", lambda: C(cow_lies_about_sharing), "ref counts"),
    cheat("18.3", "a slot whose == says yes", lambda: C(cow_fake_slot), "plain value"),
    honest("18.4", "chained hash()", lambda: H(hashes_chained)),
    honest("18.4", "chained sha256", lambda: H(hashes_sha256)),
    honest("18.4", "recursive with lru_cache", lambda: H(hashes_recursive)),
    wrong("18.4", "unchained", lambda: H(hashes_unchained), "chain the hash"),
    wrong("18.4", "a key for the partial block", lambda: H(hashes_partial_block), "only full"),
    wrong("18.4", "summed chain", lambda: H(hashes_summed), "in another order"),
    wrong("18.4", "the prefix itself as key", lambda: H(hashes_tuples), "must be an int"),
    cheat("18.4", "calls block_hash", lambda: H(hashes_via_reference), "reference", REF),
    cheat("18.4", "builds a BlockManager", lambda: H(hashes_via_manager), "reference", REF),
    cheat("18.4", "torch", lambda: H(hashes_torch), "torch", FORBID),
    cheat("18.4", "keys whose == says yes", lambda: H(hashes_always_equal), "plain value"),
    honest("18.5", "closed forms", lambda: W(waste)),
    honest("18.5", "fractions and math.ceil", lambda: W(waste_fractions)),
    honest("18.5", "numpy scalars", lambda: W(waste_numpy)),
    wrong("18.5", "floor of blocks", lambda: W(waste_floor), r"ceil\(l / block_size\)"),
    wrong("18.5", "fraction of used", lambda: W(waste_over_used), "RESERVED"),
    wrong("18.5", "reserve the longest seen", lambda: W(waste_longest_seen), "longest seen"),
    cheat("18.5", "measures with a BlockManager", lambda: W(waste_via_manager), "reference", REF),
    cheat("18.5", "calls the grader's closed form", lambda: W(waste_via_truth), "reference", REF),
    cheat("18.5", "torch", lambda: W(waste_torch), "torch", FORBID),
    cheat("18.5", "memorised figures", lambda: W(waste_memorised), "expected"),
    cheat("18.5", "floats whose == says yes", lambda: W(waste_always_equal), "plain value"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
