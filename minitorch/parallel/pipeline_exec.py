"""Running a pipeline schedule: validate it, time it, count its memory, execute it on ranks.

A schedule (``minitorch.parallel.pipeline``) lists each stage's ops ``(kind, mb, chunk)``.
Op ``("F", j, c)`` of stage ``s`` is the forward of microbatch ``j`` through virtual stage
``k = c p + s``; it needs the forward of ``j`` through ``k - 1`` (on stage ``(s - 1) mod p``).
``("B", j, c)`` needs the backward of ``j`` through ``k + 1`` and the stage's own forward.

* :func:`validate` raises ``ValueError`` unless every (microbatch, chunk) runs one F and one B
  on each stage, F first, and the stages, each running its list in order and waiting for
  its inputs, can finish (a schedule that breaks a dependency deadlocks).
* :func:`simulate` times it: an op starts when its stage is free and its input has arrived
  (``t_comm`` after the producer ends, when the producer is another stage). The bubble is
  the idle fraction of ``p x makespan``: ``(p - 1) / (m + p - 1)`` for GPipe and 1F1B.
* :func:`peak_in_flight`: per stage, the most forwards whose backward has not run yet (the
  activations a stage must keep): ``m`` for GPipe, ``min(p - s, m)`` for 1F1B.
* :func:`run_stage` executes one stage's ops on a Communicator (SimWorld or gloo ranks):
  receive the input, compute, send the output, with ``forward``/``backward`` callbacks.
  :func:`simulate_on_world` runs it on :class:`~minitorch.comm.simworld.SimWorld`,
  advancing each rank's clock by the compute time, so the bubble is measured with real
  messages (alpha-beta costed); :func:`pipeline_train_step` trains a split tiny GPT.

Lab: 25_pipeline_parallel
Paper: Huang et al., "GPipe" (NeurIPS 2019); Narayanan et al., "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM" (SC 2021), Section 2.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minitorch.autograd import Tensor
from minitorch.comm.protocol import Communicator
from minitorch.comm.simworld import SimWorld
from minitorch.parallel.pipeline import Op, Schedule
from minitorch.parallel.pipeline_stage import GPTStage

__all__ = [
    "peak_in_flight",
    "pipeline_train_step",
    "run_stage",
    "simulate",
    "simulate_on_world",
    "validate",
]

Key = tuple[str, int, int]  # (kind, microbatch, virtual stage)


def _chunks(schedule: Schedule) -> int:
    return 1 + max((c for ops in schedule for _, _, c in ops), default=0)


def _needs(op: Op, s: int, p: int, nv: int) -> tuple[Key | None, int]:
    """The op this one waits for on another stage (None: nothing), and that op's stage."""
    kind, j, c = op
    k = c * p + s
    if kind == "F":
        return (("F", j, k - 1), (s - 1) % p) if k > 0 else (None, s)
    return (("B", j, k + 1), (s + 1) % p) if k < nv - 1 else (None, s)


def _walk(schedule: Schedule, visit: Callable[[int, Op, Key | None, int], None]) -> None:
    """Advance the stages in program order, each op once its input exists; raise if stuck."""
    p = len(schedule)
    nv = p * _chunks(schedule)
    done: set[Key] = set()
    pos = [0] * p
    while any(pos[s] < len(schedule[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while pos[s] < len(schedule[s]):
                op = schedule[s][pos[s]]
                need, src = _needs(op, s, p, nv)
                own = ("F", op[1], op[2] * p + s)
                if (need is not None and need not in done) or (op[0] == "B" and own not in done):
                    break
                visit(s, op, need, src)
                done.add((op[0], op[1], op[2] * p + s))
                pos[s] += 1
                moved = True
        if not moved:
            stuck = ", ".join(
                f"stage {s} at {schedule[s][pos[s]]}" for s in range(p) if pos[s] < len(schedule[s])
            )
            raise ValueError(f"the schedule deadlocks: a dependency is broken ({stuck} wait)")


def validate(schedule: Schedule, m: int) -> None:
    """Raise ``ValueError`` unless ``schedule`` is complete, F-before-B and deadlock-free."""
    v = _chunks(schedule)
    want = sorted((kind, j, c) for kind in "BF" for j in range(m) for c in range(v))
    for s, ops in enumerate(schedule):
        if sorted(tuple(op) for op in ops) != want:
            raise ValueError(f"stage {s} must run F and B of every (microbatch, chunk) once")
        seen: set[tuple[int, int]] = set()
        for kind, j, c in ops:
            if kind == "F":
                seen.add((j, c))
            elif (j, c) not in seen:
                raise ValueError(f"stage {s}: backward of microbatch {j} before its forward")
    _walk(schedule, lambda s, op, need, src: None)


def simulate(
    schedule: Schedule, t_f: float, t_b: float, t_comm: float = 0.0
) -> tuple[float, float, dict[tuple[int, Op], tuple[float, float]]]:
    """Makespan, bubble fraction and ``(start, end)`` of each ``(stage, op)``."""
    p = len(schedule)
    free = [0.0] * p
    end: dict[Key, float] = {}
    times: dict[tuple[int, Op], tuple[float, float]] = {}

    def visit(s: int, op: Op, need: Key | None, src: int) -> None:
        ready = 0.0 if need is None else end[need] + (t_comm if src != s else 0.0)
        start = max(free[s], ready)
        free[s] = start + (t_f if op[0] == "F" else t_b)
        end[(op[0], op[1], op[2] * p + s)] = free[s]
        times[(s, tuple(op))] = (start, free[s])  # type: ignore[index]

    _walk(schedule, visit)
    span = max(free)
    busy = sum(b - a for a, b in times.values())
    return span, 1.0 - busy / (p * span), times


def peak_in_flight(schedule: Schedule) -> list[int]:
    """Per stage: the most forwards whose backward has not run yet (stashed activations)."""
    out = []
    for ops in schedule:
        live = peak = 0
        for kind, _, _ in ops:
            live += 1 if kind == "F" else -1
            peak = max(peak, live)
        out.append(peak)
    return out


def _tag(kind: str, j: int, k: int, nv: int) -> int:
    """Message tag of microbatch ``j`` entering virtual stage ``k`` (F) or leaving it (B)."""
    return 2 * (j * nv + k) + (kind == "B")


def run_stage(
    comm: Communicator,
    ops: Sequence[Op],
    forward: Callable[[int, int, np.ndarray | None], np.ndarray | None],
    backward: Callable[[int, int, np.ndarray | None], np.ndarray | None],
    chunks: int = 1,
) -> int:
    """Run this rank's ops: receive, compute, send. Returns the peak of stashed forwards.

    ``forward(mb, chunk, x)`` gets ``x=None`` on the first virtual stage and its result is
    not sent from the last; ``backward(mb, chunk, g)`` gets ``g=None`` on the last and its
    result is not sent from the first.
    """
    s, p = comm.rank, comm.world_size
    nv = p * chunks
    live = peak = 0
    for kind, j, c in ops:
        k = c * p + s
        if kind == "F":
            x = comm.recv((s - 1) % p, _tag("F", j, k, nv)) if k > 0 else None
            y = forward(j, c, x)
            if k < nv - 1:
                comm.send(np.asarray(y), (s + 1) % p, _tag("F", j, k + 1, nv))
            live += 1
            peak = max(peak, live)
        else:
            g = comm.recv((s + 1) % p, _tag("B", j, k, nv)) if k < nv - 1 else None
            gx = backward(j, c, g)
            if k > 0:
                comm.send(np.asarray(gx), (s - 1) % p, _tag("B", j, k - 1, nv))
            live -= 1
    return peak


def _timed_stage(comm: Communicator, world: SimWorld, schedule: Schedule, cfg: dict) -> int:
    """A stage whose compute only advances its simulated clock and sends ``nbytes`` zeros."""
    payload = np.zeros(max(1, cfg["nbytes"] // 8))

    def forward(j: int, c: int, x: np.ndarray | None) -> np.ndarray:
        world.clock[comm.rank] += cfg["t_f"]
        return payload

    def backward(j: int, c: int, g: np.ndarray | None) -> np.ndarray:
        world.clock[comm.rank] += cfg["t_b"]
        return payload

    return run_stage(comm, schedule[comm.rank], forward, backward, _chunks(schedule))


def simulate_on_world(
    schedule: Schedule,
    t_f: float,
    t_b: float,
    alpha: float = 0.0,
    beta: float = 0.0,
    nbytes: int = 8,
) -> tuple[float, float, list[int]]:
    """Run ``schedule`` on a SimWorld: makespan, bubble fraction, peak stash per stage."""
    p = len(schedule)
    world = SimWorld(p, alpha, beta)
    cfg = {"t_f": t_f, "t_b": t_b, "nbytes": nbytes}
    peaks = world.run(_timed_stage, world, schedule, cfg)
    busy = sum(len(ops) for ops in schedule) / 2 * (t_f + t_b)
    return world.time, 1.0 - busy / (p * world.time), peaks


def pipeline_train_step(
    comm: Communicator,
    stage: GPTStage,
    ops: Sequence[Op],
    inputs: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
) -> float:
    """One training step's forward and backward of this rank's ``stage`` over microbatches.

    Gradients of the mean loss over the ``m`` microbatches accumulate in the stage's
    parameters; the last stage returns that mean loss, the others 0.0.
    """
    m = len(inputs)
    stash: dict[int, tuple[Tensor | None, Tensor]] = {}
    last = comm.rank == comm.world_size - 1
    total = 0.0

    def forward(j: int, c: int, x: np.ndarray | None) -> np.ndarray:
        nonlocal total
        h = None if x is None else Tensor(x, requires_grad=True)
        out = stage(inputs[j] if h is None else h)
        if last:
            out = stage.loss(out, targets[j]) * (1.0 / m)
            total += float(out.data)
        stash[j] = (h, out)
        return out.data

    def backward(j: int, c: int, g: np.ndarray | None) -> np.ndarray | None:
        h, out = stash.pop(j)
        out.backward(g)
        return None if h is None else h.grad

    run_stage(comm, ops, forward, backward)
    return total
