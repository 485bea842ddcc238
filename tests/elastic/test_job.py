"""The training job: re-shardable loader, RNG capture, bit-exact resume (and what breaks it)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from minitorch.elastic import job as J

pytestmark = pytest.mark.lab32


def test_loader_slices_cover_the_global_batch_for_any_world() -> None:
    for world in (1, 2, 3):
        loaders = [J.ShardedLoader(20, 6, seed=4, rank=r, world=world) for r in range(world)]
        for _ in range(8):  # crosses epochs (drop-last: 3 batches an epoch)
            rows = np.concatenate([ld.next() for ld in loaders])
            assert len(set(rows.tolist())) == 6
        assert {ld.epoch for ld in loaders} == {loaders[0].epoch}
    # the position is global: world 2 up to a point, then world 3 continues the same order
    a = J.ShardedLoader(20, 6, seed=4)
    seq = [a.next().tolist() for _ in range(5)]
    two = [J.ShardedLoader(20, 6, seed=4, rank=r, world=2) for r in range(2)]
    got = [sorted(np.concatenate([ld.next() for ld in two]).tolist()) for _ in range(2)]
    three = [J.ShardedLoader(20, 6, seed=4, rank=r, world=3) for r in range(3)]
    for ld in three:
        ld.load_state_dict(two[0].state_dict())
    got += [sorted(np.concatenate([ld.next() for ld in three]).tolist()) for _ in range(3)]
    assert got == [sorted(s) for s in seq]


def test_loader_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError):
        J.ShardedLoader(10, 2, 0, rank=2, world=2)
    with pytest.raises(ValueError):
        J.ShardedLoader(10, 20, 0)


def test_rng_state_round_trips_python_and_numpy() -> None:
    J.seed_everything(3)
    random.random(), np.random.standard_normal(3)  # has_gauss set by an odd draw count
    np.random.standard_normal()
    state = J.rng_state()
    a = (random.random(), np.random.standard_normal(5).tolist())
    J.seed_everything(99)
    J.set_rng_state(state)
    assert (random.random(), np.random.standard_normal(5).tolist()) == a


def _run(job: J.Job, steps: int) -> tuple[J.Trainer, list[float]]:
    J.seed_everything(job.seed)
    t = J.Trainer(job)
    return t, [t.step() for _ in range(steps)]


def test_resume_from_state_is_bit_exact() -> None:
    job = J.Job(steps=20)
    _, full = _run(job, 20)
    t, first = _run(job, 8)
    state = J.train_state(t)
    J.seed_everything(1234)  # a new process: other RNG states, a fresh model
    t2 = J.Trainer(job)
    J.load_train_state(t2, state)
    rest = [t2.step() for _ in range(12)]
    assert first + rest == full
    final = J.Trainer(job)
    J.seed_everything(job.seed)
    [final.step() for _ in range(20)]
    for a, b in zip(final.model.parameters(), t2.model.parameters(), strict=True):
        assert np.array_equal(a.data, b.data)


@pytest.mark.parametrize("forget", ["rng", "optim", "loader"])
def test_a_resume_that_forgets_a_part_diverges(forget: str) -> None:
    job = J.Job(steps=16)
    _, full = _run(job, 16)
    t, first = _run(job, 6)
    state = J.train_state(t)
    J.seed_everything(77)
    t2 = J.Trainer(job)
    if forget == "optim":
        state["optim"] = J.train_state(J.Trainer(job))["optim"]
    if forget == "loader":
        state["loader"] = {"epoch": 0, "index": 0}
    J.load_train_state(t2, state, rng=forget != "rng")
    rest = [t2.step() for _ in range(10)]
    assert first + rest != full


def test_emulated_world_is_deterministic_and_differs_from_one_rank() -> None:
    job = J.Job(steps=6)
    a, b = J.run_emulated(job, 2), J.run_emulated(job, 2)
    assert a == b and len(a) == 6
    assert a != J.run_emulated(job, 1)
