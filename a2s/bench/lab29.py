"""Lab 29 experiments: what the simulated driver costs on this machine.

1. The reference stream, eager against graph replay of 96 empty kernels, in wall-clock
   time per simulated launch (alternated, one thread): how fast the simulator itself runs,
   and the ratio of the two paths on the host (the simulated speedup is a closed form, not
   a measurement; it is printed by the notebook).

Lab: 29_driver_and_command_submission
"""

from __future__ import annotations

from a2s.bench import Figure, alternate, one_thread, register
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
