"""Power, thermal, DVFS and the governor: CV²f and leakage by hand, the exact RC step against
a fine Euler loop, energy-optimal clocks against a brute-force scan, runs against a plain
integration loop, and the workload traces' shape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minitorch.driver.governor import SimulatedGpu
from minitorch.driver.power import (
    OperatingPoint,
    Phase,
    PowerModel,
    dvfs_table,
    optimal_clock_compute_bound,
    optimal_clock_memory_bound,
    optimal_clock_mixed,
    optimal_point,
)
from minitorch.driver.workload import FLOPS_PER_CYCLE, decode_trace, training_trace

M = PowerModel()


def test_dynamic_power_is_a_c_v2_f() -> None:
    p = OperatingPoint(1500.0, 0.9)
    assert M.dynamic_w(0.5, p) == pytest.approx(0.5 * M.c_eff_f * 0.81 * 1.5e9)
    assert M.dynamic_w(1.0, OperatingPoint(1500.0, 1.8)) == pytest.approx(4 * M.dynamic_w(1.0, p))


def test_leakage_doubles_every_ln2_over_beta() -> None:
    t0 = M.t_leak0_c
    assert M.leakage_w(t0) == pytest.approx(M.p_leak0_w)
    assert M.leakage_w(t0 + math.log(2) / M.beta_per_k) == pytest.approx(2 * M.p_leak0_w)


def test_defaults_sit_near_the_h100_tdp() -> None:
    top = max(M.table, key=lambda p: p.f_mhz)
    assert top.f_mhz == pytest.approx(1980.0)
    assert 600 < M.power_w(0.8, top, 60.0) < 720


@pytest.mark.parametrize("p_w,t0", [(700.0, 30.0), (100.0, 90.0), (0.0, 60.0)])
def test_exact_rc_step_matches_a_fine_euler_loop(p_w: float, t0: float) -> None:
    tau_s = M.r_k_per_w * M.c_th_j_per_k
    total_s, n = 3.0, 200_000
    h = total_s / n
    t = t0
    for _ in range(n):
        t += h * (p_w * M.r_k_per_w - (t - M.t_amb_c)) / tau_s
    exact = M.thermal_step(t0, p_w, total_s * 1e9)
    assert exact == pytest.approx(t, abs=1e-3)
    # exact steps compose: two half steps equal one whole step
    half = M.thermal_step(M.thermal_step(t0, p_w, 1.5e9), p_w, 1.5e9)
    assert half == pytest.approx(exact, abs=1e-9)


def test_steady_state_is_t_amb_plus_p_r() -> None:
    assert M.thermal_step(40.0, 500.0, 1e12) == pytest.approx(M.t_amb_c + 500.0 * M.r_k_per_w)


def _brute_energy(m: PowerModel, ph: Phase, p: OperatingPoint, t_c: float) -> float:
    """Independent energy: (a C V^2 f + P0 exp(beta (T - T0))) * (N_c / f + t_m)."""
    f_hz = p.f_mhz * 1e6
    power = ph.activity * m.c_eff_f * p.v * p.v * f_hz
    power += m.p_leak0_w * math.exp(m.beta_per_k * (t_c - m.t_leak0_c))
    return power * (ph.cycles / f_hz + ph.mem_ns * 1e-9)


@pytest.mark.parametrize("activity", [0.8, 0.3, 0.05, 0.01])
@pytest.mark.parametrize("t_c", [40.0, 85.0])
def test_compute_bound_optimum_matches_a_scan(activity: float, t_c: float) -> None:
    table = dvfs_table(step_mhz=1.0)
    ph = Phase("gemm", cycles=1e9, mem_ns=0.0, activity=activity)
    best = min(table, key=lambda p: _brute_energy(M, ph, p, t_c))
    closed = optimal_clock_compute_bound(M, activity, t_c)
    assert abs(best.f_mhz - closed) <= 1.0
    assert optimal_point(M, ph, t_c, table) == best


def test_compute_bound_optimum_is_the_knee_at_high_activity_above_it_at_low() -> None:
    assert optimal_clock_compute_bound(M, 0.8, 60.0) == pytest.approx(1200.0)
    assert optimal_clock_compute_bound(M, 0.05, 60.0) > 1300.0


def test_memory_bound_optimum_is_the_lowest_clock() -> None:
    ph = Phase("decode", cycles=1e3, mem_ns=5e6, activity=0.3)
    best = min(M.table, key=lambda p: _brute_energy(M, ph, p, 60.0))
    assert best.f_mhz == optimal_clock_memory_bound(M.table) == 600.0


@pytest.mark.parametrize("cycles_per_s", [5e8, 1.1e9, 1.3e9])
def test_mixed_phase_optimum_at_the_voltage_floor_matches_a_scan(cycles_per_s: float) -> None:
    table = dvfs_table(step_mhz=1.0)
    ph = Phase("mixed", cycles=cycles_per_s * 1e-3, mem_ns=1e6, activity=0.8)
    best = min(table, key=lambda p: _brute_energy(M, ph, p, 60.0))
    assert abs(best.f_mhz - optimal_clock_mixed(M, ph, 60.0)) <= 1.0
    assert 600.0 < best.f_mhz < 1200.0


def test_mixed_optimum_tends_to_the_two_limits() -> None:
    assert optimal_clock_mixed(M, Phase("m", 1.0, 1e9, 0.3), 60.0) == 600.0
    assert optimal_clock_mixed(M, Phase("c", 1e9, 0.0, 0.8), 60.0) == 1200.0


def _gpu(**kw: float) -> SimulatedGpu:
    g = SimulatedGpu(M, t_slow_c=kw.pop("t_slow_c", 1e9))
    for k, v in kw.items():
        getattr(g, k)(v)
    return g


def test_compute_time_scales_1_over_f_memory_time_barely() -> None:
    comp = [Phase("c", cycles=2e9, mem_ns=1e4, activity=0.8)]
    mem = [Phase("m", cycles=1e4, mem_ns=2e9, activity=0.3)]
    t = {
        (name, f): _gpu(set_applications_clocks=f).run(tr, dt_ns=1e7).time_ns
        for name, tr in (("c", comp), ("m", mem))
        for f in (990.0, 1980.0)
    }
    assert t["c", 990.0] / t["c", 1980.0] == pytest.approx(2.0, rel=1e-3)
    assert t["m", 990.0] / t["m", 1980.0] == pytest.approx(1.0, abs=1e-4)


def test_run_matches_a_plain_integration_loop() -> None:
    trace = training_trace(steps=2, seed=3)
    f = 1500.0
    r = _gpu(set_applications_clocks=f).run(trace, dt_ns=1e5)
    point = next(p for p in M.table if p.f_mhz == f)
    # independent: fine Euler in temperature, fixed clock, energy = sum P dt
    t_c, e_j, time_ns, h = M.t_amb_c, 0.0, 0.0, 1e3
    for ph in trace:
        dur = ph.cycles * 1e3 / f + ph.mem_ns
        n = max(1, round(dur / h))
        for _ in range(n):
            p_w = ph.activity * M.c_eff_f * point.v**2 * f * 1e6
            p_w += M.p_leak0_w * math.exp(M.beta_per_k * (t_c - M.t_leak0_c))
            e_j += p_w * dur / n * 1e-9
            t_c += (
                (dur / n * 1e-9)
                * (p_w * M.r_k_per_w - (t_c - M.t_amb_c))
                / (M.r_k_per_w * M.c_th_j_per_k)
            )
        time_ns += dur
    assert r.time_ns == pytest.approx(time_ns, rel=1e-9)
    assert r.energy_j == pytest.approx(e_j, rel=1e-4)
    assert r.tokens == 2 * 8192 and r.energy_per_token_j == pytest.approx(r.energy_j / r.tokens)


def test_energy_counter_differences_give_a_run_energy() -> None:
    g = _gpu()
    before = g.total_energy_mj()
    r = g.run(training_trace(steps=1), dt_ns=1e6)
    r2 = g.run(decode_trace(steps=4), dt_ns=1e6)
    assert abs(g.total_energy_mj() - before - 1e3 * (r.energy_j + r2.energy_j)) <= 1.0


def test_power_cap_is_respected_and_costs_time() -> None:
    trace = [Phase("c", cycles=4e9, mem_ns=0.0, activity=0.8)]
    free = _gpu().run(trace, dt_ns=1e7)
    g = _gpu(set_power_limit_mw=300_000.0)
    capped = g.run(trace, dt_ns=1e7)
    assert max(row[2] for row in capped.log) <= 300.0 + 1e-9
    assert capped.time_ns > free.time_ns
    assert g.power_usage_mw() <= 300_000.0 and g.utilization() == 100
    assert g.clock_mhz() < 1980.0 and g.temperature_c() > M.t_amb_c


def test_thermal_slowdown_lowers_the_clock() -> None:
    trace = [Phase("c", cycles=4e10, mem_ns=0.0, activity=0.8)]
    g = _gpu(t_slow_c=50.0)
    r = g.run(trace, dt_ns=1e8)
    assert min(row[1] for row in r.log) < 1980.0


def test_unsupported_clock_and_bad_cap_are_refused() -> None:
    g = _gpu()
    with pytest.raises(ValueError):
        g.set_applications_clocks(1234.5)
    with pytest.raises(ValueError):
        g.set_power_limit_mw(0)


def test_decode_at_a_low_clock_saves_energy_per_token() -> None:
    trace = decode_trace(steps=32, seed=1)[1:]  # decode only
    hi = _gpu().run(trace, dt_ns=1e5)
    lo = _gpu(set_applications_clocks=600.0).run(trace, dt_ns=1e5)
    assert lo.energy_per_token_j < 0.7 * hi.energy_per_token_j
    assert lo.time_ns < 1.1 * hi.time_ns  # 10M params, batch 8: ~6 % slower


def test_traces_are_shaped_and_seeded() -> None:
    d = decode_trace(params=10e6, steps=4, batch=8, seed=0)
    f_hz = 1.98e9
    assert d[0].cycles / f_hz * 1e9 > 10 * d[0].mem_ns  # prefill compute-bound
    assert all(p.mem_ns > 10 * p.cycles / f_hz * 1e9 for p in d[1:])  # decode memory-bound
    assert d[1].cycles == pytest.approx(2 * 10e6 * 8 / FLOPS_PER_CYCLE)
    t = training_trace(params=10e6, tokens_per_step=1024, steps=3, seed=0, jitter=0.0)
    assert t[0].cycles == pytest.approx(6 * 10e6 * 1024 / FLOPS_PER_CYCLE)
    assert decode_trace(seed=5) == decode_trace(seed=5) != decode_trace(seed=6)
    assert np.isclose(sum(p.tokens for p in d), 8 * 512 + 4 * 8)
