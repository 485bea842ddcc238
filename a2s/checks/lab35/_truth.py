"""Ground truth of lab 35, written as plain loops and closed forms (not ``minitorch.rl``).

* :func:`advantages_loop`: GRPO's group-relative advantages, group by group, element by
  element, with the wrong variants the hints of 35.1 name.
* :func:`grpo_loop`: the GRPO loss and its gradient with respect to the policy's
  log-probabilities, token by token, derived by hand (the clipped surrogate's min, the k3
  KL estimator), with the wrong variants the hints of 35.2 name.
* :func:`logprobs_loop`: log softmax(logits / T) at each sampled token, one row at a time.
* :func:`step_seconds`: the step time of the three placements in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

EPS = 1e-6


def advantages_loop(rewards: Sequence[float], group_size: int, variant: str = "") -> list[float]:
    """(r_i - mean of its group) / (sample std of its group + EPS), rewards group after group."""
    r = [float(x) for x in np.asarray(rewards, np.float64).reshape(-1)]
    out: list[float] = []
    whole = sum(r) / len(r)
    for start in range(0, len(r), group_size):
        g = r[start : start + group_size]
        mean = whole if variant == "batch" else sum(g) / len(g)
        ddof = 0 if variant == "population std" else 1
        pool = r if variant == "batch" else g  # "batch": normalised over the whole batch
        var = sum((x - mean) ** 2 for x in pool) / (len(pool) - ddof)
        std = math.sqrt(var)
        for x in g:
            if variant == "no std":
                out.append(x - mean)
            elif variant == "no eps":
                out.append((x - mean) / std if std else math.nan)
            else:
                out.append((x - mean) / (std + EPS))
    return out


def grpo_loop(
    logp: np.ndarray,
    old: np.ndarray,
    ref: np.ndarray,
    adv: np.ndarray,
    mask: np.ndarray,
    clip: float,
    beta: float,
    variant: str = "",
) -> tuple[float, np.ndarray]:
    """The loss -J and dloss/dlogp, token by token (see the module docstring of 35.2)."""
    b_size, t_size = logp.shape
    loss, grad = 0.0, np.zeros((b_size, t_size))
    live = float(mask.sum())
    for b in range(b_size):
        a = float(adv[b])
        n = float(mask[b].sum())
        for t in range(t_size):
            if mask[b, t] == 0 and variant != "no mask":
                continue
            rho = math.exp(logp[b, t] - old[b, t])
            lo, hi = 1.0 - clip, 1.0 + clip
            if variant == "upper only":
                lo = -math.inf
            clipped = min(max(rho, lo), hi)
            if variant == "no clip" or rho * a <= clipped * a:
                surr, dsurr = rho * a, rho * a
            else:
                surr, dsurr = clipped * a, 0.0
            d = ref[b, t] - logp[b, t]
            if variant == "k1":
                kl, dkl = -d, 1.0
            else:
                kl, dkl = math.exp(d) - d - 1.0, 1.0 - math.exp(d)
            if variant == "token mean":
                w = 1.0 / max(live, 1.0)
            elif variant in ("no mask", "length T"):  # "length T": masked, over T
                w = 1.0 / (t_size * b_size)
            else:
                w = 1.0 / (max(n, 1.0) * b_size)
            sign = 1.0 if variant == "objective" else -1.0
            loss += sign * w * (surr - beta * kl)
            grad[b, t] += sign * w * (dsurr - beta * dkl)
    return loss, grad


def logprobs_loop(
    logits: np.ndarray, tokens: np.ndarray, positions: np.ndarray, temperature: float
) -> np.ndarray:
    """log softmax(logits[b, positions[b, t]] / T)[tokens[b, t]], one row at a time."""
    out = np.zeros(tokens.shape)
    for b in range(tokens.shape[0]):
        for t in range(tokens.shape[1]):
            z = [float(v) / temperature for v in logits[b, positions[b, t]]]
            top = max(z)
            lse = top + math.log(sum(math.exp(v - top) for v in z))
            out[b, t] = z[int(tokens[b, t])] - lse
    return out


def step_seconds(
    mode: str, t_gen: float, t_train: float, t_sync: float, devices: int, gen_devices: int
) -> float:
    """Seconds per RL step in steady state; generation and training scale as 1 / devices."""
    if mode == "colocated":
        return t_gen / devices + t_train / devices + t_sync
    gen, train = t_gen / gen_devices, t_train / (devices - gen_devices)
    if mode == "disaggregated":
        return gen + t_sync + train
    return max(gen, train + t_sync)
