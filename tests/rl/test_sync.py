"""Weight sync: in place keeps the engine's arrays, reload rebuilds it; bytes per sync (full
vs LoRA adapters); versions: a push during a run waits, an unsafe mid-run push mixes."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from minitorch.model.checkpoint import load_pretrained
from minitorch.model.lora import apply_lora
from minitorch.rl.rollout import RolloutEngine, generate, pack, recompute_logprobs
from minitorch.rl.sync import (
    VersionedSync,
    param_bytes,
    reload,
    sync_in_place,
    unsafe_push_at_step,
)
from minitorch.rl.task import make_prompts


def _perturbed(model, seed=0):
    new = copy.deepcopy(model)
    g = np.random.default_rng(seed)
    for p in new.parameters():
        p.data += (0.01 * g.standard_normal(p.shape)).astype(p.dtype)
    return new


@pytest.fixture(scope="module")
def model():
    return load_pretrained()


def test_in_place_sync_copies_into_the_engines_own_arrays(model):
    served = copy.deepcopy(model)
    engine = RolloutEngine(served)
    before = [id(p.data) for p in served.parameters()]
    trainer = _perturbed(model)
    moved = sync_in_place(trainer, served)
    assert moved == sum(p.data.nbytes for p in model.parameters()) == param_bytes(model)
    assert moved == 4 * 93_504  # the tiny GPT, float32
    assert [id(p.data) for p in served.parameters()] == before  # no reallocation
    for a, b in zip(served.parameters(), trainer.parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data)
        assert not np.shares_memory(a.data, b.data)  # copied, not shared
    assert engine.model is served


def test_reload_builds_a_new_engine_from_bytes(model):
    trainer = _perturbed(model, 1)
    engine, moved = reload(trainer, temperature=2.0)
    assert moved > param_bytes(trainer)  # the file: arrays plus names and headers
    prompts = make_prompts(("reverse",), 2, seed=0)
    batch = pack(generate(engine, prompts, 2))
    gap = np.abs(recompute_logprobs(trainer, batch, 2.0) - batch.engine_logp)
    assert gap.max() < 1e-4  # it serves the trainer's new weights


def test_lora_sync_moves_only_the_adapters(model):
    rng = np.random.default_rng(0)
    trainer = apply_lora(copy.deepcopy(model), r=4, alpha=8, rng=rng)
    served = apply_lora(copy.deepcopy(model), r=4, alpha=8, rng=np.random.default_rng(1))
    for p in trainer.parameters():
        if p.requires_grad:
            p.data += 0.05
    full, lora = param_bytes(trainer), param_bytes(trainer, lora_only=True)
    assert sync_in_place(trainer, served, lora_only=True) == lora
    # 2 layers x (q, k, v, o: 64->64 / 64->32, MLP w1, w3: 64->176, w2: 176->64), r = 4
    per_layer = 4 * (64 + 64) * 2 + 4 * (64 + 32) * 2 + 4 * (64 + 176) * 3
    assert lora == 4 * 2 * per_layer and lora < full / 10
    for (n, a), (_, b) in zip(trainer.named_parameters(), served.named_parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data, err_msg=n)
    prompts = make_prompts(("sort",), 2, seed=1)
    batch = pack(generate(RolloutEngine(served, 2.0), prompts, 2))
    assert np.abs(recompute_logprobs(trainer, batch, 2.0) - batch.engine_logp).max() < 1e-4


def test_a_push_during_a_run_is_held_until_the_run_ends(model):
    engine = RolloutEngine(copy.deepcopy(model), temperature=2.0)
    sync = VersionedSync(engine)
    trainer = _perturbed(model, 2)
    seen = []

    def mid_run(e):
        seen.append(sync.push(trainer, 1) if not seen else None)

    engine.on_step = mid_run
    rollouts = generate(engine, make_prompts(("reverse",), 2, seed=0), 2)
    assert seen[0] is False and sync.deferred == 1 and engine.version == 0
    assert all(r.version == 0 for r in rollouts)
    sync.flush()
    assert engine.version == 1 and sync.bytes_moved == [param_bytes(model)]
    with pytest.raises(ValueError, match="not newer"):
        sync.push(trainer, 1)


def test_an_unsafe_mid_run_push_mixes_two_policies(model):
    engine = RolloutEngine(copy.deepcopy(model), temperature=2.0)
    unsafe_push_at_step(engine, _perturbed(model, 3), step=4, version=1)
    rollouts = generate(engine, make_prompts(("reverse",), 2, seed=0), 2)
    mixed = [r for r in rollouts if len(set(r.versions)) > 1]
    assert mixed
    with pytest.raises(ValueError, match="mixes policy versions"):
        mixed[0].version  # noqa: B018


def test_sync_refuses_mismatched_models(model):
    lora = apply_lora(copy.deepcopy(model), r=2, alpha=2, rng=np.random.default_rng(0))
    with pytest.raises(KeyError):
        sync_in_place(lora, copy.deepcopy(model))
    with pytest.raises(ValueError, match="nothing to sync"):
        sync_in_place(model, copy.deepcopy(model), lora_only=True)
