"""The planner: cost formulas against the paper's closed forms, published layouts, memory limits."""

from __future__ import annotations

import pytest

from minitorch.parallel.planner import PUBLISHED, enumerate_layouts, estimate, explain, plan, selene
from minitorch.parallel.planner_cost import (
    USABLE,
    Layout,
    Model,
    flops_per_step,
    memory_per_gpu,
    model_params,
    step_time,
)


def test_parameter_counts_match_table_1():
    assert model_params(PUBLISHED["1T"].model) / 1e9 == pytest.approx(1008.0, abs=0.5)
    assert model_params(PUBLISHED["145.6B"].model) / 1e9 == pytest.approx(145.6, abs=0.1)


def test_flops_are_the_papers_eq3():
    m, b = PUBLISHED["1T"].model, 3072
    s, h, lay, v = m.seq, m.hidden, m.layers, m.vocab
    want = 96 * b * s * lay * h**2 * (1 + s / (6 * h) + v / (16 * lay * h))
    assert flops_per_step(m, b) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_published_setups_within_tolerance(key):
    pub = PUBLISHED[key]
    best = plan(pub.model, pub.cluster, pub.batch)[0]
    assert abs(best.util["paper"] - pub.util) <= 0.05
    assert best.layout.tp == 8  # the paper's rule: TP = GPUs per node
    if pub.layout is not None:
        for got, want in [(best.layout.pp, pub.layout.pp), (best.layout.dp, pub.layout.dp)]:
            assert want / 2 <= got <= 2 * want
        mine = estimate(pub.model, pub.cluster, pub.layout, pub.batch)
        assert mine.fits and mine.seconds <= 1.05 * best.seconds


def test_one_trillion_picks_the_papers_layout_and_rejects_pp32_for_memory():
    pub = PUBLISHED["1T"]
    assert plan(pub.model, pub.cluster, pub.batch)[0].layout == Layout(8, 64, 6)
    e = estimate(pub.model, pub.cluster, Layout(8, 32, 12), pub.batch)
    assert not e.fits and e.memory > USABLE * pub.cluster.memory
    assert all(x.fits for x in plan(pub.model, pub.cluster, pub.batch))


def test_memory_terms():
    m = Model("toy", 4, 64, 4, 32, 100)
    one = memory_per_gpu(m, Layout(1, 1, 1), 8)
    two = memory_per_gpu(m, Layout(1, 2, 1), 8)
    assert two < one  # half the layers' states
    params = 4 * (12 * 64 * 64 + 13 * 64) + 100 * 64
    kept = 4 * 1 * 2 * 32 * 64
    working = 32 * 64 * (10 + 24 + 5 * 4 * 32 / 64)
    assert one == pytest.approx(16 * params + kept + working)


def test_bubble_is_p_minus_1_over_m_and_enumeration_respects_divisibility():
    m, c = PUBLISHED["145.6B"].model, selene(1536)
    t = step_time(m, c, Layout(8, 8, 24), 2304)
    assert t["bubble"] == pytest.approx((t["compute"] + t["elementwise"]) * 7 / 96)
    for lay in enumerate_layouts(m, c, 2304):
        assert lay.tp * lay.pp * lay.dp == 1536 and m.heads % lay.tp == 0 and m.layers % lay.pp == 0
        assert 2304 % lay.dp == 0 and (8 % lay.tp == 0 or lay.tp % 8 == 0)


def test_moe_and_context_dimensions():
    moe = Model("MoE", 8, 1024, 16, 2048, 32000, experts=8)
    lays = enumerate_layouts(moe, selene(64), 512, max_cp=2)
    assert any(lay.ep > 1 for lay in lays) and any(lay.cp == 2 for lay in lays)
    ranked = plan(moe, selene(64), 512, max_cp=2)
    assert ranked and "best" in explain(ranked, moe, selene(64), 512)
    assert "runner-up" in explain(ranked, moe, selene(64), 512)


def test_nothing_fits():
    huge = Model("huge", 8, 65536, 64, 2048, 51200)
    assert plan(huge, selene(8), 8) == []
    assert "no layout fits" in explain([], huge, selene(8), 8)


def test_the_2024_recipe_is_outside_the_2021_cost_model():
    """The published 70B / 64 H100 layout needs memory savings this model leaves out."""
    from minitorch.parallel.planner import RECIPE_70B as r

    e = estimate(r.model, r.cluster, r.layout, r.batch)
    assert not e.fits
    best = plan(r.model, r.cluster, r.batch, max_cp=2)[0]
    assert best.fits and best.layout != r.layout
