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


def _off(gen: Any, value: float, lo: float, hi: float) -> float:
    """``value`` moved up or down by a fraction drawn from [lo, hi]."""
    return value * (1.0 + float(gen.choice([-1.0, 1.0])) * gen.uniform(lo, hi))


def fresh_part(gen: Any) -> tuple[list[tuple[float, float]], dict]:
    """A DVFS table and a chip of their own: another voltage floor, knee, clock step and
    constants, each well away from the lab's."""
    floor, knee = _off(gen, 0.70, 0.1, 0.2), 15.0 * round(_off(gen, 1200.0, 0.12, 0.25) / 15)
    step = 15 * int(gen.integers(1, 4))
    table = [(float(f), floor * max(1.0, f / knee)) for f in range(450, 2101, step)]
    chip = {
        "c_eff_f": _off(gen, CHIP["c_eff_f"], 0.25, 0.4),
        "p_leak0_w": _off(gen, CHIP["p_leak0_w"], 0.25, 0.4),
        "t_leak0_c": 60.0 + float(gen.choice([-1.0, 1.0])) * gen.uniform(5.0, 10.0),
        "beta_per_k": _off(gen, CHIP["beta_per_k"], 0.25, 0.45),
    }
    return table, chip


def _draw_fresh(gen: Any, i: int) -> tuple:
    """Fresh cases: first one no point of the table meets (the named edge), then steps on a
    table and a chip of their own (:func:`fresh_part`) under a cap between two of its points,
    so a table or constants written into the governor, V worked out from f, or leakage at T_0
    do not pass."""
    table, chip = fresh_part(gen)
    a = gen.uniform(0.2, 0.9)
    t = chip["t_leak0_c"] + float(gen.choice([-1.0, 1.0])) * gen.uniform(12.0, 30.0)
    watts = [chip_power(a, f, v, t, chip) for f, v in table]
    if i == 0:
        cap = watts[0] * gen.uniform(0.6, 0.95)
        return (
            f"fresh step {i}: a = {a:.2f}, {t:.0f} °C, a {cap:.0f} W cap no point meets",
            (a, t, cap, table, chip),
        )
    k = int(gen.integers(len(table) // 4, 3 * len(table) // 4))
    cap = (watts[k] + watts[k + 1]) / 2
    label = (
        f"fresh step {i}: a = {a:.2f}, {t:.0f} °C, {cap:.0f} W, {len(table)} points of their own"
    )
    return (label, (a, t, cap, table, chip))


def _pick(fits: Callable[..., bool], lowest_if_none: bool = True, top: bool = True) -> Callable:
    def answer(a: float, temp: float, cap: float, table: list, chip: dict) -> float:
        ok = [f for f, v in table if fits(a, f, v, temp, cap, chip)]
        if not ok:
            return min(f for f, _ in table) if lowest_if_none else max(f for f, _ in table)
        return max(ok) if top else min(ok)

    return answer


def _mhz(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return a * chip["c_eff_f"] * v * v * f + chip_power(0.0, f, v, temp, chip) <= cap


def _lab_volts(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, 0.70 * max(1.0, f / 1200.0), temp, chip) <= cap


def _lab_chip(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, v, temp, CHIP) <= cap


def _dyn(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return a * chip["c_eff_f"] * v * v * f * 1e6 <= cap


def _cold(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, v, chip["t_leak0_c"], chip) <= cap


def _fits(a: float, f: float, v: float, temp: float, cap: float, chip: dict) -> bool:
    return chip_power(a, f, v, temp, chip) <= cap


_MISTAKES = (  # the first two differ from the truth on fresh cases only: they come first
    Mistake(
        " Take each point's voltage from the table (its second column), not from the lab's "
        "V = 0.70·max(1, f/1200): another part has another table.",
        answer=_pick(_lab_volts),
    ),
    Mistake(
        " Read the chip's constants from the chip dict (c_eff_f, p_leak0_w, t_leak0_c, "
        "beta_per_k), not the lab's printed values: another part has its own.",
        answer=_pick(_lab_chip),
    ),
    Mistake(
        " The cap covers the whole chip: add the leakage P_0·exp(β(T − T_0)).", answer=_pick(_dyn)
    ),
    Mistake(
        " Leakage grows with the die's temperature: evaluate it at temp_c, not at T_0.",
        answer=_pick(_cold),
    ),
    Mistake(" f is in MHz: the power a·C·V²·f needs it in Hz (f_mhz * 1e6).", answer=_pick(_mhz)),
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
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Take the highest (f, V) with a·C·V²·f + P_0·exp(β(T − T_0)) <= cap_w (f in MHz, "
    "so f·1e6 Hz); the lowest clock when none fits.",
    read=_read,
    same=lambda got, want: abs(got - want) < 1e-6,
    what="governor",
    message="[{label}] governor returned {got!r} MHz; the highest clock under the cap is "
    "{want:g} MHz.{hint}",
)


def _replay(
    governor: Callable[..., Any], cap: float, temp: float, table: list, chip: dict, trace: list
) -> dict[str, Any]:
    clocks = {f for f, _ in table}

    def choose(a: float, t: float) -> float:
        got = _read(governor(a, t, cap, list(table), dict(chip)), "replay")
        if got not in clocks:
            raise CheckFailure(
                f"[replay] governor returned {got!r} MHz, not a clock of the table "
                "(600..1980 MHz every 15 MHz)."
            )
        return got

    return replay(trace, choose, table, chip, 2e6, temp)


@grader(
    "30.2",
    blocks=(f"{_DRV}.governor", f"{_DRV}.power", f"{_T}:capped_clock", f"{_T}:chip_power"),
    hand="replay",
)
def check_governor(governor: Callable[..., object]) -> str:
    """Exercise 30.2: the decisions, then a capped decode run judged on the grader's model."""
    # everything the replay is judged by is read (and the best run made) before the learner's
    # code first runs: rebinding CAP, TABLE or CHIP from inside the governor changes nothing
    cap, table, chip, trace = CAP, [(f, v) for f, v in TABLE], dict(CHIP), list(DECODE_TRACE)
    temp = 55.0 + 30.0 * float(fresh_rng("30.2 replay").uniform())
    best = replay(trace, lambda a, t: capped_clock(a, t, cap, table, chip), table, chip, 2e6, temp)
    fixed = replay(trace, lambda a, t: max(table)[0], table, chip, 2e6, temp)
    f_min = min(f for f, _ in table)
    n = DECISIONS.grade(governor)
    run = _replay(governor, cap, temp, table, dict(chip), trace)
    for t_ns, f, p, _ in run["steps"]:
        assert_true(
            p <= cap + 1e-9 or f == f_min,
            f"[replay from {temp:.1f} °C] at t = {t_ns / 1e6:.1f} ms the chip drew {p:.1f} W at "
            f"{f:g} MHz, over the {cap:g} W cap.",
        )
    assert_true(
        abs(run["time_ns"] - best["time_ns"]) <= 1e-9 * best["time_ns"],
        f"[replay from {temp:.1f} °C] the run took {run['time_ns'] / 1e6:.3f} ms; the least "
        f"slowdown under {cap:g} W is {best['time_ns'] / 1e6:.3f} ms.",
    )
    return (
        f"{n} decisions; capped at {cap:g} W the run is "
        f"{run['time_ns'] / fixed['time_ns']:.3f}x the uncapped time at "
        f"{run['energy_j'] / run['tokens'] * 1e3:.2f} mJ/token "
        f"(1980 MHz: {fixed['energy_j'] / fixed['tokens'] * 1e3:.2f})"
    )
