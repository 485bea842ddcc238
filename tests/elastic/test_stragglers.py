"""Stragglers: the synchronous step model, detection from per-rank compute, on gloo ranks."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from minitorch.elastic import stragglers as S

pytestmark = pytest.mark.lab32


def test_the_slowest_rank_sets_the_step() -> None:
    assert S.sync_step_time([1.0, 1.0, 3.0], comm=0.5) == 3.5
    assert S.efficiency([1.0, 1.0, 1.0, 1.0]) == 1.0
    assert S.efficiency([1.0, 1.0, 1.0, 3.0]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        S.sync_step_time([])


def test_find_stragglers_is_robust_to_one_noisy_step() -> None:
    c = np.full((10, 4), 0.1)
    c[:, 2] = 0.25
    c[4, 0] = 5.0  # one hiccup on rank 0
    assert S.find_stragglers(c) == [2]
    assert S.find_stragglers(np.full((5, 3), 0.1)) == []
    with pytest.raises(ValueError):
        S.find_stragglers(np.ones(4))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")
def test_a_slow_rank_on_gloo_slows_both_and_is_found() -> None:
    from minitorch.comm.torchdist import launch

    base, steps = 0.05, 10
    out = launch(S.timed_steps, 2, steps, base, {1: 5.0}, timeout=90)
    compute = np.array([o["compute"] for o in out]).T  # (steps, ranks)
    wait = np.array([o["wait"] for o in out]).T
    step = np.array([o["step"] for o in out]).T
    assert S.find_stragglers(compute) == [1]
    assert np.median(wait[:, 0]) > np.median(wait[:, 1]) + base  # rank 0 waits for rank 1
    assert np.median(step[:, 0]) == pytest.approx(np.median(step[:, 1]), rel=0.2)
    assert np.median(step[:, 0]) > 2.5 * base  # everyone runs at the straggler's pace
