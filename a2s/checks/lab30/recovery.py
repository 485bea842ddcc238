"""Grader of exercise 30.4: the runtime's response to faults, judged on the grader's record.

``run_commands(gpus, queues, max_retries)`` runs every command of ``queues[d]`` (the work
queued on GPU ``d``) through ``gpus[d].submit(command)``, which answers ``"ok"`` (it ran to
completion), ``"transient"`` (it did not run; try again) or ``"ecc_uncorrectable"`` (an
uncorrectable ECC error, XID 48: the GPU must be isolated). It returns
``{"completed": [...], "failed": [...], "isolated": [...]}``.

The learner's function runs in a child process (:func:`~a2s.checks.harness.run_apart`); each
``gpus[d]`` is a proxy whose ``submit`` is a request to this process's :class:`Fleet`, which
decides every outcome from its fault plan and records every submission and completion.
Judged from that record: every command completed exactly once or reported failed; a failed
command used all its retries (or no healthy GPU is left); no work sent to an isolated GPU;
no command moved off a healthy GPU; no command retried more than ``max_retries`` times; and
the report equals the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.harness import remote, run_apart
from a2s.checks.lab30._truth import Fleet
from a2s.checks.values import assert_true, plain

__all__ = ["check_run_commands"]

_DRV = "minitorch.driver"
Plan = dict[tuple[int, int], str]

_NAMED: list[tuple[str, int, int, int, Plan]] = [
    ("no faults: 3 GPUs, 12 commands", 3, 12, 2, {}),
    ("a transient error on command 4: retry it", 3, 12, 2, {(4, 0): "transient"}),
    (
        "command 5 fails 3 times with 2 retries: report it failed",
        3,
        12,
        2,
        {(5, 0): "transient", (5, 1): "transient", (5, 2): "transient"},
    ),
    (
        "an uncorrectable ECC error on GPU 1 (command 4): isolate it, re-map its queue; the "
        "device's fault uses none of the command's retries (max_retries = 0)",
        3,
        12,
        0,
        {(4, 0): "ecc_uncorrectable"},
    ),
    (
        "GPU 1 lost (command 1), then a transient error on its command 4: retry it on the "
        "GPU it was re-mapped to",
        3,
        12,
        2,
        {(1, 0): "ecc_uncorrectable", (4, 0): "transient", (4, 1): "transient"},
    ),
    (
        "two GPUs lost, a transient error on a re-mapped command",
        3,
        15,
        1,
        {(0, 0): "ecc_uncorrectable", (2, 0): "ecc_uncorrectable", (3, 1): "transient"},
    ),
    (
        "every GPU lost: what is left is reported failed",
        2,
        8,
        2,
        {(1, 0): "ecc_uncorrectable", (2, 0): "ecc_uncorrectable"},
    ),
]


def _drawn(gen: Any, label: str) -> tuple[str, int, int, int, Plan]:
    n_dev, n_cmd, retries = (
        int(gen.integers(2, 5)),
        int(gen.integers(6, 20)),
        int(gen.integers(0, 3)),
    )
    plan: Plan = {}
    for c in range(n_cmd):
        for a in range(4):
            u = gen.uniform()
            if u < 0.12:
                plan[c, a] = "transient"
            elif u < 0.16:
                plan[c, a] = "ecc_uncorrectable"
    return (label, n_dev, n_cmd, retries, plan)


def _cases() -> list[tuple[str, int, int, int, Plan]]:
    seeded, new = rng(3004), fresh_rng("30.4")
    return (
        list(_NAMED)
        + [_drawn(seeded, f"random faults {i}") for i in range(3)]
        + [_drawn(new, f"fresh faults {i}") for i in range(2)]
    )


def _whole(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _ints(got: Any, key: str, label: str) -> set[int]:
    items = got.get(key) if isinstance(got, dict) else None
    if not isinstance(items, (list, tuple)) or not all(_whole(x) for x in items):
        raise CheckFailure(
            f"[{label}] run_commands must return a dict with lists of ints under 'completed', "
            f"'failed' and 'isolated'; {key!r} is {items!r}."
        )
    return {int(x) for x in items}


def _sets_as_lists(run_commands: Callable[..., Any]) -> Callable[..., Any]:
    """In the child: a report of sets (``{"completed": set(), ...}``) crosses as lists (only
    plain values cross the process boundary; a set is an honest way to keep the report)."""

    def run(*args: Any) -> Any:
        got = run_commands(*args)
        if type(got) is dict:
            return {k: list(v) if type(v) in (set, frozenset) else v for k, v in got.items()}
        return got

    return run


def _judge(fleet: Fleet, got: Any, label: str) -> None:
    """Everything judged from the fleet's record; the report must agree with it."""
    if fleet.broken:
        raise CheckFailure(f"[{label}] {fleet.broken[0]}.")
    done = {c for c in range(fleet.n_commands) if fleet.completions[c]}
    dead = len(fleet.isolated) == fleet.n_devices
    for c in range(fleet.n_commands):
        if not fleet.completions[c] and fleet.transients[c] <= fleet.retries and not dead:
            raise CheckFailure(
                f"[{label}] command {c} never completed: it had {fleet.transients[c]} transient "
                f"errors of {fleet.retries} allowed retries and a healthy GPU was left. A "
                "device's fault (ECC) is not the command's: re-map it."
            )
    completed, failed = _ints(got, "completed", label), _ints(got, "failed", label)
    isolated = _ints(got, "isolated", label)
    assert_true(
        completed == done,
        f"[{label}] you reported completed {sorted(completed)}; the GPUs completed {sorted(done)}.",
    )
    assert_true(
        failed == set(range(fleet.n_commands)) - done and not completed & failed,
        f"[{label}] you reported failed {sorted(failed)}; the commands that never completed "
        f"are {sorted(set(range(fleet.n_commands)) - done)}.",
    )
    assert_true(
        isolated == set(fleet.isolated),
        f"[{label}] you reported isolated {sorted(isolated)}; GPUs {sorted(fleet.isolated)} "
        "had uncorrectable ECC errors.",
    )


@grader(
    "30.4",
    blocks=(f"{_DRV}.recovery", f"{_DRV}.faults", "a2s.checks.lab30._truth:Fleet"),
    hand="replay",
)
def check_run_commands(run_commands: Callable[..., object]) -> str:
    """Exercise 30.4: retries, isolation and re-mapping, every command accounted for."""
    submits = retried = lost = 0
    for label, n_dev, n_cmd, retries, plan in _cases():
        fleet = Fleet(n_dev, n_cmd, plan, retries)
        gpus, serve = [], {}
        for d in range(n_dev):
            proxy, entries = remote(_Gpu(fleet, d), ["submit"], f"gpu{d}")
            gpus.append(proxy)
            serve.update(entries)
        queues = [list(q) for q in fleet.queues]
        got = run_apart(
            _sets_as_lists(run_commands), gpus, queues, retries, serve=serve, timeout=30
        )
        _judge(fleet, plain(got, what="run_commands", case=label), label)
        submits += len(fleet.log)
        retried += sum(fleet.transients)
        lost += len(fleet.isolated)
    return (
        f"{len(_cases())} fault plans, {submits} submissions on the grader's record: every "
        f"command completed once or reported failed ({retried} transient errors, {lost} GPUs "
        "isolated)"
    )


class _Gpu:
    """One GPU of the fleet, as its proxy's requests reach it."""

    def __init__(self, fleet: Fleet, device: int) -> None:
        self.fleet, self.device = fleet, device

    def submit(self, command: Any) -> str:
        return self.fleet.submit(self.device, command)
