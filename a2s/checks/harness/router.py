"""run_ranks and its router: the SimWorld's rules driven by requests."""

from __future__ import annotations

import collections
import os
import secrets
import select
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.errors import (
    CheckFailure,
    StudentError,
)
from a2s.checks.harness.apart import _ended, _fork, _prepare, _print, _reap, _reraise, _verify
from a2s.checks.harness.codec import decode, encode
from a2s.checks.harness.wire import _Channel, _write
from a2s.checks.harness.world import RankRun, _rank_main, _Stop


class _Router:
    """The SimWorld's rules, driven by requests: one rank runs at a time (the baton)."""

    def __init__(self, world: Any, check: Callable[..., Any] | None) -> None:
        self.world, self.check = world, check
        p = world.world_size
        world.reset()
        world._queues = collections.defaultdict(collections.deque)
        self.state = ["start"] * p  # start | run | recv | barrier | done
        self.wanted: list[tuple[int, int] | None] = [None] * p
        self.turn = -1
        self.run = RankRun(
            [None] * p,
            world,
            [0] * p,
            [0] * p,
            [{} for _ in range(p)],
            [{} for _ in range(p)],
            [[] for _ in range(p)],
        )

    # a rank's request: return ("reply", value) to answer now, or None to park it
    def handle(self, r: int, name: str, args: tuple) -> tuple[str, Any] | None:
        if r != self.turn:
            raise _Stop(CheckFailure(f"rank {r} made a request out of turn (the harness's rule)."))
        if name == "comm.send":
            x, dst, tag = args
            self._send(r, x, dst, tag)
            return ("ok", None)
        if name == "comm.recv":
            src, tag = args
            self._peer_ok(src)
            if self.world._queues[(src, r, tag)]:
                return ("ok", self._take(r, src, tag))
            self.state[r], self.wanted[r] = "recv", (src, tag)
            return None
        if name == "comm.barrier":
            self.state[r] = "barrier"
            return None
        raise _Stop(CheckFailure(f"rank {r} asked for {name!r}, which a rank may not ask."))

    def _peer_ok(self, peer: int) -> None:
        if not 0 <= peer < self.world.world_size:
            raise ValueError(f"rank {peer} is outside the world of size {self.world.world_size}")

    def _send(self, r: int, x: np.ndarray, dst: int, tag: int) -> None:
        self._peer_ok(dst)
        if self.check is not None:
            self.check(r, x, dst)  # may raise CheckFailure: the run stops there
        self.world._send(r, x, dst, tag)
        run, n = self.run, int(x.nbytes)
        run.messages[r] += 1
        run.bytes[r] += n
        run.to[r][dst] = run.to[r].get(dst, 0) + n
        run.dtypes[r][str(x.dtype)] = run.dtypes[r].get(str(x.dtype), 0) + n
        run.events[r].append(("S", dst))
        run.order.append((r, "S", dst, n, str(x.dtype), tag))

    def _take(self, r: int, src: int, tag: int) -> np.ndarray:
        world = self.world
        x, arrival = world._queues[(src, r, tag)].popleft()
        world.clock[r] = max(world.clock[r], arrival)
        world.bytes_recv[r] += int(x.nbytes)
        world.msgs_recv[r] += 1
        self.run.events[r].append(("R", src))
        self.run.order.append((r, "R", src, int(x.nbytes), str(x.dtype), tag))
        return x  # type: ignore[no-any-return]

    def _runnable(self, q: int) -> bool:
        state = self.state[q]
        if state in ("run", "start"):
            return True
        if state == "recv":
            src, tag = self.wanted[q]  # type: ignore[misc]
            return bool(self.world._queues[(src, q, tag)])
        return False

    def next_turn(self, r: int) -> tuple[int, Any] | None:
        """Pass the baton after ``r``: (rank, reply to its parked request), or None if all done.

        Raises a deadlock ``CheckFailure`` when ranks remain and none can run.
        """
        p, world = self.world.world_size, self.world
        waiting = [q for q in range(p) if self.state[q] == "barrier"]
        alive = [q for q in range(p) if self.state[q] != "done"]
        if not alive:
            return None
        released: set[int] = set()
        if waiting and len(waiting) == len(alive):
            now = max(world.clock[q] for q in alive)
            for q in waiting:
                self.state[q], world.clock[q] = "run", now
                released.add(q)
        for k in range(1, p + 1):
            q = (r + k) % p
            if self._runnable(q):
                state = self.state[q]
                self.turn, self.state[q] = q, "run"
                if state == "recv":
                    src, tag = self.wanted[q]  # type: ignore[misc]
                    self.wanted[q] = None
                    return q, self._take(q, src, tag)
                return q, None
        raise _Stop(CheckFailure(self._deadlock(alive)))

    def _deadlock(self, alive: list[int]) -> str:
        parts = []
        for q in alive:
            if self.state[q] == "recv":
                src, tag = self.wanted[q]  # type: ignore[misc]
                parts.append(
                    f"rank {q} waits for a message from rank {src}"
                    + (f" (tag {tag})" if tag else "")
                )
            else:
                parts.append(f"rank {q} waits at the barrier")
        done = [q for q in range(self.world.world_size) if self.state[q] == "done"]
        tail = f"; finished: rank {', '.join(map(str, done))}" if done else ""
        return (
            "deadlock: every unfinished rank waits and no message is on its way: "
            + "; ".join(parts)
            + tail
            + ". Does every recv have a matching send (same peer, "
            "same tag), posted before the sender waits itself?"
        )


def run_ranks(
    fn: Callable[..., Any],
    world: Any,
    rank_args: Sequence[Sequence[Any]],
    *,
    timeout: float = 60.0,
    check: Callable[[int, np.ndarray, int], Any] | None = None,
) -> RankRun:
    """Run ``fn(comm, *rank_args[r])`` on every rank of ``world``, one forked child per rank.

    ``world`` is a :class:`~minitorch.comm.simworld.SimWorld` (reset first; its counters,
    links and clock are the run's record) or a world size (a default SimWorld). ``fn`` is
    usually a grader's guarded student (so blocks and the forbidden-call watch run on every
    rank). The schedule is the SimWorld's: one rank runs at a time and the baton passes in
    rank order when the running rank finishes, waits for a message not yet sent, or waits
    at a barrier; so results, counters and the modelled clock are those of ``world.run``.
    ``check(rank, x, dst)`` sees every payload before it is counted and may raise a
    ``CheckFailure`` (the run stops with it). A rank's error comes back as itself
    (``CheckFailure`` family as such, anything else a ``StudentError`` prefixed
    ``rank r: ``), never as a peer's failure; all ranks blocked: a ``CheckFailure`` naming
    who waits for whom; ``timeout`` is for the whole run.
    """
    if isinstance(world, int):
        from minitorch.comm.simworld import SimWorld

        world = SimWorld(world)
    p = world.world_size
    if len(rank_args) != p:
        raise ValueError(f"rank_args has {len(rank_args)} entries for {p} ranks")
    router = _Router(world, check)
    key = secrets.token_bytes(32)
    _prepare(fn)
    children: list[tuple[int, int, int]] = []
    chans: dict[int, tuple[int, _Channel, int]] = {}  # read fd -> (rank, channel, write fd)
    parked: dict[int, bool] = {}
    error: BaseException | None = None
    finished: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        for r in range(p):
            pid, rfd, wfd = _fork(_rank_main, (fn, r, p, tuple(rank_args[r])), {}, key)
            children.append((pid, rfd, wfd))
            chans[rfd] = (r, _Channel(rfd), wfd)
        wfds = [c[2] for c in children]

        def give(q: int, value: Any) -> None:
            _write(wfds[q], encode(("ok", value)))

        started = False
        while len(finished) < p and error is None:
            # the start requests: every child asks once; rank 0 gets the baton first
            ready = [fd for fd, (_, ch, _) in chans.items() if ch.frame_ready()]
            if not ready:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Stop(
                        CheckFailure(
                            f"the ranks did not finish within {timeout:g} s (stopped): an endless "
                            f"loop on rank {router.turn}?"
                        )
                    )
                live = [fd for fd, (q, ch, _) in chans.items() if not ch.eof]
                for fd in select.select(live, [], [], min(left, 1.0))[0]:
                    chans[fd][1].fill()
                for q, ch, _ in chans.values():
                    if ch.eof and not ch.frame_ready() and q not in finished:
                        raise _Stop(
                            CheckFailure(
                                f"rank {q}'s process {_ended(_reap(children[q][0], False))} "
                                "without answering (os._exit, a crash, or a signal)."
                            )
                        )
                continue
            for fd in ready:
                q, ch, _ = chans[fd]
                frame = ch.frame()
                assert frame is not None
                tag, body = frame[:1], frame[1:]
                if tag == b"P":
                    stream, text = decode(body)
                    _print(str(stream), str(text))
                    continue
                if tag == b"R":
                    answer = _verify(frame, key)
                    finished.add(q)
                    router.state[q] = "done"
                    try:
                        router.run.results[q] = _reraise(answer, prefix=f"rank {q}: ")
                    except (CheckFailure, StudentError) as exc:
                        error = exc
                        break
                    if q == router.turn:
                        nxt = router.next_turn(q)
                        if nxt is not None:
                            give(*nxt)
                    continue
                if tag != b"Q":
                    raise _Stop(CheckFailure("a message from a rank's process was malformed."))
                msg = decode(body)
                if type(msg) is not tuple or len(msg) != 3 or type(msg[0]) is not str:
                    raise _Stop(CheckFailure("a request from a rank's process was malformed."))
                name, args, _kw = msg
                if name == "rank.start":
                    if router.state[q] != "start" or q in parked:
                        raise _Stop(CheckFailure(f"rank {q} asked to start twice."))
                    parked[q] = True
                    if not started and len(parked) == p:
                        started = True
                        router.turn, router.state[0] = 0, "run"
                        give(0, None)
                    continue
                try:
                    reply = router.handle(q, name, tuple(args))
                except (ValueError, TypeError) as exc:
                    _write(wfds[q], encode(("err", (type(exc).__name__, str(exc)))))
                    continue
                if reply is not None:
                    give(q, reply[1])
                else:
                    nxt = router.next_turn(q)
                    if nxt is not None:
                        give(*nxt)
    except _Stop as stop:
        error = stop.error
    finally:
        for _pid, rfd, wfd in children:
            os.close(rfd)
            os.close(wfd)
        for r, (pid, _, _) in enumerate(children):
            _reap(pid, kill=r not in finished or error is not None)
    if error is not None:
        raise error
    router.run.unreceived = sorted(
        (src, dst, tag, len(q)) for (src, dst, tag), q in world._queues.items() if q
    )
    return router.run
