"""Grader of exercise 04.6: the training loop (epochs, shuffled mini-batches, schedule).

The student's ``fit`` gets a spy ``step_fn`` (a plain FP32 AdamW step written here on the
reference layers) and a closed-form ``lr_fn``; the spy records every batch and the
learning rate the optimizer holds when the step runs. Checked: every epoch is a fresh
permutation of the data with x and y kept together, batches of ``batch_size`` (the last one
may be smaller), the schedule read at the global step, the losses returned in order, and
the trained MLP reaching the stated accuracy on held-out shapes (its logits computed here
from the raw weights with numpy).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.autograd import Tensor, cross_entropy
from minitorch.checks.core import assert_true, grader
from minitorch.checks.lab04._common import call
from minitorch.data.shapes import make_shapes
from minitorch.nn import MLP, Module
from minitorch.optim import AdamW, Optimizer

__all__ = ["TARGET_ACCURACY", "check_fit"]

TARGET_ACCURACY = 0.85
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

    def __init__(self, rows: dict[bytes, int]) -> None:
        self.rows = rows
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
        self.lrs.append(float(optimizer.lr))
        loss = cross_entropy(model(Tensor(xb.reshape(len(xb), -1))), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        self.losses.append(loss.item())
        return self.losses[-1]


def _check_epochs(spy: _Spy, y: np.ndarray, steps_per_epoch: int) -> None:
    n = len(y)
    orders = []
    for e in range(EPOCHS):
        chunk = spy.batches[e * steps_per_epoch : (e + 1) * steps_per_epoch]
        sizes = [len(b) for b in chunk]
        want = [BATCH] * (n // BATCH) + ([n % BATCH] if n % BATCH else [])
        assert_true(
            sizes == want,
            f"[epoch {e}] batch sizes {sizes[:3]}...{sizes[-2:]}, expected {BATCH} each and "
            f"{n % BATCH} for the last one: slice the shuffled indices in steps of batch_size, "
            "keeping the remainder as a smaller last batch.",
        )
        order = np.concatenate(chunk)
        assert_true(
            (order >= 0).all(),
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


@grader("04.6")
def check_fit(fit: Callable[..., Any]) -> str:
    """Exercise 04.6: the loop's epochs, batches and schedule; the accuracy it reaches."""
    x, y = make_shapes(N_TRAIN, seed=10)
    x_test, y_test = make_shapes(N_TEST, seed=11)
    x, x_test = x.reshape(N_TRAIN, -1), x_test.reshape(N_TEST, -1)
    steps_per_epoch = -(-N_TRAIN // BATCH)
    lr_fn = _lr_fn(EPOCHS * steps_per_epoch)
    model = MLP([x.shape[1], 64, 10], rng=np.random.default_rng(0))
    spy = _Spy({row.tobytes(): i for i, row in enumerate(x)})
    opt = AdamW(
        model.parameters(), lr=_INITIAL_LR
    )  # a rate that trains nothing unless lr_fn sets it
    losses = call(fit, model, opt, spy, lr_fn, x, y, epochs=EPOCHS, batch_size=BATCH, seed=3)
    steps = EPOCHS * steps_per_epoch
    assert_true(
        len(spy.batches) == steps,
        f"step_fn ran {len(spy.batches)} times; {EPOCHS} epochs of {N_TRAIN} samples in batches "
        f"of {BATCH} make {steps} steps (ceil({N_TRAIN} / {BATCH}) per epoch).",
    )
    _check_epochs(spy, y, steps_per_epoch)
    _check_lrs(spy, lr_fn, steps_per_epoch)
    got = [float(v) for v in losses] if losses is not None else []
    assert_true(
        got == spy.losses,
        f"fit returned {len(got)} losses; return the list of the {steps} values step_fn "
        "returned, in order (the loss curve).",
    )
    acc = _accuracy(model, x_test, y_test)
    assert_true(
        acc >= TARGET_ACCURACY,
        f"test accuracy {acc:.1%} < {TARGET_ACCURACY:.0%} after {EPOCHS} epochs: the loop's "
        "batches and schedule are right but training did not take; is the model the one passed in?",
    )
    return (
        f"{EPOCHS} epochs x {steps_per_epoch} steps, shuffled, scheduled; test accuracy "
        f"{acc:.1%} (target {TARGET_ACCURACY:.0%}), loss {np.mean(got[:10]):.2f} -> "
        f"{np.mean(got[-10:]):.2f}"
    )
