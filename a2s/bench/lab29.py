"""Lab 29 experiments: what the simulated driver costs on this machine.

1. The reference stream, eager against graph replay of 96 empty kernels, in wall-clock
   time per simulated launch (alternated, one thread): how fast the simulator itself runs,
   and the ratio of the two paths on the host (the simulated speedup is a closed form, not
   a measurement; it is printed by the notebook).
2. A doorbell through the process boundary: the grader's ring device served to a forked
   child, the whole 29.1 workload of 40 commands on a ring of 8, per request.

Lab: 29_driver_and_command_submission
"""

from __future__ import annotations

from a2s.bench import Figure, alternate, median_time, one_thread, register
from minitorch.driver import launch
from minitorch.driver.device import CostModel, DeviceMemory

_KERNELS = 96


def _eager() -> None:
    stream = launch.Stream(launch.ComputeEngine(DeviceMemory(1 << 12), CostModel()))
    for _ in range(_KERNELS):
        stream.launch(launch.Launch(launch.NOP))


def _graph() -> None:
    stream = launch.Stream(launch.ComputeEngine(DeviceMemory(1 << 12), CostModel()))
    stream.begin_capture()
    for _ in range(_KERNELS):
        stream.launch(launch.Launch(launch.NOP))
    stream.replay(stream.instantiate(stream.end_capture()))


@register
def launch_paths() -> list[Figure]:
    with one_thread():
        eager, graph = alternate(_eager, _graph, repeats=5)
    return [
        Figure(
            f"simulated eager launch of a NOP ({_KERNELS} per run)",
            eager / _KERNELS * 1e6,
            "us wall per launch",
            f"graph capture + replay: {graph / _KERNELS * 1e6:.1f} us wall per kernel",
        )
    ]


@register
def ring_through_the_harness() -> list[Figure]:
    from a2s.checks.harness import run_apart
    from a2s.checks.lab29.ring import Ring, RingDevice

    def submit(ring: Ring, commands: list[int]) -> None:
        tail = head = ring.tail
        for command in commands:
            if (head - tail - 1) % ring.capacity == 0:
                ring.doorbell(tail)
                while (head - tail - 1) % ring.capacity == 0:
                    head = ring.head()
            ring.write(tail, command)
            tail = (tail + 1) % ring.capacity
        ring.doorbell(tail)

    counts: list[int] = []

    def once() -> None:
        dev = RingDevice(8, 3, [0, 0, 1, 2], 40)
        run_apart(submit, Ring(8, 3), list(range(40)), serve=dev.serve())
        counts.append(dev.written + dev.doorbells + dev.polls)

    seconds = median_time(once, repeats=3)
    return [
        Figure(
            "29.1 workload (40 commands, ring of 8) through a forked child",
            seconds * 1e3,
            "ms",
            f"{counts[-1]} requests: {seconds / counts[-1] * 1e6:.0f} us each, fork included",
        )
    ]
