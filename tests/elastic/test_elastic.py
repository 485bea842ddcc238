"""Elastic restart under torchrun: a worker SIGKILLed mid-run, the group restarted by the
agent, training resumed from the last checkpoint; the loss curve equals the uninterrupted run's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from minitorch.elastic import elastic as E
from minitorch.elastic.job import Job, run_emulated

pytestmark = pytest.mark.lab32

WHY = E.unavailable()


def test_the_launch_line_is_torchrun_standalone() -> None:
    cmd = E.torchrun_command(["--dir", "d"], nproc=2, max_restarts=3)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    for flag in ("--standalone", "--nnodes=1", "--nproc-per-node=2", "--max-restarts=3"):
        assert flag in cmd
    assert cmd[-4:] == ["-m", "minitorch.elastic.train", "--dir", "d"]


def test_train_arguments_parse() -> None:
    from minitorch.elastic.train import parse

    a = parse(["--dir", "x", "--kill-at", "5"])
    assert (a.dir, a.steps, a.every, a.kill_at, a.kill_rank) == ("x", 24, 4, 5, 1)


@pytest.mark.skipif(WHY is not None, reason=f"torchrun cannot run here: {WHY}")
def test_killed_worker_restarted_and_the_curve_is_bit_exact(tmp_path: Path) -> None:
    import torch  # noqa: F401  (the uninterrupted run draws from torch's generator too)

    steps = 24
    run = E.run_elastic(
        tmp_path, steps=steps, every=4, kill_at=10, kill_rank=1, max_restarts=2, timeout=150
    )
    assert run.returncode == 0 and run.done, run.output
    assert run.killed is not None and run.killed["step"] == 10
    assert [a["attempt"] for a in run.attempts] == [0, 1]
    assert [a["resumed_from"] for a in run.attempts] == [0, 8]  # the last checkpoint before 10
    assert run.restart_s is not None and 0 < run.restart_s < 60
    assert sorted(run.losses) == list(range(1, steps + 1))
    ref = run_emulated(Job(steps=steps, torch_rng=True), world=2)
    assert run.curve() == ref  # to the last bit
    # the resumed attempt re-ran steps 9 and 10 with the values of the first attempt's 9
    firsts = [e for e in E.read_log(tmp_path) if e["event"] == "step" and e["step"] == 9]
    assert len(firsts) == 2 and firsts[0]["loss"] == firsts[1]["loss"]


@pytest.mark.skipif(WHY is not None, reason=f"torchrun cannot run here: {WHY}")
def test_an_uninterrupted_run_then_a_resume_on_fewer_ranks_reshards(tmp_path: Path) -> None:
    import torch  # noqa: F401

    from minitorch.elastic.checkpoint import load_latest
    from minitorch.elastic.job import Trainer, load_train_state

    two = E.run_elastic(tmp_path, steps=12, every=4, max_restarts=0, nproc=2, timeout=120)
    assert two.returncode == 0 and two.done, two.output
    assert two.curve() == run_emulated(Job(steps=12, torch_rng=True), world=2)
    step, state, _ = load_latest(tmp_path / "ckpt" / "rank-0")  # (keep=2: gone after the next)
    assert step == 12
    one = E.run_elastic(tmp_path, steps=20, every=4, max_restarts=0, nproc=1, timeout=120)
    assert one.returncode == 0 and one.done, one.output
    assert [(a["world"], a["resumed_from"]) for a in one.attempts] == [(2, 0), (1, 12)]
    # the same continuation in this process: rank 0's step-12 state, the world now 1
    t = Trainer(Job(steps=20, torch_rng=True), rank=0, world=1)
    load_train_state(t, state)
    assert [one.losses[k] for k in range(13, 21)] == [t.step() for _ in range(8)]
    assert t.loader.state_dict() == {"epoch": 3, "index": 32}  # 20 global batches of 16 in 96
