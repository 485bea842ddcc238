"""Warmup + cosine learning-rate schedule."""

import itertools
import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.nn import Parameter
from minitorch.optim import SGD, WarmupCosine, warmup_cosine


def test_named_points():
    kw = {"base_lr": 1.0, "warmup_steps": 10, "total_steps": 110, "min_lr": 0.1}
    assert math.isclose(warmup_cosine(0, **kw), 0.1)
    assert math.isclose(warmup_cosine(9, **kw), 1.0)
    assert math.isclose(warmup_cosine(10, **kw), 1.0)
    assert math.isclose(warmup_cosine(60, **kw), 0.55)  # halfway: the mean of base and floor
    assert math.isclose(warmup_cosine(110, **kw), 0.1)
    assert math.isclose(warmup_cosine(500, **kw), 0.1)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 50), st.integers(1, 200), st.floats(0.0, 0.5))
def test_bounded_rising_then_falling(warmup, decay, floor):
    total = warmup + decay
    lrs = [warmup_cosine(s, 1.0, warmup, total, floor) for s in range(total + 5)]
    assert all(floor - 1e-12 <= lr <= 1.0 + 1e-12 for lr in lrs[warmup:])
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(lrs[: warmup + 1]))
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(lrs[warmup:]))


def test_scheduler_matches_torch_lambda_lr():
    p, t = Parameter(np.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt, topt = SGD([p], lr=0.5), torch.optim.SGD([t], lr=0.5)
    sched = WarmupCosine(opt, warmup_steps=5, total_steps=30, min_lr=0.05)
    tsched = torch.optim.lr_scheduler.LambdaLR(
        topt, lambda s: warmup_cosine(s, 0.5, 5, 30, 0.05) / 0.5
    )
    for _ in range(40):
        assert math.isclose(opt.lr, topt.param_groups[0]["lr"], rel_tol=1e-12)
        sched.step()
        topt.step()
        tsched.step()
