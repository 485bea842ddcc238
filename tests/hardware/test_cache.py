"""The LRU cache simulator against a plain-loop reference, one access at a time."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware.cache import CacheConfig, LRUCache, hit_mask, simulate


def plain_lru(lines: list[int], n_sets: int, ways: int) -> list[bool]:
    """Per access: hit? Timestamps instead of ordered containers (a different algorithm)."""
    stamp: list[dict[int, int]] = [{} for _ in range(n_sets)]
    hits = []
    for t, ln in enumerate(lines):
        s = stamp[ln % n_sets]
        hits.append(ln in s)
        if ln not in s and len(s) == ways:
            del s[min(s, key=s.__getitem__)]
        s[ln] = t
    return hits


@pytest.mark.parametrize("seed", range(8))
def test_hits_match_a_plain_loop_on_random_traces(seed):
    g = np.random.default_rng(seed)
    line, ways, sets = (int(g.choice(v)) for v in ([16, 32, 64], [1, 2, 4, 8], [1, 2, 8]))
    cfg = CacheConfig(line * ways * sets, line, ways)
    addrs = g.integers(0, 4 * cfg.size, 3000) // 8 * 8
    want = plain_lru((addrs // line).tolist(), sets, ways)
    assert hit_mask(addrs, cfg).tolist() == want
    (stats,) = simulate(addrs, cfg)
    assert stats.misses == want.count(False) and stats.hits == want.count(True)
    assert stats.bytes_moved == stats.misses * line


def test_lru_not_fifo_and_direct_mapped_conflicts():
    two_way = CacheConfig(128, 64, 2)  # one set of two lines
    assert hit_mask(np.array([0, 64, 0, 128, 0]), two_way).tolist() == [0, 0, 1, 0, 1]
    direct = CacheConfig(256, 64, 1)  # lines 0 and 4 share set 0
    assert not hit_mask(np.array([0, 256, 0, 256]), direct).any()


def test_chunks_and_runs_of_one_line_change_nothing():
    g = np.random.default_rng(0)
    addrs = np.repeat(g.integers(0, 1 << 14, 500) * 8, g.integers(1, 5, 500))
    cfg = CacheConfig(1024, 64, 4)
    whole = LRUCache(cfg)
    whole.access(addrs)
    parts = LRUCache(cfg)
    for chunk in np.array_split(addrs, 7):
        parts.access(chunk)
    assert (whole.stats.hits, whole.stats.misses) == (parts.stats.hits, parts.stats.misses)
    assert whole.stats.misses == plain_lru((addrs // 64).tolist(), cfg.sets, 4).count(False)


def test_second_level_sees_the_first_levels_misses():
    g = np.random.default_rng(1)
    addrs = g.integers(0, 1 << 15, 5000) * 8
    l1, l2 = CacheConfig(512, 64, 2), CacheConfig(4096, 64, 4)
    s1, s2 = simulate(addrs, l1, l2)
    lines = (addrs // 64).tolist()
    h1 = plain_lru(lines, l1.sets, 2)
    missed = [ln for ln, hit in zip(lines, h1, strict=True) if not hit]
    assert s2.accesses == s1.misses == len(missed)
    assert s2.misses == plain_lru(missed, l2.sets, 4).count(False)
    assert 0 < s2.miss_rate <= 1


def test_config_validation():
    assert CacheConfig(32 * 1024, 64, 8).sets == 64
    with pytest.raises(ValueError):
        CacheConfig(1000, 64, 8)
    with pytest.raises(ValueError):
        simulate(np.zeros(3, dtype=np.int64), CacheConfig(512, 64, 2), CacheConfig(512, 32, 2))
