"""Grader of exercise 18.4: chained block hashes, the keys of prefix caching.

The learner's ``block_hashes(tokens, block_size)`` returns one int per FULL block. The rule
is checked on every pair of sequences of a workload (a shared system prompt, prompts whose
later blocks repeat under a different prefix, the same blocks in another order, partial last
blocks): block i of two
sequences gets the same key exactly when their first (i + 1) * block_size tokens are equal.
Ground truth is that prefix equality, written here. Then the grader replays the workload
through a prefix cache keyed by the learner's hashes and reports the hit rate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain, rng

__all__ = ["check_prefix_hashes"]


def _workload(g: np.random.Generator, n: int, system: int, bs: int) -> list[list[int]]:
    """n prompts: a shared system prompt of ``system`` tokens, then a user part."""
    sys_prompt = g.integers(0, 50, system).tolist()
    out = [sys_prompt + g.integers(0, 50, int(g.integers(1, 3 * bs))).tolist() for _ in range(n)]
    block = g.integers(0, 50, bs).tolist()  # the same block under two different prefixes
    out += [g.integers(50, 60, bs).tolist() + block + [1], g.integers(60, 70, bs).tolist() + block]
    out += [sys_prompt[: bs - 1], []]  # shorter than a block: no key
    a, b = g.integers(70, 80, bs).tolist(), g.integers(80, 90, bs).tolist()
    out += [a + b + [2], b + a]  # the same two blocks in the other order
    return out


def _replay(keys: list[list[int]]) -> tuple[int, int]:
    """(hits, lookups) of a prefix cache: leading blocks hit until the first miss."""
    cache: set[int] = set()
    hits = lookups = 0
    for ks in keys:
        hitting = True
        for k in ks:
            lookups += 1
            hitting = hitting and k in cache
            hits += hitting
            cache.add(k)
    return hits, lookups


@grader(
    "18.4",
    blocks=(
        "minitorch.runtime.block_manager:block_hash",
        "minitorch.runtime.block_manager:BlockManager",
    ),
    hand="parts",
)
def check_prefix_hashes(block_hashes: Callable[..., Any]) -> str:
    """Exercise 18.4: block_hashes(tokens, block_size) -> one int key per full block."""
    gen, f = rng(1804), fresh_rng("18.4")
    suites = [
        ("system prompt of 10 tokens, blocks of 4", _workload(gen, 8, 10, 4), 4),
        ("system prompt of 16 tokens, blocks of 16", _workload(gen, 5, 16, 16), 16),
    ]
    bs = int(f.integers(2, 9))
    suites.append(
        (
            fresh(f"system prompt, blocks of {bs}"),
            _workload(f, 8, int(f.integers(bs, 5 * bs)), bs),
            bs,
        )
    )
    rates = []
    for label, seqs, bs in suites:
        keys = []
        for s in seqs:
            got = plain(block_hashes(list(s), bs), what="keys", case=label)
            assert_true(
                isinstance(got, (list, tuple)),
                f"[{label}] return a list with one key per full block, got {type(got).__name__}",
            )
            assert_true(
                len(got) == len(s) // bs,
                f"[{label}] {len(s)} tokens in blocks of {bs} have {len(s) // bs} full "
                f"blocks, you returned {len(got)} keys: only full blocks are cached "
                "(a partial block still changes).",
            )
            assert_true(
                all(isinstance(k, (int, np.integer)) for k in got),
                f"[{label}] each key must be an int (a hash), not the tokens themselves: "
                "a key's size must not grow with the prefix.",
            )
            keys.append([int(k) for k in got])
        for a in range(len(seqs)):
            for b in range(a + 1, len(seqs)):
                for i in range(min(len(keys[a]), len(keys[b]))):
                    same_prefix = seqs[a][: (i + 1) * bs] == seqs[b][: (i + 1) * bs]
                    if (keys[a][i] == keys[b][i]) != same_prefix:
                        own = seqs[a][i * bs : (i + 1) * bs] == seqs[b][i * bs : (i + 1) * bs]
                        pa, pb = seqs[a][: (i + 1) * bs], seqs[b][: (i + 1) * bs]
                        blocks_a = sorted(pa[j : j + bs] for j in range(0, len(pa), bs))
                        blocks_b = sorted(pb[j : j + bs] for j in range(0, len(pb), bs))
                        if own and not same_prefix:
                            why = (
                                "equal blocks under different prefixes got the same key: "
                                "chain the hash, key_i = hash((key_{i-1}, block i's tokens)), "
                                "since a block's K/V depends on every token before it."
                            )
                        elif not same_prefix and blocks_a == blocks_b:
                            why = (
                                "the same blocks in another order got the same key: the chain "
                                "must depend on the order (hash the tuple (key_{i-1}, block), "
                                "not a sum, xor or set of block hashes)."
                            )
                        else:
                            why = (
                                "equal prefixes must give equal keys (hash the token ids, "
                                "deterministically) and different prefixes different keys."
                            )
                        raise CheckFailure(f"[{label}] block {i} of prompts {a} and {b}: {why}")
        hits, lookups = _replay(keys)
        rates.append(hits / lookups)
    return (
        f"keys equal exactly when prefixes are, on {len(suites)} workloads (1 fresh); "
        f"prefix-cache hit rate {rates[0]:.0%} with a shared system prompt"
    )
