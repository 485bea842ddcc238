"""The other roles of exercise 35.6, run by the grader: the rollout actor, both mailboxes,
the transport with its faults, the policy's versions and weights, and the record judged.

Nothing here is handed to the learner: the child reaches it only through the requests
``scenario``, ``next``, ``send``, ``train``, ``weights`` and ``version`` (see ``actors``).
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, plain

STEPS = 4
BATCH = 4
REQUEST_BYTES = 64  # a "generate" message: (step, version) pickled is ~15 bytes
MAX_DELIVERIES = 200


def _state(seed: int, version: int) -> dict[str, np.ndarray]:
    """The weights of policy ``version`` (the grader's; the learner only forwards them)."""
    g = np.random.default_rng([seed, version])
    shapes = {"wte": (16, 32), "h.0.attn": (32, 32), "h.0.mlp": (32, 8)}
    return {n: g.standard_normal(s).astype(np.float32) for n, s in shapes.items()}


class _World:
    """One scenario: the rollout actor, the policy's versions, the mailboxes and the record."""

    def __init__(self, label: str, off: bool, order: str, faults: Any, seed: int) -> None:
        self.label, self.off, self.order, self.seed = label, off, order, seed
        self.faults = {(k, n): f for k, n, f in faults}
        self.rng = np.random.default_rng([seed, 1])
        self.to_trainer: deque[tuple[str, Any, int]] = deque([("start", None, 0)])
        self.to_rollout: deque[tuple[str, Any, int]] = deque()
        self.version = self.served = 0  # the trainer's policy, the rollout actor's weights
        self.sent_version = 0  # the newest weights version the learner sent (a drop may lose it)
        self.excused: set[tuple[int, float]] = set()  # batches old because weights were lost
        self.counts: dict[str, int] = {}
        self.delivered: dict[tuple[str, float], tuple[int, int]] = {}  # -> (version, batch)
        self.received: set[tuple[str, float]] = set()
        self.asked: set[int] = (
            set()
        )  # steps requested (a dropped request too)  # items of rollouts handed to the trainer
        self.trained: dict[int, int] = {}  # step -> times trained
        self.staleness: list[int] = []
        self.stale = self.lost = self.ticks = self.deliveries = 0
        self.bytes = self.weights_sent = self.requests = 0
        self.order_mistake = False  # a request sent before the weights of the policy's version
        self.turn, self.problem = 0, ""
        self.weights_bytes = len(pickle.dumps((0, _state(seed, 0))))

    def fail(self, text: str) -> None:
        self.problem = self.problem or f"[{self.label}] {text}"

    # ---------------------------------------------------------------- the transport
    def post(self, box: deque[tuple[str, Any, int]], kind: str, payload: Any) -> None:
        """Deliver 0, 1 or 2 copies; each carries the newest weights version sent before it."""
        n = self.counts.get(kind, 0)
        self.counts[kind] = n + 1
        fault = self.faults.get((kind, n))
        if fault == "drop" and kind in ("generate", "rollouts"):
            self.lost += 1
        for _ in range(0 if fault == "drop" else 2 if fault == "dup" else 1):
            box.append((kind, copy.deepcopy(payload), self.sent_version))

    def rollout_actor(self, kind: str, payload: Any, stamp: int) -> None:
        if kind == "weights":
            self.served = payload[0]
            return
        step = payload[0]  # "generate": a fresh batch under the weights it serves
        rewards = np.round(self.rng.random(BATCH), 6)
        items = [(f"{step}:{i}", float(r)) for i, r in enumerate(rewards)]
        if self.served < stamp:  # weights sent before this request never came: lost
            self.excused.add((step, items[0][1]))
        for item in items:
            self.delivered.setdefault(item, (self.served, len(self.delivered)))
        self.post(self.to_trainer, "rollouts", (step, self.served, items))

    # ---------------------------------------------------------------- the child's requests
    def next(self) -> Any:
        if self.problem:
            return None
        while True:
            boxes = [b for b in (self.to_trainer, self.to_rollout) if b]
            if not boxes:
                if len(self.trained) >= STEPS or self.ticks >= 6:
                    return None
                self.ticks += 1
                return ("tick", None)
            if self.order == "round robin":
                self.turn ^= 1
                box = boxes[0] if len(boxes) == 1 else (self.to_trainer, self.to_rollout)[self.turn]
            else:
                box = boxes[int(self.rng.integers(len(boxes)))]
            kind, payload, stamp = box.popleft()
            if box is self.to_rollout:
                self.rollout_actor(kind, payload, stamp)
                continue
            self.deliveries += 1
            if self.deliveries > MAX_DELIVERIES:
                self.fail(f"still running after {MAX_DELIVERIES} messages: a loop of requests?")
                return None
            if kind == "rollouts":
                self.received.update(payload[2])
            if kind == "rollouts" and payload[0] not in self.trained:
                old = self.version - payload[1] > int(self.off)
                self.stale += int(old and (payload[0], payload[2][0][1]) in self.excused)
            return (kind, payload)

    def send(self, kind: Any, payload: Any) -> None:
        kind, payload = plain(kind, what="the kind"), plain(payload, what="the payload")
        self.bytes += len(pickle.dumps(payload))
        if kind == "generate":
            ok = isinstance(payload, tuple | list) and len(payload) == 2
            step, version = payload if ok else (None, None)
            if not ok or step not in range(STEPS) or version != self.version:
                self.fail(
                    f'send("generate", {payload!r}): ask with (step, version), step in '
                    f"0..{STEPS - 1} and the version policy.version() returns now "
                    f"({self.version}): every message carries the policy version."
                )
                return
            self.requests += 1
            self.asked.add(int(step or 0))
            self.order_mistake |= self.sent_version < self.version
        elif kind == "weights":
            ok = isinstance(payload, tuple | list) and len(payload) == 2
            version, state = payload if ok else (None, None)
            want = _state(self.seed, self.version)
            if version != self.version or not (
                type(state) is dict
                and state.keys() == want.keys()
                and all(np.array_equal(np.asarray(state[n]), a) for n, a in want.items())
            ):
                self.fail(
                    'send("weights", (version, state)): send policy.version() and '
                    "policy.weights() as they are now (the rollout actor serves exactly them)."
                )
                return
            self.weights_sent += 1
            self.sent_version = version
        else:
            self.fail(f"send({kind!r}, ...): the rollout actor knows 'generate' and 'weights'.")
            return
        self.post(self.to_rollout, kind, payload)

    def train(self, items: Any) -> int:
        got = plain(items, what="train's items")
        keys = [(str(i[0]), float(i[1])) for i in got] if isinstance(got, list | tuple) else []
        if not keys or any(k not in self.received for k in keys):
            self.fail("policy.train(items): pass the items of a rollouts message delivered to you.")
            return self.version
        steps = {k[0].split(":")[0] for k in keys}
        versions = {self.delivered[k][0] for k in keys}
        batches = {self.delivered[k][1] - int(k[0].split(":")[1]) for k in keys}
        step = int(next(iter(steps)))
        if len(steps) > 1 or sorted(k[0] for k in keys) != [f"{step}:{i}" for i in range(BATCH)]:
            self.fail("policy.train(items): train on one whole batch, the items of one step.")
        elif len(versions) > 1 or len(batches) > 1:
            self.fail(
                f"batch {step} mixes rollouts of "
                + (f"policy versions {sorted(versions)}" if len(versions) > 1 else "two batches")
                + ": train on the items of one rollouts message."
            )
        elif step in self.trained:
            self.fail(
                f"batch {step} trained twice: the transport delivered it twice. Ignore a batch "
                "whose step (its rollout ids) you have trained already."
            )
        elif self.off and len(self.asked) < STEPS and not self.asked - {step, *self.trained}:
            self.fail(
                f"batch {step} trained with no other batch asked for: one step off, keep one "
                'batch in flight (at "start" ask for steps 0 and 1, then one new step per '
                "trained batch)."
            )
        else:
            old = self.version - versions.pop()
            self.staleness.append(old)
            if old > int(self.off):
                why = (
                    "you asked for the next batch before sending the weights of the trained "
                    "policy, so the rollout actor sampled it with the old ones: train, send "
                    "policy.weights(), then ask."
                    if self.order_mistake
                    else "a weights message was lost, so the rollout actor still served an old "
                    "version: discard a batch older than allowed, send the weights again and "
                    "ask again for that step."
                )
                self.fail(
                    f"batch {step} trained at staleness {old} (policy {self.version}, sampled "
                    f"by {self.version - old}); allowed {int(self.off)}: {why}"
                )
        self.trained[step] = self.trained.get(step, 0) + 1
        self.version += 1
        return self.version

    def weights(self) -> dict[str, np.ndarray]:
        return _state(self.seed, self.version)

    # ---------------------------------------------------------------- the verdict
    def verdict(self) -> None:
        if self.problem:
            raise CheckFailure(self.problem)
        missing = [s for s in range(STEPS) if s not in self.trained]
        if missing:
            raise CheckFailure(
                f"[{self.label}] batches {missing} never trained: a message was lost. On a "
                '"tick" (every mailbox empty) ask again for every step asked for and not '
                "trained."
            )
        weights = STEPS + self.stale
        budget = weights * (self.weights_bytes + REQUEST_BYTES)
        budget += (STEPS + self.stale + self.lost) * REQUEST_BYTES
        if self.bytes > budget:
            raise CheckFailure(
                f"[{self.label}] {self.bytes:,} bytes sent, budget {budget:,} (counted here: "
                f"{weights} weights messages of {self.weights_bytes:,} bytes, one per training "
                f"step and per batch made stale by a lost weights message, and "
                f"{STEPS + self.stale + self.lost} requests); you "
                f"sent {self.weights_sent} weights messages and {self.requests} requests."
                + (
                    " You asked for the next batch before sending the weights of the trained "
                    "policy, so every batch came back stale: train, send policy.weights(), then "
                    "ask."
                    if self.order_mistake
                    else " One step off, keep one batch in flight: ask for one new step per "
                    "trained batch."
                    if self.off and self.requests > STEPS + self.stale + self.lost
                    else ""
                )
            )
