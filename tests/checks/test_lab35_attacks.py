"""Lab 35 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`); each grader
runs the learner's code in a forked child. Tried:

* honest: the advantages with ``statistics``, as a dataclass of groups, recursively over the
  groups, under ``functools.wraps``; the loss with ``min`` written as ``a - relu(a - b)``, as
  a class with imports inside, with the mask applied by ``where``; the log-probabilities with
  a log-sum-exp through ``np.logaddexp.reduce``, row by row on the one batch's logits, with the
  padding columns cut from the one call; the sync as a list of held pushes, a dataclass, an
  ``OrderedDict`` of held versions;
* wrong: no eps (NaN), the batch's mean and std, the population std, no std, groups read
  with a stride; the objective's sign, no clip, the upper clip only, k1, a token mean, no
  mask, the mask's count without the max(1, ...); no temperature, the token's own position,
  probabilities, a float32 softmax without the row max; a load during the run, every
  parameter with LoRA, every held push, the first held push, no flush; a max for the
  disaggregated step, a sum for one step off, the sync outside the max, N instead of the split,
  the colocated sync forgotten;
* cheats: ``minitorch.rl`` (grpo, rollout, sync, placement), the grader's ``_truth``, torch,
  the named (and seeded) cases replayed, arrays and floats whose ``==`` says yes, the grader
  module patched in the child, frames read through ``sys._current_frames``; 35.3: a dummy
  counted call plus a forward of the jittered model rebuilt from ``fresh_rng("35.3 model")``
  and ``tiny_gpt.npz`` (**passed: fixed**, the one call must be the whole batch's), the
  grader's ``_Counted`` found through ``gc`` in the child, the engine's log-probabilities
  looked for in the child; 35.4: ``request("load"/"version")`` sent by hand bypassing the
  handle, forged ``next``/``done``, a version whose ``==`` says yes, the handle's methods
  rebound; 35.5: a callable whose ``__class__`` property runs in the grader's process when the
  watch scans it, rebinding the truth there (caught by ``lab_intact``) or swapping its
  ``__code__`` (**passed: fixed** in ``a2s/checks/watch.py``, the scan uses ``type()``).

35.6 (the trainer actor; a second round): honest: a dict of handlers over a status dict, a
dataclass with a list of asked steps and ``[step, version]`` lists, a generator fed by
``receive``, a factory under ``functools.wraps``; wrong: no dedupe, no version check, ticks
ignored, one step off asking before the weights, one step off with none in flight, half a
batch, the weights sent before training, a stale batch re-asked without the weights
(unmodelled: no hint, the request loop's message); cheats: ``actors.TrainerActor``, the
child's forked copy of the world rebuilt and driven in lockstep as an oracle for a lost batch
(**passed: fixed**, ``train`` takes only items delivered to the trainer), half of each of a
duplicated request's two batches (**passed: fixed**, one batch, not only one version), a
forged "rollouts" sent to itself, a batch trained again relabelled, ``request("train")`` by
hand, the sent weights mutated after sending, a skipped step with the child's record and
verdict rewritten, a version whose ``==`` says yes, an honest run's log replayed under another
seed. Also found: one step off played synchronously passed (**fixed**: a batch in flight), and
asking before the weights was named only synchronous (**fixed**).

The tables of 35.1 and 35.5 compute ``want`` before the child forks: read through
``sys._current_frames`` it passes in-process (``xfail(strict=True)``, the sealed kernel's).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import gc
import inspect
import sys

import numpy as np
import pytest

from a2s.checks import lab35
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.harness import request
from a2s.checks.lab35 import workers
from a2s.checks.lab35.advantages import ADVANTAGES
from a2s.checks.lab35.placement import STEP
from minitorch.autograd import Tensor, exp
from minitorch.rl import actors, grpo, placement, rollout, sync
from tests.checks.test_lab35 import (
    AsksBeforeWeights,
    Eager,
    EveryHeldPush,
    EveryParameter,
    FirstHeldPush,
    IgnoresTicks,
    NeverFlushes,
    NoDedupe,
    NoVersionCheck,
    QueueSync,
    TrainerRole,
    WeightSync,
    _adv_bug,
    advantages_loop,
    group_advantages,
    grpo_loss,
    grpo_loss_relu,
    recompute,
    recompute_per_row,
    step_time,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, public_answers, wrapped, wrong
from tests.helpers.graders import always_equal

REF = ReferenceCalledError
A, L, R, W, S = (
    lab35.check_group_advantages,
    lab35.check_grpo_loss,
    lab35.check_recompute_logprobs,
    lab35.check_weight_sync,
    lab35.check_step_time,
)
T = lab35.check_trainer_actor


def run(check, fn):
    return lambda: check(fn)


def want_from_frames(fallback):
    """A table's expected value, read from the child's main thread (the case runner's frame)."""

    @functools.wraps(fallback)
    def inner(*args):
        for frame in sys._current_frames().values():
            while frame is not None:
                if "want" in frame.f_locals and frame.f_locals["want"] is not None:
                    return frame.f_locals["want"]
                frame = frame.f_back
        return fallback(*args)

    return inner


# --------------------------------------------------------------------------- 35.1
def adv_statistics(rewards, group_size):
    import statistics

    out = []
    for i in range(0, len(rewards), group_size):
        g = [float(x) for x in rewards[i : i + group_size]]
        m, s = statistics.mean(g), statistics.stdev(g)
        out += [(x - m) / (s + 1e-6) for x in g]
    return out


@dataclasses.dataclass
class Groups:
    rewards: list
    size: int

    def __call__(self):
        r = np.array(self.rewards, float).reshape(-1, self.size)
        c = r - r.mean(axis=1)[:, None]
        std = np.sqrt((c**2).sum(axis=1) / (self.size - 1))[:, None]
        return list((c / (std + 1e-6)).ravel())


def adv_dataclass(rewards, group_size):
    return Groups(list(rewards), group_size)()


def adv_recursive(rewards, group_size):
    r = list(rewards)
    if not r:
        return []
    return advantages_loop(r[:group_size], group_size) + adv_recursive(r[group_size:], group_size)


def adv_strided(rewards, group_size):  # groups read as columns: reshape(G, -1)
    r = np.asarray(rewards, float)
    return (
        group_advantages(r.reshape(group_size, -1).T.ravel(), group_size)
        .reshape(-1, group_size)
        .T.ravel()
    )


def adv_truth(rewards, group_size):
    from a2s.checks.lab35._truth import advantages_loop as truth

    return truth(rewards, group_size)


def adv_torch(rewards, group_size):
    import torch

    r = torch.tensor(rewards, dtype=torch.float64).reshape(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)).reshape(-1).numpy()


_ADV = public_answers(ADVANTAGES)


def adv_replayed(rewards, group_size):
    return _ADV.get(repr((rewards, group_size)), [0.0] * len(rewards))


def adv_always_equal(rewards, group_size):
    return always_equal(np.zeros(len(rewards)))


def adv_patches_grader(rewards, group_size):
    from a2s.checks.lab35 import advantages

    object.__setattr__(advantages.ADVANTAGES, "same", lambda got, want: True)  # the child's
    return [0.0] * len(rewards)


# --------------------------------------------------------------------------- 35.2
class ClassLoss:
    """The loss as an object, its imports inside, the mask applied by np.where."""

    def __call__(self, logp, old_logp, ref_logp, advantages, mask, clip, beta):
        from minitorch.autograd import Tensor, exp

        adv = np.asarray(advantages, float)[:, None]
        ratio = exp(logp - Tensor(old_logp))
        low = np.clip(ratio.data, 1 - clip, 1 + clip) * adv
        keep = np.where(ratio.data * adv <= low, 1.0, 0.0)
        surr = ratio * (adv * keep) + low * (1.0 - keep)
        d = Tensor(ref_logp) - logp
        weights = np.where(mask > 0, 1.0, 0.0) / mask.sum(axis=1, keepdims=True) / len(mask)
        return ((surr - (exp(d) - d - 1.0) * beta) * weights).sum() * -1.0


def loss_length_t(logp, old, ref, adv, mask, clip, beta):
    """Masked, but each completion divided by T, the padded length."""
    a = np.asarray(adv)[:, None]
    ratio = exp(logp - Tensor(old))
    clipped = np.clip(ratio.data, 1 - clip, 1 + clip) * a
    use = (ratio.data * a <= clipped).astype(float)
    d = Tensor(ref) - logp
    per = ratio * (a * use) + clipped * (1 - use) - (exp(d) - d - 1.0) * beta
    return -(per * (mask / mask.size)).sum()


def loss_truth(logp, old, ref, adv, mask, clip, beta):
    from a2s.checks.lab35._truth import grpo_loop

    value, grad = grpo_loop(logp.data, old, ref, adv, mask, clip, beta)
    return (logp * grad).sum() + (value - float((logp.data * grad).sum()))


def loss_torch(logp, old, ref, adv, mask, clip, beta):
    import torch

    torch.exp(torch.tensor(logp.data))
    return grpo_loss(logp, old, ref, adv, mask, clip, beta)


def _memorised():
    from a2s.checks.lab35.loss import _cases

    out = {}
    for label, c in _cases():
        if "fresh case" in label:
            continue
        x = Tensor(c["logp"].copy(), requires_grad=True)
        loss = grpo_loss(x, c["old"], c["ref"], c["adv"], c["mask"], c["clip"], c["beta"])
        loss.backward()
        grad = x.grad.data if hasattr(x.grad, "data") else x.grad
        out[c["old"].tobytes()] = (float(loss.data), np.asarray(grad, float))
    return out


_LOSSES = _memorised()


def loss_replayed(logp, old, ref, adv, mask, clip, beta):
    """The named cases' loss and gradient replayed as a linear Tensor of logp."""
    value, grad = _LOSSES.get(old.tobytes(), (0.0, np.zeros(logp.data.shape)))
    return (logp * grad).sum() + (value - float((logp.data * grad).sum()))


def loss_backward_patched(logp, old, ref, adv, mask, clip, beta):
    """A numpy loss, and Tensor.backward patched in the child to hand a gradient of zeros."""
    out = Tensor(
        np.array(float(grpo_loss(Tensor(logp.data), old, ref, adv, mask, clip, beta).data))
    )

    def backward(self, *args):
        logp.grad = Tensor(np.zeros(logp.data.shape))

    Tensor.backward = backward
    out.requires_grad = True
    return out


def loss_from_frames(logp, old, ref, adv, mask, clip, beta):
    for frame in sys._current_frames().values():
        while frame is not None:
            if "want" in frame.f_locals:
                value, grad = frame.f_locals["want"]
                return (logp * grad).sum() + (value - float((logp.data * grad).sum()))
            frame = frame.f_back
    return grpo_loss(logp, old, ref, adv, mask, clip, beta, bug="objective")


def loss_always_equal(logp, old, ref, adv, mask, clip, beta):
    loss = grpo_loss(logp, old, ref, adv, mask, clip, beta) * 2.0
    loss.data = always_equal(np.asarray(loss.data))
    return loss


def loss_patches_grader(logp, old, ref, adv, mask, clip, beta):
    from a2s.checks.lab35 import loss

    loss._close = lambda a, b: True  # the child's copy of the grader
    return grpo_loss(logp, old, ref, adv, mask, clip, beta, bug="k1")


# --------------------------------------------------------------------------- 35.3
def logp_logaddexp(model, ids, tokens, positions, temperature):
    z = np.asarray(model(ids), float) / temperature
    lse = np.logaddexp.reduce(z, axis=-1)
    rows = np.arange(len(tokens))[:, None]
    return z[rows, positions, tokens] - lse[rows, positions]


def logp_cut_padding(model, ids, tokens, positions, temperature):
    """One call of the batch with the padding columns no token needs cut off."""
    return recompute(
        model, np.ascontiguousarray(ids[:, : positions.max() + 1]), tokens, positions, temperature
    )


class RowByRow:
    """One forward, then a loop over the rows of its logits, imports inside."""

    def __call__(self, model, ids, tokens, positions, temperature):
        import math

        logits = np.asarray(model(ids), float)
        out = np.zeros(tokens.shape)
        for b in range(tokens.shape[0]):
            for t in range(tokens.shape[1]):
                z = logits[b, positions[b, t]] / temperature
                top = z.max()
                out[b, t] = z[tokens[b, t]] - top - math.log(np.exp(z - top).sum())
        return out


def logp_shifted_back(model, ids, tokens, positions, temperature):
    return recompute(model, ids, tokens, np.maximum(positions - 1, 0), temperature)


def logp_reference(model, ids, tokens, positions, temperature):
    batch = rollout.Batch(ids, tokens, positions, np.ones(tokens.shape), tokens * 0.0, None)
    return rollout.policy_logprobs(lambda i: Tensor(np.asarray(model(i))), batch, temperature).data


def logp_truth(model, ids, tokens, positions, temperature):
    from a2s.checks.lab35._truth import logprobs_loop

    return logprobs_loop(np.asarray(model(ids)), tokens, positions, temperature)


def logp_torch(model, ids, tokens, positions, temperature):
    import torch

    z = torch.log_softmax(torch.tensor(np.asarray(model(ids))) / temperature, dim=-1).numpy()
    return z[np.arange(len(ids))[:, None], positions, tokens]


def logp_rebuilt(model, ids, tokens, positions, temperature):
    """A dummy counted call, then per-row forwards of the jittered model rebuilt in the child
    from ``fresh_rng("35.3 model")``, the checkpoint file and the zeroed GPT found by gc."""
    from a2s.checks.core import fresh_rng
    from minitorch.autograd import no_grad
    from minitorch.model import checkpoint
    from minitorch.model.gpt import GPT

    twin = next(o for o in gc.get_objects() if isinstance(o, GPT))
    with np.load(checkpoint.DEFAULT_PATH) as f:
        twin.load_state_dict({k: f[k].astype(np.float32) for k in f.files if k[:2] != "__"})
    g = np.random.default_rng(int(fresh_rng("35.3 model").integers(1 << 62)))
    for p in twin.parameters():
        p.data += (0.15 * p.data.std() * g.standard_normal(p.data.shape)).astype(p.data.dtype)
    model(ids[:1])  # the one call the grader counts
    rows = []
    with no_grad():
        for i in range(len(ids)):
            h = twin.norm_f(twin.blocks(twin.tok_emb(ids[i : i + 1])))
            out = h @ twin.tok_emb.weight.T if twin.config.tie_head else twin.lm_head(h)
            rows.append(np.asarray(out.data, float))
    logits = np.concatenate(rows)
    return recompute(lambda _: logits, ids, tokens, positions, temperature)


def logp_counted_in_child(model, ids, tokens, positions, temperature):
    """The grader's counted model, found through gc in the child, called there: blocked."""
    from a2s.checks.lab35.logprobs import _Counted

    counted = next(o for o in gc.get_objects() if type(o) is _Counted)
    return recompute(counted, ids, tokens, positions, temperature)


def logp_leftovers(model, ids, tokens, positions, temperature):
    """The engine's recorded log p looked for in the child (lists and arrays of the shape)."""
    model(ids)
    b, t = tokens.shape
    for o in gc.get_objects():
        if isinstance(o, np.ndarray) and o.shape == (b, t) and o.dtype.kind == "f" and o.any():
            return o
    lists = [o for o in gc.get_objects() if isinstance(o, list) and len(o) == t and o]
    found = [o for o in lists if all(type(x) is float and x <= 0 for x in o)]
    return np.array(found[:b]) if len(found) >= b else np.zeros((b, t))


def logp_from_frames(model, ids, tokens, positions, temperature):
    model(ids)
    return want_from_frames(lambda *a: np.zeros(tokens.shape))()


def logp_always_equal(model, ids, tokens, positions, temperature):
    return always_equal(recompute(model, ids, tokens, positions, temperature) + 1.0)


# --------------------------------------------------------------------------- 35.4
class OrderedSync(WeightSync):
    """Held pushes by version in an OrderedDict; flush applies the newest."""

    def __init__(self, engine, lora_only):
        super().__init__(engine, lora_only)
        self.pending = collections.OrderedDict()

    def push(self, params, version):
        self.pending[version] = params
        self.flush()

    def flush(self):
        if self.pending and not self.engine.busy():
            version, params = self.pending.popitem(last=True)
            self.pending.clear()
            self.apply(params, version)


class BypassLoad(WeightSync):
    """During the run, the load sent by hand (request), not through the handle."""

    def push(self, params, version):
        if self.engine.busy():
            name = next(iter(params))
            request("load", name, params[name])
        super().push(params, version)


class BypassVersion(WeightSync):
    def push(self, params, version):
        if self.engine.busy():
            request("version", version)
        super().push(params, version)


class ForgedNext(WeightSync):
    def flush(self):
        request("next")  # peek at the script's next job
        super().flush()


class VersionOnly(WeightSync):
    def apply(self, params, version):
        self.engine.set_version(version)


class EqualVersion(WeightSync):
    def apply(self, params, version):
        self.engine.set_version(always_equal(version))


class RebindsBusy(Eager):
    def __init__(self, engine, lora_only):
        super().__init__(engine, lora_only)
        type(engine).busy = lambda self: False  # the handle's class, in the child


class PatchesGrader(Eager):
    def push(self, params, version):
        from a2s.checks.lab35 import weights

        weights._Side.fail = lambda self, text: None  # the child's copy of the grader
        super().push(params, version)


class Reference(WeightSync):
    def apply(self, params, version):
        sync.VersionedSync(self.engine).flush()
        super().apply(params, version)


# --------------------------------------------------------------------------- 35.5
def step_dict(mode, t_gen, t_train, t_sync, devices, gen_devices):
    ng = gen_devices or devices
    nt = devices - ng if gen_devices else devices
    forms = {
        "colocated": lambda: (t_gen + t_train) / devices + t_sync,
        "disaggregated": lambda: t_gen / ng + t_sync + t_train / nt,
        "one_step_off": lambda: max(t_gen / ng, t_train / nt + t_sync),
    }
    return forms[mode]()


def step_match(mode, g, t, s, n, ng):
    match mode:
        case "colocated":
            return g / n + t / n + s
        case "disaggregated":
            return sum([g / ng, s, t / (n - ng)])
        case _:
            return float(np.max([g / ng, t / (n - ng) + s]))


def _step_bug(kind):
    def answer(mode, g, t, s, n, ng):
        if mode == "colocated":
            return g / n + t / n + (0 if kind == "no sync" else s)
        a, b = (g / n, t / n) if kind == "no split" else (g / ng, t / (n - ng))
        if mode == "disaggregated":
            return max(a, b + s) if kind == "max" else a + s + b
        if kind == "sum":
            return a + s + b
        return max(a, b) + s if kind == "outside" else max(a, b + s)

    return answer


def step_reference(mode, g, t, s, n, ng):
    return placement.step_time(mode, placement.StepCosts(g, t, s, s), n, ng)


def step_truth(mode, g, t, s, n, ng):
    from a2s.checks.lab35._truth import step_seconds

    return step_seconds(mode, g, t, s, n, ng or 1)


def step_torch(mode, g, t, s, n, ng):
    import torch

    return float(torch.tensor(step_time(mode, g, t, s, n, ng)))


_STEPS = public_answers(STEP)


def step_replayed(mode, g, t, s, n, ng):
    return _STEPS.get(repr((mode, g, t, s, n, ng)), g / n + t / n + s)


def step_always_equal(mode, g, t, s, n, ng):
    return always_equal(0.0)


# --------------------------------------------------------------------------- 35.6
class HandlerTable:
    """The state machine as a dict of handlers, the bookkeeping in one dict step -> status."""

    def __init__(self, policy, rollout, steps, off_policy):
        self.policy, self.rollout, self.steps, self.off = policy, rollout, steps, off_policy
        self.status = {}  # step -> "asked" | "trained"
        self.handlers = {"start": self._start, "tick": self._tick, "rollouts": self._rollouts}

    def receive(self, kind, payload):
        self.handlers[kind](payload)

    def _ask(self, step):
        if step < self.steps:
            self.status[step] = "asked"
            self.rollout.send("generate", (step, self.policy.version()))

    def _start(self, _):
        for step in range(1 + int(self.off)):
            self._ask(step)

    def _tick(self, _):
        for step in sorted(s for s, st in self.status.items() if st == "asked"):
            self._ask(step)

    def _rollouts(self, payload):
        step, version, items = payload
        if self.status.get(step) == "trained":
            return
        v = self.policy.version()
        if v - version > int(self.off):
            self.rollout.send("weights", (v, self.policy.weights()))
            self._ask(step)
            return
        self.status[step] = "trained"
        v = self.policy.train(items)
        self.rollout.send("weights", (v, self.policy.weights()))
        self._ask(max(self.status) + 1)


@dataclasses.dataclass
class DataclassTrainer:
    """A dataclass; the trained steps kept as a list of the versions they were trained at."""

    policy: object
    rollout: object
    steps: int
    off_policy: bool
    asked: list = dataclasses.field(default_factory=list)
    trained_at: dict = dataclasses.field(default_factory=dict)

    def receive(self, kind, payload):
        import operator

        if kind == "start":
            for _ in range(1 + int(self.off_policy)):
                self.ask(len(self.asked))
        elif kind == "tick":
            for step in [s for s in self.asked if s not in self.trained_at]:
                self.ask(step, again=True)
        else:
            step, version, items = payload
            if step in self.trained_at:
                return
            now = self.policy.version()
            if operator.sub(now, version) > int(self.off_policy):
                self.rollout.send("weights", (now, self.policy.weights()))
                self.ask(step, again=True)
                return
            self.trained_at[step] = self.policy.train(list(items))
            self.rollout.send("weights", (self.policy.version(), self.policy.weights()))
            self.ask(len(self.asked))

    def ask(self, step, again=False):
        if step >= self.steps:
            return
        if not again:
            self.asked.append(step)
        self.rollout.send("generate", [step, self.policy.version()])  # a list is plain too


class GeneratorTrainer:
    """The handler as a generator: receive sends each message into it."""

    def __init__(self, policy, rollout, steps, off_policy):
        self._run = self._loop(policy, rollout, steps, off_policy)
        next(self._run)

    def receive(self, kind, payload):
        self._run.send((kind, payload))

    @staticmethod
    def _loop(policy, rollout, steps, off):
        asked, done, nxt = set(), set(), 0

        def ask(step):
            asked.add(step)
            rollout.send("generate", (step, policy.version()))

        while True:
            kind, payload = yield
            if kind == "start":
                for _ in range(1 + int(off)):
                    ask(nxt)
                    nxt += 1
            elif kind == "tick":
                for step in sorted(asked - done):
                    ask(step)
            elif payload[0] not in done:
                step, version, items = payload
                if policy.version() - version > int(off):
                    rollout.send("weights", (policy.version(), policy.weights()))
                    ask(step)
                    continue
                done.add(step)
                policy.train(items)
                rollout.send("weights", (policy.version(), policy.weights()))
                if nxt < steps:
                    ask(nxt)
                    nxt += 1


class AsksFirstOneOff(AsksBeforeWeights):
    """One step off, the next request sent before the new weights (synchronous is right)."""

    def receive(self, kind, payload):
        if self.off:
            return super().receive(kind, payload)
        return TrainerRole.receive(self, kind, payload)


class NoneInFlight(TrainerRole):  # one step off played synchronously: staleness 0
    def __init__(self, policy, rollout, steps, off_policy):
        super().__init__(policy, rollout, steps, False)


class HalfBatch(TrainerRole):
    def receive(self, kind, payload):
        if kind == "rollouts":
            payload = (payload[0], payload[1], payload[2][: len(payload[2]) // 2])
        return super().receive(kind, payload)


class StaleReaskedOnly(TrainerRole):  # unmodelled: a stale batch re-asked, no new weights
    def send_weights(self):
        if self.policy.version() in getattr(self, "sent", set()):
            return
        self.sent = getattr(self, "sent", set()) | {self.policy.version()}
        super().send_weights()


class WeightsBeforeTraining(TrainerRole):
    """The weights sent before policy.train: the rollout actor gets the old version."""

    def receive(self, kind, payload):
        if kind == "rollouts" and payload[0] not in self.done:
            step, version, items = payload
            if self.policy.version() - version <= int(self.off):
                self.done.add(step)
                self.send_weights()
                self.policy.train(items)
                self.ask_next()
                return None
        return super().receive(kind, payload)


class CallsTrainerActor(TrainerRole):
    """The reference TrainerActor's request bookkeeping borrowed."""

    def ask(self, step):
        actors.TrainerActor.waiting.fget(self)
        super().ask(step)


def _child_worlds():
    """The child's copy (forked) of the grader's scenarios, found through gc."""
    return next(
        o
        for o in gc.get_objects()
        if type(o) is list and len(o) > 8 and all(type(w) is workers._World for w in o)
    )


class Oracle(TrainerRole):
    """A copy of the grader's world, rebuilt in the child from its forked copy (the source
    exec'd afresh, so no grader code is called) and driven in lockstep: a rollouts message
    the transport lost is read from the copy and trained on as if delivered."""

    scenario = -1

    def __init__(self, policy, rollout, steps, off_policy):
        Oracle.scenario += 1
        w = _child_worlds()[Oracle.scenario]
        ns = {"__name__": "mine"}
        exec(compile(inspect.getsource(workers), "mine.py", "exec"), ns)
        faults = tuple((k, n, f) for (k, n), f in w.faults.items())
        self.m = m = ns["_World"](w.label, w.off, w.order, faults, w.seed)
        mirror = self

        class P:
            def version(self):
                return policy.version()

            def train(self, items):
                mirror.m.train(items)
                return policy.train(items)

            def weights(self):
                return policy.weights()

        class R:
            def send(self, kind, payload):
                m.send(kind, payload)
                return rollout.send(kind, payload)

        super().__init__(P(), R(), steps, off_policy)
        self.got = set()

    def receive(self, kind, payload):
        self.m.next()
        if kind == "rollouts":
            self.got.update(i for i, _ in payload[2])
        super().receive(kind, payload)
        waiting = sorted(self.asked - self.done)
        if not waiting:
            return
        step = waiting[0]
        items = sorted((k for k in self.m.delivered if k[0].startswith(f"{step}:")), key=str)
        inbox = {i for k, p, _ in self.m.to_trainer if k == "rollouts" for i, _r in p[2]}
        if len(items) == 4 and not {i for i, _ in items} & (self.got | inbox):
            self.got.update(i for i, _ in items)
            v = self.m.delivered[items[0]]
            super().receive("rollouts", (step, v[0] if type(v) is tuple else v, items))


class MixesTheDuplicate(TrainerRole):
    """Reads from the child's copy which generate the transport duplicates, holds that step's
    first batch and trains on half of each of its two batches (same version)."""

    scenario = -1

    def __init__(self, *args):
        super().__init__(*args)
        MixesTheDuplicate.scenario += 1
        w = _child_worlds()[MixesTheDuplicate.scenario]
        self.dup = {n for (k, n), f in w.faults.items() if k == "generate" and f == "dup"}
        self.sent, self.held = 0, {}

    def ask(self, step):
        if self.sent in self.dup:
            self.held[step] = None
        self.sent += 1
        super().ask(step)

    def receive(self, kind, payload):
        if kind == "rollouts" and payload[0] in self.held and payload[0] not in self.done:
            first = self.held[payload[0]]
            if first is None:
                self.held[payload[0]] = list(payload[2])
                return None
            payload = (payload[0], payload[1], first[:2] + list(payload[2])[2:])
        return super().receive(kind, payload)


class ForgesRollouts(TrainerRole):
    """On a tick, a rollouts message made up for the missing step, sent to itself."""

    def receive(self, kind, payload):
        if kind == "tick" and self.asked - self.done:
            step = min(self.asked - self.done)
            fake = [(f"{step}:{i}", 0.5) for i in range(4)]
            return super().receive("rollouts", (step, self.policy.version(), fake))
        return super().receive(kind, payload)


class TrainsTwiceRelabelled(TrainerRole):
    """Each batch trained a second time, its ids relabelled as the next step's."""

    def receive(self, kind, payload):
        super().receive(kind, payload)
        if kind == "rollouts" and payload[0] + 1 < self.steps and payload[0] + 1 not in self.done:
            step = payload[0] + 1
            self.policy.train([(f"{step}:{rid.split(':')[1]}", r) for rid, r in payload[2]])
            self.done.add(step)


class TrainsByHand(TrainerRole):
    """request("train") sent by hand, with the items of batch 0 for every missing step."""

    def receive(self, kind, payload):
        if kind == "tick":
            for step in sorted(self.asked - self.done):
                request("train", [(f"{step}:{i}", 0.0) for i in range(4)])
                self.done.add(step)
            return None
        return super().receive(kind, payload)


class MutatesSentWeights(TrainerRole):
    """One weights message at the start, its dict updated in place after each training step
    (in one process the rollout actor would see the new arrays: across processes, not)."""

    def receive(self, kind, payload):
        if kind == "start":
            self.state = self.policy.weights()
            self.rollout.send("weights", (self.policy.version(), self.state))
        return super().receive(kind, payload)

    def send_weights(self):
        self.state.update(self.policy.weights())


class MarksSkipped(TrainerRole):
    """Step 2 marked trained and skipped (no policy.train), the world's record rewritten in
    the child's copy and its verdict patched there."""

    def __init__(self, *args):
        super().__init__(*args)
        workers._World.verdict = lambda self: None  # the child's copy of the grader
        for w in _child_worlds():
            w.trained = dict.fromkeys(range(4), 1)

    def receive(self, kind, payload):
        if kind == "rollouts" and payload[0] == 2 and 2 not in self.done:
            self.done.add(2)
            self.ask_next()
            return None
        return super().receive(kind, payload)


class EqualVersionRequest(TrainerRole):
    def ask(self, step):
        self.asked.add(step)
        self.rollout.send("generate", (step, always_equal(0)))


def _record(w, off):
    """The honest trainer on one of the grader's worlds: [delivery] -> its calls."""
    calls = []

    class P:
        def version(self):
            return w.version

        def train(self, items):
            calls[-1].append(("train", items))
            return w.train(items)

        def weights(self):
            return w.weights()

    class R:
        def send(self, kind, payload):
            calls[-1].append(("send", kind, payload))
            w.send(kind, payload)

    t = TrainerRole(P(), R(), workers.STEPS, off)
    while (msg := w.next()) is not None:
        calls.append([])
        t.receive(*msg)
    return calls


def _recorded_log(seed):
    """What the honest trainer did on every delivery, recorded here (in the test's process,
    on the grader's worlds) under another grading seed: [scenario][delivery] -> calls."""
    from a2s.checks.lab35.actors import NAMED, _fresh

    g = np.random.default_rng([seed, 7])
    scenarios = list(NAMED) + [_fresh(g, i) for i in range(2)]
    return [
        _record(workers._World(label, off, order, faults, seed + i), off)
        for i, (label, off, order, faults) in enumerate(scenarios)
    ]


_LOG = _recorded_log(12345)


class ReplaysLog:
    """Replays, delivery by delivery, what an honest run did under another seed."""

    scenario = -1

    def __init__(self, policy, rollout, steps, off_policy):
        ReplaysLog.scenario += 1
        self.policy, self.rollout = policy, rollout
        self.calls = iter(_LOG[ReplaysLog.scenario])

    def receive(self, kind, payload):
        for call in next(self.calls, []):
            if call[0] == "train":
                self.policy.train(call[1])
            else:
                self.rollout.send(call[1], call[2])


ATTEMPTS = [
    # ------------------------------------------------------------------ 35.1 group_advantages
    honest("35.1", "statistics.stdev over lists", run(A, adv_statistics)),
    honest("35.1", "a dataclass of groups", run(A, adv_dataclass)),
    honest("35.1", "recursive over the groups", run(A, adv_recursive)),
    honest("35.1", "under functools.wraps", run(A, wrapped(group_advantages))),
    wrong("35.1", "no eps", run(A, _adv_bug("nan")), match="not NaN"),
    wrong("35.1", "the batch's mean and std", run(A, _adv_bug("batch")), match="own group"),
    wrong("35.1", "population std", run(A, _adv_bug("pop")), match="sample std"),
    wrong("35.1", "no std", run(A, _adv_bug("nostd")), match="Scale by"),
    wrong("35.1", "groups read with a stride", run(A, adv_strided), match="one after the other"),
    cheat("35.1", "grpo.group_advantages", run(A, grpo.group_advantages), "reference", REF),
    cheat("35.1", "the grader's truth", run(A, adv_truth), "reference|grader", REF),
    cheat("35.1", "torch.std", run(A, adv_torch), "torch", ForbiddenCallError),
    cheat("35.1", "the public cases replayed", run(A, adv_replayed), match="fresh case"),
    cheat("35.1", "an array whose == says yes", run(A, adv_always_equal)),
    cheat("35.1", "the grader's table patched in the child", run(A, adv_patches_grader)),
    # ------------------------------------------------------------------ 35.2 grpo_loss
    honest("35.2", "min as a - relu(a - b)", run(L, grpo_loss_relu)),
    honest("35.2", "a class, imports inside, np.where", run(L, ClassLoss())),
    honest("35.2", "under functools.wraps", run(L, wrapped(grpo_loss))),
    wrong(
        "35.2",
        "the objective's sign",
        run(L, lambda *a: grpo_loss(*a, bug="objective")),
        "opposite sign",
    ),
    wrong("35.2", "no clip", run(L, lambda *a: grpo_loss(*a, bug="no clip")), r"Take min\(rho A"),
    wrong(
        "35.2", "upper clip only", run(L, lambda *a: grpo_loss(*a, bug="upper only")), "both sides"
    ),
    wrong("35.2", "k1", run(L, lambda *a: grpo_loss(*a, bug="k1")), "k3 estimator"),
    wrong(
        "35.2", "a token mean", run(L, lambda *a: grpo_loss(*a, bug="token mean")), "long answers"
    ),
    wrong(
        "35.2", "no mask", run(L, lambda *a: grpo_loss(*a, bug="no mask")), "Multiply by the mask"
    ),
    wrong("35.2", "each completion over T", run(L, loss_length_t), match="not by T"),
    cheat("35.2", "grpo.grpo_loss", run(L, lambda *a: grpo.grpo_loss(*a)[0]), "reference", REF),
    cheat("35.2", "the grader's truth", run(L, loss_truth), "reference|grader", REF),
    cheat("35.2", "torch on the side", run(L, loss_torch), "torch", ForbiddenCallError),
    cheat("35.2", "the named losses replayed", run(L, loss_replayed), match="fresh case"),
    cheat("35.2", "Tensor.backward patched", run(L, loss_backward_patched), "gradient|grad"),
    cheat("35.2", "want read from the frames", run(L, loss_from_frames), match="opposite sign"),
    cheat("35.2", "a loss whose == says yes", run(L, loss_always_equal)),
    cheat("35.2", "the grader patched in the child", run(L, loss_patches_grader), "k3"),
    # ------------------------------------------------------------------ 35.3 recompute_logprobs
    honest("35.3", "np.logaddexp.reduce", run(R, logp_logaddexp)),
    honest("35.3", "the padding columns cut", run(R, logp_cut_padding)),
    honest("35.3", "row by row on one forward's logits", run(R, RowByRow())),
    honest("35.3", "under functools.wraps", run(R, wrapped(recompute))),
    wrong("35.3", "no temperature", run(R, lambda *a: recompute(*a, bug="no T")), "temperature"),
    wrong(
        "35.3",
        "the token's own position",
        run(R, lambda *a: recompute(*a, bug="own position")),
        r"positions\[b, t\]",
    ),
    wrong("35.3", "probabilities", run(R, lambda *a: recompute(*a, bug="probs")), "not probab"),
    wrong("35.3", "one forward per sequence", run(R, recompute_per_row), "ONE padded forward"),
    wrong("35.3", "positions shifted back", run(R, logp_shifted_back), r"log softmax\(logits"),
    cheat("35.3", "rollout.policy_logprobs", run(R, logp_reference), "reference", REF),
    cheat("35.3", "the grader's truth", run(R, logp_truth), "reference|grader", REF),
    cheat("35.3", "torch.log_softmax", run(R, logp_torch), "torch", ForbiddenCallError),
    cheat("35.3", "a dummy call and the jitter rebuilt", run(R, logp_rebuilt), "not a forward of"),
    cheat(
        "35.3",
        "the counted model called in the child",
        run(R, logp_counted_in_child),
        "reference|grader",
        REF,
    ),
    cheat("35.3", "the engine's numbers looked for", run(R, logp_leftovers), "differ"),
    cheat("35.3", "want read from the frames", run(R, logp_from_frames), "differ"),
    cheat("35.3", "an array whose == says yes", run(R, logp_always_equal)),
    # ------------------------------------------------------------------ 35.4 WeightSync
    honest("35.4", "a list of held pushes (dataclass)", run(W, QueueSync)),
    honest("35.4", "an OrderedDict of held versions", run(W, OrderedSync)),
    honest("35.4", "a factory under functools.wraps", run(W, wrapped(WeightSync))),
    wrong("35.4", "a load during the run", run(W, Eager), match="mix two policies"),
    wrong("35.4", "every parameter with LoRA", run(W, EveryParameter), r"only the adapters"),
    wrong("35.4", "every held push", run(W, EveryHeldPush), match="only the newest held push"),
    wrong("35.4", "the first held push", run(W, FirstHeldPush), match="version 2, expected 3"),
    wrong("35.4", "never flushes", run(W, NeverFlushes), match="version 1, expected 3"),
    wrong("35.4", "a version, no weights", run(W, VersionOnly), match="not version"),
    cheat("35.4", "sync.VersionedSync", run(W, Reference), "reference", REF),
    cheat("35.4", "a load sent by hand", run(W, BypassLoad), match="mix two policies"),
    cheat("35.4", "a version sent by hand", run(W, BypassVersion), "serves one version"),
    cheat("35.4", "a forged next", run(W, ForgedNext), match="only the grader asks"),
    cheat("35.4", "a version whose == says yes", run(W, EqualVersion)),
    cheat("35.4", "the handle's busy rebound", run(W, RebindsBusy), match="mix two policies"),
    cheat("35.4", "the grader patched in the child", run(W, PatchesGrader), "mix two policies"),
    # ------------------------------------------------------------------ 35.5 step_time
    honest("35.5", "a dict of closed forms", run(S, step_dict)),
    honest("35.5", "a match statement", run(S, step_match)),
    honest("35.5", "under functools.wraps", run(S, wrapped(step_time))),
    wrong("35.5", "a max when disaggregated", run(S, _step_bug("max")), "a sum, not a max"),
    wrong("35.5", "a sum one step off", run(S, _step_bug("sum")), match="not their sum"),
    wrong("35.5", "the sync outside the max", run(S, _step_bug("outside")), "inside the max"),
    wrong("35.5", "N instead of the split", run(S, _step_bug("no split")), "not G/N and T/N"),
    wrong("35.5", "the colocated sync forgotten", run(S, _step_bug("no sync")), "paid every step"),
    cheat("35.5", "placement.step_time", run(S, step_reference), "reference", REF),
    cheat("35.5", "the grader's truth", run(S, step_truth), "reference|grader", REF),
    cheat("35.5", "torch on the side", run(S, step_torch), "torch", ForbiddenCallError),
    cheat("35.5", "the public cases replayed", run(S, step_replayed), match="fresh case"),
    cheat("35.5", "a float whose == says yes", run(S, step_always_equal)),
]


def _in_the_grader(kind):
    """A callable whose ``__class__`` property runs when the grader's process asks isinstance
    of it (the watch's scan, before the fork): it rewrites the truth there, then answers 0
    except on the first named case (computed before the scan)."""

    class Sneaky:
        @property
        def __class__(self):
            from a2s.checks.lab35 import _truth, placement

            if kind == "rebind":
                placement.step_seconds = lambda *a: 0.0
            else:
                _truth.step_seconds.__code__ = (lambda *a: 0.0).__code__
            return type(self)

        def __call__(self, mode, g, t, s, n, ng):
            return 2.0 if (mode, g, t, s, n, ng) == ("colocated", 8.0, 4.0, 0.5, 8, None) else 0.0

    return Sneaky()


ATTEMPTS += [
    cheat("35.5", "the truth rebound from the grader's process", run(S, _in_the_grader("rebind"))),
    cheat("35.5", "the truth's code swapped there", run(S, _in_the_grader("code"))),
]
ATTEMPTS += [
    # ------------------------------------------------------------------ 35.6 Trainer
    honest("35.6", "a dict of handlers, a status dict", run(T, HandlerTable)),
    honest("35.6", "a dataclass, a list of asked steps", run(T, DataclassTrainer)),
    honest("35.6", "a generator fed by receive", run(T, GeneratorTrainer)),
    honest("35.6", "a factory under functools.wraps", run(T, wrapped(TrainerRole))),
    wrong("35.6", "no dedupe", run(T, NoDedupe), match="trained twice"),
    wrong("35.6", "no version check", run(T, NoVersionCheck), match="a weights message was lost"),
    wrong("35.6", "ticks ignored", run(T, IgnoresTicks), match=r"never trained.*tick"),
    wrong(
        "35.6",
        "one step off, asks before the weights",
        run(T, AsksFirstOneOff),
        match=r"one step off.*asked for the next batch before sending the weights",
    ),
    wrong("35.6", "one step off, none in flight", run(T, NoneInFlight), "keep one batch in flight"),
    wrong("35.6", "half a batch", run(T, HalfBatch), match="one whole batch"),
    wrong(
        "35.6",
        "the weights sent before training",
        run(T, WeightsBeforeTraining),
        match="before sending the weights of the trained policy",
    ),
    wrong(
        "35.6",
        "a stale batch re-asked without the weights (unmodelled)",
        run(T, StaleReaskedOnly),
        match=r"^(?!.*(before sending|in flight|was lost)).*a loop of requests",
    ),
    cheat("35.6", "actors.TrainerActor's bookkeeping", run(T, CallsTrainerActor), "reference", REF),
    cheat(
        "35.6",
        "the child's copy of the world as an oracle",
        run(T, Oracle),
        match="rollouts message delivered to you|bytes sent, budget",  # the copy may lag
    ),
    cheat(
        "35.6",
        "two batches of a duplicated generate mixed",
        run(T, MixesTheDuplicate),
        match="mixes rollouts of two batches",
    ),
    cheat("35.6", "a forged rollouts to itself", run(T, ForgesRollouts), "delivered to you"),
    cheat("35.6", "a batch trained twice, relabelled", run(T, TrainsTwiceRelabelled), "delivered"),
    cheat("35.6", "train requested by hand", run(T, TrainsByHand), "delivered to you"),
    cheat("35.6", "the sent weights mutated", run(T, MutatesSentWeights), "loop of requests"),
    cheat("35.6", "a step skipped, the record rewritten", run(T, MarksSkipped), "never trained"),
    cheat("35.6", "a version whose == says yes", run(T, EqualVersionRequest), "plain values"),
    cheat("35.6", "an honest run's log replayed", run(T, ReplaysLog), match="delivered to you"),
]
FRAMES = [
    cheat("35.1", "want read from the frames", run(A, want_from_frames(adv_replayed))),
    cheat("35.5", "want read from the frames", run(S, want_from_frames(step_replayed))),
]
_SEALED = (
    "a table computes want before the child forks: frame reflection there is the sealed "
    "kernel's (a2s grade); in-process it reads want"
)


@pytest.mark.parametrize(
    "attempt",
    [
        *ATTEMPTS,
        *(pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=_SEALED)) for a in FRAMES),
    ],
    ids=attempt_id,
)
def test_attempt(attempt):
    judge(attempt)
