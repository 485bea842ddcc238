"""An elastic job under torchrun: a killed worker restarted, training resumed from a checkpoint.

:func:`torchrun_command` is the launch line, PyTorch's own elastic agent (no launcher of ours):

    python -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node=2 \\
        --max-restarts=K -m minitorch.elastic.train --dir D ...

``--standalone`` starts a c10d rendezvous on a free local port. When a worker dies, the agent
sees it at its next monitor tick, stops the other workers of the group, and — while restarts
remain — starts the whole group again (``TORCHELASTIC_RESTART_COUNT`` counts the attempts);
the workers of :mod:`minitorch.elastic.train` resume from the newest checkpoint all ranks
committed. :func:`run_elastic` runs it as a subprocess with a time bound and reads the event
log back: the loss at every step from the attempt that last ran it, the attempts, the time
from the kill to the restarted group's first step. With the same world size the curve equals
the uninterrupted run's (:func:`~minitorch.elastic.job.run_emulated`) to the last bit.

:func:`unavailable` says why it cannot run here (no torch, no ``torch.distributed``), or None.

Lab: 32_fault_tolerance_elastic
Paper: PyTorch documentation, "torchrun (Elastic Launch)" and "Torch Distributed Elastic"
(the agent, ``--max-restarts``, ``--standalone`` c10d rendezvous).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ElasticRun", "read_log", "run_elastic", "torchrun_command", "unavailable"]

SCRIPT = "minitorch.elastic.train"


def torchrun_command(
    args: Sequence[str] = (),
    nproc: int = 2,
    max_restarts: int = 1,
    nnodes: str = "1",
    monitor_interval: float = 0.2,
) -> list[str]:
    """The torchrun line that launches :mod:`minitorch.elastic.train` with ``args``."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nnodes={nnodes}",
        f"--nproc-per-node={int(nproc)}",
        f"--max-restarts={int(max_restarts)}",
        f"--monitor-interval={monitor_interval}",
        "-m",
        SCRIPT,
        *args,
    ]


def unavailable() -> str | None:
    """Why torchrun cannot run here, or None (torch is not imported to find out)."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install torch --index-url https://download.pytorch.org/whl/cpu)"
    if importlib.util.find_spec("torch.distributed.run") is None:
        return "this torch build has no torch.distributed.run (torchrun)"
    return None


@dataclass
class ElasticRun:
    """What a torchrun job did, read from its event log."""

    returncode: int
    wall_s: float
    losses: dict[int, float] = field(default_factory=dict)  # step -> loss (last attempt)
    attempts: list[dict[str, Any]] = field(default_factory=list)  # start events
    killed: dict[str, Any] | None = None
    restart_s: float | None = None  # kill -> first step of the restarted group
    done: bool = False
    output: str = ""

    def curve(self) -> list[float]:
        return [self.losses[k] for k in sorted(self.losses)]


def read_log(folder: Path | str) -> list[dict[str, Any]]:
    path = Path(folder) / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_elastic(
    folder: Path | str,
    steps: int = 24,
    every: int = 4,
    kill_at: int = 0,
    kill_rank: int = 1,
    max_restarts: int = 1,
    nproc: int = 2,
    seed: int = 0,
    timeout: float = 150.0,
    step_sleep: float = 0.0,
) -> ElasticRun:
    """Launch the job under torchrun (a subprocess, at most ``timeout`` seconds)."""
    why = unavailable()
    if why:
        raise RuntimeError(f"cannot run torchrun here: {why}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    args = ["--dir", str(folder), "--steps", str(steps), "--every", str(every), "--seed", str(seed)]
    args += [
        "--kill-at",
        str(kill_at),
        "--kill-rank",
        str(kill_rank),
        "--step-sleep",
        str(step_sleep),
    ]
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    cmd = torchrun_command(args, nproc=nproc, max_restarts=max_restarts)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        parts = (err.stdout, err.stderr)  # bytes here even with text=True
        tail = "".join(
            p.decode(errors="replace") if isinstance(p, bytes) else p or "" for p in parts
        )
        code, out = -1, f"torchrun timed out after {timeout} s\n{tail}"
    run = ElasticRun(returncode=code, wall_s=time.monotonic() - t0, output=str(out)[-6000:])
    events = read_log(folder)
    run.attempts = [e for e in events if e["event"] == "start"]
    run.done = any(e["event"] == "done" for e in events)
    for ev in events:
        if ev["event"] == "step":
            run.losses[int(ev["step"])] = float(ev["loss"])  # a later attempt overwrites
    killed = folder / "killed.json"
    if killed.exists():
        run.killed = json.loads(killed.read_text())
        after = [e["t"] for e in events if e["event"] == "step" and e["attempt"] > 0]
        if after:
            run.restart_s = min(after) - run.killed["t"]
    return run
