"""Grader of exercise 18.3: append a token with copy-on-write.

The learner's ``append_slot(table, n_tokens, ref_count, free_blocks, block_size)`` updates
the sequence's block table, the ref counts and the free list in place and returns
``(slot, copy)``, ``copy`` being ``(src, dst)`` or None. The grader keeps a physical cache of
token ids: it makes every copy it is told to, writes each token at the returned slot, and
after every step reads every live sequence back through its block table. Ground truth is the
sequences' own token lists (a plain loop); the ref counts must equal the number of tables
holding each block, and **the blocks in use must equal those of exact copy-on-write** (a
copy only when a partly filled last block is shared): copying every time fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain

__all__ = ["check_copy_on_write"]

Op = tuple[Any, ...]


def _run(
    student: Callable[..., Any], label: str, script: list[Op], n_blocks: int, bs: int
) -> tuple[int, int]:
    ref, free = [0] * n_blocks, list(range(n_blocks))
    tables: dict[int, list[int]] = {}
    tokens: dict[int, list[int]] = {}
    store = np.full(n_blocks * bs, -1, dtype=np.int64)
    # the ideal run: who shares how many tokens with whom, as (owner group) bookkeeping
    ideal: dict[int, list[tuple[int, int]]] = {}  # seq -> per block (block id, fill)
    ideal_ref: dict[tuple[int, int], int] = {}
    copies = appends = ideal_copies = 0
    for step, op in enumerate(script):
        where = f"[{label}, step {step + 1}: {op[0]} seq {op[1]}]"
        if op[0] == "new":
            tables[op[1]], tokens[op[1]], ideal[op[1]] = [], [], []
            ops: list[Op] = [("append", op[1], t) for t in op[2]]
        elif op[0] == "fork":
            parent, child = op[1], op[2]
            tables[child], tokens[child] = list(tables[parent]), list(tokens[parent])
            for b in tables[child]:
                ref[b] += 1
            ideal[child] = list(ideal[parent])
            for key in ideal[child]:
                ideal_ref[key] += 1
            ops = []
        elif op[0] == "free":
            for b in tables.pop(op[1]):
                ref[b] -= 1
                if ref[b] == 0:
                    free.append(b)
            tokens.pop(op[1])
            for key in ideal.pop(op[1]):
                ideal_ref[key] -= 1
                if ideal_ref[key] == 0:
                    del ideal_ref[key]
            ops = []
        else:
            ops = [op]
        for _, seq, tok in ops:
            n = len(tokens[seq])
            held, n_free = len(tables[seq]), len(free)
            got = plain(student(tables[seq], n, ref, free, bs), what="(slot, copy)", case=label)
            if n % bs == 0 and (len(tables[seq]) != held + 1 or len(free) != n_free - 1):
                raise CheckFailure(
                    f"{where} a new block is taken exactly when n_tokens % block_size == 0 "
                    f"(here n_tokens = {n}), from free_blocks: table went from {held} to "
                    f"{len(tables[seq])} blocks, free_blocks from {n_free} to {len(free)}. "
                    "Update the lists IN PLACE (table.append(free_blocks.pop(0))); "
                    "rebinding a name inside the function leaves the caller's lists unchanged."
                )
            if not (isinstance(got, tuple) and len(got) == 2):
                raise CheckFailure(f"{where} return (slot, copy) with copy = (src, dst) or None")
            slot, copy = got
            if copy is not None:
                src, dst = (int(c) for c in copy)
                store[dst * bs : (dst + 1) * bs] = store[src * bs : (src + 1) * bs]
                copies += 1
            store[int(slot)] = tok
            tokens[seq].append(tok)
            appends += 1
            # the ideal: a new block when full, a copy when the partial last block is shared
            blocks = ideal[seq]
            if n % bs == 0:
                blocks.append((seq * 10_000 + n, 0))
                ideal_ref[blocks[-1]] = 1
            elif ideal_ref[blocks[-1]] > 1:
                ideal_copies += 1
                ideal_ref[blocks[-1]] -= 1
                blocks[-1] = (seq * 10_000 + n, 0)
                ideal_ref[blocks[-1]] = 1
        for s, toks in tokens.items():
            t = tables[s]
            assert_true(
                len(t) == -(-len(toks) // bs),
                f"{where} seq {s} holds {len(toks)} tokens in {len(t)} blocks: a new "
                "block only when the last one is full (n_tokens % block_size == 0).",
            )
            read = [int(store[t[p // bs] * bs + p % bs]) for p in range(len(toks))]
            if read != toks:
                others = [o for o in tokens if o != s]
                raise CheckFailure(
                    f"{where} reading seq {s} through its block table gives {read}, its tokens "
                    f"are {toks}. "
                    + (
                        "A block shared with another sequence (ref count > 1) was written in "
                        "place: copy-on-write means taking a free block, returning (src, dst) "
                        "so the cache copies it, and pointing this table at the copy."
                        if others
                        else "A new block is taken exactly when n_tokens % block_size "
                        "== 0; the slot is table[-1] * block_size + n_tokens % block_size."
                    )
                )
        owners = [0] * n_blocks
        for t in tables.values():
            for b in t:
                owners[b] += 1
        assert_true(
            list(ref) == owners,
            f"{where} ref counts {ref} but the tables hold each block {owners} times: a "
            "copy drops one reference of the old block; a new block starts at 1.",
        )
        assert_true(
            sorted(free) == [b for b in range(n_blocks) if owners[b] == 0],
            f"{where} the free list {sorted(free)} must hold exactly the blocks no table "
            "holds: take a block with free_blocks.pop(0).",
        )
        used, want = n_blocks - len(free), len(ideal_ref)
        assert_true(
            used <= want and copies <= ideal_copies,
            f"{where} {used} blocks in use and {copies} block copies so far; exact "
            f"copy-on-write needs {want} and {ideal_copies}: copy only when the last "
            "block is partly filled AND shared (ref count > 1); a block this sequence "
            "alone holds is written in place.",
        )
    return copies, appends


def _scripts(f: np.random.Generator) -> list[tuple[str, list[Op], int]]:
    named: list[tuple[str, list[Op], int]] = [
        (
            "fork inside a block (5 tokens, blocks of 4)",
            [
                ("new", 0, [1, 2, 3, 4, 5]),
                ("fork", 0, 1),
                ("append", 1, 9),
                ("append", 0, 6),
                ("append", 0, 7),
                ("append", 1, 8),
            ],
            4,
        ),
        (
            "fork at a block boundary (8 tokens)",
            [("new", 0, list(range(8))), ("fork", 0, 1), ("append", 0, 8), ("append", 1, 9)],
            4,
        ),
        (
            "a beam of three",
            [
                ("new", 0, [1, 2, 3]),
                ("fork", 0, 1),
                ("fork", 0, 2),
                ("append", 2, 7),
                ("append", 1, 8),
                ("append", 0, 9),
                ("append", 2, 5),
            ],
            4,
        ),
        (
            "parent freed before the child appends",
            [
                ("new", 0, [4, 5, 6]),
                ("fork", 0, 1),
                ("free", 0),
                ("append", 1, 7),
                ("append", 1, 8),
            ],
            4,
        ),
        (
            "block size 1",
            [("new", 0, [1, 2]), ("fork", 0, 1), ("append", 1, 3), ("append", 0, 4)],
            1,
        ),
    ]
    bs, script, live, nxt = (
        int(f.choice([2, 3, 4])),
        [("new", 0, f.integers(0, 9, 5).tolist())],
        [0],
        1,
    )
    for _ in range(14):
        r = f.random()
        if r < 0.25:
            script.append(("fork", int(f.choice(live)), nxt))
            live.append(nxt)
            nxt += 1
        elif r < 0.32 and len(live) > 1:
            gone = int(f.choice(live))
            script.append(("free", gone, None))
            live.remove(gone)
        else:
            script.append(("append", int(f.choice(live)), int(f.integers(0, 9))))
    named.append((fresh(f"random forks and appends, blocks of {bs}"), script, bs))
    return named


@grader("18.3", blocks=("minitorch.runtime.block_manager:BlockManager",), hand="replay")
def check_copy_on_write(append_slot: Callable[..., Any]) -> str:
    """Exercise 18.3: append_slot(table, n_tokens, ref_count, free_blocks, block_size)."""
    total_copies = total_appends = 0
    for label, script, bs in _scripts(fresh_rng("18.3")):
        copies, appends = _run(append_slot, label, script, 64, bs)
        total_copies += copies
        total_appends += appends
    return (
        f"{total_appends} appends over 6 fork scripts (1 fresh) read back exactly; "
        f"{total_copies} block copies, the copy-on-write minimum"
    )
