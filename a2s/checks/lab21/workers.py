"""What the ranks run in lab 21's real-process check and experiment (importable: spawned).

Each gloo rank's process is the grader's: it makes the data, asks gloo's own ``all_reduce``
for the truth, and counts every message. The learner's ring (given as source text) runs in
a sealed, forked child of it (:func:`a2s.checks.ranks.on_gloo_rank`): the child gets
a protocol-only communicator whose calls are requests to the rank's process, and the seal
refuses torch (as a forbidden call), frames, ``gc``, files, sockets, threads and processes.

:func:`grade_ring` runs every case of one launch; :func:`time_ring` times the learner's ring
against gloo's all-reduce, the ring sealed the same way.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from a2s.checks.lab21._truth import BLOCKS
from a2s.checks.ranks import learner_source, on_gloo_rank

__all__ = ["grade_ring", "time_ring"]


def _data(gen: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return gen.integers(-1000, 1000, n).astype(dtype)
    return gen.standard_normal(n).astype(dtype)


def grade_ring(
    comm: Any, source: str, name: str, cases: list[tuple[int, str, int]], fresh: bool = True
) -> list[dict[str, Any]]:
    """Run the learner's ``name`` on each ``(n, dtype, seed)``; one record per case.

    The data comes from fresh OS entropy (``fresh``; the seeds are public) or from the seed;
    ``want`` is gloo's ``dist.all_reduce`` of it; ``bytes``, ``messages`` and ``to`` (bytes
    per destination) are counted in this process. A learner error raises here (the launch
    reports it as the learner's own).
    """
    make = learner_source(source, name)
    out = []
    for n, dtype, seed in cases:
        gen = np.random.default_rng() if fresh else np.random.default_rng([seed, comm.rank])
        x = _data(gen, n, dtype)
        want = comm.torch_all_reduce(x)
        comm.barrier()
        got, log = on_gloo_rank(comm, make, x.copy(), exercise="21.5", blocks=BLOCKS)
        comm.flush()
        to = [log["to"].get(d, 0) for d in range(comm.world_size)]
        out.append(
            {
                "got": got,
                "want": want,
                "x": x,
                "bytes": log["bytes"],
                "messages": log["messages"],
                "to": to,
            }
        )
        comm.barrier()
    return out


def _timing(make: Any, sizes: list[int], reps: int) -> Any:
    """A maker of the timing loop the learner's child runs: best-of-``reps`` seconds per size
    of the learner's ``fn`` (defined in the child, after the seal)."""

    def maker() -> Any:
        fn = make()

        def loop(comm: Any) -> list[float]:
            best = []
            for n in sizes:
                x = np.ones(n, np.float32)
                t = float("inf")
                for _ in range(reps):
                    comm.barrier()
                    t0 = time.perf_counter()
                    fn(comm, x)
                    t = min(t, time.perf_counter() - t0)
                best.append(t)
            return best

        return loop

    return maker


def time_ring(
    comm: Any, source: str, name: str, sizes: list[int], reps: int = 3
) -> list[tuple[float, float]]:
    """Best-of-``reps`` seconds of the learner's ring and of gloo's all-reduce on float32
    buffers. The ring runs sealed in a child of this rank (its messages cross a pipe to this
    process first, about 50 us and a copy each). The course's own ring is timed, against
    gloo and a transport-free floor, by ``a2s.bench.lab21``."""
    make = learner_source(source, name)
    mine, _ = on_gloo_rank(comm, _timing(make, sizes, reps), exercise="21.5", timeout=600)
    theirs: list[float] = []
    for n in sizes:
        x = np.ones(n, np.float32)
        fastest = float("inf")
        for _ in range(reps):
            comm.barrier()
            t0 = time.perf_counter()
            comm.torch_all_reduce(x)
            fastest = min(fastest, time.perf_counter() - t0)
        theirs.append(fastest)
    return list(zip(mine, theirs, strict=True))
