"""The seeded GRPO run raises the reward; the actor model loses and duplicates no rollout and
is one step off policy when asked; the placement cost model and the memory of one process."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from minitorch.model.checkpoint import load_pretrained
from minitorch.rl.actors import ActorSystem, RolloutActor, TrainerActor, delivery_report
from minitorch.rl.placement import (
    StepCosts,
    best_split,
    colocated_memory,
    idle_fraction,
    measured_costs,
    step_time,
    timeline,
)
from minitorch.rl.rollout import RolloutEngine, generate
from minitorch.rl.sync import param_bytes
from minitorch.rl.task import make_prompts
from minitorch.rl.trainer import GRPOTrainer, RLConfig, run_grpo

CFG = RLConfig(prompts_per_step=2, group_size=4)


@pytest.fixture(scope="module")
def model():
    return load_pretrained()


def test_the_seeded_run_raises_the_reward():
    hist = run_grpo(RLConfig(), steps=10)
    assert hist.eval_after > hist.eval_before + 0.1, (hist.eval_before, hist.eval_after)
    assert hist.bytes_synced == [4 * 93_504] * 10
    assert all(s["kl"] >= 0 for s in hist.stats) and hist.stats[-1]["kl"] > 0
    assert max(s["engine_gap"] for s in hist.stats) < 1e-4
    assert sum(hist.t_gen) > 0 and sum(hist.t_train) > 0


def test_a_shared_engine_moves_no_bytes(model):
    hist = run_grpo(CFG, steps=1, policy=copy.deepcopy(model), share=True, eval_samples=0)
    assert hist.bytes_synced == [0]


def test_a_step_changes_the_policy_and_bumps_the_version(model):
    policy = copy.deepcopy(model)
    trainer = GRPOTrainer(policy, CFG)
    before = [p.data.copy() for p in policy.parameters()]
    rollouts = generate(RolloutEngine(model, 2.0), make_prompts(CFG.tasks, 2, seed=0), 4)
    stats = trainer.step(rollouts)
    assert trainer.version == 1 and stats["ratio_mean"] == pytest.approx(1.0)
    assert any(
        not np.array_equal(a, p.data) for a, p in zip(before, policy.parameters(), strict=True)
    )
    for a, p in zip(before, trainer.reference.parameters(), strict=True):
        np.testing.assert_array_equal(a, p.data)  # the reference stays frozen


def _actors(model, off_policy, steps=3, **net):
    system = ActorSystem(**net)
    rollout = system.add(RolloutActor("rollout", model, CFG))
    trainer = system.add(
        TrainerActor("trainer", copy.deepcopy(model), CFG, steps, "rollout", off_policy)
    )
    system.start(trainer)
    system.run()
    return system, rollout, trainer


@pytest.mark.parametrize(("off_policy", "staleness"), [(False, [0, 0, 0]), (True, [0, 1, 1])])
def test_actors_lose_and_duplicate_nothing(model, off_policy, staleness):
    system, rollout, trainer = _actors(model, off_policy)
    assert delivery_report(rollout.sent, trainer.received) == {"lost": [], "duplicated": []}
    assert len(trainer.received) == 3 * 8 and trainer.staleness == staleness
    assert rollout.engine.version == trainer.trainer.version == 3
    assert system.bytes_of("weights") >= 3 * param_bytes(model)
    assert rollout.engine.model is not trainer.trainer.policy  # no shared state
    served, trained = rollout.engine.model.parameters(), trainer.trainer.policy.parameters()
    for a, b in zip(served, trained, strict=True):
        np.testing.assert_array_equal(a.data, b.data)
        assert not np.shares_memory(a.data, b.data)


def test_a_flaky_transport_is_caught_and_survived(model):
    # message numbers: 0 generate, 1 rollouts, 2 weights, 3 generate, 4 rollouts
    system, rollout, trainer = _actors(model, False, steps=2, duplicate=[1])
    log_kinds = [k for _, _, _, k, _ in system.log]
    assert log_kinds[1] == "rollouts"
    report = delivery_report(rollout.sent, trainer.received)
    assert report["lost"] == [] and len(report["duplicated"]) == 8  # delivered twice
    assert delivery_report(rollout.sent, trainer.trained)["duplicated"] == []  # trained once
    system, rollout, trainer = _actors(model, False, steps=2, drop=[4])
    assert "tick" not in log_kinds and log_kinds.count("generate") == 2
    assert [k for _, _, _, k, _ in system.log].count("generate") == 3  # step 1 asked again
    assert sorted(set(trainer.trained)) == sorted(trainer.trained) == sorted(set(rollout.sent))
    # the weights after step 0 lost: batch 1 comes back one version old and is discarded
    system, rollout, trainer = _actors(model, False, steps=2, drop=[2])
    assert trainer.discarded == 1 and trainer.staleness == [0, 0]
    assert rollout.engine.version == trainer.trainer.version == 2


def test_step_time_cost_model():
    c = StepCosts(t_gen=8.0, t_train=4.0, t_sync=0.5, t_reshard=0.1)
    assert step_time("colocated", c, 8) == pytest.approx(1.0 + 0.5 + 0.1)
    assert step_time("disaggregated", c, 8, 6) == pytest.approx(8 / 6 + 0.5 + 2.0)
    assert step_time("one_step_off", c, 8, 6) == pytest.approx(max(8 / 6, 2.0 + 0.5))
    n, t = best_split("one_step_off", c, 8)
    assert t == min(step_time("one_step_off", c, 8, k) for k in range(1, 8))
    assert t == pytest.approx(step_time("one_step_off", c, 8, n))
    with pytest.raises(ValueError, match="gen_devices"):
        step_time("disaggregated", c, 8)
    with pytest.raises(ValueError, match="mode"):
        step_time("hybrid", c, 8)


@pytest.mark.parametrize("mode", ["colocated", "disaggregated", "one_step_off"])
def test_timeline_reaches_the_steady_state_step_time(mode):
    c = StepCosts(t_gen=8.0, t_train=4.0, t_sync=0.5, t_reshard=0.1)
    gen = None if mode == "colocated" else 5
    a, b = (timeline(mode, c, 8, gen, steps=k) for k in (6, 7))
    grow = max(s.end for s in b) - max(s.end for s in a)
    assert grow == pytest.approx(step_time(mode, c, 8, gen))
    for role in ("rollout", "trainer"):  # a role never runs two things at once
        spans = sorted((s for s in b if s.role == role), key=lambda s: s.start)
        assert all(x.end <= y.start + 1e-12 for x, y in itertools.pairwise(spans))
    if mode == "colocated":
        assert idle_fraction(b) == pytest.approx(0.0, abs=1e-12)
    if mode == "disaggregated":
        assert idle_fraction(b, "rollout") > 0.3 and idle_fraction(b, "trainer") > 0.3
    if mode == "one_step_off":
        assert idle_fraction(b, "trainer") < idle_fraction(
            timeline("disaggregated", c, 8, 5, 7), "trainer"
        )


def test_measured_costs_predict_the_colocated_step():
    c = measured_costs([0.5, 0.7, 0.6], [0.4, 0.4, 0.5], [0.01, 0.02, 0.01])
    assert (c.t_gen, c.t_train, c.t_sync) == (0.6, 0.4, 0.01)
    assert step_time("colocated", c, 1) == pytest.approx(0.6 + 0.4 + 0.01)
    assert measured_costs([1.0], [2.0], [0.0], devices=4).t_gen == 4.0


def test_colocated_memory_counts_four_models_worth(model):
    trainer = GRPOTrainer(copy.deepcopy(model), CFG)
    engine = RolloutEngine(trainer.policy, 2.0, num_blocks=64, block_size=4)
    generate(engine, make_prompts(CFG.tasks, 1, seed=0), 1)
    trainer.step(generate(engine, make_prompts(CFG.tasks, 2, seed=0), 4))
    mem = colocated_memory(trainer.policy, trainer.reference, trainer.opt, engine)
    p = param_bytes(model)
    assert mem["actor"] == mem["reference"] == mem["gradients"] == p
    assert mem["optimizer"] == 2 * p  # AdamW's two moments
    assert mem["kv_cache"] == 2 * 2 * 64 * 4 * 2 * 16 * 4  # K and V, layers, blocks, slots
    assert mem["total"] == 5 * p + mem["kv_cache"]
