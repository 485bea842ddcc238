"""What the learner's rank program may use of its communicator, and how it is counted.

:class:`CountingComm` forwards to the rank's communicator and counts the messages, payload
bytes and dtypes it sends and the order of its sends and receives. :func:`protocol_only`
hands the learner the Communicator protocol and nothing else (no uncounted message through
a private handle). On a gloo rank :func:`sealed_torch_distributed` makes torch.distributed's
own collectives and point-to-point calls raise while the learner's code runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from minitorch.autograd import Tensor

__all__ = ["CountingComm", "protocol_only", "sealed_torch_distributed"]


def _payload(x: Any) -> Any:
    """``x`` if it is numbers a communicator can carry; a teaching TypeError otherwise."""
    if x is None:
        raise TypeError(
            "comm.send got None. Is it x.grad? A received activation gets a gradient only "
            "when it is wrapped as Tensor(x, requires_grad=True) before the stage runs on it."
        )
    if isinstance(x, Tensor):
        raise TypeError("comm.send got a Tensor: send its numpy array (out.data, x.grad).")
    if np.asarray(x).dtype.kind not in "biuf":
        raise TypeError(f"comm.send carries numeric numpy arrays, not {type(x).__name__}.")
    return x


class CountingComm:
    """Forwards to ``inner``; counts the messages, payload bytes and dtypes this rank sends."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.messages, self.bytes = inner, 0, 0
        self.dtypes: set[str] = set()
        self.events: list[tuple[str, int]] = []  # ("S", dst) per send, ("R", src) per receive

    def _count(self, x: Any, dst: int) -> None:
        a = np.asarray(_payload(x))
        self.messages, self.bytes = self.messages + 1, self.bytes + a.nbytes
        self.dtypes.add(str(a.dtype))
        self.events.append(("S", int(dst)))

    @property
    def rank(self) -> int:
        return int(self.inner.rank)

    @property
    def world_size(self) -> int:
        return int(self.inner.world_size)

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


def protocol_only(comm: Any) -> Any:
    """What the learner's function gets: the Communicator protocol and nothing else.

    ``comm`` (the counting wrapper, the simulated world or the gloo comm with its torch
    handles) is no attribute of the object handed over, nor of the handles ``isend`` and
    ``irecv`` return: only their ``wait()``.
    """

    class Handle:
        __slots__ = ("wait",)

        def __init__(self, handle: Any) -> None:
            self.wait = lambda: handle.wait()

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


_TORCH_CALLS = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "gather_object", "scatter", "scatter_object_list",
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
    "recv_object_list", "barrier", "monitored_barrier", "new_group", "new_subgroups",
    "all_reduce_coalesced",
)  # fmt: skip
_PG_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "_allgather_base", "alltoall", "alltoall_base",
    "broadcast", "reduce", "reduce_scatter", "reduce_scatter_tensor_coalesced",
    "_reduce_scatter_base", "gather", "scatter", "send", "recv", "recv_anysource", "barrier",
)  # fmt: skip


@contextmanager
def sealed_torch_distributed(comm: Any) -> Iterator[None]:
    """On a gloo rank, while the block runs: torch.distributed's collectives and point-to-point
    calls (module functions and ProcessGroup methods) raise; ``comm`` (a TorchDistComm) moves
    its messages through handles to the process group taken before the patch."""
    import types

    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    pg = c10d._get_default_group()
    send, recv, barrier = type(pg).send, type(pg).recv, type(pg).barrier  # before the patch

    def refuse(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                f"torch.distributed's {name} is not allowed in this exercise: move data only "
                "with the communicator's send/recv/isend/irecv"
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
        for name in _TORCH_CALLS:
            for module in (dist, c10d):
                if name in vars(module):
                    saved.append((module, name, vars(module)[name]))
                    setattr(module, name, refuse(f"{name}()"))
        for cls in {dist.ProcessGroup, type(pg)}:
            for name in _PG_METHODS:
                if name in vars(cls):
                    original = vars(cls)[name]
                    try:
                        setattr(cls, name, refuse(f"ProcessGroup.{name}()"))
                    except (AttributeError, TypeError):  # a class that cannot be patched
                        continue
                    saved.append((cls, name, original))
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
        comm._dist = own
