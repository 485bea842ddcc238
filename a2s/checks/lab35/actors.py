"""Grader of exercise 35.6: the trainer actor's message handler, on a flaky transport.

``Trainer(policy, rollout, steps, off_policy)`` is the learner's class, with
``receive(kind, payload)``: "start" (``None``), "rollouts" (``(step, version, items)``, the
batch of one step sampled under policy ``version``, ``items`` a list of ``(rollout_id,
reward)``) and "tick" (``None``: a timeout, every mailbox is empty). ``policy`` (``version()``,
``train(items)`` -> the new version, ``weights()`` -> the state to send) and ``rollout``
(``send(kind, payload)``: "generate" ``(step, version)``, "weights" ``(version, state)``) are
handles: each call is a request to this process, where the rollout actor, the policy's
versions, both mailboxes and the transport live. The learner's object lives in a forked child
(:func:`run_apart`), so the record (what was sent, delivered, trained, the bytes, the versions)
is the grader's alone.

The grader's scheduler plays named scenarios, synchronous and one step off policy: round robin
and a seeded shuffled order (FIFO per sender), a reliable transport, then one that duplicates
or drops a "rollouts", a "generate" or a "weights" message, and seeded fresh ones. It checks:
each step trained exactly once, on its whole batch (no rollout lost or trained twice, no batch
mixing two deliveries, only items of a "rollouts" message delivered to the trainer), one batch
in flight one step off, staleness 0 (synchronous) or at most 1 (one step off), every message
carrying the policy's current version and the weights of that version, and the bytes sent
within a budget from the grader's own counts (one weights message per training step and per
stale batch, one request per step, per lost message and per stale batch).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, fresh_rng, grader, guarded
from a2s.checks.guard import handout
from a2s.checks.harness import request, run_apart
from a2s.checks.lab35.workers import STEPS, _World

__all__ = ["check_trainer_actor"]

BLOCKS = ("minitorch.rl.actors", "minitorch.rl.trainer", "minitorch.rl.sync")

# (label, off_policy, order, faults: ((kind, n-th message of that kind, "drop" | "duplicate")))
NAMED: tuple[tuple[str, bool, str, tuple[tuple[str, int, str], ...]], ...] = (
    ("synchronous, round robin, reliable", False, "round robin", ()),
    ("one step off, round robin, reliable", True, "round robin", ()),
    ("synchronous, shuffled, rollouts 1 duplicated", False, "shuffled", (("rollouts", 1, "dup"),)),
    ("one step off, shuffled, rollouts 0 duplicated", True, "shuffled", (("rollouts", 0, "dup"),)),
    ("one step off, shuffled, rollouts 1 dropped", True, "shuffled", (("rollouts", 1, "drop"),)),
    (
        "synchronous, round robin, generate 2 dropped",
        False,
        "round robin",
        (("generate", 2, "drop"),),
    ),
    (
        "synchronous, round robin, weights 0 dropped",
        False,
        "round robin",
        (("weights", 0, "drop"),),
    ),
    (
        "one step off, round robin, weights 0 dropped",
        True,
        "round robin",
        (("weights", 0, "drop"),),
    ),
    ("one step off, shuffled, generate 1 duplicated", True, "shuffled", (("generate", 1, "dup"),)),
)


@handout
class _Policy:
    """The trainer's policy, a handle: each method asks the grader's process."""

    def version(self) -> Any:
        return request("version")

    def train(self, items: Any) -> Any:
        return request("train", items)

    def weights(self) -> Any:
        return request("weights")


@handout
class _Rollout:
    """The rollout actor, a handle: ``send(kind, payload)`` posts a message to it."""

    def send(self, kind: Any, payload: Any = None) -> Any:
        return request("send", kind, payload)


def _drive(student: Callable[..., Any]) -> int:
    """Child side: for each scenario build the learner's trainer, deliver what the grader says."""
    delivered = 0
    while (setup := request("scenario")) is not None:
        steps, off_policy = setup
        actor = student(_Policy(), _Rollout(), steps, off_policy)
        receive = getattr(actor, "receive", None)
        if not callable(receive):
            raise CheckFailure("Trainer has no method receive(kind, payload).")
        receive = guarded(receive, "35.6", BLOCKS)
        while (msg := request("next")) is not None:
            receive(*msg)
            delivered += 1
    return delivered


def _fresh(g: np.random.Generator, i: int) -> tuple[str, bool, str, tuple[Any, ...]]:
    off = bool(i % 2)
    faults = {
        (str(g.choice(["generate", "rollouts", "weights"])), int(g.integers(3))) for _ in "ab"
    }
    kinds = tuple((k, n, str(g.choice(["drop", "dup"]))) for k, n in sorted(faults))
    text = ", ".join(f"{k} {n} {'dropped' if f == 'drop' else 'duplicated'}" for k, n, f in kinds)
    mode = "one step off" if off else "synchronous"
    return f"fresh {i}: {mode}, shuffled, {text}", off, "shuffled", kinds


@grader("35.6", blocks=BLOCKS, hand="object")
def check_trainer_actor(Trainer: Callable[..., Any]) -> str:
    """Exercise 35.6: Trainer(policy, rollout, steps, off_policy) with receive(kind, payload)."""
    g = fresh_rng("35.6")
    seed = int(g.integers(1 << 30))
    scenarios = list(NAMED) + [_fresh(g, i) for i in range(2)]
    worlds = [_World(lb, off, o, f, seed + i) for i, (lb, off, o, f) in enumerate(scenarios)]
    queue = deque(worlds)
    now: list[_World] = []

    def scenario() -> Any:
        now.clear()
        if not queue:
            return None
        now.append(queue.popleft())
        return (STEPS, now[0].off)

    def on(name: str) -> Callable[..., Any]:
        return lambda *a: getattr(now[0], name)(*a) if now else None

    serve = {"scenario": scenario} | {n: on(n) for n in ("next", "send", "train", "weights")}
    serve["version"] = lambda: now[0].version if now else None
    run_apart(_drive, Trainer, serve=serve, timeout=30.0)
    if queue:
        raise CheckFailure(f"the scenarios stopped with {len(queue)} of {len(worlds)} left.")
    for w in worlds:  # judged here, after the child has gone, on the grader's record
        w.verdict()
    stale = [max(w.staleness) for w in worlds]
    return (
        f"{len(worlds)} scenarios (2 fresh): every step trained once, staleness "
        f"{max(s for s, w in zip(stale, worlds, strict=True) if not w.off)} synchronous / "
        f"{max(s for s, w in zip(stale, worlds, strict=True) if w.off)} one step off, "
        f"{sum(w.bytes for w in worlds):,} bytes sent (counted here)"
    )
