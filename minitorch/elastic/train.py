"""The training script that torchrun launches: data-parallel, checkpointed, resumable.

Run by ``python -m torch.distributed.run ... -m minitorch.elastic.train --dir D`` (see
:mod:`minitorch.elastic.elastic`). Each worker reads its rank and world size from the
environment torchrun sets (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT``,
``TORCHELASTIC_RESTART_COUNT``), joins the gloo group through the agent's store under a
prefix of its attempt (:func:`_attempt_store`), and trains
:class:`~minitorch.elastic.job.Job` with gradients averaged by ``all_reduce``.

Resume: every rank keeps its own checkpoints (``D/ckpt/rank-r``: model, optimizer, loader
position, its RNG states); on start the ranks agree on the newest step that *all* of them
committed (an ``all_reduce`` of MIN over each rank's newest valid step) and load that step,
so a rank killed between its peers' saves cannot split the group. A rank whose world slot is
new (the group grew) starts from rank 0's state with fresh seeds; the loader re-shards the
global batches over the new world by itself.

Faults on purpose: ``--kill-at K --kill-rank R`` makes rank R SIGKILL itself before step K
in the first attempt only (``TORCHELASTIC_RESTART_COUNT == 0``), after recording the time.
Rank 0 appends one JSON line per event to ``D/log.jsonl`` (start, step with its loss,
done).

Lab: 32_fault_tolerance_elastic
Paper: PyTorch documentation, "torchrun (Elastic Launch)" and "Fault-tolerant Distributed
Training with torchrun" (the load-snapshot-on-start pattern).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from minitorch.elastic.checkpoint import load_latest, save
from minitorch.elastic.job import Job, Trainer, load_train_state, seed_everything, train_state

__all__ = ["main", "parse"]


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="minitorch.elastic.train")
    p.add_argument("--dir", required=True, help="checkpoints and the event log")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--every", type=int, default=4, help="checkpoint every N steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--kill-at", type=int, default=0, help="SIGKILL before this step (first attempt)"
    )
    p.add_argument("--kill-rank", type=int, default=1)
    p.add_argument(
        "--step-sleep", type=float, default=0.0, help="seconds of extra 'compute' a step"
    )
    return p.parse_args(argv)


def _log(folder: Path, **event: Any) -> None:
    with open(folder / "log.jsonl", "a") as f:
        f.write(json.dumps({"t": time.time(), **event}) + "\n")


def _attempt_store(dist: Any, rank: int, world: int, attempt: int) -> Any:
    """The rendezvous store (the agent's, at ``MASTER_ADDR:MASTER_PORT``) under a prefix of
    this attempt: the store outlives a failed group, and plain ``env://`` would let a
    restarted rank read a peer's address published by the attempt before (connection
    refused, intermittently)."""
    from datetime import timedelta

    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    store = dist.TCPStore(host, port, world, rank == 0 and not agent, timedelta(seconds=60))
    return dist.PrefixStore(f"a2s/attempt-{attempt}", store)


_NEW = 2**62  # what a rank with no checkpoint folder at all (new in a grown world) reports


def _resume(dist: Any, torch: Any, t: Trainer, folder: Path, rank: int) -> int:
    """Load the newest step every rank committed; returns it (0: a fresh start).

    A rank that had checkpoints but none valid reports -1 and so forces a fresh start; a rank
    new to the job (no folder) does not count, and takes rank 0's state with its own seeds."""
    mine = folder / f"rank-{rank}"
    step, _, _ = load_latest(mine)
    own = _NEW if not mine.exists() else (-1 if step is None else step)
    agreed = torch.tensor([own], dtype=torch.int64)
    dist.all_reduce(agreed, op=dist.ReduceOp.MIN)
    common = int(agreed.item())
    if common < 0 or common == _NEW:
        return 0
    got, state, _ = load_latest(mine, at_most=common)
    if got != common:  # new here: the model, optimizer and loader position of rank 0
        got, state, _ = load_latest(folder / "rank-0", at_most=common)
        if got != common:
            raise RuntimeError(f"rank 0 has no valid checkpoint of step {common}")
        load_train_state(t, state, rng=False)
        return common
    load_train_state(t, state)
    return common


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    folder = Path(args.dir)
    dist.init_process_group(
        "gloo", store=_attempt_store(dist, rank, world, attempt), rank=rank, world_size=world
    )
    job = Job(seed=args.seed, steps=args.steps, torch_rng=True)
    t = Trainer(job, rank, world)
    seed_everything(job.seed + rank)
    start = _resume(dist, torch, t, folder / "ckpt", rank)
    if rank == 0:
        _log(folder, event="start", attempt=attempt, world=world, resumed_from=start)
    while t.step_count < job.steps:
        k = t.step_count + 1
        if attempt == 0 and rank == args.kill_rank and k == args.kill_at:
            (folder / "killed.json").write_text(
                json.dumps({"t": time.time(), "step": k, "rank": rank})
            )
            os.kill(os.getpid(), signal.SIGKILL)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        loss, grads = t.local_grads()
        summed = []
        for g in grads:
            buf = torch.from_numpy(np.array(g, np.float64, copy=True))
            dist.all_reduce(buf)
            summed.append(buf.numpy() / world)
        t.apply(summed)
        if rank == 0:
            _log(folder, event="step", step=k, loss=loss, attempt=attempt, world=world)
        if k % args.every == 0 or k == job.steps:
            save(folder / "ckpt" / f"rank-{rank}", k, train_state(t))
            dist.barrier()
    if rank == 0:
        _log(folder, event="done", attempt=attempt, steps=t.step_count)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
