"""Grader of exercise 29.3: what waiting for a completion costs, and the policy per message.

``wait_cost(policy, service_ns, model, spin_ns)`` must give ``(latency_ns, cpu_ns)`` of the
closed forms of ``_truth`` for polling, sleeping on the interrupt, and the hybrid (spin at
most ``spin_ns``, then sleep); ``choose_policy(nbytes, model, cpu_budget_ns)`` the
lowest-latency policy whose CPU time fits the budget (the least CPU when none fits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab29._truth import ORDER, choose_truth, wait_truth
from a2s.checks.table import Table
from minitorch.driver.device import CostModel

__all__ = ["check_completions"]

_REF = "minitorch.driver.completion"
_M0 = CostModel()
_M1 = CostModel(poll_ns=250.0, interrupt_ns=8000.0, irq_cpu_ns=3000.0, pcie_gbps=12.0)


def _pair(got: Any, want: tuple[float, float]) -> bool:
    return (
        isinstance(got, (tuple, list))
        and len(got) == 2
        and all(isinstance(v, (int, float)) for v in got)
        and all(abs(g - w) <= 1e-9 * max(1.0, abs(w)) for g, w in zip(got, want, strict=True))
    )


def _read_pair(got: Any, label: str) -> Any:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{label}] wait_cost returned {got!r}: return (latency_ns, cpu_ns).")
    return tuple(got)


def _no_round(policy: str, t: float, m: Any, spin: float) -> tuple[float, float]:
    if policy == "poll":
        return (t, t)
    if policy == "hybrid" and t <= spin:
        return (t, t)
    return wait_truth(policy, t, m, spin)


def _hybrid_no_spin_cpu(policy: str, t: float, m: Any, spin: float) -> tuple[float, float]:
    lat, cpu = wait_truth(policy, t, m, spin)
    if policy == "hybrid" and lat != cpu:
        return (lat, float(m.irq_cpu_ns))
    return (lat, cpu)


def _sleep_no_wakeup(policy: str, t: float, m: Any, spin: float) -> tuple[float, float]:
    lat, cpu = wait_truth(policy, t, m, spin)
    return (lat - m.interrupt_ns, cpu) if lat != cpu else (lat, cpu)


_WAIT_MISTAKES = (
    Mistake(
        "A poll reads the completion entry every poll_ns: the first poll at or after T sees it, "
        "latency and CPU ceil(T / p) p (at least one poll).",
        answer=_no_round,
    ),
    Mistake(
        "A hybrid wait that gives up spinning has already spent floor(S / p) p of CPU on the "
        "polls before it sleeps: add them to c_i.",
        answer=_hybrid_no_spin_cpu,
    ),
    Mistake(
        "Sleeping costs the wake-up: latency T + interrupt_ns.",
        answer=_sleep_no_wakeup,
    ),
)


def _wait_draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    policy = str(g.choice(ORDER))
    t = float(np.round(10 ** g.uniform(1.5, 5.5), 1))
    spin = float(g.choice([0.0, 1000.0, 2000.0, 5000.0]))
    k = int(g.integers(2))
    return (f"{policy}, T = {t} ns, spin {spin} ns, model {k}", (policy, t, (_M0, _M1)[k], spin))


WAIT = Table(
    "29.3",
    truth=wait_truth,
    named=[
        ("poll, T = 1000 ns (10 polls)", ("poll", 1000.0, _M0, 2000.0)),
        ("poll, T = 1050 ns: the 11th poll sees it", ("poll", 1050.0, _M0, 2000.0)),
        ("poll, T = 30 ns: one poll at least", ("poll", 30.0, _M0, 2000.0)),
        ("interrupt, T = 40000 ns", ("interrupt", 40000.0, _M0, 2000.0)),
        ("hybrid, T = 1500 ns: done while spinning", ("hybrid", 1500.0, _M0, 2000.0)),
        ("hybrid, T = 40000 ns: spins 2000 ns, then sleeps", ("hybrid", 40000.0, _M0, 2000.0)),
        ("hybrid, spin 2100 ns on 250 ns polls", ("hybrid", 9000.0, _M1, 2100.0)),
    ],
    draw=_wait_draw,
    seeded=6,
    fresh=3,
    mistakes=_WAIT_MISTAKES,
    hint="poll: ceil(T/p) p both; interrupt: (T + t_i, c_i); hybrid: poll's if it fits in S.",
    same=_pair,
    read=_read_pair,
    what="wait_cost",
    message="[{label}] wait_cost returned {got!r}, the closed forms give {want!r}.{hint}",
)


def _weighted(nbytes: int, m: Any, budget: float) -> str:
    service = m.dma_setup_ns + nbytes / m.pcie_gbps
    return min(ORDER, key=lambda k: sum(wait_truth(k, service, m, m.irq_cpu_ns)))


def _no_setup(nbytes: int, m: Any, budget: float) -> str:
    return choose_truth(nbytes, dataclasses.replace(m, dma_setup_ns=0.0), budget)


def _ignore_budget(nbytes: int, m: Any, budget: float) -> str:
    service = m.dma_setup_ns + nbytes / m.pcie_gbps
    return min(ORDER, key=lambda k: wait_truth(k, service, m, m.irq_cpu_ns))


_CHOOSE_MISTAKES = (
    Mistake(
        "A message is one DMA: T = dma_setup_ns + nbytes / pcie_gbps, the setup included.",
        answer=_no_setup,
    ),
    Mistake(
        "The budget is a limit on CPU time, not a weight: filter by cpu <= budget, then the "
        "lowest latency (the least CPU when nothing fits).",
        answer=_weighted,
    ),
    Mistake(
        "Latency alone picks polling at every size: keep only the policies whose CPU time fits "
        "cpu_budget_ns, then take the lowest latency.",
        answer=_ignore_budget,
    ),
)


def _choose_draw(g: np.random.Generator, i: int) -> tuple[str, tuple]:
    n = int(2 ** g.uniform(4, 22))
    budget = float(g.choice([1000.0, 2500.0, 5000.0, 20000.0, 1e6]))
    k = int(g.integers(2))
    return (f"{n} B, CPU budget {budget} ns, model {k}", (n, (_M0, _M1)[k], budget))


CHOOSE = Table(
    "29.3",
    truth=choose_truth,
    named=[
        ("64 B, budget 5 us: poll", (64, _M0, 5000.0)),
        ("1 MiB, budget 5 us: polling would spin 42 us", (1 << 20, _M0, 5000.0)),
        ("128 KiB, budget 5 us: polling would spin 5.8 us", (128 << 10, _M0, 5000.0)),
        ("32 KiB, budget 2 us: poll spins 1.9 us", (32 << 10, _M0, 2000.0)),
        ("64 B, budget 500 ns: nothing fits, least CPU", (64, _M0, 500.0)),
        ("1 MiB, budget 10 ms: latency decides", (1 << 20, _M0, 1e7)),
        ("2 KiB, budget 5 us, the slower link", (2048, _M1, 5000.0)),
        ("120000 B, budget 5 us: the setup tips polling over", (120000, _M0, 5000.0)),
    ],
    draw=_choose_draw,
    seeded=6,
    fresh=3,
    mistakes=_CHOOSE_MISTAKES,
    hint="Among the policies with cpu <= budget the lowest latency (a tie: the least CPU, then "
    "poll, hybrid, interrupt); none fits: the least CPU.",
    what="choose_policy",
    message="[{label}] choose_policy returned {got!r}, the closed forms choose {want!r}.{hint}",
)


@grader("29.3", blocks=(_REF,), hand="parts")
def check_completions(wait_cost: Callable[..., Any], choose_policy: Callable[..., Any]) -> str:
    """Exercise 29.3: the cost of each wait, and the policy per message size under a budget."""
    n = WAIT.grade(wait_cost)
    m = CHOOSE.grade(choose_policy)
    return f"{n} waits equal the closed forms (3 fresh), {m} policies chosen under CPU budgets"
