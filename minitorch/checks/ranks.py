"""What a learner's rank program may use of its communicator, how it is counted, and the seal.

Shared by the graders of labs 20, 23, 25 and 26 (the rank programs on the simulated world
and on real gloo ranks):

* :func:`protocol_only` hands the learner the Communicator protocol and nothing else:
  ``rank``, ``world_size``, ``send``, ``recv``, ``isend``, ``irecv``, ``barrier``; the handles
  ``isend``/``irecv`` return expose only ``wait()``. The communicator behind it (the check's
  counters, the simulated world, the gloo comm's torch handles) is reachable only through
  closures, never as an attribute, so no message can go around the count.
* :class:`CountingComm` forwards to a communicator and counts what this rank sends: messages,
  payload bytes (in all, per peer, per dtype) and the order of its sends and receives.
* :func:`sealed_torch_distributed`: on a gloo rank, while the block runs, torch.distributed's
  public collectives and point-to-point calls (``torch.distributed.*``, ``distributed_c10d.*``
  and the ProcessGroup/Backend methods) raise a teaching error; the rank's
  :class:`~minitorch.comm.torchdist.TorchDistComm` keeps working through private handles
  taken before the patch, and everything is restored afterwards.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["PROTOCOL", "CountingComm", "launch_source", "protocol_only", "sealed_torch_distributed"]

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


TORCH_CALLS = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "gather_object", "scatter", "scatter_object_list",
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
    "recv_object_list", "barrier", "monitored_barrier", "new_group", "new_subgroups",
    "all_reduce_coalesced",
)  # fmt: skip
PG_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "_allgather_base", "alltoall", "alltoall_base",
    "broadcast", "reduce", "reduce_scatter", "reduce_scatter_tensor_coalesced",
    "_reduce_scatter_base", "gather", "scatter", "send", "recv", "recv_anysource", "barrier",
)  # fmt: skip


@contextmanager
def sealed_torch_distributed(comm: Any, hint: str = "") -> Iterator[None]:
    """On a gloo rank, while the block runs: torch.distributed's collectives and point-to-point
    calls raise ``RuntimeError("... is not allowed in this exercise ...")`` (``hint`` appended);
    ``comm`` (a TorchDistComm) moves its messages through handles to the default process group
    taken before the patch. Everything patched is restored on exit."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    pg = c10d._get_default_group()
    send, recv, barrier = type(pg).send, type(pg).recv, type(pg).barrier  # before the patch

    def refuse(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                f"torch.distributed's {name} is not allowed in this exercise: move data only "
                f"with the communicator's send/recv/isend/irecv{hint}"
            )

        return call

    saved: list[tuple[Any, str, Any]] = []
    own = comm._dist
    try:
        comm._dist = types.SimpleNamespace(
            isend=lambda t, dst, tag=0: send(pg, [t], dst, tag),
            recv=lambda t, src, tag=0: recv(pg, [t], src, tag).wait(),
            barrier=lambda: barrier(pg).wait(),
        )
        for name in TORCH_CALLS:
            for module in (dist, c10d):
                if name in vars(module):
                    saved.append((module, name, vars(module)[name]))
                    setattr(module, name, refuse(f"{name}()"))
        classes = {dist.ProcessGroup, type(pg), getattr(dist, "Backend", dist.ProcessGroup)}
        for cls in classes:
            for name in PG_METHODS:
                if name in vars(cls):
                    original = vars(cls)[name]
                    try:
                        setattr(cls, name, refuse(f"{cls.__name__}.{name}()"))
                    except (AttributeError, TypeError):  # a class that cannot be patched
                        continue
                    saved.append((cls, name, original))
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
        comm._dist = own


def launch_source(fn: Callable[..., Any], target: str, world_size: int, *args: Any,
                  advice: str) -> list[Any]:  # fmt: skip
    """Run the learner's ``fn`` by its source on ``world_size`` gloo ranks (one launch).

    ``target`` is the importable rank program; it receives the source, ``fn``'s name and
    ``args``. A source that cannot be read, or a rank that fails, becomes a short
    ``CheckFailure``: ``advice`` with ``{why}`` filled in.
    """
    import inspect
    import textwrap

    from minitorch.checks.errors import CheckFailure
    from minitorch.comm.torchdist import RankError, launch

    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise CheckFailure(advice.format(why="its source code cannot be read")) from None
    try:
        return launch(target, world_size, source, fn.__name__, *args)
    except RankError as exc:
        lines = str(exc).strip().splitlines()
        last = next((x.strip() for x in reversed(lines) if "Error:" in x), lines[-1])
        raise CheckFailure(advice.format(why=f"it failed on a gloo rank: {last}")) from None
