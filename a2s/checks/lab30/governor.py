"""Grader of exercise 30.2: a power-capping governor with the least slowdown.

``governor(activity, temp_c, cap_w, table, chip)`` returns the clock (MHz) to run the next
step at: the highest point of ``table`` (``(f_mhz, volts)`` rows) whose power
``a·C·V²·f + P_0·exp(β(T − T_0))`` fits under ``cap_w`` at the die's temperature, the lowest
point when none fits. A table of decisions first (the truth: a scan written here), then a
replay of a prefill and decode trace with the grader's own power and RC thermal model, in
which every step must stay under the cap and the run take the least-slowdown time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.compare import number
from a2s.checks.core import CheckFailure, fresh_rng, grader
from a2s.checks.lab30._truth import CHIP, capped_clock, chip_power, replay
from a2s.checks.table import Table
from a2s.checks.values import assert_true

__all__ = ["CAP", "DECODE_TRACE", "TABLE", "check_governor"]

_DRV = "minitorch.driver"
_T = "a2s.checks.lab30._truth"
# the DVFS table of the lab: 600..1980 MHz every 15 MHz, V = 0.70 V · max(1, f / 1200 MHz)
TABLE = [(float(f), 0.70 * max(1.0, f / 1200.0)) for f in range(600, 1981, 15)]
CAP = 400.0  # W, the replay's cap
# a 7B-parameter model in bf16 on the H100-like part: prefill of 8 x 512 tokens, then decode
# steps that read all 14 GB of weights at 3.35 TB/s (cycles, mem_ns, activity, tokens)
DECODE_TRACE = [(2 * 7e9 * 8 * 512 / 5e5, 14e9 / 3350, 0.8, 4096)] + [
    (2 * 7e9 * 8 / 5e5, 14e9 / 3350, 0.3, 8)
] * 24


def _case(label: str, activity: float, temp: float, cap: float) -> tuple:
    return (label, (activity, temp, cap, list(TABLE), dict(CHIP)))


_NAMED = [
    _case("decode (a = 0.3) under a 900 W cap: nothing to give up", 0.3, 50.0, 900.0),
    _case("prefill (a = 0.8) under a 400 W cap at 60 °C", 0.8, 60.0, 400.0),
    _case("decode under a 250 W cap at 60 °C", 0.3, 60.0, 250.0),
    _case("prefill under 400 W on a hot die (85 °C): leakage takes its share", 0.8, 85.0, 400.0),
    _case("a 60 W cap no point meets: the lowest clock", 0.5, 70.0, 60.0),
]


def _draw(gen: Any, i: int) -> tuple:
    a, t, cap = gen.uniform(0.2, 0.9), gen.uniform(35.0, 90.0), gen.uniform(150.0, 700.0)
    return _case(f"random step {i}: a = {a:.2f}, {t:.0f} °C, {cap:.0f} W", a, t, cap)


def _pick(fits: Callable[..., bool], lowest_if_none: bool = True, top: bool = True) -> Callable:
    def answer(a: float, temp: float, cap: float, table: list, chip: dict) -> float:
        ok = [f for f, v in table if fits(a, f, v, temp, cap, chip)]
        if not ok:
            return min(f for f, _ in table) if lowest_if_none else max(f for f, _ in table)
        return max(ok) if top else min(ok)

    return answer


def _dyn(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return a * chip["c_eff_f"] * v * v * f * 1e6 <= cap


def _cold(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, v, chip["t_leak0_c"], chip) <= cap


def _fits(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, v, temp, chip) <= cap


_MISTAKES = (
    Mistake(
        " The cap covers the whole chip: add the leakage P_0·exp(β(T − T_0)).", answer=_pick(_dyn)
    ),
    Mistake(
        " Leakage grows with the die's temperature: evaluate it at temp_c, not at T_0.",
        answer=_pick(_cold),
    ),
    Mistake(
        " Least slowdown means the *highest* clock that fits, not the lowest.",
        answer=_pick(_fits, top=False),
    ),
    Mistake(
        " When no point fits, run at the lowest clock (the least power there is), not the top.",
        answer=_pick(_fits, lowest_if_none=False),
    ),
)


def _read(got: Any, label: str) -> float:
    return float(number(got, case=label, message="governor must return a clock in MHz"))


DECISIONS = Table(
    "30.2",
    truth=capped_clock,
    named=_NAMED,
    draw=_draw,
    seeded=4,
    fresh=3,
    mistakes=_MISTAKES,
    hint=" Take the highest (f, V) with a·C·V²·f + P_0·exp(β(T − T_0)) <= cap_w (f in MHz, "
    "so f·1e6 Hz); the lowest clock when none fits.",
    read=_read,
    same=lambda got, want: abs(got - want) < 1e-6,
    what="governor",
    message="[{label}] governor returned {got!r} MHz; the highest clock under the cap is "
    "{want:g} MHz.{hint}",
)


def _replay(governor: Callable[..., Any], cap: float, temp: float) -> dict[str, Any]:
    clocks = {f for f, _ in TABLE}

    def choose(a: float, t: float) -> float:
        got = _read(governor(a, t, cap, list(TABLE), dict(CHIP)), "replay")
        if got not in clocks:
            raise CheckFailure(
                f"[replay] governor returned {got!r} MHz, not a clock of the table "
                "(600..1980 MHz every 15 MHz)."
            )
        return got

    return replay(DECODE_TRACE, choose, TABLE, CHIP, 2e6, temp)


@grader(
    "30.2",
    blocks=(f"{_DRV}.governor", f"{_DRV}.power", f"{_T}:capped_clock", f"{_T}:chip_power"),
    hand="replay",
)
def check_governor(governor: Callable[..., object]) -> str:
    """Exercise 30.2: the decisions, then a capped decode run judged on the grader's model."""
    n = DECISIONS.grade(governor)
    temp = 55.0 + 30.0 * float(fresh_rng("30.2").uniform())
    run = _replay(governor, CAP, temp)
    best = replay(
        DECODE_TRACE, lambda a, t: capped_clock(a, t, CAP, TABLE, CHIP), TABLE, CHIP, 2e6, temp
    )
    f_min = min(f for f, _ in TABLE)
    for t_ns, f, p, _ in run["steps"]:
        assert_true(
            p <= CAP + 1e-9 or f == f_min,
            f"[replay from {temp:.1f} °C] at t = {t_ns / 1e6:.1f} ms the chip drew {p:.1f} W at "
            f"{f:g} MHz, over the {CAP:g} W cap.",
        )
    assert_true(
        abs(run["time_ns"] - best["time_ns"]) <= 1e-9 * best["time_ns"],
        f"[replay from {temp:.1f} °C] the run took {run['time_ns'] / 1e6:.3f} ms; the least "
        f"slowdown under {CAP:g} W is {best['time_ns'] / 1e6:.3f} ms.",
    )
    fixed = replay(DECODE_TRACE, lambda a, t: max(TABLE)[0], TABLE, CHIP, 2e6, temp)
    return (
        f"{n} decisions; capped at {CAP:g} W the run is "
        f"{run['time_ns'] / fixed['time_ns']:.3f}x the uncapped time at "
        f"{run['energy_j'] / run['tokens'] * 1e3:.2f} mJ/token "
        f"(1980 MHz: {fixed['energy_j'] / fixed['tokens'] * 1e3:.2f})"
    )
