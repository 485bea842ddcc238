"""Young's and Daly's intervals against the papers, the expected-time model against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minitorch.elastic import interval as I

pytestmark = pytest.mark.lab32


def test_young_is_sqrt_2_c_m() -> None:
    assert I.young_interval(5.0, 1440.0) == pytest.approx(120.0)
    assert I.young_interval(0.0, 10.0) == 0.0
    with pytest.raises(ValueError):
        I.young_interval(1.0, 0.0)


@pytest.mark.parametrize(("mtbf", "paper"), [(24 * 60, 117.0), (6 * 60, 57.0), (15.0, 9.1)])
def test_daly_reproduces_the_papers_examples(mtbf: float, paper: float) -> None:
    # Daly 2006, Figs. 3-5: delta = 5 min, R = 10 min; the model's tau_opt as printed
    assert I.daly_interval(5.0, mtbf) == pytest.approx(paper, abs=0.5 if paper > 10 else 0.05)


def test_daly_is_m_when_the_save_is_long() -> None:
    assert I.daly_interval(30.0, 10.0) == 10.0
    assert I.daly_interval(1.0, 1e6) == pytest.approx(I.young_interval(1.0, 1e6) - 1.0, rel=1e-3)


def test_wall_time_is_work_plus_saving_lost_and_restarting() -> None:
    for seed in range(20):
        o = I.simulate(100.0, 7.0, 1.0, 30.0, restart=2.0, seed=seed)
        assert o.wall == pytest.approx(100.0 + o.saving + o.lost + o.restarting)
    assert I.simulate(100.0, 7.0, 1.0, 1e12, restart=2.0).wall == pytest.approx(100.0 + 15.0)


def test_expected_wall_time_matches_the_simulated_mean() -> None:
    work, tau, cost, mtbf, r = 200.0, 10.0, 1.0, 40.0, 3.0
    mean = np.mean([I.simulate(work, tau, cost, mtbf, r, seed=s).wall for s in range(3000)])
    assert mean == pytest.approx(I.expected_wall_time(work, tau, cost, mtbf, r), rel=0.02)
    assert I.expected_wall_time(100.0, 10.0, 1.0, 1e12) == pytest.approx(110.0, rel=1e-6)


def test_the_models_minimum_is_near_daly_and_young() -> None:
    cost, mtbf = 2.0, 500.0
    taus = np.linspace(5, 120, 2000)
    times = [I.expected_wall_time(10_000.0, t, cost, mtbf) for t in taus]
    best = float(taus[int(np.argmin(times))])
    assert best == pytest.approx(I.daly_interval(cost, mtbf), rel=0.03)
    assert best == pytest.approx(I.young_interval(cost, mtbf), rel=0.06)


def test_the_simulated_best_interval_is_within_a_margin_of_daly() -> None:
    cost, mtbf = 1.0, 50.0
    best, means = I.best_interval(500.0, cost, mtbf, trials=150)
    daly = I.daly_interval(cost, mtbf)
    assert best == pytest.approx(daly, rel=0.35)
    near = min(means, key=lambda t: abs(math.log(t / daly)))
    assert means[near] <= 1.02 * means[best]  # flat near the optimum: Daly's costs under 2 %
    assert means[min(means)] > 1.1 * means[best]  # 4x too often costs
