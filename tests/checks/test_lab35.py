"""Graders of lab 35: right answers pass; realistic wrong answers, budget breakers and
reference calls fail with the hint of their mistake."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from a2s.checks import lab35
from a2s.checks.core import CheckFailure, ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab35 import _truth
from minitorch.autograd import Tensor, exp
from minitorch.rl import actors, grpo, placement, rollout, sync
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.rl")
_ADV = unblocked(grpo.group_advantages)
_LOSS = unblocked(grpo.grpo_loss)
_STEP = unblocked(placement.step_time)


# --------------------------------------------------------------------------- answers
def group_advantages(rewards, group_size):
    r = np.asarray(rewards, float).reshape(-1, group_size)
    std = r.std(axis=1, ddof=1, keepdims=True)
    return ((r - r.mean(axis=1, keepdims=True)) / (std + 1e-6)).reshape(-1)


def advantages_loop(rewards, group_size):
    out = []
    for i in range(0, len(rewards), group_size):
        g = list(rewards[i : i + group_size])
        m = sum(g) / len(g)
        s = (sum((x - m) ** 2 for x in g) / (len(g) - 1)) ** 0.5
        out += [(x - m) / (s + 1e-6) for x in g]
    return out


def grpo_loss(logp, old, ref, adv, mask, clip, beta, bug=""):
    a = np.asarray(adv).reshape(-1, 1)
    ratio = exp(logp - Tensor(old))
    rho = ratio.data
    lo = -np.inf if bug == "upper only" else 1 - clip
    clipped = np.clip(rho, lo, 1 + clip) * a
    use = np.ones_like(rho) if bug == "no clip" else (rho * a <= clipped).astype(float)
    surr = ratio * (a * use) + clipped * (1 - use)
    d = Tensor(ref) - logp
    kl = (logp - Tensor(ref)) if bug == "k1" else exp(d) - d - 1.0
    m = np.ones_like(mask) if bug == "no mask" else mask
    if bug == "token mean":
        w = m / m.sum()
    else:
        w = m / np.maximum(m.sum(axis=1, keepdims=True), 1) / m.shape[0]
    j = ((surr - kl * beta) * w).sum()
    return j if bug == "objective" else -j


def grpo_loss_relu(logp, old, ref, adv, mask, clip, beta):
    """min(a, b) = a - relu(a - b), with the clipped term a constant: another honest answer."""
    from minitorch.autograd import relu

    a = np.asarray(adv, float)[:, None]
    unclipped = exp(logp - Tensor(old)) * a
    clipped = Tensor(np.clip(np.exp(logp.data - old), 1 - clip, 1 + clip) * a)
    surr = unclipped - relu(unclipped - clipped)
    d = Tensor(ref) - logp
    per = (surr - (exp(d) - d - 1.0) * beta) * mask
    lengths = np.maximum(mask.sum(axis=1), 1.0)
    return (per.sum(axis=1) * (1.0 / lengths)).sum() * (-1.0 / len(lengths))


def recompute(model, ids, tokens, positions, temperature, bug=""):
    z = np.asarray(model(ids), float) / (1.0 if bug == "no T" else temperature)
    z = z - z.max(axis=-1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    pos = np.minimum(positions + 1, ids.shape[1] - 1) if bug == "own position" else positions
    out = lp[np.arange(len(ids))[:, None], pos, tokens]
    return np.exp(out) if bug == "probs" else out


def recompute_per_row(model, ids, tokens, positions, temperature):
    return np.concatenate(
        [
            recompute(model, ids[i : i + 1], tokens[i : i + 1], positions[i : i + 1], temperature)
            for i in range(len(ids))
        ]
    )


def step_time(mode, g, t, s, n, ng):
    if mode == "colocated":
        return g / n + t / n + s
    a, b = g / ng, t / (n - ng)
    return a + s + b if mode == "disaggregated" else max(a, b + s)


# --------------------------------------------------------------------------- 35.1
def test_group_advantages_passes(capsys):
    lab35.check_group_advantages(group_advantages)
    lab35.check_group_advantages(advantages_loop)
    lab35.check_group_advantages(_ADV)
    assert capsys.readouterr().out.count("✔ Exercise 35.1 passed") == 3


def _adv_bug(bug):
    def f(rewards, g):
        r = np.asarray(rewards, float).reshape(-1, g)
        if bug == "batch":  # normalised over the whole batch
            return (r - r.mean()).reshape(-1) / (r.std(ddof=1) + 1e-6)
        mean = r.mean(axis=1, keepdims=True)
        std = r.std(axis=1, ddof=0 if bug == "pop" else 1, keepdims=True)
        with np.errstate(all="ignore"):
            if bug == "nan":
                return ((r - mean) / std).reshape(-1)
            return ((r - mean) / (1.0 if bug == "nostd" else std + 1e-6)).reshape(-1)

    return f


@pytest.mark.parametrize(
    ("bug", "match"),
    [("nan", "not NaN"), ("batch", "own group"), ("pop", "sample std"), ("nostd", "Scale by")],
)
def test_group_advantages_rejects_wrong_rules(bug, match):
    rejects(lab35.check_group_advantages, _adv_bug(bug), match=match)


def test_group_advantages_rejects_nan_on_an_all_equal_group():
    def nan_safe_elsewhere(rewards, g):  # right except where the group is all equal
        out = group_advantages(rewards, g).reshape(-1, g)
        r = np.asarray(rewards, float).reshape(-1, g)
        out[r.std(axis=1) == 0] = np.nan
        return out.reshape(-1)

    rejects(lab35.check_group_advantages, nan_safe_elsewhere, match="equal rewards")


def test_group_advantages_rejects_the_reference():
    rejects(
        lab35.check_group_advantages,
        grpo.group_advantages,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 35.2
def test_grpo_loss_passes(capsys):
    lab35.check_grpo_loss(grpo_loss)
    lab35.check_grpo_loss(grpo_loss_relu)
    lab35.check_grpo_loss(lambda *a: _LOSS(*a)[0])
    assert capsys.readouterr().out.count("✔ Exercise 35.2 passed") == 3


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("objective", "opposite sign"),
        ("no clip", r"Take min\(rho A"),
        ("upper only", "both sides"),
        ("k1", "k3 estimator"),
        ("token mean", "long answers"),
        ("no mask", "Multiply by the mask"),
    ],
)
def test_grpo_loss_rejects_wrong_rules(bug, match):
    rejects(lab35.check_grpo_loss, lambda *a: grpo_loss(*a, bug=bug), match=match)


def test_grpo_loss_rejects_a_loss_off_the_tape():
    def detached(logp, *rest):
        return Tensor(np.asarray(grpo_loss(Tensor(logp.data.copy()), *rest).data))

    def numpy_value(logp, *rest):
        return float(grpo_loss(logp, *rest).data)

    rejects(lab35.check_grpo_loss, detached, match="logp.grad is None")
    rejects(lab35.check_grpo_loss, numpy_value, match="one-element Tensor")


def test_grpo_loss_rejects_a_gradient_through_the_clipped_term():
    def clamp_with_grad(logp, old, ref, adv, mask, clip, beta):
        a = np.asarray(adv)[:, None]
        ratio = exp(logp - Tensor(old))
        inside = ((ratio.data >= 1 - clip) & (ratio.data <= 1 + clip)).astype(float)
        unclipped = ratio * a  # gradient kept everywhere, even where clip(rho) A is the min
        clipped = np.clip(ratio.data, 1 - clip, 1 + clip) * a
        use = (ratio.data * a <= clipped) | (inside > 0)
        surr = unclipped * use.astype(float) + (unclipped - unclipped.data + clipped) * (~use)
        d = Tensor(ref) - logp
        w = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1) / mask.shape[0]
        return -((surr - (exp(d) - d - 1.0) * beta) * w).sum()

    rejects(lab35.check_grpo_loss, clamp_with_grad, match="gradient differs")


def test_grpo_loss_rejects_the_reference():
    rejects(
        lab35.check_grpo_loss,
        lambda *a: grpo.grpo_loss(*a)[0],
        match="reference",
        error=ReferenceCalledError,
    )


def test_torch_is_a_forbidden_call():
    def with_torch(logp, *rest):
        import torch

        torch.zeros(1)
        return grpo_loss(logp, *rest)

    rejects(lab35.check_grpo_loss, with_torch, match="torch", error=ForbiddenCallError)


# --------------------------------------------------------------------------- 35.3
def test_recompute_logprobs_passes(capsys):
    lab35.check_recompute_logprobs(recompute)
    assert "✔ Exercise 35.3 passed" in capsys.readouterr().out


def test_recompute_logprobs_rejects_one_forward_per_sequence():
    rejects(lab35.check_recompute_logprobs, recompute_per_row, match="ONE padded forward")


@pytest.mark.parametrize(
    ("bug", "match"),
    [("no T", "temperature"), ("own position", r"positions\[b, t\]"), ("probs", "not probab")],
)
def test_recompute_logprobs_rejects_wrong_rules(bug, match):
    rejects(lab35.check_recompute_logprobs, lambda *a: recompute(*a, bug=bug), match=match)


def test_recompute_logprobs_rejects_the_reference_and_a_local_model():
    def ref(model, ids, tokens, positions, temperature):
        from minitorch.model.checkpoint import load_pretrained

        batch = rollout.Batch(ids, tokens, positions, np.ones(tokens.shape), tokens * 0.0, None)
        return rollout.recompute_logprobs(load_pretrained(), batch, temperature)

    def local(model, ids, tokens, positions, temperature):
        from minitorch.model.gpt import GPT
        from minitorch.model.train import TINY

        twin = GPT(TINY)
        return recompute(lambda i: twin(i).data, ids, tokens, positions, temperature)

    for f in (ref, local):
        rejects(lab35.check_recompute_logprobs, f, match="reference", error=ReferenceCalledError)


def test_the_model_of_35_3_is_not_the_shipped_checkpoint():
    """A forward of the checkpoint file is not the grader's model: its weights are jittered by
    a fresh draw, so two grading runs differ too, and a hand-written forward of the file's
    weights gives other log-probabilities."""
    from a2s.checks.lab35 import logprobs

    ids = np.array([[1, 5, 6, 7, 4, 9, 8], [2, 7, 5, 6, 4, 6, 5]])
    shipped = logprobs._shipped()(ids).data
    a, b = logprobs._model(1)(ids).data, logprobs._model(2)(ids).data
    for x in (a, b):
        assert np.abs(x - shipped).max() > 0.1
    assert np.abs(a - b).max() > 0.1


# --------------------------------------------------------------------------- 35.5
def test_step_time_passes(capsys):
    lab35.check_step_time(step_time)
    lab35.check_step_time(
        lambda m, g, t, s, n, ng: _STEP(m, placement.StepCosts(g, t, s, s), n, ng)
    )
    assert capsys.readouterr().out.count("✔ Exercise 35.5 passed") == 2


@pytest.mark.parametrize(
    ("mode", "wrong", "match"),
    [
        ("disaggregated", lambda g, t, s, n, ng: max(g / ng, t / (n - ng) + s), "a sum, not a max"),
        ("one_step_off", lambda g, t, s, n, ng: g / ng + s + t / (n - ng), "not their sum"),
        ("one_step_off", lambda g, t, s, n, ng: max(g / ng, t / (n - ng)) + s, "inside the max"),
        ("colocated", lambda g, t, s, n, ng: g / n + t / n, "paid every step"),
    ],
)
def test_step_time_rejects_wrong_formulas(mode, wrong, match):
    def answer(m, g, t, s, n, ng):
        return wrong(g, t, s, n, ng) if m == mode else step_time(m, g, t, s, n, ng)

    rejects(lab35.check_step_time, answer, match=match)


def test_step_time_rejects_the_reference():
    rejects(
        lab35.check_step_time,
        lambda m, g, t, s, n, ng: placement.step_time(m, placement.StepCosts(g, t, s, s), n, ng),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 35.4
class WeightSync:
    def __init__(self, engine, lora_only):
        self.engine, self.lora_only, self.held = engine, lora_only, None

    def push(self, params, version):
        if self.engine.busy():
            self.held = (params, version)
            return
        self.apply(params, version)

    def flush(self):
        if self.held is not None and not self.engine.busy():
            (params, version), self.held = self.held, None
            self.apply(params, version)

    def apply(self, params, version):
        for name, value in params.items():
            if not self.lora_only or ".lora_A" in name or ".lora_B" in name:
                self.engine.load(name, value)
        self.engine.set_version(version)


@dataclass
class QueueSync:
    """Another honest answer: a list of held pushes, of which flush applies the last."""

    engine: object
    lora_only: bool
    queue: list = field(default_factory=list)

    def push(self, params, version):
        self.queue.append((params, version))
        if not self.engine.busy():
            self.flush()

    def flush(self):
        if self.queue and not self.engine.busy():
            params, version = self.queue[-1]
            self.queue.clear()
            keep = [k for k in params if "lora_" in k] if self.lora_only else list(params)
            for k in keep:
                self.engine.load(k, params[k])
            self.engine.set_version(version)


class Eager(WeightSync):
    def push(self, params, version):
        self.apply(params, version)


class EveryParameter(WeightSync):
    def __init__(self, engine, lora_only):
        super().__init__(engine, False)


class EveryHeldPush(WeightSync):
    def push(self, params, version):
        if self.engine.busy():
            self.held = [*(self.held or []), (params, version)]
            return
        self.apply(params, version)

    def flush(self):
        for params, version in self.held or []:
            self.apply(params, version)
        self.held = None


class FirstHeldPush(WeightSync):
    def push(self, params, version):
        if self.engine.busy():
            self.held = self.held or (params, version)
            return
        self.apply(params, version)


class VersionAtOnce(WeightSync):
    def push(self, params, version):
        if self.engine.busy():
            self.engine.set_version(version)
        super().push(params, version)


class NeverFlushes(WeightSync):
    def flush(self):
        pass


def test_weight_sync_passes(capsys):
    lab35.check_weight_sync(WeightSync)
    lab35.check_weight_sync(QueueSync)
    assert capsys.readouterr().out.count("✔ Exercise 35.4 passed") == 2


def test_weight_sync_rejects_a_load_during_a_run():
    rejects(lab35.check_weight_sync, Eager, match="mix two policies")
    rejects(lab35.check_weight_sync, VersionAtOnce, match="serves one version")


def test_weight_sync_with_lora_moves_only_the_adapters():
    rejects(lab35.check_weight_sync, EveryParameter, match=r"only the adapters.*\.lora_A")


def test_weight_sync_applies_only_the_newest_held_push():
    rejects(lab35.check_weight_sync, EveryHeldPush, match="only the newest held push")
    rejects(lab35.check_weight_sync, FirstHeldPush, match="serves version 2, expected 3")
    rejects(lab35.check_weight_sync, NeverFlushes, match="serves version 1, expected 3")


def test_weight_sync_rejects_a_forged_request():
    from a2s.checks.harness import request

    class Forger(WeightSync):
        def push(self, params, version):
            if self.engine.busy():
                request("done")  # end the grader's step early, skipping the run
            super().push(params, version)

    rejects(lab35.check_weight_sync, Forger, match="only the grader asks")


def test_weight_sync_rejects_the_reference():
    class Ref(WeightSync):
        def apply(self, params, version):
            sync.param_bytes(None)
            super().apply(params, version)

    rejects(lab35.check_weight_sync, Ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 35.6
class TrainerRole:
    def __init__(self, policy, rollout, steps, off_policy):
        self.policy, self.rollout, self.steps, self.off = policy, rollout, steps, off_policy
        self.next_step, self.asked, self.done = 0, set(), set()

    def ask(self, step):
        self.asked.add(step)
        self.rollout.send("generate", (step, self.policy.version()))

    def ask_next(self):
        if self.next_step < self.steps:
            self.ask(self.next_step)
            self.next_step += 1

    def send_weights(self):
        self.rollout.send("weights", (self.policy.version(), self.policy.weights()))

    def receive(self, kind, payload):
        if kind == "start":
            self.ask_next()
            if self.off:
                self.ask_next()
        elif kind == "tick":
            for step in sorted(self.asked - self.done):
                self.ask(step)
        elif kind == "rollouts":
            step, version, items = payload
            if step in self.done:
                return
            if self.policy.version() - version > int(self.off):
                self.send_weights()
                self.ask(step)
                return
            self.done.add(step)
            self.policy.train(items)
            self.send_weights()
            self.ask_next()


class AsksBeforeWeights(TrainerRole):  # sync: the next request overtakes the new weights
    def receive(self, kind, payload):
        if kind != "rollouts":
            return super().receive(kind, payload)
        step, version, items = payload
        if step in self.done:
            return None
        if self.policy.version() - version > int(self.off):
            self.send_weights()
            self.ask(step)
            return None
        self.done.add(step)
        self.policy.train(items)
        self.ask_next()
        self.send_weights()
        return None


class AsksBeforeWeightsUnchecked(AsksBeforeWeights):
    def receive(self, kind, payload):
        if kind == "rollouts" and payload[0] not in self.done:
            self.done.add(payload[0])
            self.policy.train(payload[2])
            self.ask_next()
            self.send_weights()
            return None
        return super().receive(kind, payload)


class NoDedupe(TrainerRole):
    def receive(self, kind, payload):
        if kind == "rollouts":
            self.done.discard(payload[0])
        return super().receive(kind, payload)


class NoVersionCheck(TrainerRole):
    def receive(self, kind, payload):
        if kind == "rollouts" and payload[0] not in self.done:
            self.done.add(payload[0])
            self.policy.train(payload[2])
            self.send_weights()
            self.ask_next()
            return None
        return super().receive(kind, payload)


class IgnoresTicks(TrainerRole):
    def receive(self, kind, payload):
        return None if kind == "tick" else super().receive(kind, payload)


class WeightsWithEveryMessage(TrainerRole):
    def receive(self, kind, payload):
        self.send_weights()
        return super().receive(kind, payload)


class NoVersionOnRequests(TrainerRole):
    def ask(self, step):
        self.asked.add(step)
        self.rollout.send("generate", (step, 0))


class TwoInFlightPerStep(TrainerRole):  # one step off, asks two new batches per batch
    def ask_next(self):
        for _ in range(1 + int(self.off)):
            if self.next_step < self.steps:
                self.ask(self.next_step)
                self.next_step += 1


class MergesTwoBatches(TrainerRole):  # one step off: trains on half of each of two batches
    first = None

    def receive(self, kind, payload):
        if (
            kind == "rollouts"
            and self.off
            and payload[0] == 1
            and self.first
            and 1 not in self.done
        ):
            self.done.add(1)
            self.policy.train(payload[2][:2] + self.first[2:])
            self.send_weights()
            self.ask_next()
            return None
        if kind == "rollouts" and payload[0] == 0:
            self.first = list(payload[2])
        return super().receive(kind, payload)


def test_trainer_actor_passes(capsys):
    lab35.check_trainer_actor(TrainerRole)
    out = capsys.readouterr().out
    assert "11 scenarios" in out and "staleness 0 synchronous / 1 one step off" in out


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (AsksBeforeWeights, r"budget.*asked for the next batch before sending the weights"),
        (AsksBeforeWeightsUnchecked, r"staleness 1 .*asked for the next batch before sending"),
        (NoDedupe, r"rollouts 1 duplicated\] batch 1 trained twice"),
        (NoVersionCheck, r"weights 0 dropped\] batch 1 .*a weights message was lost"),
        (IgnoresTicks, r"rollouts 1 dropped\] batches \[1\] never trained.*tick"),
        (WeightsWithEveryMessage, r"bytes sent, budget"),
        (NoVersionOnRequests, r"every message carries the policy version"),
        (TwoInFlightPerStep, r"keep one batch in flight"),
        (MergesTwoBatches, r"mixes rollouts of policy versions|one whole batch"),
    ],
)
def test_trainer_actor_rejects_modelled_mistakes(answer, match):
    rejects(lab35.check_trainer_actor, answer, match=match)


def test_trainer_actor_hints_name_only_their_mistake():
    with pytest.raises(CheckFailure) as err:
        lab35.check_trainer_actor(NoVersionCheck)
    assert "before sending" not in str(err.value)
    with pytest.raises(CheckFailure) as err:
        lab35.check_trainer_actor(WeightsWithEveryMessage)
    assert "before sending" not in str(err.value) and "in flight" not in str(err.value)


def test_trainer_actor_rejects_none_in_flight_and_undelivered_items():
    class Synchronous(TrainerRole):  # one step off played synchronously
        def __init__(self, policy, rollout, steps, off_policy):
            super().__init__(policy, rollout, steps, False)

    rejects(lab35.check_trainer_actor, Synchronous, match="keep one batch in flight")

    class Forged(TrainerRole):  # a rollouts message made up on a tick
        def receive(self, kind, payload):
            if kind == "tick" and self.asked - self.done:
                step = min(self.asked - self.done)
                items = [(f"{step}:{i}", 0.5) for i in range(4)]
                return super().receive("rollouts", (step, self.policy.version(), items))
            return super().receive(kind, payload)

    rejects(lab35.check_trainer_actor, Forged, match="rollouts message delivered to you")


def test_trainer_actor_rejects_a_skipped_scenario_and_the_reference():
    from a2s.checks.harness import request

    class Skipper(TrainerRole):
        def receive(self, kind, payload):
            if kind == "start":
                request("scenario")  # jump to the next scenario, leaving this one untrained
            return super().receive(kind, payload)

    rejects(lab35.check_trainer_actor, Skipper, match="never trained|stopped")

    class Ref(TrainerRole):
        def receive(self, kind, payload):
            actors.delivery_report([], [])
            return super().receive(kind, payload)

    rejects(lab35.check_trainer_actor, Ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- truths
def test_truths_agree_with_the_reference():
    g = np.random.default_rng(0)
    r = g.integers(0, 2, 12).astype(float)
    assert np.allclose(_truth.advantages_loop(r, 4), _ADV(r, 4), atol=1e-12)
    b, t = 3, 4
    old = np.log(g.uniform(0.1, 0.9, (b, t)))
    lp, ref = old + 0.3 * g.standard_normal((b, t)), old + 0.2 * g.standard_normal((b, t))
    adv, mask = g.standard_normal(b), (g.uniform(size=(b, t)) > 0.3).astype(float)
    mask[:, 0] = 1.0
    x = Tensor(lp.copy(), requires_grad=True)
    loss, _ = _LOSS(x, old, ref, adv, mask, 0.2, 0.04)
    loss.backward()
    want, grad = _truth.grpo_loop(lp, old, ref, adv, mask, 0.2, 0.04)
    assert loss.item() == pytest.approx(want, rel=1e-10)
    assert np.allclose(x.grad.data if hasattr(x.grad, "data") else x.grad, grad, atol=1e-12)
    logits = g.standard_normal((2, 5, 7))
    tok, pos = g.integers(0, 7, (2, 3)), np.array([[1, 2, 3], [0, 1, 2]])
    got = unblocked(grpo.token_logprobs)(Tensor(logits), tok, pos, 2.0).data
    assert np.allclose(_truth.logprobs_loop(logits, tok, pos, 2.0), got, atol=1e-12)
    c = placement.StepCosts(8.0, 4.0, 0.5, 0.5)
    for mode, ng in (("colocated", None), ("disaggregated", 6), ("one_step_off", 6)):
        assert _truth.step_seconds(mode, 8.0, 4.0, 0.5, 8, ng or 1) == pytest.approx(
            _STEP(mode, c, 8, ng)
        )


# --------------------------------------------------------------------------- bad input
class _LoadsAName(WeightSync):
    def apply(self, params, version):
        self.engine.load("weights", np.zeros(3))


class _LoadsAString(WeightSync):
    def apply(self, params, version):
        self.engine.load(next(iter(params)), "abc")


class _NoFlush:
    def __init__(self, engine, lora_only):
        self.engine = engine

    def push(self, params, version):
        if not self.engine.busy():
            for k, v in params.items():
                self.engine.load(k, v)
            self.engine.set_version(version)


@pytest.mark.parametrize(
    ("check", "answer", "match"),
    [
        (lab35.check_group_advantages, lambda r, g: None, "numpy array|1-D"),
        (lab35.check_group_advantages, lambda r, g: np.zeros((2, 2)), "1-D array"),
        (lab35.check_grpo_loss, lambda *a: "loss", "one-element Tensor"),
        (lab35.check_recompute_logprobs, lambda m, i, t, p, T: m("xyz"), r"\(B, L\)"),
        (lab35.check_recompute_logprobs, lambda m, i, t, p, T: (m(i), None)[1], "shape"),
        (lab35.check_recompute_logprobs, lambda m, i, t, p, T: m(i)[:, 0], "shape"),
        (lab35.check_step_time, lambda *a: "fast", "one float"),
        (lab35.check_weight_sync, _LoadsAName, "not a parameter"),
        (lab35.check_weight_sync, _LoadsAString, "float array"),
        (lab35.check_weight_sync, _NoFlush, "no method flush"),
    ],
)
def test_bad_answers_get_a_clear_message(check, answer, match):
    rejects(check, answer, match=match)


# --------------------------------------------------------------------------- musts
MUSTS = [
    (
        "35.6",
        "Train each of the `steps` steps exactly once, on its whole batch",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "a batch whose step is trained already is a **duplicate** (ignore it)",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "discard it, send the weights again, ask again for that step",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "ask again for every step asked for and not trained",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "after training send the weights, then ask for the next step",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "always the policy's current version",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.6",
        "one step off also step 1: one batch in flight",
        "test_trainer_actor_rejects_none_in_flight_and_undelivered_items",
    ),
    (
        "35.6",
        "within one weights message per trained step",
        "test_trainer_actor_rejects_modelled_mistakes",
    ),
    (
        "35.1",
        "A group of equal rewards must get advantage 0, not NaN",
        "test_group_advantages_rejects_nan_on_an_all_equal_group",
    ),
    ("35.1", "the std over $G - 1$", "test_group_advantages_rejects_wrong_rules"),
    ("35.1", "nor the `minitorch.rl` reference", "test_group_advantages_rejects_the_reference"),
    ("35.2", "Clip on both sides", "test_grpo_loss_rejects_wrong_rules"),
    ("35.2", "use the k3 estimator for the KL", "test_grpo_loss_rejects_wrong_rules"),
    (
        "35.2",
        "compares the loss **and** `logp.grad`",
        "test_grpo_loss_rejects_a_gradient_through_the_clipped_term",
    ),
    (
        "35.2",
        "returning the scalar loss $-J$ as a `Tensor`",
        "test_grpo_loss_rejects_a_loss_off_the_tape",
    ),
    (
        "35.2",
        "$|o_i|$ is the number of tokens of completion $i$",
        "test_grpo_loss_rejects_wrong_rules",
    ),
    (
        "35.2",
        "$|o_i|$ is the number of tokens of completion $i$ (its mask's sum)",
        "test_grpo_loss_divides_by_each_completions_length",
    ),
    ("35.2", "Exercise code may not call torch", "test_torch_is_a_forbidden_call"),
    ("35.2", "nor the `minitorch.rl` reference", "test_grpo_loss_rejects_the_reference"),
    (
        "35.3",
        "make **one** call per batch",
        "test_recompute_logprobs_rejects_one_forward_per_sequence",
    ),
    (
        "35.3",
        "one padded forward of all the sequences",
        "test_recompute_logprobs_rejects_a_call_of_part_of_the_batch",
    ),
    (
        "35.3",
        "your numbers must equal the engine's within float32 rounding",
        "test_recompute_logprobs_rejects_wrong_rules",
    ),
    (
        "35.3",
        "its weights jittered anew each grading run",
        "test_the_model_of_35_3_is_not_the_shipped_checkpoint",
    ),
    (
        "35.3",
        "`model` is a request to the grader",
        "test_recompute_logprobs_rejects_the_reference_and_a_local_model",
    ),
    ("35.5", "each side waits for the other", "test_step_time_rejects_wrong_formulas"),
    ("35.5", "generation and training overlap", "test_step_time_rejects_wrong_formulas"),
    ("35.5", "nor the `minitorch.rl` reference", "test_step_time_rejects_the_reference"),
    (
        "35.4",
        "Nothing may change while the engine runs",
        "test_weight_sync_rejects_a_load_during_a_run",
    ),
    (
        "35.4",
        "a later push during the same run replaces the held one",
        "test_weight_sync_applies_only_the_newest_held_push",
    ),
    (
        "35.4",
        "each sync moves each parameter once",
        "test_weight_sync_applies_only_the_newest_held_push",
    ),
    (
        "35.4",
        "With `lora_only` only the adapters train",
        "test_weight_sync_with_lora_moves_only_the_adapters",
    ),
    (
        "35.4",
        "Applying means `engine.load(name, array)` for each parameter to move",
        "test_weight_sync_rejects_a_version_without_its_weights",
    ),
    ("35.4", "nor the `minitorch.rl` reference", "test_weight_sync_rejects_the_reference"),
    ("35.4", "which plays a script", "test_weight_sync_rejects_a_forged_request"),
]


def test_grpo_loss_divides_by_each_completions_length():
    from tests.checks.test_lab35_attacks import loss_length_t

    rejects(lab35.check_grpo_loss, loss_length_t, match=r"its own length \|o_i\|")


def test_recompute_logprobs_rejects_a_call_of_part_of_the_batch():
    from tests.checks.test_lab35_attacks import logp_rebuilt

    def first_row_only(model, ids, tokens, positions, temperature):  # one call, one sequence
        row = np.asarray(model(ids[:1]))
        return recompute(lambda _: np.repeat(row, len(ids), 0), ids, tokens, positions, temperature)

    for f in (first_row_only, logp_rebuilt):
        rejects(lab35.check_recompute_logprobs, f, match="not a forward of the batch")


def test_weight_sync_rejects_a_version_without_its_weights():
    from tests.checks.test_lab35_attacks import VersionOnly

    rejects(lab35.check_weight_sync, VersionOnly, match="load every parameter that changed")
