"""Grader of exercise 29.4: a decode step of many small kernels, recorded once, replayed.

``decode_steps(stream, step, n_steps)`` runs in a forked child against a
:class:`DeviceStream` proxy; the device (a simulated stream, its compute engine and memory)
and the grader's own counts (doorbells, launches, captures, instantiations, replays) stay in
the grader's process. Judged: device memory equals ``n_steps`` runs of the step by hand
(``_truth.run_kernels``) and every kernel sent as the step gives it; at most one doorbell per
step; the step captured and instantiated once, replayed once per step; and the time on the
device's clock at least 1.5x faster than eager launches (``_truth.eager_truth``, the two-stage
host/front-end pipeline).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.harness import request, run_apart
from a2s.checks.lab29._truth import eager_truth, graph_truth, kernel_ns, run_kernels
from a2s.checks.values import assert_true
from minitorch.driver.device import CostModel, DeviceMemory
from minitorch.driver.launch import ComputeEngine, Launch, Stream

__all__ = ["DeviceStream", "check_graph_replay"]

_REF = "minitorch.driver.launch"
_SPEEDUP = 1.5
_WORDS = 64  # floats per buffer
_BUFFERS = 6


class _Device:
    """The stream and the grader's counts (the stream's own counters are not read)."""

    def __init__(self, init: np.ndarray, model: CostModel) -> None:
        memory = DeviceMemory(init.size)
        memory.write(0, init)
        self.engine = ComputeEngine(memory, model)
        self.stream = Stream(self.engine, ring_capacity=16)
        self.doorbells = self.launches = self.captures = self.instantiations = 0
        self.replays = 0
        self.recorded: dict[int, list[Launch]] = {}
        self.graphs: dict[int, list[Launch]] = {}  # instantiated: what a replay runs
        self.ran: list[Launch] = []  # every kernel sent to run, in order, as the device got it
        self.capturing = False

    def launch(self, kernel: Any, grid: Any, block: Any, args: Any) -> None:
        def dims(v: Any) -> tuple[int, int, int]:
            if not (isinstance(v, (tuple, list)) and len(v) == 3):
                raise ValueError("grid and block are 3-tuples of ints")
            return (int(v[0]), int(v[1]), int(v[2]))

        if kernel not in (0, 1, 2):
            raise ValueError(f"no kernel {kernel!r} (0 NOP, 1 FILL, 2 ADD)")
        launch = Launch(int(kernel), dims(grid), dims(block), tuple(int(a) for a in args))
        self.launches += 1
        if not self.capturing:
            self.doorbells += 1
            self.ran.append(launch)
        self.stream.launch(launch)

    def begin_capture(self) -> None:
        self.captures += 1
        self.capturing = True
        self.stream.begin_capture()

    def end_capture(self) -> int:
        if not self.capturing:
            raise RuntimeError("end_capture without begin_capture")
        self.capturing = False
        handle = len(self.recorded)
        self.recorded[handle] = self.stream.end_capture()
        return handle

    def instantiate(self, handle: Any) -> int:
        if handle not in self.recorded:
            raise ValueError(f"no captured graph {handle!r}: pass what end_capture returned")
        self.instantiations += 1
        gid = self.stream.instantiate(self.recorded[handle])
        self.graphs[gid] = list(self.recorded[handle])
        return gid

    def replay(self, gid: Any) -> None:
        if gid not in self.engine.graphs:
            raise ValueError(f"no instantiated graph {gid!r}: pass what instantiate returned")
        self.replays += 1
        self.doorbells += 1
        self.ran.extend(self.graphs[int(gid)])
        self.stream.replay(int(gid))

    def synchronize(self) -> float:
        return float(self.stream.synchronize())

    def serve(self) -> dict[str, Callable[..., Any]]:
        names = ("launch", "begin_capture", "end_capture", "instantiate", "replay", "synchronize")
        return {f"stream.{n}": getattr(self, n) for n in names}


class DeviceStream:
    """A stream as the learner's code sees it; every method is a request to the device."""

    __slots__ = ()

    def launch(self, kernel: int, grid: Any, block: Any, args: Any) -> None:
        request("stream.launch", kernel, tuple(grid), tuple(block), tuple(args))

    def begin_capture(self) -> None:
        request("stream.begin_capture")

    def end_capture(self) -> int:
        return request("stream.end_capture")  # type: ignore[no-any-return]

    def instantiate(self, graph: int) -> int:
        return request("stream.instantiate", graph)  # type: ignore[no-any-return]

    def replay(self, graph: int) -> None:
        request("stream.replay", graph)

    def synchronize(self) -> float:
        return request("stream.synchronize")  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return "<DeviceStream: requests to the device>"


def _step(g: np.random.Generator, kernels: int) -> list[tuple]:
    """A decode step of small kernels over 6 buffers: fills, then adds that accumulate."""
    addr = [b * _WORDS * 4 for b in range(_BUFFERS)]
    step: list[tuple] = []
    for i in range(kernels):
        n = int(g.integers(8, _WORDS + 1))
        if i < 2 or g.random() < 0.15:
            bits = int(np.float32(g.integers(-4, 5) / 4).view(np.uint32))
            step.append((1, (1, 1, 1), (n, 1, 1), (addr[int(g.integers(_BUFFERS))], n, bits)))
        else:
            out, a, b = (addr[int(v)] for v in g.integers(_BUFFERS, size=3))
            step.append((2, (1, 1, 1), (n, 1, 1), (out, a, b, n)))
    return step


@grader(
    "29.4", blocks=(_REF, "minitorch.driver.ring", "minitorch.driver.device:Bar"), hand="budget"
)
def check_graph_replay(decode_steps: Callable[..., Any]) -> str:
    """Exercise 29.4: decode_steps(stream, step, n_steps) with one doorbell per step."""
    seeded, new = rng(2904), fresh_rng("29.4")
    cases = [
        ("a decode step of 48 small kernels, 3 steps", _step(seeded, 48), 3),
        ("one step of 96 small kernels", _step(seeded, 96), 1),
    ]
    kernels, steps = int(new.integers(32, 81)), int(new.integers(1, 5))
    cases.append((fresh(f"{kernels} kernels, {steps} steps"), _step(new, kernels), steps))
    model, best = CostModel(), float("inf")
    for label, step, n_steps in cases:
        init = seeded.standard_normal(_BUFFERS * _WORDS).astype(np.float32).view(np.uint8)
        dev = _Device(init, model)
        run_apart(
            decode_steps, DeviceStream(), [tuple(e) for e in step], n_steps, serve=dev.serve()
        )
        want = run_kernels(init, step, n_steps)
        ran = len(dev.engine.spans)
        assert_true(
            ran == len(step) * n_steps,
            f"[{label}] the device ran {ran} kernels for {n_steps} step(s) of {len(step)}: run "
            "every kernel of the step once per step.",
        )
        got = dev.engine.memory.data
        if not np.array_equal(got, want):
            raise CheckFailure(
                f"[{label}] device memory differs from {n_steps} step(s) run in order "
                f"({int((got != want).sum())} bytes): launch the step's kernels as given, in "
                "order, with their own grid, block and arguments."
            )
        given = [Launch(k, tuple(g), tuple(b), tuple(a)) for k, g, b, a in step] * n_steps
        odd = next(
            (i for i, (x, y) in enumerate(zip(dev.ran, given, strict=False)) if x != y), None
        )
        assert_true(
            odd is None,
            f"[{label}] kernel {odd} sent to the device was {dev.ran[odd or 0]}, the step has "
            f"{given[odd or 0]}: launch the step's kernels as given, in order, with their own "
            "grid, block and arguments (the grid and block set what a kernel costs).",
        )
        assert_true(
            dev.doorbells <= n_steps,
            f"[{label}] {dev.doorbells} doorbells for {n_steps} step(s) of {len(step)} kernels: "
            "each eager launch is a command and a doorbell. Record the step once and replay it: "
            "one doorbell per step.",
        )
        assert_true(
            dev.captures == 1 and dev.instantiations == 1,
            f"[{label}] {dev.captures} capture(s) and {dev.instantiations} instantiation(s): "
            "record and instantiate the step once, then replay it every step.",
        )
        assert_true(
            dev.replays == n_steps,
            f"[{label}] {dev.replays} replay(s) for {n_steps} step(s): capture one step (not "
            "several in one graph) and replay it once per step.",
        )
        durations = [kernel_ns(e) for e in step] * n_steps
        eager = eager_truth(durations, model)
        took = max(dev.stream.host_ns, dev.engine.free_at)
        assert_true(
            took * _SPEEDUP <= eager,
            f"[{label}] {took / 1e3:.1f} us on the device's clock against {eager / 1e3:.1f} us "
            f"eager: a speedup of {eager / took:.2f}x, {_SPEEDUP}x required.",
        )
        ideal = graph_truth([kernel_ns(e) for e in step], model, n_steps)
        best = min(best, eager / took)
        assert_true(
            took <= ideal * (1 + 1e-9),
            f"[{label}] {took / 1e3:.1f} us, {ideal / 1e3:.1f} us for {n_steps} replays: replay "
            "back to back and synchronize once at the end.",
        )
    return f"{len(cases)} decode runs (1 fresh), one doorbell per step, speedup >= {best:.2f}x"
