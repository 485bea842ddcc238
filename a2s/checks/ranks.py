"""Learner code on ranks: the simulated world, gloo ranks, one seal, one launcher.

Labs 20-26 run a learner's rank program ``fn(comm, ...)``. Trusted state (what was sent,
to whom, how many bytes, in which order) lives in a process the learner's code does not
run in; the learner's function gets a protocol-only communicator (``rank``, ``world_size``,
``send``, ``recv``, ``isend``, ``irecv``, ``barrier``; handles with ``wait`` only) whose
calls are requests to that process (:mod:`a2s.checks.harness`).

On the simulated world (in the grader's process)::

    from a2s.checks.ranks import run_ranks     # = harness.run_ranks
    run = run_ranks(student, SimWorld(p), [(x_r, ...) for r in range(p)])
    run.results[r]          # rank r's plain result
    run.world.bytes_sent    # the SimWorld's counters, links, clock (run.world.time)
    run.messages[r], run.bytes[r], run.to[r], run.dtypes[r], run.events[r], run.order

``student`` is the guarded callable the grader receives (blocks and the forbidden-call
watch run on every rank); each rank is a forked child that gets only its own arguments; a
rank's error comes back as itself; a deadlock is a ``CheckFailure`` naming who waits.

On gloo ranks (a spawned rank process is trusted; the learner's code runs in a forked,
sealed child of it)::

    # in the importable rank program, on each gloo rank:
    fn = learner_source(source, name)                  # compiled, not yet run
    result, log = on_gloo_rank(comm, fn, *args, exercise="23.2", blocks=REFERENCE)
    log["messages"], log["bytes"], log["to"], log["dtypes"], log["events"]
    # in the grader, in the notebook's process:
    runs = launch_learner(raw, "a2s.checks.lab23.workers:ddp_gloo", 2, cases,
                          advice="Exercise 23.2: ... ({why})")

:func:`on_gloo_rank` forks the rank process; the child installs :func:`seal` (an audit
hook, irremovable), defines the learner's function from its source, and runs it guarded
(``forbid=("torch",)``: torch is forbidden on ranks as in the kernel, with the same
``ForbiddenCallError`` message) with a proxy communicator; the rank process serves the
proxy's requests through a :class:`CountingComm` over its
:class:`~minitorch.comm.torchdist.TorchDistComm`, so the log is the rank process's own.
``payload(x)`` may raise a teaching error on any array before it is counted.
:func:`launch_learner` turns a rank's failure into the learner's own error: the first rank
whose failure is not a lost connection, with its class (``ForbiddenCallError``,
``StudentError`` naming e.g. ``IndexError``) and message, never a peer's "Connection closed".

The seal (:func:`seal`, one for every gloo rank, folded from lab 21's): while a frame of the
learner's code (compiled under a file name starting ``<learner ``) is on the stack, frame
and ``gc`` access, profilers and tracers, ``ctypes``, creating code outside an import,
writing files, opening ``/proc``, ``/dev`` or ``/sys``, sockets, new processes and threads
and other audited operations are refused and recorded; every call is a profile event, and
any torch function, method or C function called from code other than torch's own (the
learner's, or the course's ``minitorch.comm``: ``TorchDistComm``, a process group's
``_get_backend(...)`` and its concrete ``ProcessGroupGloo``/``Backend`` methods, the
functional collectives, ``torch.distributed`` attributes reached any way) is a forbidden
call. Whatever was recorded fails the rank, even if the learner's code caught the exception.

Also here: :func:`protocol_only` (the view itself) and :class:`CountingComm` (what a rank's
trusted process counts; lab 26's gloo ranks use both in the rank process, never in the
learner's child). Lab 21's own seal and the earlier in-process patching of
``torch.distributed`` are gone: :func:`seal` is the only one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.harness import RankRun, run_apart, run_ranks
from a2s.checks.rank_gloo import _sealed_child
from a2s.checks.rank_seal import LEARNER, learner_source, seal

__all__ = [
    "LEARNER",
    "PROTOCOL",
    "CountingComm",
    "RankRun",
    "launch_learner",
    "learner_source",
    "on_gloo_rank",
    "protocol_only",
    "run_ranks",
    "seal",
]

PROTOCOL = ("rank", "world_size", "send", "recv", "isend", "irecv", "barrier")


def protocol_only(comm: Any) -> Any:
    """The Communicator protocol of ``comm`` and nothing else: what a rank program receives."""

    class Handle:
        __slots__ = ("wait",)

        def __init__(self, handle: Any) -> None:
            self.wait = lambda: handle.wait()

        def __repr__(self) -> str:
            return "<request: wait() for it>"

    class Comm:
        __slots__ = ()
        rank = property(lambda self: comm.rank)
        world_size = property(lambda self: comm.world_size)

        def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
            comm.send(x, dst, tag)

        def recv(self, src: int, tag: int = 0) -> np.ndarray:
            return comm.recv(src, tag)  # type: ignore[no-any-return]

        def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Handle:
            return Handle(comm.isend(x, dst, tag))

        def irecv(self, src: int, tag: int = 0) -> Handle:
            return Handle(comm.irecv(src, tag))

        def barrier(self) -> None:
            comm.barrier()

        def __repr__(self) -> str:
            return f"<Communicator rank {comm.rank} of {comm.world_size}>"

    return Comm()


class CountingComm:
    """Forwards to ``inner``; counts what this rank sends and the order of its messages.

    ``messages`` and ``bytes`` (payload bytes, as ``np.asarray(x).nbytes``) in all, ``to``:
    bytes per destination rank, ``dtypes``: bytes per dtype name, ``events``: ``("S", dst)``
    per send and ``("R", src)`` per receive (an ``irecv`` when it is waited for). ``payload``,
    if given, sees every array before it is counted and may raise a teaching error.
    """

    def __init__(self, inner: Any, payload: Callable[[Any], Any] | None = None) -> None:
        self.inner, self.payload = inner, payload
        self.messages = self.bytes = 0
        self.to: dict[int, int] = {}
        self.dtypes: dict[str, int] = {}
        self.events: list[tuple[str, int]] = []

    @property
    def float_bytes(self) -> int:
        """Payload bytes sent as floating-point arrays."""
        return sum(n for d, n in self.dtypes.items() if np.dtype(d).kind == "f")

    @property
    def int_bytes(self) -> int:
        """Payload bytes sent as any other dtype (integers, booleans)."""
        return self.bytes - self.float_bytes

    @property
    def rank(self) -> int:
        return int(self.inner.rank)

    @property
    def world_size(self) -> int:
        return int(self.inner.world_size)

    def _count(self, x: Any, dst: int) -> None:
        a = np.asarray(x if self.payload is None else self.payload(x))
        self.messages, self.bytes = self.messages + 1, self.bytes + a.nbytes
        self.to[int(dst)] = self.to.get(int(dst), 0) + a.nbytes
        self.dtypes[str(a.dtype)] = self.dtypes.get(str(a.dtype), 0) + a.nbytes
        self.events.append(("S", int(dst)))

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        self._count(x, dst)
        self.inner.send(x, dst, tag)

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Any:
        self._count(x, dst)
        return self.inner.isend(x, dst, tag)

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        out = self.inner.recv(src, tag)
        self.events.append(("R", int(src)))
        return out  # type: ignore[no-any-return]

    def irecv(self, src: int, tag: int = 0) -> Any:
        handle, events = self.inner.irecv(src, tag), self.events

        class Received:  # the receive happens when the learner waits for it
            def wait(self) -> Any:
                out = handle.wait()
                events.append(("R", int(src)))
                return out

        return Received()

    def barrier(self) -> None:
        self.inner.barrier()


# ----------------------------------------------------------------------------- the seal


def on_gloo_rank(
    comm: Any,
    make: Callable[[], Callable[..., Any]],
    *args: Any,
    exercise: str,
    blocks: tuple[str, ...] = (),
    payload: Callable[[Any], Any] | None = None,
    timeout: float = 60.0,
) -> tuple[Any, dict[str, Any]]:
    """On a gloo rank: run the learner's function (``make`` from :func:`learner_source`) in
    a sealed forked child, ``fn(comm_proxy, *args)``; return its plain result and this
    rank's log (``messages``, ``bytes``, ``to``, ``dtypes``, ``events``), counted here."""
    counting = CountingComm(comm, payload)
    pending: dict[int, Any] = {}

    def isend(x: np.ndarray, dst: int, tag: int) -> int:
        pending[len(pending) + 1 + max(pending, default=0)] = counting.isend(x, dst, tag)
        return max(pending)

    def irecv(src: int, tag: int) -> int:
        pending[len(pending) + 1 + max(pending, default=0)] = counting.irecv(src, tag)
        return max(pending)

    def wait(key: int) -> Any:
        handle = pending.pop(int(key), None)
        if handle is None:
            raise ValueError("this request was already waited for")
        return handle.wait()

    serve: dict[str, Callable[..., Any]] = {
        "comm.send": counting.send,
        "comm.recv": counting.recv,
        "comm.isend": isend,
        "comm.irecv": irecv,
        "comm.wait": wait,
        "comm.barrier": counting.barrier,
    }
    result = run_apart(
        _sealed_child,
        make,
        exercise,
        tuple(blocks),
        int(comm.rank),
        int(comm.world_size),
        tuple(args),
        serve=serve,
        timeout=timeout,
    )
    for handle in pending.values():  # sends the learner never waited for still complete
        handle.wait()
    log = {
        "messages": counting.messages,
        "bytes": counting.bytes,
        "to": dict(counting.to),
        "dtypes": dict(counting.dtypes),
        "events": list(counting.events),
    }
    return result, log


def launch_learner(
    target: str, world_size: int, *args: Any, advice: str, timeout: float = 120.0
) -> list[Any]:
    """``torchdist.launch(target, world_size, *args)``; a failed rank becomes the learner's
    own error (its class and message), else a ``CheckFailure``: ``advice`` with ``{why}``."""
    import re

    from a2s.checks import errors
    from minitorch.comm.torchdist import RankError, launch

    try:
        return launch(target, world_size, *args, timeout=timeout)
    except RankError as exc:
        text = str(exc)
    found = re.findall(
        r"a2s\.checks\.errors\.(CheckFailure|ForbiddenCallError|ReferenceCalledError|"
        r"StudentError): (.*)",
        text,
    )
    if found:
        kind, message = found[-1]
        raise getattr(errors, kind)(message) from None
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    last = next((x for x in reversed(lines) if "Error" in x), lines[-1] if lines else text)
    raise errors.CheckFailure(advice.format(why=f"a gloo rank failed: {last[:300]}")) from None
