"""Grader of exercise 04.6: the training loop (epochs, shuffled mini-batches, schedule).

The student's ``fit`` gets a spy ``step_fn`` (a plain FP32 AdamW step written here on the
reference layers) and a closed-form ``lr_fn``; the spy records every batch and the
learning rate the optimizer holds when the step runs. Checked: every epoch is a fresh
permutation of the data with x and y kept together, batches of ``batch_size`` (the last one
may be smaller), the schedule read at the global step, the losses returned in order, and
the trained MLP reaching the stated accuracy on held-out shapes (its logits computed here
from the raw weights with numpy). The shuffle must be seeded: the same ``seed`` twice gives
the same batches, another seed others. A fresh run (sizes and seed drawn per grading run)
checks the bookkeeping again without training.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh_run
from a2s.checks.compare import call
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from minitorch.autograd import Tensor, cross_entropy
from minitorch.data.shapes import make_shapes
from minitorch.nn import MLP, Module
from minitorch.optim import AdamW, Optimizer

__all__ = ["TARGET_ACCURACY", "check_fit"]

TARGET_ACCURACY = 0.80  # a correct loop reaches 89-90% here: the margin is for other shuffles
N_TRAIN, N_TEST, EPOCHS, BATCH, BASE_LR = 2000, 500, 4, 48, 3e-3
_INITIAL_LR = 123.0  # the optimizer's lr before the loop: wrecks training unless lr_fn sets it


def _lr_fn(total: int) -> Callable[[int], float]:
    warm = total // 10

    def lr(step: int) -> float:
        if step < warm:
            return BASE_LR * (step + 1) / warm
        p = min((step - warm) / (total - warm), 1.0)
        return 0.1 * BASE_LR + 0.9 * BASE_LR * 0.5 * (1 + math.cos(math.pi * p))

    return lr


class _Spy:
    """step_fn for the student's loop: records the batch and the lr, then trains in FP32."""

    def __init__(self, rows: dict[bytes, int], train: bool = True) -> None:
        self.rows, self.train = rows, train
        self.batches: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.lrs: list[float] = []
        self.losses: list[float] = []

    def __call__(self, model: Module, optimizer: Optimizer, xb: Any, yb: Any) -> float:
        xb = np.asarray(getattr(xb, "data", xb), dtype=np.float32)
        yb = np.asarray(getattr(yb, "data", yb))
        ids = [self.rows.get(row.tobytes(), -1) for row in xb.reshape(len(xb), -1)]
        self.batches.append(np.array(ids))
        self.labels.append(yb.copy())
        self.lrs.append(float(plain(optimizer.lr, what="optimizer.lr")))
        if not self.train:  # bookkeeping only
            self.losses.append(float(len(self.losses)))
            return self.losses[-1]
        loss = cross_entropy(model(Tensor(xb.reshape(len(xb), -1))), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        self.losses.append(loss.item())
        return self.losses[-1]


def _check_epochs(spy: _Spy, y: np.ndarray, epochs: int, batch: int) -> None:
    n, steps_per_epoch = len(y), -(-len(y) // batch)
    orders = []
    for e in range(epochs):
        chunk = spy.batches[e * steps_per_epoch : (e + 1) * steps_per_epoch]
        sizes = [len(b) for b in chunk]
        want = [batch] * (n // batch) + ([n % batch] if n % batch else [])
        assert_true(
            sizes == want,
            f"[epoch {e}] batch sizes {sizes[:3]}...{sizes[-2:]}, expected {batch} each and "
            f"{n % batch} for the last one: slice the shuffled indices in steps of batch_size, "
            "keeping the remainder as a smaller last batch.",
        )
        order = np.concatenate(chunk)
        assert_true(
            bool((order >= 0).all()),
            f"[epoch {e}] a batch holds rows that are not rows of x: pass x[idx] as it is "
            "(same dtype and shape per sample), with idx a slice of the permutation.",
        )
        assert_true(
            np.array_equal(np.sort(order), np.arange(n)),
            f"[epoch {e}] {len(np.unique(order))} distinct samples of {n}: each epoch must visit "
            "every sample exactly once (a permutation, not sampling with replacement).",
        )
        labels = np.concatenate(spy.labels[e * steps_per_epoch : (e + 1) * steps_per_epoch])
        assert_true(
            np.array_equal(labels, y[order]),
            f"[epoch {e}] the labels do not belong to their images: index x and y with the "
            "same indices.",
        )
        orders.append(order)
    assert_true(
        not np.array_equal(orders[0], np.arange(n)),
        "[epoch 0] the data was not shuffled: draw a permutation with "
        "np.random.default_rng(seed) (mini-batches in dataset order train badly).",
    )
    assert_true(
        not any(np.array_equal(orders[0], o) for o in orders[1:]),
        "[epochs] every epoch used the same order: draw a new permutation each epoch.",
    )


def _check_lrs(spy: _Spy, lr_fn: Callable[[int], float], steps_per_epoch: int) -> None:
    for k, got in enumerate(spy.lrs):
        if abs(got - lr_fn(k)) <= 1e-12:
            continue
        hint = "set optimizer.lr = lr_fn(step) just before each step, step counting from 0."
        if abs(got - lr_fn(k % steps_per_epoch)) <= 1e-12:
            hint = "the step counter restarted at 0 each epoch: the schedule runs over all steps."
        elif (k == 0 and got == _INITIAL_LR) or (k > 0 and abs(got - lr_fn(k - 1)) <= 1e-12):
            hint = "the rate lags one step: set lr_fn(step) before the step, not after it."
        elif abs(got - lr_fn(k + 1)) <= 1e-12:
            hint = "the rate is one step ahead: the first step uses lr_fn(0)."
        assert_true(
            False, f"[step {k}] optimizer.lr was {got!r}, lr_fn({k}) = {lr_fn(k)!r}: {hint}"
        )


def _accuracy(model: Module, x: np.ndarray, y: np.ndarray) -> float:
    w0, b0, w1, b1 = (p.data.astype(np.float64) for p in model.parameters())
    logits = np.maximum(x @ w0.T + b0, 0.0) @ w1.T + b1  # the MLP's forward, written out
    return float((logits.argmax(1) == y).mean())


def _run(
    fit: Callable[..., Any],
    x: np.ndarray,
    y: np.ndarray,
    model: Module,
    *,
    epochs: int,
    batch: int,
    seed: int,
    train: bool = True,
) -> tuple[_Spy, Any]:
    """Run the student's loop with a spy step_fn on (x, y); return the spy and fit's result."""
    spy = _Spy({row.tobytes(): i for i, row in enumerate(x)}, train)
    opt = AdamW(model.parameters(), lr=_INITIAL_LR)  # trains nothing unless lr_fn sets the lr
    lr_fn = _lr_fn(epochs * -(-len(x) // batch))
    losses = call(fit, model, opt, spy, lr_fn, x, y, epochs=epochs, batch_size=batch, seed=seed)
    return spy, losses


def _check_run(spy: _Spy, losses: Any, y: np.ndarray, epochs: int, batch: int) -> list[float]:
    """Steps, epochs, schedule and returned losses of one run; return the losses."""
    n, steps_per_epoch = len(y), -(-len(y) // batch)
    steps = epochs * steps_per_epoch
    assert_true(
        len(spy.batches) == steps,
        f"step_fn ran {len(spy.batches)} times; {epochs} epochs of {n} samples in batches "
        f"of {batch} make {steps} steps (ceil({n} / {batch}) per epoch).",
    )
    _check_epochs(spy, y, epochs, batch)
    _check_lrs(spy, _lr_fn(steps), steps_per_epoch)
    got = [float(v) for v in plain(losses, what="losses")] if losses is not None else []
    assert_true(
        got == spy.losses,
        f"fit returned {len(got)} losses; return the list of the {steps} values step_fn "
        "returned, in order (the loss curve).",
    )
    return got


def _ids(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A toy set whose one feature is the row's id: cheap runs that only check bookkeeping."""
    return np.arange(n, dtype=np.float32)[:, None], np.arange(n) % 3


def _check_seeded(fit: Callable[..., Any]) -> None:
    x, y = _ids(50)
    orders = [
        np.concatenate(
            _run(fit, x, y, MLP([1, 3]), epochs=2, batch=8, seed=s, train=False)[0].batches
        )
        for s in (5, 5, 6)
    ]
    assert_true(
        np.array_equal(orders[0], orders[1]),
        "[seeded shuffle] two runs with seed=5 visited the samples in different orders: "
        "shuffle with rng = np.random.default_rng(seed), made once inside fit (not "
        "np.random.permutation or an unseeded generator, whose state differs between runs).",
    )
    assert_true(
        not np.array_equal(orders[0], orders[2]),
        "[seeded shuffle] seed=5 and seed=6 gave the same order: draw the permutations from "
        "np.random.default_rng(seed), using the seed passed in.",
    )


@grader("04.6", hand="trajectory")
def check_fit(fit: Callable[..., Any]) -> str:
    """Exercise 04.6: the loop's epochs, batches and schedule; the accuracy it reaches."""
    x, y = make_shapes(N_TRAIN, seed=10)
    x_test, y_test = make_shapes(N_TEST, seed=11)
    x, x_test = x.reshape(N_TRAIN, -1), x_test.reshape(N_TEST, -1)
    model = MLP([x.shape[1], 64, 10], rng=np.random.default_rng(0))
    spy, losses = _run(fit, x, y, model, epochs=EPOCHS, batch=BATCH, seed=3)
    got = _check_run(spy, losses, y, EPOCHS, BATCH)
    _check_seeded(fit)
    new = fresh_rng("04.6")
    n, batch, epochs, seed = (
        int(new.integers(lo, hi)) for lo, hi in ((20, 120), (3, 17), (2, 4), (0, 1 << 30))
    )
    with fresh_run(f"{n} samples, batches of {batch}, {epochs} epochs, seed {seed}"):
        xf, yf = _ids(n)
        spy_f, losses_f = _run(
            fit, xf, yf, MLP([1, 3]), epochs=epochs, batch=batch, seed=seed, train=False
        )
        _check_run(spy_f, losses_f, yf, epochs, batch)
    acc = _accuracy(model, x_test, y_test)
    assert_true(
        acc >= TARGET_ACCURACY,
        f"test accuracy {acc:.1%} < {TARGET_ACCURACY:.0%} after {EPOCHS} epochs (a correct loop "
        "reaches about 89-90% here): the loop's batches and schedule are right but training "
        "did not take; is the model the one passed in?",
    )
    return (
        f"{EPOCHS} epochs x {-(-N_TRAIN // BATCH)} steps, shuffled (seeded), scheduled; test "
        f"accuracy {acc:.1%} (target {TARGET_ACCURACY:.0%}), loss {np.mean(got[:10]):.2f} -> "
        f"{np.mean(got[-10:]):.2f}; a fresh run of {n} samples in batches of {batch} right too"
    )
