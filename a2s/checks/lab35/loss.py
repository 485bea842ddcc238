"""Grader of exercise 35.2: the GRPO loss in the course autograd, loss and gradient.

``grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip, beta)`` gets ``logp`` as a
float64 Tensor (B, T) on the tape and the rest as numpy; it returns the scalar loss -J as a
Tensor. It runs in a forked child (:func:`run_apart`), where the grader calls ``backward``
itself; the loss and ``logp.grad`` come back and are compared with ``_truth.grpo_loop``,
which writes the loss and its derivative token by token by hand (the clipped surrogate's
min: rho A where it is the smaller term, a constant otherwise; the k3 KL exp(d) - d - 1 with
d = ref - logp). The named cases put ratios on both sides of the clip range with both signs
of the advantage, padded completions, beta = 0, and a group whose rewards are all equal. A
wrong answer is matched against the truth's wrong variants for its hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, case_label, fresh_rng, grader, plain, rng
from a2s.checks.harness import run_apart
from a2s.checks.lab35._truth import grpo_loop

__all__ = ["check_grpo_loss"]

_VARIANTS = {
    "objective": "Return the loss, -J (GRPO maximises J; the optimizer minimises): your value "
    "and gradient have the opposite sign.",
    "no clip": "Take min(rho A, clip(rho, 1 - eps, 1 + eps) A): without the clipped term a "
    "ratio far from 1 keeps pushing the policy away from the one that sampled.",
    "upper only": "Clip on both sides, to [1 - eps, 1 + eps]: with A < 0 a ratio below 1 - eps "
    "is clipped too (the min picks (1 - eps) A and passes no gradient).",
    "k1": "Use the k3 estimator of KL(pi || pi_ref): exp(d) - d - 1 with d = ref_logp - logp "
    "(>= 0 for every token), not logp - ref_logp.",
    "token mean": "Average over each completion's own tokens first (1/|o_i|), then over the B "
    "completions: a mean over all tokens of the batch weighs long answers more.",
    "length T": "Divide each completion's sum by its own length |o_i| (its mask's sum), not "
    "by T, the padded length: a short answer's tokens would weigh less.",
    "no mask": "Multiply by the mask: the padding after a completion's end mark is not the "
    "policy's answer and must not count, nor in |o_i|.",
}


def _case(
    g: np.random.Generator, b: int, t: int, spread: float, lengths: list[int] | None = None
) -> dict[str, Any]:
    old = np.log(g.dirichlet(np.ones(6), (b, t)).max(axis=-1))
    mask = np.ones((b, t))
    for i, n in enumerate(lengths or []):
        mask[i, n:] = 0.0
    return {
        "logp": old + spread * g.standard_normal((b, t)),
        "old": old,
        "ref": old + 0.3 * g.standard_normal((b, t)),
        "adv": g.standard_normal(b),
        "mask": mask,
        "clip": 0.2,
        "beta": 0.04,
    }


def _cases() -> list[tuple[str, dict[str, Any]]]:
    g = rng(3502)
    inside = _case(g, 4, 5, 0.05)
    both = _case(g, 4, 3, 0.0)
    ratios = np.log(np.array([1.5, 0.5, 1.5, 0.5]))[:, None]
    both["logp"] = both["old"] + ratios + 0.01 * g.standard_normal((4, 3))
    both["adv"] = np.array([1.0, 1.0, -1.0, -1.0])
    padded = _case(g, 4, 6, 0.3, lengths=[6, 2, 4, 1])
    no_kl = _case(g, 3, 4, 0.3)
    no_kl["beta"] = 0.0
    equal = _case(g, 4, 4, 0.3)
    equal["adv"] = np.zeros(4)
    f = fresh_rng("35.2")
    return [
        ("ratios inside [1 - eps, 1 + eps]", inside),
        ("ratios 1.5 and 0.5, advantages +1 and -1: both sides of the clip", both),
        ("padded completions of lengths 6, 2, 4, 1", padded),
        ("beta = 0: no KL term", no_kl),
        ("an all-equal group, A = 0: only the KL acts", equal),
        ("seeded: 6 completions of 5 tokens", _case(g, 6, 5, 0.4, lengths=[5, 3, 5, 2, 4, 5])),
        (fresh("8 completions of 6 tokens"), _case(f, 8, 6, 0.4, lengths=[6, 1, 3, 6, 5, 2])),
    ]


def _loss_and_grad(student: Callable[..., Any], c: dict[str, Any], label: str) -> Any:
    """Child side: the learner's loss on a fresh Tensor, backward, (loss, d loss / d logp)."""
    from minitorch.autograd import Tensor

    logp = Tensor(c["logp"].copy(), requires_grad=True)
    args = (c["old"].copy(), c["ref"].copy(), c["adv"].copy(), c["mask"].copy())
    with case_label(label):
        loss = student(logp, *args, c["clip"], c["beta"])
    if not isinstance(loss, Tensor) or loss.data.size != 1:
        raise CheckFailure(
            f"[{label}] grpo_loss must return the loss as a one-element Tensor built from logp "
            f"with Tensor operations (exp, *, -, sum), got {type(loss).__name__}."
        )
    if not loss.requires_grad:
        raise CheckFailure(
            f"[{label}] the loss does not depend on logp on the tape (logp.grad is None): build "
            "it from the Tensor logp, not from logp.data or numpy copies."
        )
    loss.backward()
    if logp.grad is None:
        raise CheckFailure(
            f"[{label}] the loss does not depend on logp on the tape (logp.grad is None): build "
            "it from the Tensor logp, not from logp.data or numpy copies."
        )
    grad = logp.grad.data if hasattr(logp.grad, "data") else logp.grad
    return float(np.asarray(loss.data, np.float64).reshape(-1)[0]), np.asarray(grad, np.float64)


def _run(student: Callable[..., Any], c: dict[str, Any], label: str) -> tuple[float, np.ndarray]:
    got = plain(run_apart(_loss_and_grad, student, c, label), what="loss and gradient", case=label)
    return float(got[0]), np.asarray(got[1], np.float64)


def _close(a: tuple[float, np.ndarray], b: tuple[float, np.ndarray]) -> bool:
    return bool(
        np.isclose(a[0], b[0], rtol=1e-7, atol=1e-10)
        and a[1].shape == b[1].shape
        and np.allclose(a[1], b[1], rtol=1e-6, atol=1e-10)
    )


@grader("35.2", blocks=("minitorch.rl.grpo", "minitorch.rl.trainer"), hand="parts")
def check_grpo_loss(grpo_loss: Callable[..., Any]) -> str:
    """Exercise 35.2: grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip, beta)."""
    cases = _cases()
    for label, c in cases:
        got = _run(grpo_loss, c, label)  # in a child, before the truth is computed
        want = grpo_loop(c["logp"], c["old"], c["ref"], c["adv"], c["mask"], c["clip"], c["beta"])
        if not _close(got, want):
            args = (c["logp"], c["old"], c["ref"], c["adv"], c["mask"], c["clip"], c["beta"])
            hint = next(
                (h for v, h in _VARIANTS.items() if _close(got, grpo_loop(*args, variant=v))),
                "loss = -1/B sum_i 1/|o_i| sum_t mask [min(rho A, clip(rho, 1-eps, 1+eps) A) - "
                "beta (exp(d) - d - 1)], rho = exp(logp - old_logp), d = ref_logp - logp.",
            )
            part = "loss" if not np.isclose(got[0], want[0], rtol=1e-7, atol=1e-10) else "gradient"
            worst = float(np.abs(got[1] - want[1]).max()) if got[1].shape == want[1].shape else 0
            raise CheckFailure(
                f"[{label}] the {part} differs: loss {got[0]:.8g}, expected {want[0]:.8g}; "
                f"largest gradient error {worst:.3g}. {hint}"
            )
    return (
        f"{len(cases)} batches (1 fresh): loss and d loss / d logp equal the hand-derived loop "
        "to 1e-7, both sides of the clip and the padding included"
    )
