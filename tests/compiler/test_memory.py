"""Memory planning: no live overlap, greedy by size at the lower bound on the models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2s.checks.lab14._truth import random_graph
from minitorch.compiler import capture, fusion, memory, models, passes

pytestmark = pytest.mark.lab14


def _graphs():
    for fn, d in [
        (models.attention_block(64, 4)[0], 64),
        (models.mlp([64, 256, 256, 64])[0], 64),
        (models.gelu_layernorm(64)[0], 64),
        (models.transformer(64, 4, 2)[0], 64),
    ]:
        g = capture.trace(fn, [np.zeros((128, d), np.float32)])
        yield g
        yield fusion.fuse(g)


def test_greedy_by_size_is_within_ten_percent_of_the_bound() -> None:
    for g in _graphs():
        for in_place in (False, True):
            bufs = memory.buffers(g, in_place)
            offsets = memory.greedy_by_size(bufs)
            assert memory.overlaps(bufs, offsets) == []
            assert memory.peak_bytes(bufs, offsets) <= 1.10 * memory.lower_bound(bufs)
            assert memory.naive_bytes(bufs) >= memory.peak_bytes(bufs, offsets)


def test_first_fit_is_worse_on_attention() -> None:
    g = capture.trace(models.attention_block(64, 4)[0], [np.zeros((128, 64), np.float32)])
    bufs = memory.buffers(g, in_place=False)
    ff, gs = memory.first_fit(bufs), memory.greedy_by_size(bufs)
    assert memory.overlaps(bufs, ff) == []
    assert (
        memory.peak_bytes(bufs, ff) > 1.10 * memory.lower_bound(bufs) >= memory.peak_bytes(bufs, gs)
    )


def test_in_place_reuse_merges_an_elementwise_chain() -> None:
    g = capture.trace(lambda x: ((x * 2.0).tanh() + 1.0).exp(), [np.zeros((8, 8), np.float32)])
    (buf,) = memory.buffers(g)
    assert len(buf.values) == 4 and buf.size == 256
    assert len(memory.buffers(g, in_place=False)) == 4


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_plans_never_overlap_live_buffers(seed: int) -> None:
    g = passes.dce(random_graph(np.random.default_rng(seed), 16, 16, 16))[0]
    bufs = memory.buffers(g)
    for plan in (memory.greedy_by_size, memory.first_fit):
        offsets = plan(bufs)
        assert memory.overlaps(bufs, offsets) == []
        assert memory.peak_bytes(bufs, offsets) >= memory.lower_bound(bufs)


def test_overlaps_catches_a_bad_plan() -> None:
    a, b = memory.Buffer("a", 64, 0, 2, ("a",)), memory.Buffer("b", 64, 2, 3, ("b",))
    assert memory.overlaps([a, b], {"a": 0, "b": 32}) == [("a", "b")]
    assert memory.overlaps([a, b], {"a": 0, "b": 64}) == []
