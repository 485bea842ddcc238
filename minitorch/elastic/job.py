"""The training job that the fault-tolerance labs checkpoint, kill and resume.

A small float64 MLP (``minitorch.nn.MLP``, tanh) fitted by ``minitorch.optim.AdamW`` to a
seeded regression set, as in lab 04, under data parallelism as in lab 23: the loader walks a
*global* order (one permutation per epoch from ``(seed, epoch)``) in global batches, and rank
``r`` of ``world`` takes the r-th ``array_split`` slice of each. Its position is the global
``(epoch, index)``, so a resumed job can re-shard the same data over another world size.

Every step also draws from the process-global generators, as real training code does
(augmentation noise, dropout seeds): the noise scale from Python's ``random``, the noise from
``numpy.random``, and with ``Job.torch_rng`` one value from torch's generator (torch must be
imported by the caller, as the torchrun worker does). A resume that forgets any of them
diverges; :func:`rng_state` / :func:`set_rng_state` capture and restore all three (torch only
where it is loaded; never imported here).

:func:`train_state` is everything a bit-exact resume needs: model, optimizer (moments and
step counts), loader position, RNG states and the step. :func:`run_emulated` runs ``world``
ranks in one process (each rank's global RNG state swapped in and out, gradients averaged in
rank order as gloo does for two ranks), the uninterrupted run a restarted job must equal.

Lab: 32_fault_tolerance_elastic
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.nn import MLP
from minitorch.optim import AdamW

__all__ = [
    "Job",
    "ShardedLoader",
    "Trainer",
    "make_data",
    "rng_state",
    "run_emulated",
    "seed_everything",
    "set_rng_state",
    "train_state",
]


@dataclass(frozen=True)
class Job:
    """What to train: sizes, data, batch (global), steps and learning rate."""

    seed: int = 0
    sizes: tuple[int, ...] = (4, 16, 16, 1)
    n: int = 96
    batch: int = 16  # global batch; each of the world's ranks takes a slice
    steps: int = 24
    lr: float = 1e-2
    noise: float = 0.05
    torch_rng: bool = False  # also draw from torch's generator (torch must be loaded)


def make_data(job: Job) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``(n, d)`` and targets ``(n, 1)``: a smooth function plus a little noise."""
    g = np.random.default_rng((job.seed, 1))
    x = g.standard_normal((job.n, job.sizes[0]))
    y = np.sin(x @ g.standard_normal((job.sizes[0], 1))) + 0.1 * g.standard_normal((job.n, 1))
    return x, y


class ShardedLoader:
    """Global batches in a per-epoch permutation; this rank's slice of each (see module doc)."""

    def __init__(self, n: int, batch: int, seed: int, rank: int = 0, world: int = 1) -> None:
        if not 0 <= rank < world or batch < world or batch > n:
            raise ValueError(f"bad loader: n={n} batch={batch} rank={rank} world={world}")
        self.n, self.batch, self.seed, self.rank, self.world = n, batch, seed, rank, world
        self.epoch, self.index = 0, 0

    def _order(self) -> np.ndarray:
        return np.random.default_rng((self.seed, 2, self.epoch)).permutation(self.n)

    def next(self) -> np.ndarray:
        """Row indices of this rank's part of the next global batch (drop-last epochs)."""
        if self.index + self.batch > self.n:
            self.epoch, self.index = self.epoch + 1, 0
        rows = self._order()[self.index : self.index + self.batch]
        self.index += self.batch
        return np.array_split(rows, self.world)[self.rank]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's global and (if loaded) torch's generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """The global generators' states: Python, numpy (legacy MT19937), torch if loaded."""
    _, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    out: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "keys": np.array(keys, np.uint32),
            "pos": pos,
            "has_gauss": has_gauss,
            "cached": cached,
        },
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = torch.get_rng_state().numpy().copy()
    return out


def _as_tuple(x: Any) -> Any:
    return tuple(_as_tuple(v) for v in x) if isinstance(x, list | tuple) else x


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured (lists from a decoder become tuples)."""
    random.setstate(_as_tuple(state["python"]))
    s = state["numpy"]
    keys = np.asarray(s["keys"], np.uint32)
    np.random.set_state(("MT19937", keys, int(s["pos"]), int(s["has_gauss"]), float(s["cached"])))
    torch = sys.modules.get("torch")
    if torch is not None and "torch" in state:
        torch.set_rng_state(torch.from_numpy(np.asarray(state["torch"], np.uint8).copy()))


class Trainer:
    """One rank's model, optimizer and loader; :meth:`step` trains one step."""

    def __init__(self, job: Job, rank: int = 0, world: int = 1) -> None:
        self.job, self.rank, self.world = job, rank, world
        self.model = MLP(
            list(job.sizes), "tanh", rng=np.random.default_rng(job.seed), dtype=np.float64
        )
        self.opt = AdamW(self.model.parameters(), lr=job.lr)
        self.loader = ShardedLoader(job.n, job.batch, job.seed, rank, world)
        self.x, self.y = make_data(job)
        self.step_count = 0

    def local_grads(self) -> tuple[float, list[np.ndarray]]:
        """This rank's loss and gradients on its slice of the next batch (draws the RNGs)."""
        rows = self.loader.next()
        scale = self.job.noise * random.random()
        x = self.x[rows] + scale * np.random.standard_normal(self.x[rows].shape)
        if self.job.torch_rng:
            x = x + 1e-3 * float(sys.modules["torch"].rand(()))
        self.opt.zero_grad()
        loss = ((self.model(Tensor(x)) - Tensor(self.y[rows])) ** 2).mean()
        loss.backward()
        return float(loss.data), [np.array(p.grad) for p in self.model.parameters()]

    def apply(self, grads: Sequence[np.ndarray]) -> None:
        """Set the (averaged) gradients and take the optimizer step."""
        for p, g in zip(self.model.parameters(), grads, strict=True):
            p.grad = np.asarray(g, np.float64)
        self.opt.step()
        self.step_count += 1

    def step(self, average: Callable[[list[np.ndarray]], list[np.ndarray]] = list) -> float:
        loss, grads = self.local_grads()
        self.apply(average(grads))
        return loss


def train_state(t: Trainer) -> dict[str, Any]:
    """Everything a bit-exact resume needs (copies)."""
    opt = [
        {k: (np.array(v) if isinstance(v, np.ndarray) else v) for k, v in s.items()}
        for s in t.opt.state
    ]
    return {
        "step": t.step_count,
        "model": t.model.state_dict(),
        "optim": {"step_count": t.opt.step_count, "state": opt},
        "loader": t.loader.state_dict(),
        "rng": rng_state(),
    }


def load_train_state(t: Trainer, state: dict[str, Any], rng: bool = True) -> None:
    """Restore :func:`train_state` into ``t`` (``rng=False`` leaves the generators alone)."""
    t.step_count = int(state["step"])
    t.model.load_state_dict({k: np.asarray(v) for k, v in state["model"].items()})
    t.opt.step_count = int(state["optim"]["step_count"])
    t.opt.state = [
        {k: (np.array(v, np.float64) if k != "step" else int(v)) for k, v in s.items()}
        for s in state["optim"]["state"]
    ]
    t.loader.load_state_dict(state["loader"])
    if rng:
        set_rng_state(state["rng"])


def run_emulated(job: Job, world: int = 2, steps: int | None = None) -> list[float]:
    """The uninterrupted data-parallel run in one process: rank 0's loss at every step.

    Each rank's global RNG state is swapped in around its turn (seeded ``seed + rank``, as
    :mod:`minitorch.elastic.train` seeds each process); gradients are summed in rank order
    and divided by the world size, as a gloo all-reduce of two ranks does.
    """
    ranks = [Trainer(job, r, world) for r in range(world)]
    states = []
    for r in range(world):
        seed_everything(job.seed + r)
        states.append(rng_state())
    losses = []
    for _ in range(job.steps if steps is None else steps):
        local = []
        for r, t in enumerate(ranks):
            set_rng_state(states[r])
            local.append(t.local_grads())
            states[r] = rng_state()
        total = [sum(gs[1:], gs[0]) for gs in zip(*(g for _, g in local), strict=True)]
        for t in ranks:
            t.apply([g / world for g in total])
        losses.append(local[0][0])
    return losses
