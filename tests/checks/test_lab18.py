"""Graders of lab 18: the reference passes; realistic wrong answers and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.runtime.block_manager as bm_mod
import minitorch.runtime.paged_attention as pa
from a2s.checks import lab18
from a2s.checks.core import ReferenceCalledError
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.runtime")
ref_slots = unblocked(pa.slot_mapping)
ref_attention = unblocked(pa.paged_attention)
ref_hash = unblocked(bm_mod.block_hash)


# --------------------------------------------------------------------------- 18.1 slots
def test_slot_mapping_reference_passes(capsys):
    lab18.check_slot_mapping(ref_slots)
    assert "✔ Exercise 18.1 passed" in capsys.readouterr().out


def _slots_off_by_one(table, positions, bs):
    return [
        table[(p + 1) // bs] * bs + (p + 1) % bs if (p + 1) // bs < len(table) else 0
        for p in positions
    ]


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (_slots_off_by_one, "Off by one"),
        (lambda t, p, bs: [t[q // bs] * bs + q % bs + 1 for q in p], "Off by one"),
        (lambda t, p, bs: list(p), "through the block table"),
        (lambda t, p, bs: [t[q // bs] + q % bs for q in p], "Multiply the physical block"),
    ],
)
def test_slot_mapping_rejects_wrong_answers(wrong, match):
    rejects(lab18.check_slot_mapping, wrong, match=match)


def test_slot_mapping_rejects_the_reference():
    rejects(
        lab18.check_slot_mapping,
        lambda t, p, bs: pa.slot_mapping(t, p, bs),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 18.2 attention
def test_paged_attention_reference_passes(capsys):
    lab18.check_paged_attention(lambda q, k, v, t, n: ref_attention(q, k, v, t, n))
    assert "✔ Exercise 18.2 passed" in capsys.readouterr().out


def _attention(q, k, v, shift=True, tile=False):
    n_q, h, d = q.shape
    rep = h // k.shape[1]
    k = np.tile(k, (1, rep, 1)) if tile else np.repeat(k, rep, axis=1)
    v = np.tile(v, (1, rep, 1)) if tile else np.repeat(v, rep, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    L = k.shape[0]
    ok = np.tril(np.ones((n_q, L), bool), L - n_q if shift else 0)
    s = np.where(ok, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


def _gather(cache, table, n):
    bs = cache.shape[1]
    return cache.reshape(-1, *cache.shape[2:])[[table[p // bs] * bs + p % bs for p in range(n)]]


def whole_blocks(q, kc, vc, table, n):
    m = len(table) * kc.shape[1]
    return _attention(q, _gather(kc, table, m), _gather(vc, table, m))


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (whole_blocks, "every slot of the last block"),
        (
            lambda q, kc, vc, t, n: _attention(
                q, _gather(kc, t, n), _gather(vc, t, n), shift=False
            ),
            "LAST n_q positions",
        ),
        (
            lambda q, kc, vc, t, n: _attention(q, _gather(kc, t, n), _gather(vc, t, n), tile=True),
            "np.repeat, not np.tile",
        ),
        (
            lambda q, kc, vc, t, n: _attention(
                q, kc.reshape(-1, *kc.shape[2:])[:n], vc.reshape(-1, *vc.shape[2:])[:n]
            ),
            "Gather",
        ),
    ],
)
def test_paged_attention_rejects_wrong_answers(wrong, match):
    rejects(lab18.check_paged_attention, wrong, match=match)


def test_paged_attention_rejects_the_reference():
    rejects(
        lab18.check_paged_attention,
        lambda q, k, v, t, n: pa.paged_attention(q, k, v, t, n),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 18.3 copy-on-write
def append_slot(
    table, n_tokens, ref_count, free_blocks, block_size, cow=True, always=False, decref=True
):
    copy = None
    if n_tokens % block_size == 0:
        table.append(free_blocks.pop(0))
        ref_count[table[-1]] = 1
    elif always or (cow and ref_count[table[-1]] > 1):
        src, dst = table[-1], free_blocks.pop(0)
        ref_count[src] -= decref
        if ref_count[src] == 0:
            free_blocks.append(src)
        ref_count[dst] = 1
        table[-1], copy = dst, (src, dst)
    return table[-1] * block_size + n_tokens % block_size, copy


def test_copy_on_write_solution_passes(capsys):
    lab18.check_copy_on_write(append_slot)
    assert "✔ Exercise 18.3 passed" in capsys.readouterr().out


def _early_block(table, n, ref, free, bs):
    if n % bs == bs - 1 or not table:
        table.append(free.pop(0))
        ref[table[-1]] = 1
    return table[-1] * bs + n % bs, None


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda t, n, r, f, bs: append_slot(t, n, r, f, bs, cow=False), "written in place"),
        (
            lambda t, n, r, f, bs: append_slot(t, n, r, f, bs, always=True),
            "exact copy-on-write needs",
        ),
        (
            lambda t, n, r, f, bs: append_slot(t, n, r, f, bs, decref=False),
            "a copy drops one reference",
        ),
        (_early_block, "exactly when n_tokens % block_size == 0"),
        (lambda t, *a: append_slot(list(t), *a), "IN PLACE"),  # a copy of the table
    ],
)
def test_copy_on_write_rejects_wrong_answers(wrong, match):
    rejects(lab18.check_copy_on_write, wrong, match=match)


def test_copy_on_write_rejects_the_reference():
    def via_manager(table, n, ref, free, bs):
        bm_mod.BlockManager(4, bs)
        return append_slot(table, n, ref, free, bs)

    rejects(lab18.check_copy_on_write, via_manager, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 18.4 prefix hashes
def block_hashes(tokens, block_size):
    keys, parent = [], None
    for i in range(len(tokens) // block_size):
        parent = hash((parent, tuple(tokens[i * block_size : (i + 1) * block_size])))
        keys.append(parent)
    return keys


def test_prefix_hashes_solution_and_reference_pass(capsys):
    lab18.check_prefix_hashes(block_hashes)
    lab18.check_prefix_hashes(
        lambda t, bs: [ref_hash(None, t[: (i + 1) * bs]) for i in range(len(t) // bs)]
    )
    assert "✔ Exercise 18.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (
            lambda t, bs: [hash(tuple(t[i * bs : (i + 1) * bs])) for i in range(len(t) // bs)],
            "chain the hash",
        ),
        (
            lambda t, bs: block_hashes(t, bs) + ([hash(tuple(t))] if len(t) % bs else []),
            "only full blocks",
        ),
        (lambda t, bs: [tuple(t[: (i + 1) * bs]) for i in range(len(t) // bs)], "must be an int"),
    ],
)
def test_prefix_hashes_reject_wrong_answers(wrong, match):
    rejects(lab18.check_prefix_hashes, wrong, match=match)


def test_prefix_hashes_reject_the_reference():
    rejects(
        lab18.check_prefix_hashes,
        lambda t, bs: [bm_mod.block_hash(None, t[: (i + 1) * bs]) for i in range(len(t) // bs)],
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 18.5 waste
def kv_waste(lengths, max_len, block_size, ceil=True, cap=None):
    used = sum(lengths)
    blocks = sum(-(-n // block_size) if ceil else n // block_size for n in lengths)
    return 1 - used / (len(lengths) * (cap or max_len)), 1 - used / (blocks * block_size)


def test_kv_waste_solution_passes(capsys):
    lab18.check_kv_waste(kv_waste)
    assert "✔ Exercise 18.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda ls, m, bs: kv_waste(ls, m, bs, ceil=False), r"ceil\(l / block_size\)"),
        (lambda ls, m, bs: kv_waste(ls, m, bs, cap=max(ls)), "not the longest seen"),
        (
            lambda ls, m, bs: tuple(
                (r - sum(ls)) / sum(ls) for r in (len(ls) * m, sum(-(-n // bs) for n in ls) * bs)
            ),
            "RESERVED",
        ),
    ],
)
def test_kv_waste_rejects_wrong_answers(wrong, match):
    rejects(lab18.check_kv_waste, wrong, match=match)


def test_kv_waste_rejects_the_reference():
    def via_manager(lengths, max_len, bs):
        bm_mod.BlockManager(4, bs)
        return kv_waste(lengths, max_len, bs)

    rejects(lab18.check_kv_waste, via_manager, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- issue 18: edges
def test_slot_mapping_rejects_float_slots():
    from tests.checks.test_lab18_attacks import slots_float

    rejects(lab18.check_slot_mapping, slots_float, match="dtype float64: return ints")


def test_paged_attention_rejects_other_labs_attention():
    from tests.checks.test_lab18_attacks import attention_via_lab09, attention_via_lab26

    for fn in (attention_via_lab09, attention_via_lab26):
        rejects(lab18.check_paged_attention, fn, match="reference", error=ReferenceCalledError)


def test_prefix_hashes_reject_an_order_insensitive_chain():
    from tests.checks.test_lab18_attacks import hashes_summed

    rejects(lab18.check_prefix_hashes, hashes_summed, match="in another order")


def test_kv_waste_rejects_waste_at_block_size_one():
    def extra_block(lengths, max_len, bs):  # one block too many per sequence
        used = sum(lengths)
        return 1 - used / (len(lengths) * max_len), 1 - used / (
            sum(n // bs + 1 for n in lengths) * bs
        )

    rejects(lab18.check_kv_waste, extra_block, match="expected")


# every must, only, budget and invariant of the prose -> the test that fails when it breaks
MUSTS = [
    (
        "18.1",
        "Exercise code may not call torch, nor the `minitorch.runtime` reference",
        "test_slot_mapping_rejects_the_reference",
    ),
    ("18.1", "as an int array", "test_slot_mapping_rejects_float_slots"),
    (
        "18.1",
        "positions $0..B-1$ land in block `block_table[0]`, in order",
        "test_slot_mapping_rejects_wrong_answers",
    ),
    (
        "18.2",
        "nor for 18.2 another lab's attention (labs 08, 09, 26)",
        "test_paged_attention_rejects_other_labs_attention",
    ),
    (
        "18.2",
        "the result equals torch's `scaled_dot_product_attention` on the contiguous K/V to "
        "1e-7, whatever the stale slots contain",
        "test_paged_attention_rejects_wrong_answers",
    ),
    ("18.2", "never read them", "test_paged_attention_rejects_wrong_answers"),
    (
        "18.3",
        "requires exactly the blocks and copies that copy-on-write needs",
        "test_copy_on_write_rejects_wrong_answers",
    ),
    (
        "18.3",
        "`free_blocks` (a list; take blocks with `free_blocks.pop(0)`) **in place**",
        "test_copy_on_write_rejects_wrong_answers",
    ),
    (
        "18.3",
        "a block with ref count 1 is always written in place",
        "test_copy_on_write_rejects_wrong_answers",
    ),
    ("18.3", "compares ref counts with the tables", "test_attempt"),
    ("18.4", "one `int` key per **full** block", "test_prefix_hashes_reject_wrong_answers"),
    (
        "18.4",
        "keys of block $i$ must be equal exactly when the first $(i+1)B$ tokens are",
        "test_prefix_hashes_reject_an_order_insensitive_chain",
    ),
    (
        "18.4",
        "a prompt shorter than one block has no key",
        "test_prefix_hashes_reject_wrong_answers",
    ),
    (
        "18.5",
        "with `block_size = 1` paging wastes nothing",
        "test_kv_waste_rejects_waste_at_block_size_one",
    ),
    (
        "18.5",
        "the fraction of held KV slots that hold no token",
        "test_kv_waste_rejects_wrong_answers",
    ),
]
