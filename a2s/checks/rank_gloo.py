"""A learner's sealed child on a gloo rank: its communicator (see :mod:`a2s.checks.ranks`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.harness import request
from a2s.checks.rank_seal import _refusal, seal


class _GlooHandle:
    __slots__ = ("wait",)

    def __init__(self, wait: Callable[[], Any]) -> None:
        self.wait = wait

    def __repr__(self) -> str:
        return "<request: wait() for it>"


def _gloo_comm(rank: int, world_size: int) -> Any:
    """The learner's communicator in the child: every call a request to the rank process."""

    def array(x: Any) -> np.ndarray:
        a = np.asarray(x)
        if type(a) is not np.ndarray or a.dtype.kind not in "biuf":
            raise TypeError(f"send an array of numbers, not {type(x).__name__}")
        return a

    class Comm:
        __slots__ = ()

        @property
        def rank(self) -> int:
            return rank

        @property
        def world_size(self) -> int:
            return world_size

        def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
            request("comm.send", array(x), int(dst), int(tag))

        def recv(self, src: int, tag: int = 0) -> np.ndarray:
            return request("comm.recv", int(src), int(tag))  # type: ignore[no-any-return]

        def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> _GlooHandle:
            key = request("comm.isend", array(x), int(dst), int(tag))
            return _GlooHandle(lambda: request("comm.wait", key))

        def irecv(self, src: int, tag: int = 0) -> _GlooHandle:
            key = request("comm.irecv", int(src), int(tag))
            return _GlooHandle(lambda: request("comm.wait", key))

        def barrier(self) -> None:
            request("comm.barrier")

        def __repr__(self) -> str:
            return f"<Communicator rank {rank} of {world_size}>"

    return Comm()


def _sealed_child(
    make: Callable[[], Callable[..., Any]],
    exercise: str,
    blocks: tuple[str, ...],
    rank: int,
    world_size: int,
    args: tuple,
) -> Any:
    """In the learner's child of a gloo rank: seal, define, run guarded; refusals fail it."""
    from a2s.checks.core import guarded

    hits: list[str] = []
    seal(hits)
    error: BaseException | None = None
    out = None
    try:
        fn = guarded(make(), exercise, blocks)
        out = fn(_gloo_comm(rank, world_size), *args)
    except BaseException as exc:  # a refusal recorded first wins
        error = exc
    sys.setprofile(None)
    if hits:
        raise _refusal(hits)
    if error is not None:
        raise error
    from a2s.checks.values import plain

    return plain(out)
