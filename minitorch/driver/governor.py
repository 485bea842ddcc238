"""An NVML-like governor: query clocks, power, temperature, utilisation; set clocks and a cap.

:class:`SimulatedGpu` holds one :class:`~minitorch.driver.power.PowerModel` and a simulated
clock, never the wall clock. Its methods mirror NVML's (units in the names, as NVML's own
units: power in mW, clocks in MHz, temperature in °C):

=====================================  =============================================
``clock_mhz()``                        ``nvmlDeviceGetClockInfo(NVML_CLOCK_SM)``
``power_usage_mw()``                   ``nvmlDeviceGetPowerUsage``
``temperature_c()``                    ``nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)``
``utilization()``                      ``nvmlDeviceGetUtilizationRates`` (``.gpu``, %)
``total_energy_mj()``                  ``nvmlDeviceGetTotalEnergyConsumption`` (a counter)
``set_applications_clocks(f_mhz)``     ``nvmlDeviceSetApplicationsClocks``
``set_power_limit_mw(mw)``             ``nvmlDeviceSetPowerManagementLimit``
=====================================  =============================================

**The governor.** Before each step of ``dt_ns`` it picks the highest table clock at or
below the application clock whose power at the current temperature and the running phase's
activity fits under the cap (the lowest point when none fits), and slows to it above the
slowdown temperature ``t_slow_c`` (thermal throttling takes the next point down per step).

**A run.** :meth:`SimulatedGpu.run` steps through a trace of phases: during a step at clock
``f`` a phase advances ``dt / t(f)`` of its work (compute-bound ``t ∝ 1/f``, memory-bound
``t ≈ t_m``); a phase ends inside a step (the step is cut there). Per step it adds ``P·dt``
to the energy and advances temperature with the exact RC step. The result: total time,
energy and energy per token.

    gpu = SimulatedGpu(PowerModel())
    gpu.set_power_limit_mw(400_000)
    r = gpu.run(decode_trace(steps=8), dt_ns=1e6)

Lab: 30_telemetry_power_and_faults
Reference: NVIDIA NVML API Reference Manual (Device Queries, Device Commands:
nvmlDeviceSetApplicationsClocks, nvmlDeviceSetPowerManagementLimit); NVIDIA DCGM User Guide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from minitorch.driver.power import OperatingPoint, Phase, PowerModel

__all__ = ["RunResult", "SimulatedGpu"]


@dataclass
class RunResult:
    """Totals of one run, and one ``(t_ns, f_mhz, power_w, temp_c, phase)`` row per step."""

    time_ns: float = 0.0
    energy_j: float = 0.0
    tokens: int = 0
    log: list[tuple[float, float, float, float, str]] = field(default_factory=list)

    @property
    def energy_per_token_j(self) -> float:
        return self.energy_j / self.tokens if self.tokens else float("nan")


class SimulatedGpu:
    """One GPU: its power model, application clock, power cap, temperature and time."""

    def __init__(self, model: PowerModel, t_slow_c: float = 87.0) -> None:
        self.model = model
        self.table = sorted(model.table, key=lambda p: p.f_mhz)
        self.app_clock_mhz = self.table[-1].f_mhz
        self.power_limit_mw = 700_000.0  # H100 SXM TDP, 700 W
        self.t_slow_c = t_slow_c
        self.temp_c = model.t_amb_c
        self.point = self.table[-1]
        self.activity = 0.0
        self.busy = False
        self.now_ns = 0.0
        self._throttle = 0  # table steps taken off by the thermal slowdown
        self._energy_j = 0.0  # since "driver load": the energy counter's true value

    # ---- queries (NVML Device Queries)
    def clock_mhz(self) -> float:
        return self.point.f_mhz

    def power_usage_mw(self) -> float:
        return 1e3 * self.model.power_w(self.activity, self.point, self.temp_c)

    def temperature_c(self) -> float:
        return self.temp_c

    def utilization(self) -> int:
        """Percent of the last step with a kernel resident (NVML's ``utilization.gpu``)."""
        return 100 if self.busy else 0

    def total_energy_mj(self) -> int:
        """Energy in mJ since the device was created: monotonic, read as whole mJ; the
        energy of an interval is the difference of two reads (as with every counter)."""
        return int(self._energy_j * 1e3)

    # ---- commands (NVML Device Commands)
    def set_applications_clocks(self, f_mhz: float) -> None:
        """Cap the clock at ``f_mhz``; it must be one of the supported table clocks."""
        if all(abs(p.f_mhz - f_mhz) > 1e-9 for p in self.table):
            raise ValueError(f"{f_mhz} MHz is not a supported clock")
        self.app_clock_mhz = f_mhz

    def set_power_limit_mw(self, limit_mw: float) -> None:
        if limit_mw <= 0:
            raise ValueError("the power limit must be positive")
        self.power_limit_mw = float(limit_mw)

    # ---- the governor and the simulation
    def choose_point(self, activity: float) -> OperatingPoint:
        """The highest point ``<= app clock`` under the cap at the current temperature, then
        ``_throttle`` points lower while above the slowdown temperature."""
        cap_w = self.power_limit_mw / 1e3
        allowed = [p for p in self.table if p.f_mhz <= self.app_clock_mhz + 1e-9]
        fits = [
            i
            for i, p in enumerate(allowed)
            if self.model.power_w(activity, p, self.temp_c) <= cap_w
        ]
        best = fits[-1] if fits else 0
        self._throttle = self._throttle + 1 if self.temp_c > self.t_slow_c else 0
        return allowed[max(0, best - self._throttle)]

    def run(self, trace: Sequence[Phase], dt_ns: float = 1e6) -> RunResult:
        """Simulate ``trace`` in steps of at most ``dt_ns``; see the module docstring."""
        res = RunResult()
        for phase in trace:
            left = 1.0  # fraction of the phase still to do
            while left > 1e-12:
                self.activity, self.busy = phase.activity, True
                self.point = self.choose_point(phase.activity)
                t_phase = phase.time_ns(self.point.f_mhz)
                dt = min(dt_ns, left * t_phase)
                p_w = self.model.power_w(phase.activity, self.point, self.temp_c)
                res.energy_j += p_w * dt * 1e-9
                self._energy_j += p_w * dt * 1e-9
                self.temp_c = self.model.thermal_step(self.temp_c, p_w, dt)
                self.now_ns += dt
                res.time_ns += dt
                left -= dt / t_phase
                res.log.append((self.now_ns, self.point.f_mhz, p_w, self.temp_c, phase.name))
            res.tokens += phase.tokens
        return res
