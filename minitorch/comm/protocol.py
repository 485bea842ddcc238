"""The Communicator protocol: what a rank's program may ask of the world it runs in.

A program is written once against this protocol and runs on any implementation: the
simulated :class:`~minitorch.comm.simworld.SimWorld` (deterministic, counting bytes) or a
real transport. Point-to-point only: every collective is built from ``send``/``recv``.

Lab: 20_collectives
Paper: Message Passing Interface Forum, "MPI: A Message-Passing Interface Standard" (1994).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["Communicator", "Handle"]


class Handle(Protocol):
    """A pending non-blocking operation; ``wait()`` completes it (and returns what was received)."""

    def wait(self) -> np.ndarray | None: ...


class Communicator(Protocol):
    """One rank's view of a world of ``world_size`` ranks numbered ``0 .. world_size - 1``."""

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        """Send a copy of ``x`` to rank ``dst`` (buffered: returns without waiting for dst)."""
        ...

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        """Block until the next message from ``src`` with ``tag`` arrives; return it."""
        ...

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> Handle:
        """Start a send; the handle's ``wait()`` completes it."""
        ...

    def irecv(self, src: int, tag: int = 0) -> Handle:
        """Start a receive; the handle's ``wait()`` returns the array."""
        ...

    def barrier(self) -> None:
        """Block until every rank has reached the barrier."""
        ...
