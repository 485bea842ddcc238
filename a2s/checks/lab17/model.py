"""The graders' own plain model of the caching allocator, written with lists and loops.

A pool is a list of ``[addr, size, segment, allocated]`` rows sorted by address. Each function
takes ``bug``, which makes one known mistake, so a wrong answer can be named by the variant
that reproduces it. Nothing here comes from :mod:`minitorch.runtime.allocator`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KIB", "MIB", "Row", "plain_alloc", "plain_free", "plain_size_class", "pool_rows"]

KIB, MIB = 1 << 10, 1 << 20
Row = list[Any]  # [addr, size, segment, allocated]


def plain_size_class(n: int, bug: str = "") -> tuple[int, str, int]:
    """(rounded size, pool, new-segment bytes) of a request of ``n`` bytes."""
    if bug == "power of two":
        size = 512
        while size < n:
            size *= 2
    elif bug == "floor":
        size = max(512, n // 512 * 512)
    elif bug == "no minimum":
        size = 512 * ((n + 511) // 512)
    else:
        size = 512 * max(1, (n + 511) // 512)
    small = size < MIB if bug == "strict 1 MiB" else size <= MIB
    if small:
        return size, "small", 2 * MIB
    if (size <= 10 * MIB if bug == "10 MiB shared" else size < 10 * MIB) and bug != (
        "no 20 MiB segment"
    ):
        return size, "large", 20 * MIB
    if bug == "segment = size":
        return size, "large", size
    return size, "large", (size + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)


def pool_rows(pool: Any) -> list[Row]:
    """Rows of a list of blocks (anything with addr, size, segment, allocated)."""
    return [[b.addr, b.size, b.segment, b.allocated] for b in pool]


def plain_alloc(pool: list[Row], size: int, small: bool, bug: str = "") -> int | None:
    """Allocate ``size`` bytes in ``pool`` (rows, changed in place); the index, or None."""
    fits = [i for i, r in enumerate(pool) if not r[3] and r[1] >= size]
    if not fits:
        return None
    if bug == "first fit":
        i = fits[0]
    elif bug == "worst fit":
        i = max(fits, key=lambda k: (pool[k][1], -pool[k][0]))
    elif bug == "ties high":
        i = min(fits, key=lambda k: (pool[k][1], -pool[k][0]))
    else:
        i = min(fits, key=lambda k: (pool[k][1], pool[k][0]))
    addr, have, seg, _ = pool[i]
    rest = have - size
    split = rest >= 512 if small else rest > MIB
    if bug == "no split":
        split = False
    elif bug == "always split":
        split = rest > 0
    elif bug == "rest > 512":
        split = rest > 512 if small else rest > MIB
    elif bug == "rest >= 1 MiB":
        split = rest >= 512 if small else rest >= MIB
    if not split:
        pool[i][3] = True
        return i
    if bug == "rest first":
        pool[i] = [addr, rest, seg, False]
        pool.insert(i + 1, [addr + rest, size, seg, True])
        return i + 1
    pool[i] = [addr, size, seg, True]
    pool.insert(i + 1, [addr + size, rest, seg, False])
    return i


def plain_free(pool: list[Row], i: int, bug: str = "") -> int:
    """Free row ``i`` and coalesce; returns the index of the free row that now holds it."""
    pool[i][3] = False
    if bug == "no coalescing":
        return i

    def joins(j: int) -> bool:
        ok = 0 <= j < len(pool) and not pool[j][3]
        return ok and (bug == "across segments" or pool[j][2] == pool[i][2])

    if joins(i + 1):
        pool[i][1] += pool[i + 1][1]
        del pool[i + 1]
    if bug != "next only" and joins(i - 1):
        pool[i - 1][1] += pool[i][1]
        del pool[i]
        return i - 1
    return i
