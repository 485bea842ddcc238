"""remote proxies and a rank's side of run_ranks: RankRun, the rank comm."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from a2s.checks.harness.codec import _KINDS
from a2s.checks.harness.wire import request


def _proxy_method(key: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return request(key, *args, **kwargs)

    method.__name__ = key.rsplit(".", 1)[-1]
    return method


def remote(obj: Any, methods: Sequence[str], name: str) -> tuple[Any, dict[str, Callable]]:
    """A proxy of ``obj`` for the child (``methods`` only, as requests) and the serve entries.

    The proxy holds nothing of ``obj``: its class has ``__slots__ = ()`` and each method
    closes over the request's name alone. Arguments and results cross as plain values.
    """
    entries = {f"{name}.{m}": getattr(obj, m) for m in methods}
    namespace: dict[str, Any] = {m: _proxy_method(f"{name}.{m}") for m in methods}
    namespace["__slots__"] = ()
    namespace["__repr__"] = lambda self, _n=str(name): f"<{_n}: requests to the grader>"
    proxy_cls = type(f"Remote_{name}".replace(".", "_"), (), namespace)
    return proxy_cls(), entries


# ----------------------------------------------------------------------------- ranks
@dataclass
class RankRun:
    """What :func:`run_ranks` recorded, on the router's side (never in a rank's reach).

    ``results``: each rank's return value (plain). ``world``: the SimWorld after the run
    (``bytes_sent``, ``bytes_recv``, ``msgs_sent``, ``msgs_recv``, ``inter_bytes_sent``,
    ``link_bytes``, ``clock``, ``time``). Per rank ``r``: ``messages[r]``, ``bytes[r]``
    (payload bytes sent), ``to[r]`` (bytes per destination), ``dtypes[r]`` (bytes per dtype
    name), ``events[r]``: ``("S", dst)`` per send and ``("R", src)`` per completed receive,
    in program order; ``order``: ``(rank, "S"|"R", peer, nbytes, dtype, tag)`` for every
    message event, in the order the router saw them; ``unreceived``: ``(src, dst, tag,
    count)`` of messages sent but never received when every rank had finished.
    """

    results: list[Any]
    world: Any
    messages: list[int]
    bytes: list[int]
    to: list[dict[int, int]]
    dtypes: list[dict[str, int]]
    events: list[list[tuple[str, int]]]
    order: list[tuple[int, str, int, int, str, int]] = field(default_factory=list)
    unreceived: list[tuple[int, int, int, int]] = field(default_factory=list)

    def float_bytes(self, r: int) -> int:
        """Payload bytes rank ``r`` sent as floating-point arrays."""
        return sum(n for d, n in self.dtypes[r].items() if np.dtype(d).kind == "f")


class _Stop(Exception):
    """The run ends now (an error the parent raises after stopping every rank)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Handle:
    """What isend/irecv return on a rank: ``wait()`` and nothing else."""

    __slots__ = ("wait",)

    def __init__(self, wait: Callable[[], Any]) -> None:
        self.wait = wait

    def __repr__(self) -> str:
        return "<request: wait() for it>"


def _rank_comm(rank: int, world_size: int) -> Any:
    """The protocol-only communicator of a rank: every call a request to the router."""

    def _send(x: Any, dst: Any, tag: Any) -> None:
        arr = np.asarray(x)
        if type(arr) is not np.ndarray or arr.dtype.kind not in _KINDS or arr.dtype.fields:
            raise TypeError(f"send an array of numbers, not {type(x).__name__} of {arr.dtype}")
        request("comm.send", arr, _peer(dst, "dst"), _tag(tag))

    def _recv(src: Any, tag: Any) -> np.ndarray:
        return request("comm.recv", _peer(src, "src"), _tag(tag))  # type: ignore[no-any-return]

    class Comm:
        __slots__ = ()

        @property
        def rank(self) -> int:
            return rank

        @property
        def world_size(self) -> int:
            return world_size

        def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
            _send(x, dst, tag)

        def recv(self, src: int, tag: int = 0) -> np.ndarray:
            return _recv(src, tag)

        def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> _Handle:
            _send(x, dst, tag)
            return _Handle(lambda: None)

        def irecv(self, src: int, tag: int = 0) -> _Handle:
            src, tag = _peer(src, "src"), _tag(tag)
            return _Handle(lambda: _recv(src, tag))

        def barrier(self) -> None:
            request("comm.barrier")

        def __repr__(self) -> str:
            return f"<Communicator rank {rank} of {world_size}>"

    return Comm()


def _peer(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a rank number (an int), got {type(value).__name__}")
    return int(value)


def _tag(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"tag must be an int, got {type(value).__name__}")
    return int(value)


def _rank_main(fn: Callable[..., Any], rank: int, world_size: int, args: tuple) -> Any:
    request("rank.start")  # wait for the baton
    return fn(_rank_comm(rank, world_size), *args)
