"""Lab 30 experiments: how fast the telemetry and power simulators run on this machine.

1. Governor steps per second of ``SimulatedGpu.run`` (power, RC thermal step and the cap
   decision per step) on a 7B decode trace: the lab's replay takes about a hundred steps, so
   this says how far a check is from its budget.
2. Counter intervals decoded per second by ``telemetry.sample`` (integration of the activity,
   three wrapped counters, ``decode_delta``), against the vectorised exact ``truth``.

Lab: 30_telemetry_power_and_faults
"""

from __future__ import annotations

from a2s.bench import Figure, median_time, one_thread, register
from minitorch.driver import telemetry
from minitorch.driver.governor import SimulatedGpu
from minitorch.driver.power import PowerModel
from minitorch.driver.workload import decode_trace


@register
def governor_steps() -> list[Figure]:
    trace = decode_trace(params=7e9, steps=64)
    steps = len(SimulatedGpu(PowerModel()).run(trace, dt_ns=2e6).log)

    def run() -> None:
        gpu = SimulatedGpu(PowerModel())
        gpu.set_power_limit_mw(400_000)
        gpu.run(trace, dt_ns=2e6)

    with one_thread():
        t = median_time(run, repeats=3)
    return [
        Figure(
            "SimulatedGpu.run, 7B prefill + 64 decode steps under 400 W",
            steps / t / 1e3,
            "k steps/s",
            f"{steps} steps in {t * 1e3:.1f} ms",
        )
    ]


@register
def counter_sampling() -> list[Figure]:
    segs = [
        telemetry.Segment(50.0, busy=i % 2 == 0, bytes_per_ns=1000.0 * (i % 3)) for i in range(400)
    ]
    n = int(sum(s.duration_ns for s in segs) // 10)
    with one_thread():
        t_sample = median_time(lambda: telemetry.sample(segs, 10.0, width_bits=20), repeats=3)
        t_truth = median_time(lambda: telemetry.truth(segs, 10.0), repeats=3)
    return [
        Figure(
            "telemetry.sample: 20-bit counters decoded over 400 segments",
            n / t_sample / 1e3,
            "k intervals/s",
            f"{t_sample / t_truth:,.0f}x the exact vectorised truth",
        )
    ]
