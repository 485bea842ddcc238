"""Speculative sampling is exact (analytically and by a chi-square test), greedy speculative
decoding equals plain greedy decoding, and Eq. 1 of Leviathan et al. matches Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.model.checkpoint import load_pretrained
from minitorch.model.corpus import examples
from minitorch.model.speculative import (
    NGramDraft,
    acceptance_rate,
    expected_tokens,
    gpt_logits,
    plain_generate,
    residual,
    speculative_generate,
    step_distribution,
    verify,
    walltime_factor,
)
from minitorch.model.tokenizer import CharTokenizer

CHI2_999_DF7 = 24.322  # the 99.9 % quantile of chi-square with 7 degrees of freedom


def _dists(seed: int, v: int = 8) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(v)), rng.dirichlet(np.ones(v))
    q[rng.integers(v)] = 0.0  # a token the draft never proposes
    return p, q / q.sum()


@pytest.mark.parametrize("seed", range(6))
def test_one_step_law_is_p_analytically(seed: int) -> None:
    p, q = _dists(seed)
    assert np.abs(step_distribution(p, q) - p).max() <= 1e-12
    assert np.abs(step_distribution(p, p) - p).max() <= 1e-12
    assert acceptance_rate(p, q) == pytest.approx(1 - 0.5 * np.abs(p - q).sum(), abs=1e-12)
    r = residual(p, q)
    assert r.min() >= 0 and r.sum() == pytest.approx(1.0) and np.all(r[p <= q] == 0)


def test_verify_samples_follow_p_chi_square() -> None:
    p, q = _dists(7)
    rng = np.random.default_rng(0)
    n = 20000
    counts = np.zeros(8)
    rows_p = np.stack([p, p])
    for x in rng.choice(8, n, p=q):
        out, _ = verify(rows_p, q[None], [int(x)], rng)
        counts[out[0]] += 1
    chi2 = float((((counts - n * p) ** 2) / (n * p)).sum())
    assert chi2 < CHI2_999_DF7


def test_expected_tokens_matches_monte_carlo() -> None:
    p, q = _dists(3)
    alpha, gamma = acceptance_rate(p, q), 4
    rng = np.random.default_rng(1)
    rows_p, rows_q = np.stack([p] * (gamma + 1)), np.stack([q] * gamma)
    n = 10000
    drafts = rng.choice(8, (n, gamma), p=q)
    total = sum(len(verify(rows_p, rows_q, list(d), rng)[0]) for d in drafts)
    mc = total / n
    assert abs(mc - expected_tokens(alpha, gamma)) < 0.04
    assert expected_tokens(1.0, gamma) == gamma + 1 and expected_tokens(0.0, gamma) == 1
    assert walltime_factor(alpha, gamma, 0.0) == pytest.approx(expected_tokens(alpha, gamma))
    assert walltime_factor(0.0, gamma, 0.5) == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def models() -> tuple:
    tok = CharTokenizer()
    model = load_pretrained(np.float64)
    corpus = [tok.encode(a + b) for a, b in examples(["reverse", "sort"], 300, seed=1)]
    return tok, gpt_logits(model), NGramDraft(tok.vocab_size, order=3).fit(corpus)


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_speculative_equals_plain_greedy(models: tuple, gamma: int) -> None:
    tok, target, draft = models
    for prompt in ("Rcabhd=", "Sfgabe="):
        ids = tok.encode(prompt)
        spec = speculative_generate(target, draft, ids, 14, gamma=gamma, greedy=True)
        base = plain_generate(target, ids, 14)
        assert np.array_equal(spec.tokens, base.tokens)
        assert spec.target_calls <= base.target_calls
        assert spec.draft_calls <= gamma * spec.target_calls
        assert sum(spec.accepted) + spec.target_calls == 14


def test_sampled_speculative_runs_and_counts(models: tuple) -> None:
    tok, target, draft = models
    ids = tok.encode("Rabc=")
    res = speculative_generate(target, draft, ids, 20, gamma=4, seed=3, temperature=1.0)
    assert len(res.tokens) == len(ids) + 20
    assert sum(res.accepted) + res.target_calls == 20
    assert res.tokens_per_target_call >= 1.0
