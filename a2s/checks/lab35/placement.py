"""Grader of exercise 35.5: the step time of three placements of the RL loop, closed form.

``step_time(mode, t_gen, t_train, t_sync, devices, gen_devices)``: seconds per RL step in
steady state when generating one step's rollouts takes ``t_gen`` seconds on one device and
training on them ``t_train``, both scaling as 1 / devices. Colocated: every device generates,
then every device trains, then a switch of ``t_sync``. Disaggregated: ``gen_devices``
generate, the rest train, and each side waits for the other: G/n_g + sync + T/n_t. One step
off policy: the two overlap, max(G/n_g, T/n_t + sync). The truth is ``_truth.step_seconds``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.compare import number
from a2s.checks.core import grader
from a2s.checks.harness import run_apart
from a2s.checks.lab35._truth import step_seconds
from a2s.checks.table import Table

__all__ = ["check_step_time"]


def _wrong(kind: str) -> Callable[..., float]:
    def answer(mode: str, g: float, t: float, s: float, n: int, ng: int | None) -> float:
        if kind == "overlap" and mode == "disaggregated":
            return step_seconds("one_step_off", g, t, s, n, ng or 1)
        if kind == "serial" and mode == "one_step_off":
            return step_seconds("disaggregated", g, t, s, n, ng or 1)
        if kind == "sync outside" and mode == "one_step_off":
            return max(g / (ng or 1), t / (n - (ng or 1))) + s
        if kind == "no split" and mode != "colocated":
            return g / n + s + t / n
        if kind == "colocated split" and mode == "colocated":
            return g / n + t / n
        return step_seconds(mode, g, t, s, n, ng or 1)

    return answer


_MISTAKES = (
    Mistake(
        "Disaggregated and synchronous, the trainer waits for the rollouts and the rollout "
        "devices wait for the new weights: the step is G/n_g + sync + T/n_t, a sum, not a max.",
        answer=_wrong("overlap"),
    ),
    Mistake(
        "One step off policy, batch k+1 is generated while batch k trains: the step is the "
        "longer of the two, max(G/n_g, T/n_t + sync), not their sum.",
        answer=_wrong("serial"),
    ),
    Mistake(
        "One step off policy, the sync is on the trainer's side: the trainer trains then sends "
        "the weights, max(G/n_g, T/n_t + sync), so the sync is inside the max.",
        answer=_wrong("sync outside"),
    ),
    Mistake(
        "Disaggregated, generation gets only the gen_devices and training the devices - "
        "gen_devices: G/n_g and T/(N - n_g), not G/N and T/N.",
        answer=_wrong("no split"),
    ),
    Mistake(
        "Colocated, the switch between training and serving (t_sync) is paid every step: "
        "G/N + T/N + sync.",
        answer=_wrong("colocated split"),
    ),
)


def _read(got: Any, label: str) -> float:
    return float(number(got, case=label, message=f"[{label}] return the seconds, one float"))


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    mode = ("colocated", "disaggregated", "one_step_off")[i % 3]
    n = int(g.integers(2, 17))
    ng = None if mode == "colocated" else int(g.integers(1, n))
    gen, train, sync = (round(float(x), 2) for x in g.uniform(0.5, 20.0, 3) * [1, 1, 0.1])
    return f"{mode}, N = {n}, n_g = {ng}", (mode, gen, train, sync, n, ng)


STEP = Table(
    "35.5",
    truth=lambda mode, g, t, s, n, ng: step_seconds(mode, g, t, s, n, ng or 1),
    named=[
        ("colocated, 8 devices", ("colocated", 8.0, 4.0, 0.5, 8, None)),
        ("disaggregated, 6 generate + 2 train", ("disaggregated", 8.0, 4.0, 0.5, 8, 6)),
        ("one step off, generation longer", ("one_step_off", 12.0, 4.0, 0.5, 8, 6)),
        ("one step off, training + sync longer", ("one_step_off", 8.0, 4.0, 0.5, 8, 6)),
        ("disaggregated, 1 + 1 devices", ("disaggregated", 3.0, 2.0, 1.0, 2, 1)),
    ],
    draw=_draw,
    seeded=6,
    fresh=3,
    mistakes=_MISTAKES,
    hint="colocated G/N + T/N + sync; disaggregated G/n_g + sync + T/(N - n_g); one step off "
    "max(G/n_g, T/(N - n_g) + sync).",
    read=_read,
    same=lambda got, want: bool(np.isclose(got, want, rtol=1e-9, atol=1e-12)),
    # each case in a forked child: the cases' frames (and ``want``) are not the learner's
    prepare=lambda f: lambda *args: run_apart(f, *args),
    what="step_time",
    message="[{label}] step_time returned {got!r}, expected {want:.6g}.{hint}",
)


@grader("35.5", blocks=("minitorch.rl.placement",))
def check_step_time(step_time: Callable[..., Any]) -> str:
    """Exercise 35.5: step_time(mode, t_gen, t_train, t_sync, devices, gen_devices) -> s."""
    n = STEP.grade(step_time)
    return f"{n} placements (3 fresh) match the closed form of the three modes"
