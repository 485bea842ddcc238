"""Pipeline schedules and their executor: validity, exact bubbles, memory, real training.

Ground truth: closed forms (GPipe / Megatron bubble formulas, 1F1B's min(p - s, m) stash), a
brute-force list scheduler written here, and single-process training of the same GPT.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.comm.simworld import SimWorld
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT
from minitorch.parallel import pipeline as P
from minitorch.parallel import pipeline_exec as E
from minitorch.parallel.pipeline_stage import split_gpt

SIZES = [(p, m) for p in (1, 2, 3, 4) for m in (1, 2, 3, 5, 8)]


def greedy_makespan(p: int, m: int, t_f: float, t_b: float) -> float:
    """A stage never idles when work is ready: the best any flushed schedule can do."""
    return (m + p - 1) * (t_f + t_b)


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_gpipe_and_1f1b_bubbles_equal_the_closed_form(p: int, m: int) -> None:
    for make in (P.gpipe, P.one_f_one_b):
        sched = make(p, m)
        E.validate(sched, m)
        span, bubble, times = E.simulate(sched, 1.0, 2.0)
        assert span == pytest.approx(greedy_makespan(p, m, 1.0, 2.0), abs=1e-12)
        assert bubble == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)
        assert len(times) == 2 * p * m


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_peak_activations_m_for_gpipe_and_p_minus_s_for_1f1b(p: int, m: int) -> None:
    assert E.peak_in_flight(P.gpipe(p, m)) == [m] * p
    assert E.peak_in_flight(P.one_f_one_b(p, m)) == [min(p - s, m) for s in range(p)]


@pytest.mark.parametrize(("p", "v", "k"), [(2, 2, 1), (2, 3, 2), (3, 2, 2), (4, 2, 1), (4, 3, 3)])
def test_interleaved_bubble_is_megatrons(p: int, v: int, k: int) -> None:
    m = k * p
    sched = P.interleaved(p, m, v)
    E.validate(sched, m)
    _, bubble, _ = E.simulate(sched, 1.0 / v, 2.0 / v)
    assert bubble == pytest.approx(P.bubble_formula(p, m, v), abs=1e-9)
    assert bubble < P.bubble_formula(p, m)
    warm = [min(2 * (p - s - 1) + (v - 1) * p + 1, m * v) for s in range(p)]
    assert E.peak_in_flight(sched) == warm


def test_interleaved_with_one_chunk_is_1f1b() -> None:
    assert P.interleaved(4, 8, 1) == P.one_f_one_b(4, 8)
    with pytest.raises(ValueError, match="multiple"):
        P.interleaved(4, 6, 2)


def test_validate_rejects_broken_schedules() -> None:
    bad = P.one_f_one_b(3, 4)
    bad[0] = [("F", 0, 0), ("B", 0, 0)] + [op for op in bad[0] if op[1] != 0]  # no warm-up
    with pytest.raises(ValueError, match="deadlock"):
        E.validate(bad, 4)
    with pytest.raises(ValueError, match="once"):
        E.validate([ops[:-1] for ops in P.gpipe(2, 3)], 3)
    with pytest.raises(ValueError, match="before its forward"):
        E.validate([ops[::-1] for ops in P.gpipe(2, 3)], 3)


def test_simulated_world_measures_the_same_bubble_with_real_messages() -> None:
    for sched in (P.gpipe(4, 6), P.one_f_one_b(4, 6)):
        span, bubble, peaks = E.simulate_on_world(sched, 1.0, 2.0)
        assert (span, bubble) == pytest.approx(E.simulate(sched, 1.0, 2.0)[:2], abs=1e-12)
        assert peaks == E.peak_in_flight(sched)
    # a link of alpha = 0.5 s per message delays each hand-off like t_comm = 0.5
    sched = P.one_f_one_b(3, 4)
    span, _, _ = E.simulate_on_world(sched, 1.0, 2.0, alpha=0.5)
    assert span == pytest.approx(E.simulate(sched, 1.0, 2.0, t_comm=0.5)[0], abs=1e-12)


def _model() -> GPT:
    cfg = GPTConfig(
        vocab_size=16, block_size=8, n_layer=2, n_head=2, n_kv_head=2, d_model=16, tie_head=False
    )
    return GPT(cfg, seed=4, dtype=np.float64)


def test_split_gpt_runs_like_the_whole_model() -> None:
    model = _model()
    x = np.random.default_rng(0).integers(0, 16, (3, 8))
    stages = split_gpt(model, 2)
    np.testing.assert_allclose(stages[1](stages[0](x)).data, model(x).data, rtol=0, atol=1e-12)
    n = sum(t.size for s in stages for t in s.parameters())
    assert n == model.n_params()
    with pytest.raises(ValueError, match="tie"):
        split_gpt(GPT(GPTConfig(n_layer=2)), 2)


@pytest.mark.parametrize("make", [P.gpipe, P.one_f_one_b])
def test_pipeline_step_gradients_equal_one_process(make) -> None:
    gen = np.random.default_rng(1)
    x = gen.integers(0, 16, (8, 8))
    y = np.roll(x, -1, axis=1)
    whole = _model()
    loss = whole.loss(x, y)
    loss.backward()
    model = _model()
    stages, m = split_gpt(model, 2), 4
    sched = make(2, m)
    world = SimWorld(2)
    losses = world.run(
        lambda c: E.pipeline_train_step(
            c, stages[c.rank], sched[c.rank], np.split(x, m), np.split(y, m)
        )
    )
    assert losses[0] == 0.0
    assert losses[1] == pytest.approx(float(loss.data), abs=1e-12)
    for a, b in zip(whole.parameters(), model.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        np.testing.assert_allclose(b.grad, a.grad, rtol=0, atol=1e-12)
    assert world.msgs_sent == [m, m]
