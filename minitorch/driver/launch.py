"""Kernel launch: a small launch format, the per-launch cost, graphs replayed with one doorbell.

``cuLaunchKernel`` does not run anything: the driver checks the arguments, packs a **launch
packet** (kernel, grid, block, arguments) into the stream's pushbuffer and rings the
doorbell; the device's front end fetches and decodes it and the compute engine runs the
kernel on device memory. :func:`encode` / :func:`decode` are that packet, a fixed
``PACKET_WORDS`` uint32 words: ``[opcode, kernel, gx, gy, gz, bx, by, bz, nargs, args...]``.

Per launch the host pays ``h = launch_cpu_ns + mmio_write_ns`` and the device
``g = cmd_fetch_ns + k`` for a kernel of ``k`` ns. Host and device form a two-stage
pipeline, so ``n`` eager launches of equal kernels end at

    ``T_eager = h + g + (n - 1) max(h, g)``

(:func:`eager_ns` is the recurrence for unequal kernels): when ``h > g`` the GPU idles
between small kernels, *launch bound*, as a decode step of hundreds of tiny kernels is.

A **graph** (CUDA Graphs: ``cudaStreamBeginCapture``, ``cudaGraphInstantiate``,
``cudaGraphLaunch``) records the launches once, validates and encodes them once, and
replays them with one command and one doorbell; the device walks the prebuilt nodes at
``graph_node_ns`` each:

    ``T_graph = graph_launch_cpu_ns + mmio_write_ns + cmd_fetch_ns + sum_i (graph_node_ns + k_i)``

    stream = Stream(ComputeEngine(DeviceMemory(1 << 16), CostModel()))
    stream.begin_capture()
    for _ in range(100): stream.launch(Launch(NOP))
    g = stream.instantiate(stream.end_capture())
    stream.replay(g); stream.synchronize()      # == graph_ns([1000.0] * 100, model)

Lab: 29_driver_and_command_submission
Reference: NVIDIA CUDA Driver API, cuLaunchKernel and cuGraphLaunch; NVIDIA, "Getting Started
with CUDA Graphs" (2019); open-gpu-doc, "Host" class (GPFIFO entries, pushbuffer segments).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from minitorch.driver.device import DOORBELL, Bar, CostModel, DeviceMemory
from minitorch.driver.ring import CommandRing, RingConsumer

__all__ = [
    "ADD",
    "FILL",
    "KERNELS",
    "NOP",
    "PACKET_WORDS",
    "ComputeEngine",
    "Kernel",
    "Launch",
    "Span",
    "Stream",
    "decode",
    "eager_ns",
    "encode",
    "graph_ns",
]

OP_LAUNCH, OP_GRAPH = 1, 2
MAX_ARGS = 6
PACKET_WORDS = 9 + MAX_ARGS


@dataclass(frozen=True)
class Launch:
    """One kernel launch: which kernel, its grid and block, its (32-bit) arguments."""

    kernel: int
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    args: tuple[int, ...] = ()


def encode(launch: Launch) -> np.ndarray:
    """The launch packet: ``[OP_LAUNCH, kernel, grid, block, nargs, args, 0 padding]``."""
    if len(launch.args) > MAX_ARGS:
        raise ValueError(f"at most {MAX_ARGS} arguments per launch")
    words = [OP_LAUNCH, launch.kernel, *launch.grid, *launch.block, len(launch.args)]
    words += [*launch.args, *[0] * (MAX_ARGS - len(launch.args))]
    return np.array(words, dtype=np.uint32)


def decode(packet: np.ndarray) -> Launch:
    """The inverse of :func:`encode`."""
    if int(packet[0]) != OP_LAUNCH:
        raise ValueError(f"not a launch packet (opcode {int(packet[0])})")
    w = [int(x) for x in packet]
    grid, block = (w[2], w[3], w[4]), (w[5], w[6], w[7])
    return Launch(w[1], grid, block, tuple(w[9 : 9 + w[8]]))


@dataclass(frozen=True)
class Kernel:
    """A device kernel: what it does to device memory and how long it takes,
    ``fixed_ns + threads * ns_per_thread``."""

    name: str
    run: Callable[[DeviceMemory, Launch], None]
    fixed_ns: float = 1000.0
    ns_per_thread: float = 0.0


def _fill(mem: DeviceMemory, launch: Launch) -> None:  # args: addr, n, float32 bits
    addr, n, bits = launch.args
    mem.write(addr, np.full(n, np.uint32(bits).view(np.float32), dtype=np.float32))


def _add(mem: DeviceMemory, launch: Launch) -> None:  # args: out, a, b, n (float32)
    out, a, b, n = launch.args
    x, y = (mem.read(p, 4 * n).view(np.float32) for p in (a, b))
    mem.write(out, x + y)


NOP, FILL, ADD = 0, 1, 2
KERNELS = {
    NOP: Kernel("nop", lambda mem, launch: None),
    FILL: Kernel("fill", _fill, ns_per_thread=0.01),
    ADD: Kernel("add", _add, ns_per_thread=0.02),
}


@dataclass(frozen=True)
class Span:
    name: str
    start_ns: float
    end_ns: float


@dataclass
class ComputeEngine:
    """The device's front end and compute engine: executes packets in arrival order."""

    memory: DeviceMemory
    model: CostModel = field(default_factory=CostModel)
    kernels: dict[int, Kernel] = field(default_factory=lambda: dict(KERNELS))
    free_at: float = 0.0  # when the engine is next idle
    spans: list[Span] = field(default_factory=list)
    graphs: dict[int, list[np.ndarray]] = field(default_factory=dict)
    commands: int = 0

    def duration(self, launch: Launch) -> float:
        k = self.kernels[launch.kernel]
        threads = int(np.prod(launch.grid)) * int(np.prod(launch.block))
        return k.fixed_ns + threads * k.ns_per_thread

    def _run(self, launch: Launch, start: float) -> float:
        self.kernels[launch.kernel].run(self.memory, launch)
        end = start + self.duration(launch)
        self.spans.append(Span(self.kernels[launch.kernel].name, start, end))
        return end

    def execute(self, packet: np.ndarray, arrival_ns: float) -> float:
        """Fetch, decode and run one command that arrived at ``arrival_ns``; its end time."""
        self.commands += 1
        t = max(arrival_ns, self.free_at) + self.model.cmd_fetch_ns
        if int(packet[0]) == OP_GRAPH:
            for node in self.graphs[int(packet[1])]:
                t = self._run(decode(node), t + self.model.graph_node_ns)
        else:
            t = self._run(decode(packet), t)
        self.free_at = t
        return t


class Stream:
    """A stream: its own ring and doorbell, the host's clock, eager launches and graphs."""

    def __init__(self, engine: ComputeEngine, ring_capacity: int = 64) -> None:
        self.engine, self.model = engine, engine.model
        self.bar = Bar(self.model)
        self.ring = CommandRing(ring_capacity, self.bar)
        self.consumer = RingConsumer(self.ring)
        self.bar.hooks[DOORBELL] = self._doorbell_rung
        self.host_ns = 0.0
        self.capture: list[Launch] | None = None

    def _doorbell_rung(self, tail: int) -> None:  # the device front end wakes up
        for packet in self.consumer.consume():
            self.engine.execute(packet, self.host_ns)

    def _submit(self, packet: np.ndarray, cpu_ns: float) -> None:
        self.host_ns += cpu_ns
        if not self.ring.submit(packet):
            # the front end drains the ring at every doorbell, so this is never full here
            raise RuntimeError("command ring full")
        self.host_ns += self.model.mmio_write_ns  # the doorbell is written, then seen
        self.ring.doorbell()

    def launch(self, launch: Launch) -> None:
        """``cuLaunchKernel``: pack, submit, ring the doorbell (or record while capturing)."""
        if launch.kernel not in self.engine.kernels:
            raise ValueError(f"no kernel {launch.kernel}")
        if self.capture is not None:
            self.capture.append(launch)
            return
        self._submit(encode(launch), self.model.launch_cpu_ns)

    def begin_capture(self) -> None:
        self.capture = []

    def end_capture(self) -> list[Launch]:
        if self.capture is None:
            raise RuntimeError("end_capture without begin_capture")
        graph, self.capture = self.capture, None
        return graph

    def instantiate(self, graph: Sequence[Launch]) -> int:
        """Encode the recorded launches once, on the device; returns the graph's id."""
        gid = len(self.engine.graphs)
        self.engine.graphs[gid] = [encode(launch) for launch in graph]
        return gid

    def replay(self, gid: int) -> None:
        """``cudaGraphLaunch``: one command, one doorbell, for the whole graph."""
        packet = np.zeros(PACKET_WORDS, dtype=np.uint32)
        packet[:2] = (OP_GRAPH, gid)
        self._submit(packet, self.model.graph_launch_cpu_ns)

    def synchronize(self) -> float:
        """Wait for the device: the time both sides are done."""
        self.host_ns = max(self.host_ns, self.engine.free_at)
        return self.host_ns


def eager_ns(kernel_ns: Sequence[float], model: CostModel) -> float:
    """End of ``n`` eager launches: arrival ``(i + 1) h``, start ``max(arrival, previous end)``."""
    h = model.launch_cpu_ns + model.mmio_write_ns
    end = 0.0
    for i, k in enumerate(kernel_ns):
        end = max((i + 1) * h, end) + model.cmd_fetch_ns + k
    return end


def graph_ns(kernel_ns: Sequence[float], model: CostModel) -> float:
    """End of one replay of a graph of these kernels."""
    start = model.graph_launch_cpu_ns + model.mmio_write_ns + model.cmd_fetch_ns
    return start + sum(model.graph_node_ns + k for k in kernel_ns)
