"""GRPO: group-relative advantages, the clipped ratio and a KL penalty, in the course autograd.

For each prompt q, G completions o_1..o_G are sampled from the old policy and scored r_i. GRPO
(Shao et al. 2024) drops PPO's value model: the baseline is the group itself,

    A_i = (r_i - mean(r)) / (std(r) + eps)          the same A_i for every token of o_i

and the objective, maximised, averages tokens within a completion, then completions:

    J = 1/G sum_i 1/|o_i| sum_t [ min(rho_it A_i, clip(rho_it, 1 - e, 1 + e) A_i) - beta KL_it ]
    rho_it = exp(logp_it - logp_old_it)
    KL_it  = exp(ref_it - logp_it) - (ref_it - logp_it) - 1     (k3: unbiased, >= 0)

The loss is -J. The min is written as a choice made on the values (``use = rho A <= clip(rho)
A``): where the clipped term is smaller it is a constant and passes no gradient, which is what
differentiating torch's ``min(rho A, clamp(rho) A)`` gives. A group whose rewards are all equal
has A = 0 and teaches nothing (only the KL term acts). ``agg="token"`` averages over all
tokens of the batch instead of per completion (the choice DAPO argues for; longer answers then
weigh more). Inputs: ``logp`` a Tensor (B, T) of the current policy's log-probabilities of the
sampled tokens (:func:`token_logprobs`), the others numpy (B, T), advantages (B,), a 0/1 mask.

    logp = token_logprobs(model(ids), tokens_at, positions)
    loss, stats = grpo_loss(logp, old, ref, group_advantages(r, G), mask, clip=0.2, beta=0.04)
    loss.backward()

Lab: 35_rl_systems
Paper: Shao et al. 2024, "DeepSeekMath" (arXiv:2402.03300; GRPO, eq. for the KL estimator);
Schulman 2020, "Approximating KL Divergence" (k1, k2, k3); Schulman et al. 2017, "Proximal
Policy Optimization Algorithms" (the clipped ratio)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.autograd import Tensor, exp, log_softmax

__all__ = ["group_advantages", "grpo_loss", "k3_kl", "token_logprobs"]


def group_advantages(
    rewards: np.ndarray, group_size: int, eps: float = 1e-6, unbiased: bool = True
) -> np.ndarray:
    """(r - group mean) / (group std + eps) for rewards laid out group after group, (B,) -> (B,).

    ``unbiased`` divides the variance by G - 1 (torch.std's default, as most GRPO code
    does); a group of equal rewards gets advantage 0 either way."""
    r = np.asarray(rewards, np.float64).reshape(-1)
    if group_size < 1 or r.size % group_size:
        raise ValueError(f"{r.size} rewards do not split into groups of {group_size}")
    g = r.reshape(-1, group_size)
    std = g.std(axis=1, ddof=1 if unbiased and group_size > 1 else 0, keepdims=True)
    return ((g - g.mean(axis=1, keepdims=True)) / (std + eps)).reshape(-1)


def token_logprobs(
    logits: Tensor, tokens: np.ndarray, positions: np.ndarray, temperature: float = 1.0
) -> Tensor:
    """log softmax(logits / temperature) at the sampled tokens: (B, L, V) -> (B, T).

    ``positions[b, t]`` is the position whose logits predicted ``tokens[b, t]`` (the token's
    own position minus one)."""
    tok, pos = np.asarray(tokens), np.asarray(positions)
    rows = np.arange(tok.shape[0])[:, None]
    z = logits if temperature == 1.0 else logits * (1.0 / temperature)
    logp = log_softmax(z[rows, pos], axis=-1)  # (B, T, V)
    b, t = np.meshgrid(np.arange(tok.shape[0]), np.arange(tok.shape[1]), indexing="ij")
    return logp[b, t, tok]


def k3_kl(logp: Tensor, ref_logp: np.ndarray) -> Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref): exp(d) - d - 1 with d = ref - logp."""
    d = Tensor(np.asarray(ref_logp, logp.dtype)) - logp
    return exp(d) - d - 1.0


def grpo_loss(
    logp: Tensor,
    old_logp: np.ndarray,
    ref_logp: np.ndarray | None,
    advantages: np.ndarray,
    mask: np.ndarray,
    clip: float = 0.2,
    beta: float = 0.04,
    agg: str = "seq",
) -> tuple[Tensor, dict[str, Any]]:
    """The GRPO loss (-J, a scalar Tensor) and statistics (clip fraction, KL, ratio)."""
    if agg not in ("seq", "token"):
        raise ValueError(f"agg must be 'seq' or 'token', not {agg!r}")
    dt = logp.dtype
    m = np.asarray(mask, dt)
    adv = np.asarray(advantages, dt).reshape(-1, 1)  # (B, 1): one advantage a completion
    ratio = exp(logp - Tensor(np.asarray(old_logp, dt)))
    rho = ratio.data
    clipped = np.clip(rho, 1.0 - clip, 1.0 + clip) * adv  # a constant: no gradient
    use = (rho * adv <= clipped).astype(dt)  # where the unclipped term is the min
    surrogate = ratio * (adv * use) + clipped * (1.0 - use)
    per_token = surrogate
    kl_mean = 0.0
    if ref_logp is not None and beta:
        kl = k3_kl(logp, ref_logp)
        per_token = surrogate - kl * beta
        kl_mean = float((kl.data * m).sum() / max(m.sum(), 1.0))
    if agg == "seq":
        lengths = np.maximum(m.sum(axis=1, keepdims=True), 1.0)
        objective = (per_token * (m / lengths)).sum() * (1.0 / m.shape[0])
    else:
        objective = (per_token * m).sum() * (1.0 / max(m.sum(), 1.0))
    live = m > 0
    stats = {
        "clip_fraction": float((use[live] == 0).mean()) if live.any() else 0.0,
        "kl": kl_mean,
        "ratio_mean": float(rho[live].mean()) if live.any() else 1.0,
    }
    return -objective, stats
