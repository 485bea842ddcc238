"""SimWorld: N ranks in one process, run deterministically, with every byte counted.

Each rank's program is a function ``fn(comm, *args)`` run on its own thread, but only one
rank runs at a time: a baton passes in rank order whenever the running rank finishes, waits
for a message that has not arrived, or waits at a barrier. The schedule, the results and
the counts are therefore the same on every run. Sends are buffered (they never block), so
a deadlock happens only when every unfinished rank waits; it is reported, not hung.

Counted per rank: bytes and messages sent and received; per link ``(src, dst)``: bytes.
Clock (alpha-beta model): a message of ``n`` bytes occupies the sender's output port and
the receiver's input port for ``alpha + beta * n`` seconds, starting in the earliest gap where
both ports are free at or after the sender's clock (a message posted late in the schedule but
early in modelled time still finds its slot); the receiver's clock moves to the arrival time
when it receives.

Two-level topology (optional, lab 21): with ``ranks_per_node=g``, ranks ``k g .. k g + g - 1``
form node ``k``; a message between nodes costs ``inter_alpha + inter_beta * n`` instead, and
its bytes are also counted in ``inter_bytes_sent`` of the sender.

Lab: 20_collectives, 21_ring_allreduce (two-level topology)
Paper: R. Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
Parallel Computing 20 (1994) (the alpha-beta model).
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DeadlockError", "SimComm", "SimWorld"]


class DeadlockError(RuntimeError):
    """Every unfinished rank waits for a message that will never come."""


class _Done:
    def __init__(self, value: np.ndarray | None = None) -> None:
        self.value = value

    def wait(self) -> np.ndarray | None:
        return self.value


class _Pending:
    def __init__(self, comm: SimComm, src: int, tag: int) -> None:
        self.comm, self.src, self.tag = comm, src, tag

    def wait(self) -> np.ndarray:
        return self.comm.recv(self.src, self.tag)


class SimComm:
    """The :class:`~minitorch.comm.protocol.Communicator` a rank's program receives."""

    def __init__(self, world: SimWorld, rank: int) -> None:
        self._world, self._rank = world, rank

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world.world_size

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        self._world._send(self._rank, np.asarray(x), int(dst), tag)

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        return self._world._recv(self._rank, int(src), tag)

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> _Done:
        self.send(x, dst, tag)
        return _Done()

    def irecv(self, src: int, tag: int = 0) -> _Pending:
        return _Pending(self, src, tag)

    def barrier(self) -> None:
        self._world._barrier(self._rank)


class SimWorld:
    """``world_size`` simulated ranks with an alpha-beta link model (seconds, seconds/byte)."""

    def __init__(
        self,
        world_size: int,
        alpha: float = 1e-6,
        beta: float = 1e-9,
        *,
        ranks_per_node: int | None = None,
        inter_alpha: float | None = None,
        inter_beta: float | None = None,
    ) -> None:
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        self.world_size, self.alpha, self.beta = int(world_size), float(alpha), float(beta)
        g = int(ranks_per_node) if ranks_per_node else int(world_size)
        if g < 1 or self.world_size % g:
            raise ValueError(f"ranks_per_node={ranks_per_node} must divide {world_size}")
        self.ranks_per_node = g
        self.inter_alpha = self.alpha if inter_alpha is None else float(inter_alpha)
        self.inter_beta = self.beta if inter_beta is None else float(inter_beta)
        self.reset()

    def node(self, rank: int) -> int:
        """The node of ``rank`` (0 for every rank without a two-level topology)."""
        return rank // self.ranks_per_node

    def reset(self) -> None:
        """Zero every counter and clock."""
        p = self.world_size
        self.bytes_sent, self.bytes_recv = [0] * p, [0] * p
        self.msgs_sent, self.msgs_recv = [0] * p, [0] * p
        self.inter_bytes_sent = [0] * p
        self.link_bytes: dict[tuple[int, int], int] = defaultdict(int)
        self.clock = [0.0] * p
        self._out_busy: list[list[tuple[float, float]]] = [[] for _ in range(p)]
        self._in_busy: list[list[tuple[float, float]]] = [[] for _ in range(p)]

    @property
    def time(self) -> float:
        """Modelled time of the last run: the latest rank clock."""
        return max(self.clock)

    # ------------------------------------------------------------------ running
    def run(self, fn: Callable[..., Any], *args: Any, per_rank: bool = False) -> list[Any]:
        """Run ``fn(comm, *args)`` on every rank; return the results in rank order.

        With ``per_rank=True`` each argument is a sequence and rank r receives ``arg[r]``.
        Counters and clocks are reset first.
        """
        self.reset()
        p = self.world_size
        self._queues: dict[tuple[int, int, int], deque[tuple[np.ndarray, float]]] = defaultdict(
            deque
        )
        self._cv = threading.Condition()
        self._turn, self._state = 0, ["run"] * p
        self._wanted: list[tuple[int, int] | None] = [None] * p
        self._error: BaseException | None = None
        results: list[Any] = [None] * p

        def body(r: int) -> None:
            with self._cv:
                self._cv.wait_for(lambda: self._turn == r or self._error is not None)
            try:
                if self._error is None:
                    rank_args = [a[r] for a in args] if per_rank else list(args)
                    results[r] = fn(SimComm(self, r), *rank_args)
            except BaseException as exc:
                with self._cv:
                    if self._error is None:
                        self._error = exc
            with self._cv:
                self._state[r] = "done"
                self._pass(r)

        threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(p)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._error is not None:
            raise self._error
        return results

    def _runnable(self, r: int) -> bool:
        state = self._state[r]
        if state == "run":
            return True
        if state == "recv":
            src, tag = self._wanted[r]  # type: ignore[misc]
            return bool(self._queues[(src, r, tag)])
        return False

    def _pass(self, r: int) -> None:
        """Give the baton to the next runnable rank after ``r`` (caller holds the lock)."""
        p = self.world_size
        waiting = [q for q in range(p) if self._state[q] == "barrier"]
        alive = [q for q in range(p) if self._state[q] != "done"]
        if waiting and len(waiting) == len(alive):
            now = max(self.clock[q] for q in alive)
            for q in waiting:
                self._state[q], self.clock[q] = "run", now
        for k in range(1, p + 1):
            q = (r + k) % p
            if self._runnable(q):
                self._turn = q
                self._cv.notify_all()
                return
        if alive and self._error is None:
            self._error = DeadlockError(
                "deadlock: every unfinished rank waits: "
                + ", ".join(f"rank {q} in {self._state[q]}" for q in alive)
            )
        self._turn = -1
        self._cv.notify_all()

    def _block(self, r: int, state: str) -> None:
        with self._cv:
            self._state[r] = state
            self._pass(r)
            self._cv.wait_for(lambda: self._turn == r or self._error is not None)
            if self._error is not None:
                raise DeadlockError("stopped: another rank failed")
            self._state[r] = "run"

    # ------------------------------------------------------------------ primitives
    def _check_peer(self, peer: int) -> None:
        if not 0 <= peer < self.world_size:
            raise ValueError(f"rank {peer} is outside the world of size {self.world_size}")

    def _send(self, src: int, x: np.ndarray, dst: int, tag: int) -> None:
        self._check_peer(dst)
        n = int(x.nbytes)
        if self.node(src) != self.node(dst):
            cost = self.inter_alpha + self.inter_beta * n
            self.inter_bytes_sent[src] += n
        else:
            cost = self.alpha + self.beta * n
        busy = sorted(self._out_busy[src] + self._in_busy[dst])
        start = self.clock[src]
        for a, b in busy:  # first fit: slide past every busy interval the message overlaps
            if a < start + cost and start < b:
                start = b
        arrival = start + cost
        self._out_busy[src].append((start, arrival))
        self._in_busy[dst].append((start, arrival))
        self.bytes_sent[src] += n
        self.msgs_sent[src] += 1
        self.link_bytes[(src, dst)] += n
        self._queues[(src, dst, tag)].append((x.copy(), arrival))

    def _recv(self, dst: int, src: int, tag: int) -> np.ndarray:
        self._check_peer(src)
        if not self._queues[(src, dst, tag)]:
            self._wanted[dst] = (src, tag)
            self._block(dst, "recv")
        x, arrival = self._queues[(src, dst, tag)].popleft()
        self.clock[dst] = max(self.clock[dst], arrival)
        self.bytes_recv[dst] += int(x.nbytes)
        self.msgs_recv[dst] += 1
        return x

    def _barrier(self, r: int) -> None:
        self._block(r, "barrier")
