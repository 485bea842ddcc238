"""A discrete-event simulator of device streams: FIFO queues, events, host synchronisation.

A device runs *streams*, each a FIFO queue of operations (kernels, copies, collectives). The
host enqueues work in program order and never waits, except at a synchronisation. The rules
(CUDA's):

* an op starts when the previous op of its stream has ended, and not before the host issued
  it (the host's clock only moves at a ``sync``);
* ``record(stream, event)`` marks the point in ``stream`` after everything enqueued so far:
  the event completes when that work ends;
* ``wait(stream, event)`` makes every later op of ``stream`` start after the event completed
  (work already in ``stream`` is not affected; other streams are not affected);
* ``sync(stream)`` (``cudaStreamSynchronize``) or ``sync()`` (``cudaDeviceSynchronize``)
  blocks the host until that stream (every stream) is idle.

Because each stream is FIFO and an event's completion is known once recorded, issuing the
instructions in program order computes every op's start and end exactly: the simulation is
one pass over the program. Each op's duration comes from a cost model: ``compute_time``
(roofline: the larger of flops / peak and bytes / bandwidth) or ``comm_time`` (alpha-beta).

    dev = Device()
    a = dev.launch("compute", "matmul", 3.0)
    dev.record("compute", "grads")
    dev.wait("comm", "grads")
    b = dev.launch("comm", "all-reduce", 2.0)      # starts at 3.0, on its own stream
    dev.sync()                                     # host clock -> 5.0

Lab: 16_streams_and_overlap
Paper: NVIDIA, *CUDA C++ Programming Guide*, section "Asynchronous Concurrent Execution"
(streams, events); Hockney 1994, *The communication challenge for MPP* (alpha-beta).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Device",
    "Span",
    "comm_time",
    "compute_time",
    "ring_allreduce_time",
    "simulate",
]


@dataclass(frozen=True, slots=True)
class Span:
    """One op on the timeline: ``name`` ran on ``stream`` from ``start`` to ``end``."""

    name: str
    stream: str
    start: float
    end: float
    kind: str = "compute"


@dataclass
class Device:
    """Named FIFO streams, events and a host clock; ``timeline`` lists every op in issue order."""

    tail: dict[str, float] = field(default_factory=dict)
    events: dict[str, float] = field(default_factory=dict)
    host: float = 0.0
    timeline: list[Span] = field(default_factory=list)

    def _ready(self, stream: str) -> float:
        return max(self.tail.get(stream, 0.0), self.host)

    def launch(self, stream: str, name: str, duration: float, kind: str = "compute") -> Span:
        """Enqueue an op of ``duration`` seconds on ``stream``; return its span."""
        if duration < 0:
            raise ValueError(f"op {name!r} has a negative duration {duration}")
        start = self._ready(stream)
        span = Span(name, stream, start, start + float(duration), kind)
        self.tail[stream] = span.end
        self.timeline.append(span)
        return span

    def record(self, stream: str, event: str) -> float:
        """Record ``event`` after the work enqueued so far on ``stream``; return its time."""
        self.events[event] = self._ready(stream)
        return self.events[event]

    def wait(self, stream: str, event: str) -> None:
        """Later ops of ``stream`` start after ``event`` (which must have been recorded)."""
        if event not in self.events:
            raise ValueError(f"wait on event {event!r} before it was recorded")
        self.tail[stream] = max(self.tail.get(stream, 0.0), self.events[event])

    def sync(self, stream: str | None = None) -> float:
        """Block the host until ``stream`` (every stream if None) is idle; return host time."""
        tails = self.tail.values() if stream is None else [self.tail.get(stream, 0.0)]
        self.host = max([self.host, *tails])
        return self.host

    @property
    def makespan(self) -> float:
        """When the last op of any stream ends."""
        return max((s.end for s in self.timeline), default=0.0)

    def busy(self, stream: str) -> float:
        """Total time ``stream`` spends running ops."""
        return sum(s.end - s.start for s in self.timeline if s.stream == stream)


def simulate(program: Iterable[Sequence[Any]]) -> list[Span]:
    """Run a program of instructions on a fresh :class:`Device`; return its op spans.

    Instructions: ``("op", stream, name, duration)``, ``("record", stream, event)``,
    ``("wait", stream, event)``, ``("sync",)`` or ``("sync", stream)``.
    """
    dev = Device()
    for ins in program:
        kind, *args = ins
        if kind == "op":
            dev.launch(str(args[0]), str(args[1]), float(args[2]))
        elif kind == "record":
            dev.record(str(args[0]), str(args[1]))
        elif kind == "wait":
            dev.wait(str(args[0]), str(args[1]))
        elif kind == "sync":
            dev.sync(str(args[0]) if args else None)
        else:
            raise ValueError(f"unknown instruction {ins!r}")
    return dev.timeline


def compute_time(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> float:
    """Roofline duration of a kernel: ``max(flops / peak_flops, nbytes / bandwidth)``."""
    return max(flops / peak_flops, nbytes / bandwidth)


def comm_time(nbytes: float, alpha: float, beta: float) -> float:
    """Alpha-beta duration of one message or collective: ``alpha + beta * nbytes``."""
    return alpha + beta * nbytes


def ring_allreduce_time(nbytes: float, p: int, alpha: float, beta: float) -> float:
    """Ring all-reduce on ``p`` ranks: ``2 (p-1) alpha + 2 (p-1)/p * nbytes * beta``."""
    if p <= 1:
        return 0.0
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * nbytes * beta
