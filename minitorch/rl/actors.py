"""The RL loop on a small actor model: roles with mailboxes, messages instead of shared state.

    system = ActorSystem()
    rollout = system.add(RolloutActor("rollout", served_model, cfg))
    trainer = system.add(TrainerActor("trainer", policy_model, cfg, steps=4, off_policy=True))
    system.start(trainer)                  # the trainer asks for the first batch(es)
    system.run()
    delivery_report(rollout.sent, trainer.received)   # {"lost": [], "duplicated": []}
    trainer.staleness                                  # [0, 1, 1, 1] one step off policy

Each actor owns its state (the rollout actor its engine and its copy of the weights, the
trainer the policy, reference and optimizer) and reacts to one message at a time from its
mailbox. :meth:`ActorSystem.send` copies the payload through ``pickle`` (the bytes are
counted), so no array is ever shared between two roles: the weights reach the engine only as
a "weights" message, as Ray's actors exchange objects in veRL and OpenRLHF. Mailboxes are
FIFO; the system delivers round robin until every mailbox is empty. A flaky transport can be
modelled (``drop``/``duplicate``: message numbers), and :func:`delivery_report` finds the
rollouts lost or delivered twice from the ids each side recorded.

Every message carries a policy version ("generate": (step, version), "rollouts": (step,
version, items), "weights": (version, state)), so the trainer survives that transport: a
batch whose step it has already trained is a duplicate and is dropped; a batch older than
allowed (the weights message before it was lost) is discarded, and the trainer sends the
weights again and asks for that step again; when every mailbox is empty and it still waits,
the system delivers a "tick" (a timeout) and the trainer asks again for every step it has
asked for and not trained (the request or its answer was lost).

Synchronous (``off_policy=False``): the trainer trains on batch k, sends the new weights, then
asks for batch k+1, so every batch is sampled by the current policy (staleness 0) and the two
roles wait for each other. One step off policy: the trainer asks for batch k+1 *before*
training on batch k, so generation overlaps training and batch k+1 is sampled by the policy
one version behind (staleness 1, and never more: the weights message precedes the next
request in the rollout actor's mailbox).

Lab: 35_rl_systems
Paper: Moritz et al. 2018, "Ray" (OSDI; actors); Hewitt, Bishop & Steiger 1973 (the actor
model); Sheng et al. 2024, "HybridFlow" (arXiv:2409.19256)
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from minitorch.model.gpt import GPT
from minitorch.rl.rollout import RolloutEngine, generate
from minitorch.rl.task import make_prompts
from minitorch.rl.trainer import GRPOTrainer, RLConfig

__all__ = [
    "Actor",
    "ActorSystem",
    "Message",
    "RolloutActor",
    "TrainerActor",
    "delivery_report",
]


@dataclass(frozen=True)
class Message:
    number: int
    sender: str
    kind: str
    payload: Any


class Actor:
    """A name and a mailbox; :meth:`receive` handles one message."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.mailbox: deque[Message] = deque()
        self.system: ActorSystem | None = None

    def send(self, to: str, kind: str, payload: Any = None) -> None:
        assert self.system is not None, "add the actor to a system first"
        self.system.send(self.name, to, kind, payload)

    def receive(self, msg: Message) -> None:
        raise NotImplementedError


class ActorSystem:
    """Routes messages between actors (payloads copied), round robin, FIFO per mailbox."""

    def __init__(self, drop: Iterable[int] = (), duplicate: Iterable[int] = ()) -> None:
        self.actors: dict[str, Actor] = {}
        self.drop, self.duplicate = set(drop), set(duplicate)
        self.log: list[tuple[int, str, str, str, int]] = []  # number, from, to, kind, bytes
        self.delivered = 0

    def add(self, actor: Any) -> Any:
        self.actors[actor.name] = actor
        actor.system = self
        return actor

    def send(self, sender: str, to: str, kind: str, payload: Any) -> None:
        data = pickle.dumps(payload)
        number = len(self.log)
        self.log.append((number, sender, to, kind, len(data)))
        copies = 0 if number in self.drop else 2 if number in self.duplicate else 1
        for _ in range(copies):
            self.actors[to].mailbox.append(Message(number, sender, kind, pickle.loads(data)))

    def start(self, actor: Actor) -> None:
        self.actors[actor.name].mailbox.append(Message(-1, "system", "start", None))

    def run(self, max_messages: int = 10_000, max_ticks: int = 20) -> int:
        """Deliver until every mailbox is empty and no actor is ``waiting`` (each waiting
        actor gets a "tick" when all mailboxes are empty); returns the messages handled."""
        handled = 0
        while True:
            if not any(a.mailbox for a in self.actors.values()):
                waiting = [a for a in self.actors.values() if getattr(a, "waiting", False)]
                if not waiting or max_ticks <= 0:
                    break
                max_ticks -= 1
                for a in waiting:
                    a.mailbox.append(Message(-1, "system", "tick", None))
            for actor in list(self.actors.values()):
                if actor.mailbox:
                    actor.receive(actor.mailbox.popleft())
                    handled += 1
                    if handled >= max_messages:
                        raise RuntimeError(f"still busy after {max_messages} messages")
        self.delivered += handled
        return handled

    def bytes_of(self, kind: str) -> int:
        return sum(b for _, _, _, k, b in self.log if k == kind)


class RolloutActor(Actor):
    """Owns an engine on its own copy of the weights; answers "generate" with "rollouts"."""

    def __init__(self, name: str, model: GPT, cfg: RLConfig) -> None:
        super().__init__(name)
        self.cfg = cfg
        self.engine = RolloutEngine(copy.deepcopy(model), cfg.temperature, seed=cfg.seed)
        self.sent: list[str] = []

    def receive(self, msg: Message) -> None:
        cfg = self.cfg
        if msg.kind == "weights":
            version, state = msg.payload
            assert self.engine.model is not None
            self.engine.model.load_state_dict(state, strict=False)  # into its own arrays
            self.engine.version = version
        elif msg.kind == "generate":
            step = msg.payload[0]
            draw = 10_000 * cfg.seed + (0 if cfg.fixed_prompts else step)
            prompts = make_prompts(cfg.tasks, cfg.prompts_per_step, seed=draw)
            out = generate(self.engine, prompts, cfg.group_size, cfg.max_new_tokens, cfg.partial)
            step, _ = msg.payload  # (step, the trainer's version when it asked)
            ids = [f"{step}:{i}" for i in range(len(out))]
            self.sent += ids
            items = list(zip(ids, out, strict=True))
            self.send(msg.sender, "rollouts", (step, self.engine.version, items))
        else:
            raise ValueError(f"{self.name}: unknown message {msg.kind!r}")


class TrainerActor(Actor):
    """Owns the policy, reference and optimizer; trains on each "rollouts" message."""

    def __init__(
        self,
        name: str,
        model: GPT,
        cfg: RLConfig,
        steps: int,
        rollout: str = "rollout",
        off_policy: bool = False,
    ) -> None:
        super().__init__(name)
        self.trainer = GRPOTrainer(model, cfg)
        self.steps, self.rollout, self.off_policy = steps, rollout, off_policy
        self.received: list[str] = []  # every rollout id delivered (duplicates too)
        self.trained: list[str] = []  # the ids trained on, in order
        self.staleness: list[int] = []
        self.rewards: list[float] = []
        self.requested = 0
        self.outstanding: set[int] = set()  # steps asked for and not trained
        self.done: set[int] = set()
        self.discarded = 0

    @property
    def waiting(self) -> bool:
        return len(self.done) < self.steps

    def _ask(self, step: int) -> None:
        self.outstanding.add(step)
        self.send(self.rollout, "generate", (step, self.trainer.version))

    def _request(self) -> None:
        if self.requested < self.steps:
            self._ask(self.requested)
            self.requested += 1

    def _weights(self) -> None:
        state = {n: p.data for n, p in self.trainer.policy.named_parameters() if p.requires_grad}
        self.send(self.rollout, "weights", (self.trainer.version, state))

    def receive(self, msg: Message) -> None:
        if msg.kind == "start":
            self._request()
            if self.off_policy:
                self._request()  # one batch in flight while the first trains
            return
        if msg.kind == "tick":  # a timeout: nothing is in flight, so what is missing was lost
            for step in sorted(self.outstanding):
                self._ask(step)
            return
        if msg.kind != "rollouts":
            raise ValueError(f"{self.name}: unknown message {msg.kind!r}")
        step, version, items = msg.payload
        self.received += [rid for rid, _ in items]
        if step in self.done:
            return  # a duplicate: trained already
        if self.trainer.version - version > int(self.off_policy):
            self.discarded += 1  # sampled by a policy older than allowed: the weights were lost
            self._weights()
            self._ask(step)
            return
        self.outstanding.discard(step)
        self.done.add(step)
        self.trained += [rid for rid, _ in items]
        self.staleness.append(self.trainer.version - version)
        self.rewards.append(self.trainer.step([r for _, r in items])["reward"])
        self._weights()  # the weights first, then the next request: staleness 0 in sync mode
        self._request()


def delivery_report(sent: Iterable[str], received: Iterable[str]) -> dict[str, list[str]]:
    """Rollout ids sent but never received, and ids received more than once."""
    got: dict[str, int] = {}
    for rid in received:
        got[rid] = got.get(rid, 0) + 1
    return {
        "lost": [rid for rid in sent if rid not in got],
        "duplicated": sorted(rid for rid, n in got.items() if n > 1),
    }
