"""Lab 04 graders: the solutions pass; realistic wrong answers and reference calls fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from a2s.checks import lab04
from a2s.checks.core import ReferenceCalledError
from minitorch.autograd import Tensor, checkpoint, checkpoint_sequential, cross_entropy
from minitorch.nn import Parameter, autocast
from minitorch.optim import SGD, AdamW, GradScaler, warmup_cosine
from tests.helpers.graders import always_equal, rejects


# --------------------------------------------------------------------------- 04.1 modules
def named_parameters(module, *, dedup=True, own_first=True, prefix_names=True):
    out, seen = [], set()

    def own(m, prefix):
        for name, p in m._parameters.items():
            if not dedup or id(p) not in seen:
                seen.add(id(p))
                out.append(((prefix if prefix_names else "") + name, p))

    def walk(m, prefix):
        if own_first:
            own(m, prefix)
        for name, child in m._modules.items():
            walk(child, f"{prefix}{name}.")
        if not own_first:
            own(m, prefix)

    walk(module, "")
    return out


def test_named_parameters_solution_passes() -> None:
    lab04.check_named_parameters(named_parameters)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda m: list(m._parameters.items()), "Only the top level"),
        (lambda m: named_parameters(m, dedup=False), "appears twice"),
        (lambda m: named_parameters(m, own_first=False), "wrong order"),
        (lambda m: named_parameters(m, prefix_names=False), "dotted paths"),
        (lambda m: [(n, p.data) for n, p in named_parameters(m)], "Parameter objects"),
        (lambda m: None, "pairs"),
    ],
)
def test_named_parameters_wrong_answers_are_rejected(wrong, match: str) -> None:
    rejects(lab04.check_named_parameters, wrong, match=match)


def test_named_parameters_calling_the_module_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab04.check_named_parameters(lambda m: list(m.named_parameters()))


# --------------------------------------------------------------------------- 04.2 SGD
def sgd_step(
    param,
    grad,
    buf,
    *,
    lr,
    momentum=0.0,
    dampening=0.0,
    nesterov=False,
    weight_decay=0.0,
    variant="",
):
    g = grad + weight_decay * param if weight_decay else grad
    if variant == "decoupled":
        g, param = grad, param * (1 - lr * weight_decay)
    if variant == "inplace" and weight_decay:
        grad += weight_decay * param
        g = grad
    if momentum:
        old = buf
        if buf is None:
            buf = (1 - dampening) * g if variant == "damp-first" else g.copy()
        else:
            buf = momentum * buf + (1 - dampening) * g
        if nesterov and variant == "nesterov-old":
            g = g + momentum * (old if old is not None else 0)
        elif nesterov and variant == "lookahead-raw":
            g = grad + momentum * buf
        else:
            g = g + momentum * buf if nesterov and variant != "no-nesterov" else buf
    return param - (lr * 1.001 if variant == "lr" else lr) * g, buf


def test_sgd_solution_passes() -> None:
    lab04.check_sgd_step(sgd_step)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("damp-first", "That is dampening on the first step too"),
        ("no-nesterov", "That steps along buf alone"),
        ("nesterov-old", "or along g plus last step's buffer"),
        ("lookahead-raw", "look-ahead used the raw gradient"),
        ("decoupled", "That is decoupled decay"),
        ("inplace", "in place"),
        ("lr", r"plain SGD, step 1 \(the first step\)\].*Plain SGD is w <- w - lr \* g;[^T]*$"),
    ],
)
def test_sgd_wrong_answers_are_rejected(variant: str, match: str) -> None:
    """Each modelled mistake gets its own message; a wrong answer none models (a wrong lr)
    gets the configuration's rule and no mistake's "That ..." message."""
    rejects(lab04.check_sgd_step, lambda *a, **k: sgd_step(*a, **k, variant=variant), match=match)


def test_sgd_without_a_buffer_on_plain_steps_is_required() -> None:
    def keeps_buffer(param, grad, buf, **cfg):
        new, _ = sgd_step(param, grad, buf, **cfg)
        return new, np.zeros_like(param)

    rejects(lab04.check_sgd_step, keeps_buffer, match="return None")


def test_sgd_returning_values_that_decide_their_own_equality_is_rejected() -> None:
    def cheat(param, grad, buf, **cfg):
        new, buf = sgd_step(param, grad, buf, **cfg)
        return always_equal(new), buf

    rejects(lab04.check_sgd_step, cheat, match="subclass of ndarray")


def test_sgd_calling_the_reference_is_rejected() -> None:
    def via_reference(param, grad, buf, *, lr, momentum, dampening, nesterov, weight_decay):
        p = Parameter(param)
        opt = SGD([p], lr, momentum, dampening, weight_decay, nesterov)
        p.grad = grad
        opt.step()
        return p.data, opt.state[0].get("momentum_buffer")

    with pytest.raises(ReferenceCalledError):
        lab04.check_sgd_step(via_reference)


# --------------------------------------------------------------------------- 04.3 AdamW
def adamw_step(param, grad, m, v, step, *, lr, betas, eps, weight_decay, variant=""):
    b1, b2 = betas
    if variant == "betas-swapped":
        b1, b2 = b2, b1
    if variant == "l2":
        grad = grad + weight_decay * param
    elif variant == "decay-no-lr":
        param = param * (1 - weight_decay)
    elif variant != "decay-after":
        param = param * (1 - lr * weight_decay)
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    if variant == "no-bias-correction":
        return param - lr * m / (np.sqrt(v) + eps), m, v
    if variant == "eps-inside":
        return param - lr * (m / (1 - b1**step)) / np.sqrt(v / (1 - b2**step) + eps), m, v
    if variant == "eps-before":
        denom = (np.sqrt(v) + eps) / math.sqrt(1 - b2**step)
    else:
        denom = np.sqrt(v) / math.sqrt(1 - b2**step) + eps
    new = param - lr / (1 - b1**step) * m / denom
    if variant == "decay-after":
        new = new * (1 - lr * weight_decay)
    return new * (1.001 if variant == "scaled" else 1.0), m, v


def test_adamw_solution_passes() -> None:
    lab04.check_adamw_step(adamw_step)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("l2", "That is Adam \\+ L2"),
        ("no-bias-correction", "That trajectory has no bias correction"),
        ("eps-inside", "That puts eps inside the square root"),
        ("eps-before", "That adds eps before the bias correction"),
        ("decay-no-lr", r"That decays by w \* \(1 - wd\)"),
        ("decay-after", "That decays after the Adam step"),
        ("betas-swapped", "Those are the betas swapped"),
        ("scaled", r"Adam core \(no decay\), step 1 .*bias corrections 1 - beta1[^T]*$"),
    ],
)
def test_adamw_wrong_answers_are_rejected(variant: str, match: str) -> None:
    rejects(
        lab04.check_adamw_step, lambda *a, **k: adamw_step(*a, **k, variant=variant), match=match
    )


def test_adamw_calling_the_reference_is_rejected() -> None:
    def via_reference(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
        p = Parameter(param)
        opt = AdamW([p], lr, betas, eps, weight_decay)
        p.grad = grad
        opt.step()
        return p.data, m, v

    with pytest.raises(ReferenceCalledError):
        lab04.check_adamw_step(via_reference)


# --------------------------------------------------------------------------- 04.4 schedule
def lr_at(step, *, base_lr, warmup_steps, total_steps, min_lr=0.0, variant=""):
    if step < warmup_steps:
        return base_lr * (step + (0 if variant == "off-by-one" else 1)) / warmup_steps
    span = total_steps if variant == "span-total" else total_steps - warmup_steps
    progress = (step - warmup_steps) / span
    if variant != "no-clamp":
        progress = min(progress, 1.0)
    floor = 0.0 if variant == "no-floor" else min_lr
    return floor + (base_lr - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def test_schedule_solution_passes() -> None:
    lab04.check_lr_schedule(lr_at)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("off-by-one", "Off by one"),
        ("span-total", "progress = \\(s - warmup\\)"),
        ("no-floor", "decays to min_lr"),
        ("no-clamp", "stays at min_lr"),
    ],
)
def test_schedule_wrong_answers_are_rejected(variant: str, match: str) -> None:
    rejects(lab04.check_lr_schedule, lambda s, **k: lr_at(s, **k, variant=variant), match=match)


def test_schedule_returning_an_always_equal_float_is_rejected() -> None:
    rejects(lab04.check_lr_schedule, lambda s, **k: always_equal(lr_at(s, **k)), match="subclass")


def test_schedule_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab04.check_lr_schedule(
            lambda s, *, base_lr, warmup_steps, total_steps, min_lr: warmup_cosine(
                s, base_lr, warmup_steps, total_steps, min_lr
            )
        )


# --------------------------------------------------------------------------- 04.5 mixed precision
def amp_step(
    model, optimizer, x, y, scale, good_steps, *, fmt="fp16", growth_interval=2000, variant=""
):
    with autocast(None if variant == "no-autocast" else fmt):
        loss = cross_entropy(model(Tensor(x)), y)
    if variant != "no-zero-grad":
        optimizer.zero_grad()
    (loss * scale).backward()
    found_inf = False
    for p in optimizer.params:
        if p.grad is not None:
            if variant != "no-unscale":
                p.grad = p.grad / np.float32(scale)
            found_inf = found_inf or not bool(np.isfinite(p.grad).all())
    value = loss.item() * (scale if variant == "scaled-loss" else 1.0)
    if found_inf and variant != "no-skip":
        return value, scale * (1.0 if variant == "no-backoff" else 0.5), 0
    optimizer.step()
    good_steps += 1
    if good_steps == growth_interval and variant != "no-growth":
        return value, scale * 2.0, 0
    return value, scale, good_steps


def test_amp_solution_passes() -> None:
    lab04.check_amp_step(amp_step)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("no-unscale", "times too large"),
        ("no-autocast", "inside `with autocast"),
        ("no-skip", "not skipped"),
        ("no-backoff", "halve the scale"),
        ("no-growth", "doubles"),
        ("scaled-loss", "unscaled loss"),
        ("no-zero-grad", "zero_grad"),
    ],
)
def test_amp_wrong_answers_are_rejected(variant: str, match: str) -> None:
    with np.errstate(all="ignore"):
        rejects(
            lab04.check_amp_step, lambda *a, **k: amp_step(*a, **k, variant=variant), match=match
        )


def test_amp_calling_the_grad_scaler_is_rejected() -> None:
    def via_reference(model, optimizer, x, y, scale, good_steps, *, fmt, growth_interval):
        scaler = GradScaler(scale, growth_interval=growth_interval)
        with autocast(fmt):
            loss = cross_entropy(model(Tensor(x)), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        return loss.item(), scaler.update(), scaler.growth_tracker

    with pytest.raises(ReferenceCalledError):
        lab04.check_amp_step(via_reference)


# --------------------------------------------------------------------------- 04.6 the loop
def fit(model, optimizer, step_fn, lr_fn, x, y, *, epochs, batch_size, seed=0, variant=""):
    rng = np.random.default_rng(0 if variant == "ignore-seed" else seed)
    if variant == "global":  # numpy's global generator: a different order on every run
        rng = np.random.mtrand._rand
    n, losses, step = len(x), [], 0
    for _ in range(epochs):
        if variant == "same-order":
            rng = np.random.default_rng(seed)
        order = np.arange(n) if variant == "no-shuffle" else rng.permutation(n)
        labels = rng.permutation(n) if variant == "split-shuffle" else order
        if variant == "with-replacement":
            order = labels = rng.integers(0, n, n)
        if variant == "reset-step":
            step = 0
        stop = n - n % batch_size if variant == "drop-last" else n
        for start in range(0, stop, batch_size):
            idx, idy = order[start : start + batch_size], labels[start : start + batch_size]
            if variant != "lr-after":
                optimizer.lr = lr_fn(step)
            losses.append(step_fn(model, optimizer, x[idx], y[idy]))
            if variant == "lr-after":
                optimizer.lr = lr_fn(step)
            step += 1
    return None if variant == "no-return" else losses


def test_fit_solution_passes() -> None:
    lab04.check_fit(fit)


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("no-shuffle", "not shuffled"),
        ("same-order", "same order"),
        ("split-shuffle", "labels do not belong"),
        ("with-replacement", "exactly once"),
        ("reset-step", "restarted"),
        ("lr-after", "lags one step"),
        ("drop-last", "step_fn ran"),
        ("no-return", "losses"),
        ("global", "two runs with seed=5"),
        ("ignore-seed", "seed=5 and seed=6 gave the same order"),
    ],
)
def test_fit_wrong_answers_are_rejected(variant: str, match: str) -> None:
    rejects(lab04.check_fit, lambda *a, **k: fit(*a, **k, variant=variant), match=match)


# --------------------------------------------------------------------------- 04.7 recomputation
def run_all(layers, h):
    for f in layers:
        h = f(h)
    return h


def segmented(layers, x, k, *, checkpoint_last=False):
    size = -(-len(layers) // k)
    chunks = [layers[i : i + size] for i in range(0, len(layers), size)]
    for chunk in chunks if checkpoint_last else chunks[:-1]:
        x = checkpoint(lambda h, c=chunk: run_all(c, h), x)
    return x if checkpoint_last else run_all(chunks[-1], x)


def sqrt_checkpoint(layers, x):
    return segmented(layers, x, max(1, math.isqrt(len(layers))))


def test_sqrt_checkpoint_solution_passes() -> None:
    lab04.check_sqrt_checkpoint(sqrt_checkpoint)
    lab04.check_sqrt_checkpoint(lambda ls, x: segmented(ls, x, math.ceil(math.sqrt(len(ls)))))
    lab04.check_sqrt_checkpoint(  # every segment checkpointed, the last one too: also fine
        lambda ls, x: segmented(ls, x, math.isqrt(len(ls)), checkpoint_last=True)
    )


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param(run_all, id="no checkpointing"),
        pytest.param(lambda ls, x: segmented(ls, x, len(ls)), id="every layer"),
        pytest.param(lambda ls, x: checkpoint(lambda h: run_all(ls, h), x), id="one checkpoint"),
        pytest.param(lambda ls, x: segmented(ls, x, 2), id="two segments"),
        pytest.param(lambda ls, x: segmented(ls, x, 4), id="four segments"),
    ],
)
def test_sqrt_checkpoint_schedules_that_are_not_sqrt_n_are_rejected(wrong) -> None:
    rejects(lab04.check_sqrt_checkpoint, wrong, match="6·sqrt\\(N\\) \\+ 4")


def test_sqrt_checkpoint_wrong_segment_inputs_are_rejected() -> None:
    def every_segment_sees_x(layers, x):
        k = math.isqrt(len(layers))
        size = -(-len(layers) // k)
        outs = [
            checkpoint(lambda h, c=layers[i : i + size]: run_all(c, h), x)
            for i in range(0, len(layers), size)
        ]
        return outs[-1]

    rejects(lab04.check_sqrt_checkpoint, every_segment_sees_x, match="output")


def test_sqrt_checkpoint_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab04.check_sqrt_checkpoint(lambda ls, x: checkpoint_sequential(ls, math.isqrt(len(ls)), x))


def test_every_grader_forbids_torch() -> None:
    checks = [getattr(lab04, name) for name in lab04.__all__]
    assert sorted(c.exercise for c in checks) == [f"04.{i}" for i in range(1, 8)]
    assert all("torch" in c.forbid for c in checks)


# --------------------------------------------------------------------------- modelled mistakes
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_the_modelled_rules_without_a_mistake_are_torchs(opt: str) -> None:
    """The numpy rule the mistakes are variants of is torch's optimizer: a mistake's message
    can then only be shown for an answer that differs from torch the way that mistake does."""
    import torch

    from a2s.checks.core import rng
    from a2s.checks.lab04 import adamw as a
    from a2s.checks.lab04 import sgd as s
    from a2s.checks.trajectory import quadratic, rule_trajectory, torch_trajectory

    mod, defaults = (
        (s, dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0))
        if opt == "sgd"
        else (a, dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2))
    )
    for i, (_, cfg, _) in enumerate(mod._CONFIGS):
        full = defaults | cfg
        problem = quadratic(rng(300 + i), spread=1e3)
        w0 = rng(400 + i).standard_normal(problem.shape)
        make = (
            (lambda ps, full=full: torch.optim.SGD(ps, **full))
            if opt == "sgd"
            else (lambda ps, full=full: torch.optim.AdamW(ps, foreach=False, **full))
        )
        want = torch_trajectory(make, problem, w0, 30)
        rule = s._sgd_rule(full) if opt == "sgd" else a._adamw_rule(full)
        got = rule_trajectory(rule, problem, w0, 30)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
