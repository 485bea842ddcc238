"""Lab 30's own ground truth: plain loops and closed forms, never ``minitorch.driver``.

* counters: the grader integrates piecewise-constant activity itself (``raw_readings``) and
  decodes finite-width readings with a loop (``decoded_rates``);
* power: ``chip_power`` (``a·C·V²·f + P_0·exp(β(T − T_0))``), the least-slowdown point under
  a cap by a scan of the table (``capped_clock``), the point of least energy of a phase by
  another scan (``least_energy_clock``), an RC thermal step in closed form and a replay of a
  decode trace (``replay``), all in the grader's locals;
* the watchdog: a poll loop over the heartbeats (``first_alarm``);
* the runtime's response: :class:`Fleet`, the grader's devices and its own record of every
  submission and completion (the learner's code only holds request proxies to it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# ----------------------------------------------------------------------------- counters
N_SM, CLOCK_GHZ = 132, 1.98  # the H100 SXM of the lab's defaults (132 SMs, 1980 MHz)


def raw_readings(
    segments: Sequence[tuple[float, float, float, float]], interval_ns: float, width_bits: int
) -> list[tuple[int, int, int]]:
    """Raw readings at ``k·Δt`` of three ``width_bits`` counters (busy ns, DRAM bytes,
    SM-cycles): ``floor(true count) mod 2^w``; a segment is ``(ns, busy, bytes/ns, SMs)``."""
    total = sum(s[0] for s in segments)
    n = int(total // interval_ns)
    out = []
    for k in range(n + 1):
        t, start, acc = k * interval_ns, 0.0, [0.0, 0.0, 0.0]
        for dur, busy, bpn, sms in segments:
            inside = min(max(t - start, 0.0), dur)
            acc[0] += inside * busy
            acc[1] += inside * bpn
            acc[2] += inside * sms * CLOCK_GHZ
            start += dur
        out.append(tuple(math.floor(a + 1e-9) % (1 << width_bits) for a in acc))
    return out  # type: ignore[return-value]


def decoded_rates(
    raw: Sequence[Sequence[int]], interval_ns: float, width_bits: int, n_sm: int, clock_ghz: float
) -> list[list[float]]:
    """``[util, GB/s, SM activity]`` per interval from consecutive raw readings."""
    mod = 1 << width_bits
    util, bw, sm = [], [], []
    for prev, cur in itertools.pairwise(raw):
        d = [(int(c) - int(p)) % mod for p, c in zip(prev, cur, strict=True)]
        util.append(d[0] / interval_ns)
        bw.append(d[1] / interval_ns)
        sm.append(d[2] / (n_sm * clock_ghz * interval_ns))
    return [util, bw, sm]


# ----------------------------------------------------------------------------- power
CHIP = {"c_eff_f": 2.8e-7, "p_leak0_w": 80.0, "t_leak0_c": 60.0, "beta_per_k": 0.02}
THERMAL = {"r_k_per_w": 0.08, "c_th_j_per_k": 50.0, "t_amb_c": 30.0}


def chip_power(activity: float, f_mhz: float, v: float, temp_c: float, chip: dict) -> float:
    """``a·C·V²·f + P_0·exp(β(T − T_0))`` in W."""
    dyn = activity * chip["c_eff_f"] * v * v * f_mhz * 1e6
    return dyn + chip["p_leak0_w"] * math.exp(chip["beta_per_k"] * (temp_c - chip["t_leak0_c"]))


def capped_clock(
    activity: float, temp_c: float, cap_w: float, table: Sequence[tuple[float, float]], chip: dict
) -> float:
    """The highest clock whose power fits under the cap; the lowest when none does."""
    best = min(f for f, _ in table)
    for f, v in table:
        if chip_power(activity, f, v, temp_c, chip) <= cap_w and f > best:
            best = f
    return best


def phase_energy(
    cycles: float, mem_ns: float, activity: float, f_mhz: float, v: float, temp_c: float, chip: dict
) -> float:
    """``E = (a·C·V²·f + P_s(T))·(N_c/f + t_m)`` in J (f in Hz, t_m in s)."""
    seconds = cycles / (f_mhz * 1e6) + mem_ns * 1e-9
    return chip_power(activity, f_mhz, v, temp_c, chip) * seconds


def least_energy_clock(
    cycles: float,
    mem_ns: float,
    activity: float,
    temp_c: float,
    table: Sequence[tuple[float, float]],
    chip: dict,
) -> float:
    """The clock of least energy for the phase, by a scan of every point of the table."""
    best_f, best_e = math.nan, math.inf
    for f, v in table:
        e = phase_energy(cycles, mem_ns, activity, f, v, temp_c, chip)
        if e < best_e:
            best_f, best_e = f, e
    return best_f


def thermal_step(temp_c: float, p_w: float, dt_ns: float) -> float:
    """Exact RC step: ``T_ss + (T − T_ss)·exp(−dt/τ)``, ``T_ss = T_amb + P·R``."""
    r, c, amb = THERMAL["r_k_per_w"], THERMAL["c_th_j_per_k"], THERMAL["t_amb_c"]
    t_ss = amb + p_w * r
    return t_ss + (temp_c - t_ss) * math.exp(-dt_ns * 1e-9 / (r * c))


def replay(
    trace: Sequence[tuple[float, float, float, int]],
    choose: Callable[[float, float], float],
    table: Sequence[tuple[float, float]],
    chip: dict,
    dt_ns: float,
    temp_c: float,
) -> dict[str, Any]:
    """Run phases ``(cycles, mem_ns, activity, tokens)`` in steps of ``dt_ns``; before each
    step ``choose(activity, temp)`` gives the clock. Time, energy, tokens, one row a step."""
    volts = {f: v for f, v in table}
    time_ns = energy = 0.0
    tokens, steps = 0, []
    for cycles, mem_ns, act, tok in trace:
        left = 1.0
        while left > 1e-12:
            f = choose(act, temp_c)
            t_phase = cycles * 1e3 / f + mem_ns
            dt = min(dt_ns, left * t_phase)
            p = chip_power(act, f, volts[f], temp_c, chip)
            energy += p * dt * 1e-9
            steps.append((time_ns, f, p, temp_c))
            temp_c = thermal_step(temp_c, p, dt)
            time_ns += dt
            left -= dt / t_phase
        tokens += tok
    return {"time_ns": time_ns, "energy_j": energy, "tokens": tokens, "steps": steps}


# ----------------------------------------------------------------------------- watchdog
def first_alarm(
    beats: Sequence[float],
    completion: float | None,
    deadline_ns: float,
    poll_ns: float,
    horizon_ns: float,
) -> float | None:
    """The first poll ``t = k·poll`` (``k >= 1``, ``t <= horizon``) at which the kernel has not
    completed and ``t − (last beat <= t, else 0) > deadline``; None if there is none."""
    k = 1
    while k * poll_ns <= horizon_ns:
        t = k * poll_ns
        if completion is not None and completion <= t:
            return None
        last = max([b for b in beats if b <= t], default=0.0)
        if t - last > deadline_ns:
            return t
        k += 1
    return None


# ----------------------------------------------------------------------------- recovery
OUTCOMES = ("ok", "transient", "ecc_uncorrectable")


class Fleet:
    """The grader's devices. ``plan[(command, attempt)]`` is the outcome of that attempt
    (``attempt``: how many times *this record* has seen the command submitted before). The
    record of every submission, every completion and every broken rule stays here."""

    def __init__(
        self, n_devices: int, n_commands: int, plan: dict[tuple[int, int], str], retries: int
    ) -> None:
        self.n_devices, self.n_commands, self.plan, self.retries = (
            n_devices,
            n_commands,
            dict(plan),
            retries,
        )
        self.queues = [
            [c for c in range(n_commands) if c % n_devices == d] for d in range(n_devices)
        ]
        self.home = {c: c % n_devices for c in range(n_commands)}
        self.attempts = [0] * n_commands
        self.transients = [0] * n_commands
        self.completions = [0] * n_commands
        self.isolated: list[int] = []
        self.log: list[tuple[int, int, str]] = []  # (device, command, outcome)
        self.broken: list[str] = []

    def submit(self, device: int, command: Any) -> str:
        whole = isinstance(command, (int, np.integer)) and not isinstance(command, bool)
        if not whole or not 0 <= command < self.n_commands:
            self.broken.append(f"gpu {device} was sent {command!r}, not a command number")
            return "invalid"
        c = int(command)
        if device in self.isolated:
            self.broken.append(f"command {c} was sent to gpu {device} after it was isolated")
        if self.completions[c]:
            self.broken.append(f"command {c} was submitted again after it completed")
        if self.transients[c] > self.retries:
            self.broken.append(
                f"command {c} was retried after {self.transients[c]} transient errors "
                f"(at most {self.retries} retries)"
            )
        # its own GPU: where it is queued, then where it last ran once it was re-mapped
        home = self.home[c]
        if device != home and home not in self.isolated:
            where = "is queued" if home == c % self.n_devices else "was re-mapped and ran"
            self.broken.append(
                f"command {c} {where} on gpu {home}, which is healthy, but ran on gpu {device}"
            )
        self.home[c] = device
        outcome = (
            "ecc_uncorrectable"
            if device in self.isolated
            else self.plan.get((c, self.attempts[c]), "ok")
        )
        self.attempts[c] += 1
        if outcome == "ok":
            self.completions[c] += 1
        elif outcome == "transient":
            self.transients[c] += 1
        elif device not in self.isolated:
            self.isolated.append(device)
        self.log.append((device, c, outcome))
        return outcome
