"""Grader of exercise 30.5: the clock of least energy for a phase.

``energy_clock(cycles, mem_ns, activity, temp_c, table, chip)`` returns the clock (MHz) of
``table`` at which the phase costs the least energy
``E(f) = (a·C·V²·f + P_0·exp(β(T − T_0)))·(N_c/f + t_m)``. The truth is a scan of the table
written in :mod:`._truth`; the memory-bound decode step and the compute-bound prefill also
carry their closed-form optimum (``f_min``; the knee, since the cube root lies below it), so
those two cases hold even if the scan were wrong.
"""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import Case, Mistake
from a2s.checks.compare import number
from a2s.checks.core import grader
from a2s.checks.lab30._truth import CHIP, chip_power, least_energy_clock, phase_energy
from a2s.checks.lab30.governor import TABLE, fresh_part
from a2s.checks.table import Table

__all__ = ["ENERGY", "check_energy_clock"]

_DRV = "minitorch.driver"
_T = "a2s.checks.lab30._truth"
F_MIN, F_KNEE, F_MAX = 600.0, 1200.0, 1980.0  # the lab's table: 600..1980 MHz, knee at 1200


def _case(label: str, cycles: float, mem_ns: float, a: float, temp: float, *rest: Any) -> tuple:
    return (label, (cycles, mem_ns, a, temp, list(TABLE), dict(CHIP)), *rest)


_NAMED = [
    _case(
        "a decode step (320 cycles, 4.2 ms of memory time, a = 0.3): memory-bound, f* = f_min",
        320.0,
        4.2e6,
        0.3,
        60.0,
        None,
        F_MIN,
    ),
    _case(
        "a prefill (1.15e8 cycles, no memory time, a = 0.8) at 60 °C: compute-bound, f* = the knee",
        1.15e8,
        0.0,
        0.8,
        60.0,
        None,
        F_KNEE,
    ),
    _case(
        "a short mixed phase (1e6 cycles and 1 ms of memory time, a = 0.3) at T_0 = 60 °C",
        1e6,
        1e6,
        0.3,
        60.0,
    ),
    _case(
        "a light compute phase (5e7 cycles, a = 0.3) on a hot die (95 °C): leakage pays for "
        "racing past the knee",
        5e7,
        0.0,
        0.3,
        95.0,
    ),
    _case(
        "a mixed phase (7e5 cycles and 1 ms of memory time, a = 0.5) at 60 °C: "
        "f* = sqrt(P_s·N_c / (a·C·V_min²·t_m)) at the voltage floor",
        7e5,
        1e6,
        0.5,
        60.0,
    ),
]


_KINDS = ("memory-bound", "compute-bound", "mixed")


def _phase(gen: Any, kind: int | None = None) -> tuple[float, float, float, float, str]:
    """A memory-bound, compute-bound or mixed phase (``kind``; drawn when None) at a random
    temperature."""
    kind = int(gen.integers(0, 3)) if kind is None else kind
    a, temp = gen.uniform(0.2, 0.9), gen.uniform(40.0, 95.0)
    if kind == 0:
        return gen.uniform(100.0, 2000.0), gen.uniform(1e6, 8e6), a, temp, _KINDS[0]
    if kind == 1:
        return gen.uniform(1e7, 2e8), 0.0, a, temp, _KINDS[1]
    return gen.uniform(2e5, 2e6), gen.uniform(2e5, 2e6), a, temp, _KINDS[2]


def _draw(gen: Any, i: int) -> tuple:
    n, m, a, t, kind = _phase(gen)
    label = f"random phase {i} ({kind}): {n:.3g} cycles, {m / 1e6:.2f} ms, a = {a:.2f}, {t:.0f} °C"
    return _case(label, n, m, a, t)


def _draw_fresh(gen: Any, i: int) -> tuple:
    """A phase on a DVFS table and a chip of their own (lab 30.2's fresh parts). The first two
    are mixed or compute-bound phases redrawn until their optimum differs from the one the
    lab's printed table and constants give (a memory-bound phase lands on f_min whatever the
    part), and where those two differ from each other, so an answer that reads those instead
    of its arguments fails on every run with the hint of what it read."""
    for _ in range(200):
        table, chip = fresh_part(gen)
        n, m, a, t, kind = _phase(gen, None if i >= 2 else 2 - i % 2)
        args = (n, m, a, t, table, chip)
        lab = {_lab_volts(*args), _lab_chip(*args)}  # two answers: each its own hint
        if i >= 2 or (least_energy_clock(*args) not in lab and len(lab) == 2):
            break
    label = f"fresh phase {i} ({kind}) on a part of its own, {len(table)} points, {t:.0f} °C"
    return (label, args)


def _argmin(energy: Any) -> Any:
    def answer(n: float, m: float, a: float, t: float, table: list, chip: dict) -> float:
        best = min(energy(n, m, a, f, v, t, chip) for f, v in table)
        return next(f for f, v in table if energy(n, m, a, f, v, t, chip) == best)

    return answer


_lab_volts = _argmin(
    lambda n, m, a, f, v, t, c: phase_energy(n, m, a, f, 0.70 * max(1.0, f / 1200.0), t, c)
)
_lab_chip = _argmin(lambda n, m, a, f, v, t, c: phase_energy(n, m, a, f, v, t, CHIP))
_MISTAKES = (  # the first two differ from the truth on fresh parts only: they come first
    Mistake(
        " Take each point's voltage from the table (its second column), not from the lab's "
        "V = 0.70·max(1, f/1200): another part has another table.",
        answer=_lab_volts,
    ),
    Mistake(
        " Read the chip's constants from the chip dict, not the lab's printed values.",
        answer=_lab_chip,
    ),
    Mistake(
        " mem_ns is in nanoseconds: the time is N_c/f + mem_ns·1e-9 seconds.",
        answer=_argmin(lambda n, m, a, f, v, t, c: chip_power(a, f, v, t, c) * (n / (f * 1e6) + m)),
    ),
    Mistake(
        " The top clock is not the least energy: a memory-bound phase takes t_m whatever the "
        "clock, so a higher f only adds a·C·V²·f (and f is in Hz in the power too: "
        "f_mhz * 1e6).",
        answer=lambda n, m, a, t, table, chip: max(f for f, _ in table),
    ),
    Mistake(
        " The lowest clock is the least *power*, not the least energy: a compute-bound phase "
        "runs N_c/f, and the leakage P_s is paid all that time. Minimise "
        "(a·C·V²·f + P_s)·(N_c/f + t_m), with the leakage in.",
        answer=lambda n, m, a, t, table, chip: min(f for f, _ in table),
    ),
    Mistake(
        " The phase also waits t_m on memory, whatever the clock: its time is N_c/f + t_m, "
        "not N_c/f alone.",
        answer=_argmin(lambda n, m, a, f, v, t, c: phase_energy(n, 0.0, a, f, v, t, c)),
    ),
    Mistake(
        " Leakage grows with the die's temperature: evaluate it at temp_c, not at T_0.",
        answer=_argmin(lambda n, m, a, f, v, t, c: phase_energy(n, m, a, f, v, c["t_leak0_c"], c)),
    ),
    Mistake(
        " The dynamic power is a·C·V²·f: the activity factor a (the share of the chip "
        "switching) scales it.",
        answer=_argmin(lambda n, m, a, f, v, t, c: phase_energy(n, m, 1.0, f, v, t, c)),
    ),
    Mistake(
        " Leakage P_0·exp(β(T − T_0)) is paid for the whole time N_c/f + t_m: leave it out and "
        "the lowest voltage always looks best.",
        answer=_argmin(
            lambda n, m, a, f, v, t, c: phase_energy(n, m, a, f, v, t, {**c, "p_leak0_w": 0.0})
        ),
    ),
)


def _read(got: Any, label: str) -> float:
    return float(number(got, case=label, message="energy_clock must return a clock in MHz"))


def _message(case: Case, got: float, want: float, hint: str) -> str:
    n, m, a, t, table, chip = case.args
    volts = dict(table)
    best = phase_energy(n, m, a, want, volts[want], t, chip)
    if got not in volts:
        there = "which is not a clock of the table"
    else:
        there = f"E = {phase_energy(n, m, a, got, volts[got], t, chip) * 1e3:.4g} mJ there"
    return (
        f"[{case.label}] energy_clock returned {got:g} MHz ({there}); the least energy is "
        f"{best * 1e3:.4g} mJ at {want:g} MHz.{(' ' + hint.lstrip()) if hint else ''}"
    )


ENERGY = Table(
    "30.5",
    truth=least_energy_clock,
    named=_NAMED,
    draw=_draw,
    seeded=4,
    fresh=3,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Evaluate E(f) = (a·C·V²·f + P_0·exp(β(T − T_0)))·(N_c/f + t_m) at every point "
    "(f in Hz, t_m in s, V from the table) and return the clock of the least.",
    read=_read,
    same=lambda got, want: got == want,
    what="energy_clock",
    message=_message,
)


@grader(
    "30.5",
    blocks=(f"{_DRV}.power", f"{_DRV}.governor", f"{_T}:least_energy_clock", f"{_T}:phase_energy"),
)
def check_energy_clock(energy_clock: Any) -> str:
    """Exercise 30.5: the clock of least energy, against closed forms and a scan."""
    n = ENERGY.grade(energy_clock)
    volts = dict(TABLE)
    ratios = []
    for _, (cyc, mem, a, t, table, chip), *_ in _NAMED[:2]:
        f = least_energy_clock(cyc, mem, a, t, table, chip)
        e_best = phase_energy(cyc, mem, a, f, volts[f], t, chip)
        ratios.append(e_best / phase_energy(cyc, mem, a, F_MAX, volts[F_MAX], t, chip))
    return (
        f"{n} phases; at f* a decode step costs {ratios[0]:.2f}x and a prefill "
        f"{ratios[1]:.2f}x the energy of the fixed {F_MAX:g} MHz clock"
    )
