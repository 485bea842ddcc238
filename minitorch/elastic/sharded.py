"""Sharded and asynchronous checkpoints: each rank writes its ZeRO shard, off the training path.

Under ZeRO (lab 23, :mod:`minitorch.parallel.zero`) rank ``r`` of ``N`` owns chunk ``r`` of
every flattened parameter and of its optimizer state (``chunk_bounds``: sizes differ by at most
one). A sharded checkpoint is that layout on disk: rank ``r`` saves only its chunks, in its own
folder ``rank-r/`` with its own manifest (:func:`minitorch.elastic.checkpoint.save`), so N
ranks write N files of ``1/N`` the size at once. A step is restorable only when *every* rank
committed it (:func:`common_step`); :func:`load_full` reassembles the arrays from all shards,
and :func:`shard` cuts them again for a world of another size (an elastic restart).
:func:`save_zero`/:func:`load_zero` do it for lab 23's ``ZeroRank`` itself (master weights,
Adam moments, the fp16 chunk), so a ZeRO run resumes bit-exactly.

:class:`AsyncCheckpointer` takes the save off the training loop: :meth:`~AsyncCheckpointer.save`
copies the state (the only part the loop waits for, with a bound of ``max_pending`` copies in
memory: a save that finds the bound reached waits for the writer) and a background thread
encodes, checksums, writes and fsyncs it. ``stalls`` records how long each call held the
loop; :func:`stall_ratio` measures it against the synchronous save on the same state.

Lab: 32_fault_tolerance_elastic
Paper: S. Rajbhandari et al., "ZeRO", SC 2020 (the shard layout); Mohan, Phanishayee, Chidambaram,
"CheckFreq: Frequent, Fine-Grained DNN Checkpointing", FAST 2021 (snapshot then persist).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from minitorch.comm.collectives import chunk_bounds
from minitorch.elastic.checkpoint import load_latest, read_manifest, save

__all__ = [
    "AsyncCheckpointer",
    "common_step",
    "copy_tree",
    "load_full",
    "load_zero",
    "save_shard",
    "save_zero",
    "shard",
    "stall_ratio",
    "unshard",
]


def shard(arrays: Sequence[np.ndarray], rank: int, world: int) -> list[np.ndarray]:
    """Rank ``rank``'s chunk of every flattened array (copies)."""
    out = []
    for a in arrays:
        lo, hi = chunk_bounds(a.size, world)[rank]
        out.append(np.ascontiguousarray(a).reshape(-1)[lo:hi].copy())
    return out


def unshard(
    shards: Sequence[Sequence[np.ndarray]], shapes: Sequence[tuple[int, ...]]
) -> list[np.ndarray]:
    """The full arrays from every rank's chunks (``shards[rank][i]``), in rank order."""
    return [np.concatenate([s[i] for s in shards]).reshape(shape) for i, shape in enumerate(shapes)]


def save_shard(
    folder: Path | str,
    step: int,
    rank: int,
    world: int,
    arrays: Sequence[np.ndarray],
    keep: int = 2,
) -> Path:
    """Rank ``rank``'s shard of ``arrays`` at ``step``, in ``folder/rank-<rank>/``."""
    state = {
        "world": world,
        "rank": rank,
        "shapes": [tuple(int(d) for d in a.shape) for a in arrays],
        "chunks": shard(arrays, rank, world),
    }
    return save(Path(folder) / f"rank-{rank}", step, state, keep=keep)


def common_step(folder: Path | str, world: int) -> int | None:
    """The newest step that every one of ``world`` ranks committed (manifest), or None."""
    steps = [{e["step"] for e in read_manifest(Path(folder) / f"rank-{r}")} for r in range(world)]
    both = set.intersection(*steps) if steps else set()
    return max(both) if both else None


def load_full(folder: Path | str, world: int) -> tuple[int | None, list[np.ndarray] | None]:
    """``(step, arrays)`` reassembled from the newest step whose every shard is valid."""
    folder = Path(folder)
    loaded = []
    for r in range(world):
        step, state, _ = load_latest(folder / f"rank-{r}")
        if step is None:
            return None, None
        loaded.append((step, state))
    steps = {s for s, _ in loaded}
    if len(steps) != 1:  # one rank committed a newer step than another: not restorable there
        raise ValueError(f"ranks' newest valid shards are of different steps: {sorted(steps)}")
    shapes = [tuple(s) for s in loaded[0][1]["shapes"]]
    return loaded[0][0], unshard([st["chunks"] for _, st in loaded], shapes)


def save_zero(folder: Path | str, step: int, store: Any, keep: int = 2) -> Path:
    """A :class:`~minitorch.parallel.zero.ZeroRank`'s own shard: its fp32 master chunks, Adam
    moments and step count, and its chunk of the fp16 weights (stages 0-2 replicate those;
    one copy is enough). Gradients are not saved: the next step computes them anew."""
    r, n = store.comm.rank, store.comm.world_size
    lo_hi = store.bounds if store.stage else [chunk_bounds(w.size, n)[r] for w in store.master]
    if store.stage == 3:
        own = [p.copy() for p in store.p16]
    else:
        own = [p.reshape(-1)[lo:hi].copy() for p, (lo, hi) in zip(store.p16, lo_hi, strict=True)]
    state = {
        "rank": r,
        "world": n,
        "stage": store.stage,
        "steps": store.steps,
        "master": [w.copy() for w in store.master],
        "m": [a.copy() for a in store.m],
        "v": [a.copy() for a in store.v],
        "p16": own,
    }
    return save(Path(folder) / f"rank-{r}", step, state, keep=keep)


def load_zero(folder: Path | str, step: int, store: Any) -> None:
    """Restore :func:`save_zero`'s shard of ``step`` into ``store`` (same world and stage);
    stages 0-2 rebuild their fp16 replica from every rank's chunk."""
    r, n = store.comm.rank, store.comm.world_size
    states = []
    for q in range(n) if store.stage < 3 else [r]:
        got, st, _ = load_latest(Path(folder) / f"rank-{q}", at_most=step)
        if got != step:
            raise ValueError(f"rank {q} has no valid shard of step {step}")
        if (st["world"], st["stage"]) != (n, store.stage):
            raise ValueError(f"shard of world {st['world']} stage {st['stage']}: re-shard first")
        states.append(st)
    mine = states[r] if store.stage < 3 else states[0]
    store.steps = int(mine["steps"])
    for i in range(len(store.master)):
        store.master[i][...] = mine["master"][i]
        store.m[i][...] = mine["m"][i]
        store.v[i][...] = mine["v"][i]
        if store.stage == 3:
            store.p16[i] = np.asarray(mine["p16"][i], np.float16).copy()
        else:
            store.p16[i][...] = np.concatenate([st["p16"][i] for st in states])


def copy_tree(x: Any) -> Any:
    """A deep copy of a state tree's containers and arrays (the snapshot an async save takes)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, dict):
        return {k: copy_tree(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(copy_tree(v) for v in x)
    return x


class AsyncCheckpointer:
    """Snapshot in the caller's thread, persist in a background thread (see module doc)."""

    def __init__(
        self,
        folder: Path | str,
        keep: int = 2,
        max_pending: int = 1,
        writer: Callable[..., Any] = save,
    ) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.folder, self.keep, self.writer = Path(folder), keep, writer
        self._slots = threading.BoundedSemaphore(max_pending)
        self._queue: queue.Queue[tuple[int, Any] | None] = queue.Queue()
        self._error: BaseException | None = None
        self.stalls: list[float] = []
        self.saved: list[int] = []
        self._thread = threading.Thread(target=self._run, name="a2s-ckpt-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            step, snap = item
            try:
                self.writer(self.folder, step, snap, keep=self.keep)
                self.saved.append(step)
            except BaseException as e:  # reported by the next save() or wait()
                self._error = e
            finally:
                self._slots.release()
                self._queue.task_done()
        self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(f"background checkpoint failed: {err!r}") from err

    def save(self, step: int, state: Any) -> float:
        """Snapshot ``state`` and queue it; returns (and records) the seconds the caller waited."""
        t0 = time.perf_counter()
        self._raise()
        self._slots.acquire()  # the bound: wait for the writer when max_pending copies exist
        self._queue.put((step, copy_tree(state)))
        stall = time.perf_counter() - t0
        self.stalls.append(stall)
        return stall

    def wait(self) -> None:
        """Block until every queued save is on disk."""
        self._queue.join()
        self._raise()

    def close(self) -> None:
        self.wait()
        self._queue.put(None)
        self._thread.join()


def stall_ratio(
    folder: Path | str, state: Any, saves: int = 3, work: float = 0.0
) -> dict[str, float]:
    """Seconds the loop is held per save: synchronous vs :class:`AsyncCheckpointer`.

    ``work``: seconds of "training" between saves (``time.sleep``, which releases the GIL as
    compute in numpy or torch does); the writer needs about a synchronous save's time of it."""
    folder = Path(folder)
    sync = []
    for k in range(saves):
        t0 = time.perf_counter()
        save(folder / "sync", k, state)
        sync.append(time.perf_counter() - t0)
    ckpt = AsyncCheckpointer(folder / "async")
    try:
        for k in range(saves):
            ckpt.save(k, state)
            time.sleep(work or 1.5 * sync[-1])
        ckpt.wait()
    finally:
        ckpt.close()
    s, a = float(np.median(sync)), float(np.median(ckpt.stalls))
    return {"sync_s": s, "async_stall_s": a, "ratio": s / a if a > 0 else float("inf")}
