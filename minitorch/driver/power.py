"""Power, temperature and clocks: CV²f, leakage, a first-order RC thermal model, DVFS.

**Dynamic power.** Switching a node of capacitance ``C`` from 0 to ``V`` and back draws
``C·V²`` from the supply; with a fraction ``a`` (the **activity factor**) of the chip's
capacitance switching per cycle at clock ``f``:

    P_dyn = a · C · V² · f            (W, with C in F, V in V, f in Hz)

``a`` comes from the workload phase: a tensor-core GEMM toggles most of the datapath
(``a ≈ 0.8``), a memory-bound decode step mostly waits on DRAM (``a ≈ 0.3``).

**Leakage.** Static power flows whenever the chip is powered and grows with temperature
(subthreshold current rises roughly exponentially in T). The simple documented form used
here, independent of V (the simplification that keeps the closed forms below closed):

    P_leak(T) = P_leak0 · exp(β · (T − T_0))        β = 0.02 /K: it doubles every ~35 K

**Thermal.** The die, heat sink and coolant lumped into one thermal resistance ``R`` (K/W)
and one heat capacity ``C_th`` (J/K) against an ambient (inlet) temperature:

    dT/dt = (P·R − (T − T_amb)) / (R·C_th)

For a step of length ``Δt`` with constant ``P`` this is solved *exactly*, not by Euler:
``T(Δt) = T_ss + (T_0 − T_ss)·exp(−Δt/τ)``, ``T_ss = T_amb + P·R``, ``τ = R·C_th``.

**DVFS.** The chip runs at one of a table of operating points ``(f, V)``: below a knee
``f_knee`` the voltage sits at its floor ``V_min``; above it ``V`` must rise with ``f``
(modelled linear, ``V = V_min · f / f_knee``). A phase needs ``N_c`` core cycles and
``t_m`` of memory time that the clock does not shorten: ``t(f) = N_c/f + t_m``, and

    E(f) = (a·C·V(f)²·f + P_s) · (N_c/f + t_m)

* **memory-bound** (``N_c → 0``): ``E = (a·C·V²·f + P_s)·t_m`` grows with ``f``:
  ``f* = f_min``; lowering the clock costs no time.
* **compute-bound** (``t_m → 0``): energy per cycle ``e(f) = a·C·V² + P_s/f``. Below the knee
  it falls with ``f``; above it ``de/df = 2aCV_min²f/f_knee² − P_s/f² = 0`` gives
  ``f* = clip(max(f_knee, (P_s·f_knee² / (2·a·C·V_min²))^(1/3)), f_min, f_max)``: race to at
  least the knee, further only when leakage dominates.
* **both**, at the voltage floor: ``dE/df = a·C·V_min²·t_m − P_s·N_c/f² = 0`` gives
  ``f* = sqrt(P_s·N_c / (a·C·V_min²·t_m))`` when that lies in ``[f_min, f_knee]``; it falls
  to ``f_min`` as ``N_c/t_m → 0`` and reaches the knee as ``t_m → 0``, the two cases above.

Lab: 30_telemetry_power_and_faults
Reference: Weste & Harris, "CMOS VLSI Design", 4th ed., ch. 5 (dynamic and static power);
Skadron et al., "Temperature-aware microarchitecture", ISCA 2003 (lumped RC thermal model);
NVIDIA H100 Tensor Core GPU datasheet (700 W TDP, 1980 MHz max boost, SXM5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "F_KNEE_MHZ",
    "F_MAX_MHZ",
    "F_MIN_MHZ",
    "V_MIN",
    "OperatingPoint",
    "Phase",
    "PowerModel",
    "dvfs_table",
    "optimal_clock_compute_bound",
    "optimal_clock_memory_bound",
    "optimal_clock_mixed",
    "optimal_point",
]

# the DVFS defaults of the lab's H100-like part (1980 MHz is the H100 SXM's max boost clock;
# the floor, the knee and the minimum voltage are assumptions of the model)
F_MIN_MHZ, F_MAX_MHZ, F_KNEE_MHZ, V_MIN = 600.0, 1980.0, 1200.0, 0.70


@dataclass(frozen=True)
class OperatingPoint:
    """One DVFS state: core clock in MHz and supply voltage in V."""

    f_mhz: float
    v: float


def dvfs_table(
    f_min_mhz: float = F_MIN_MHZ,
    f_max_mhz: float = F_MAX_MHZ,
    f_knee_mhz: float = F_KNEE_MHZ,
    v_min: float = V_MIN,
    step_mhz: float = 15.0,
) -> list[OperatingPoint]:
    """Operating points every ``step_mhz`` from ``f_min`` to ``f_max`` (H100-like: 1980 MHz
    max boost; nvidia-smi lists its supported clocks in 15 MHz steps). Voltage:
    ``V = V_min · max(1, f / f_knee)`` (an assumption: real V/f curves are per-chip fused)."""
    fs = np.arange(f_min_mhz, f_max_mhz + 1e-9, step_mhz)
    return [OperatingPoint(float(f), float(v_min * max(1.0, f / f_knee_mhz))) for f in fs]


@dataclass(frozen=True)
class Phase:
    """A stretch of a workload: ``cycles`` of core work (time ``cycles/f``), ``mem_ns`` of
    memory time the clock does not shorten, activity factor ``activity``, tokens produced."""

    name: str
    cycles: float
    mem_ns: float
    activity: float
    tokens: int = 0

    def time_ns(self, f_mhz: float) -> float:
        """``t(f) = N_c / f + t_m`` (``f`` in MHz is cycles per µs: ``N_c/f`` µs)."""
        return self.cycles * 1e3 / f_mhz + self.mem_ns


@dataclass(frozen=True)
class PowerModel:
    """The chip's electrical and thermal constants. Defaults are an H100-SXM-like part:
    ``C`` chosen so ``a = 0.8`` at 1980 MHz and 1.155 V draws ~600 W dynamic, plus ~80 W
    leakage at 60 °C: near the 700 W TDP. ``R = 0.08 K/W`` puts 700 W at 86 °C over a
    30 °C inlet; ``τ = R·C_th = 4 s`` (assumptions for the lab, not measured values)."""

    c_eff_f: float = 2.8e-7  # effective switched capacitance of the whole chip, F
    p_leak0_w: float = 80.0  # leakage at t_leak0_c
    t_leak0_c: float = 60.0
    beta_per_k: float = 0.02  # leakage doubles every ln 2 / beta ≈ 35 K
    r_k_per_w: float = 0.08  # die-to-coolant thermal resistance
    c_th_j_per_k: float = 50.0  # lumped heat capacity (die, spreader, cold plate)
    t_amb_c: float = 30.0  # inlet air / coolant temperature
    table: list[OperatingPoint] = field(default_factory=dvfs_table)

    def dynamic_w(self, activity: float, point: OperatingPoint) -> float:
        """``P_dyn = a · C · V² · f``."""
        return activity * self.c_eff_f * point.v**2 * point.f_mhz * 1e6

    def leakage_w(self, t_c: float) -> float:
        """``P_leak = P_leak0 · exp(β (T − T_0))``."""
        return self.p_leak0_w * math.exp(self.beta_per_k * (t_c - self.t_leak0_c))

    def power_w(self, activity: float, point: OperatingPoint, t_c: float) -> float:
        return self.dynamic_w(activity, point) + self.leakage_w(t_c)

    @property
    def tau_ns(self) -> float:
        """The thermal time constant ``τ = R · C_th`` in ns."""
        return self.r_k_per_w * self.c_th_j_per_k * 1e9

    def thermal_step(self, t_c: float, p_w: float, dt_ns: float) -> float:
        """Exact solution of ``dT/dt = (P·R − (T − T_amb)) / (R·C_th)`` over ``dt`` at constant
        ``P``: ``T_ss + (T − T_ss)·exp(−dt/τ)`` with ``T_ss = T_amb + P·R``."""
        t_ss = self.t_amb_c + p_w * self.r_k_per_w
        return t_ss + (t_c - t_ss) * math.exp(-dt_ns / self.tau_ns)

    def energy_j(self, phase: Phase, point: OperatingPoint, t_c: float) -> float:
        """Energy of a phase at one operating point, temperature held at ``t_c``:
        ``(P_dyn + P_leak) · t(f)``."""
        return self.power_w(phase.activity, point, t_c) * phase.time_ns(point.f_mhz) * 1e-9


def optimal_point(
    model: PowerModel, phase: Phase, t_c: float, table: Sequence[OperatingPoint] | None = None
) -> OperatingPoint:
    """The operating point of least energy for ``phase`` at temperature ``t_c``, found by
    evaluating :meth:`PowerModel.energy_j` at every point of the table."""
    points = list(model.table if table is None else table)
    return min(points, key=lambda p: model.energy_j(phase, p, t_c))


def optimal_clock_memory_bound(table: Sequence[OperatingPoint]) -> float:
    """``f* = f_min``: a memory-bound phase's energy only grows with the clock."""
    return min(p.f_mhz for p in table)


def optimal_clock_compute_bound(
    model: PowerModel,
    activity: float,
    t_c: float,
    f_knee_mhz: float = F_KNEE_MHZ,
    v_min: float = V_MIN,
    f_min_mhz: float = F_MIN_MHZ,
    f_max_mhz: float = F_MAX_MHZ,
) -> float:
    """The continuous optimum of ``e(f) = a·C·V(f)² + P_s/f`` for ``V = V_min·max(1, f/f_knee)``:
    ``f* = clip(max(f_knee, (P_s·f_knee² / (2·a·C·V_min²))^(1/3)), f_min, f_max)`` in MHz."""
    p_s = model.leakage_w(t_c)
    f_knee = f_knee_mhz * 1e6
    f_root = (p_s * f_knee**2 / (2.0 * activity * model.c_eff_f * v_min**2)) ** (1.0 / 3.0)
    return float(np.clip(max(f_knee, f_root) / 1e6, f_min_mhz, f_max_mhz))


def optimal_clock_mixed(
    model: PowerModel,
    phase: Phase,
    t_c: float,
    v_min: float = V_MIN,
    f_min_mhz: float = F_MIN_MHZ,
    f_knee_mhz: float = F_KNEE_MHZ,
) -> float:
    """At the voltage floor, ``f* = sqrt(P_s·N_c / (a·C·V_min²·t_m))`` clipped to
    ``[f_min, f_knee]`` (MHz); exact when the unclipped value lies in that range."""
    if phase.mem_ns <= 0:
        return f_knee_mhz
    p_s = model.leakage_w(t_c)
    f = math.sqrt(
        p_s * phase.cycles / (phase.activity * model.c_eff_f * v_min**2 * phase.mem_ns * 1e-9)
    )
    return float(np.clip(f / 1e6, f_min_mhz, f_knee_mhz))
