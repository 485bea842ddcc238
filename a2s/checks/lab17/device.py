"""The grader's device of exercise 17.4: the counting driver, and the proxy the learner's
process is handed (its ``malloc`` and ``free`` are requests to the grader's device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.checks.errors import CheckFailure
from a2s.checks.harness import request
from minitorch.runtime.allocator import CacheState


class _Device:
    """The grader's driver: bump addresses, every call counted, frees checked."""

    def __init__(self) -> None:
        self.next = 1 << 40
        self.live: dict[int, int] = {}
        self.mallocs = self.frees = self.reserved = self.peak = 0

    def malloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        if nbytes <= 0 or nbytes % 512:
            raise CheckFailure(f"device.malloc({nbytes}): segments are positive multiples of 512.")
        addr, self.next = self.next, self.next + nbytes
        self.live[addr] = nbytes
        self.mallocs += 1
        self.reserved += nbytes
        self.peak = max(self.peak, self.reserved)
        return addr

    def free(self, addr: int) -> None:
        if addr not in self.live:
            raise CheckFailure(f"device.free({addr}): not the start of a live segment.")
        self.reserved -= self.live.pop(addr)
        self.frees += 1


def _int(x: Any) -> Any:
    """A count as a plain int (the learner's own int subclass or object shown, not sent)."""
    if type(x) is int or (isinstance(x, np.integer) and type(x).__module__ == "numpy"):
        return int(x)
    return repr(x)[:60]


def _counts(state: CacheState) -> list[Any]:
    return [
        _int(getattr(state, f, None))
        for f in ("allocated", "reserved", "peak_reserved", "device_allocs")
    ]


def _device_proxy(events: list[tuple[Any, ...]]) -> Any:
    """The learner's device (child side): ``malloc`` and ``free`` only, each a request to the
    grader's device that first hands over the events finished since the last request, so the
    grader checks each event against the device as it was when the event ended."""

    def call(name: str, *args: Any) -> Any:
        done = list(events)
        events.clear()
        return request(name, done, *args)

    namespace: dict[str, Any] = {
        "__slots__": (),
        "malloc": lambda self, nbytes: call("device.malloc", _int(nbytes)),
        "free": lambda self, addr: call("device.free", _int(addr)),
        "__repr__": lambda self: "<device: requests to the grader>",
    }
    return type("Device", (), namespace)()
