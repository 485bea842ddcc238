"""KV retention: the kept sets of every policy against a plain step-by-step eviction loop
(Hypothesis), the closed-form bounds on kept tokens and bytes, the slot pool, and the tiny
GPT decoded under a policy (full attention equals the model's own forward)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.kv_retention import (
    Policy,
    RetentionCache,
    full,
    kv_bytes,
    kv_bytes_bound,
    sepllm,
    sinks,
    window,
)
from minitorch.runtime.retention_eval import (
    answer_mask,
    compare,
    long_stream,
    retention_logits,
    retention_nll,
)

SEPS = (1, 2)


def _loop_model(policy: Policy, tokens: list[int]) -> list[list[int]]:
    """The kept set after each step, by evicting from a set one token at a time."""
    kept: set[int] = set()
    out = []
    for n in range(1, len(tokens) + 1):
        kept.add(n - 1)
        if policy.kind != "full":
            edge = n - policy.window  # positions below the recent window
            protected = set(range(policy.sinks)) if policy.kind != "window" else set()
            old = sorted(p for p in kept if p < edge and p not in protected)
            seps = [p for p in old if tokens[p] in SEPS] if policy.kind == "sepllm" else []
            keep_seps = (
                set(seps[max(0, len(seps) - policy.max_seps) :]) if policy.max_seps else set()
            )
            kept -= set(old) - keep_seps
        out.append(sorted(kept))
    return out


POLICIES = st.one_of(
    st.just(full()),
    st.builds(window, st.integers(1, 12)),
    st.builds(sinks, st.integers(0, 5), st.integers(1, 12)),
    st.builds(
        lambda s, w, m: sepllm(s, w, SEPS, m),
        st.integers(0, 5),
        st.integers(1, 12),
        st.integers(0, 6),
    ),
)


@settings(max_examples=150, deadline=None)
@given(POLICIES, st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_kept_sets_equal_the_plain_loop_and_respect_the_bound(
    policy: Policy, tokens: list[int]
) -> None:
    expected = _loop_model(policy, tokens)
    rc = RetentionCache(policy, 1, 1, 2, capacity=policy.max_kept(len(tokens)))
    for n, tok in enumerate(tokens, start=1):
        kept = policy.kept(tokens[:n])
        assert kept.tolist() == expected[n - 1]
        assert len(kept) <= policy.max_kept(n) and kept[-1] == n - 1
        rc.append(tok)
        pos, slots = rc.kept()
        assert pos.tolist() == expected[n - 1] and len(set(slots.tolist())) == len(slots)
        assert rc.nbytes_live() <= kv_bytes_bound(policy, n, 1, 1, 2)
    if policy.kind in ("window", "sinks"):
        assert rc.peak == policy.max_kept(len(tokens))  # the bound is attained


def test_bounds_in_closed_form() -> None:
    assert full().max_kept(1000) == 1000
    assert window(24).max_kept(1000) == 24 and window(24).max_kept(10) == 10
    assert sinks(4, 24).max_kept(1000) == 28
    assert sepllm(4, 24, SEPS, 8).max_kept(1000) == 36
    # the tiny GPT: 2 layers, 2 K/V heads of 16, float32
    assert kv_bytes(1, 2, 2, 16) == 512
    assert kv_bytes_bound(sinks(4, 24), 10**6, 2, 2, 16) == 28 * 512
    with pytest.raises(ValueError):
        window(0)


def test_a_too_small_cache_raises() -> None:
    rc = RetentionCache(full(), 1, 1, 2, capacity=3)
    for t in range(3):
        rc.append(t)
    with pytest.raises(RuntimeError):
        rc.append(3)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return load_pretrained(np.float64)


def test_full_retention_equals_the_models_forward(model) -> None:  # type: ignore[no-untyped-def]
    tokens = long_stream(32, seed=2)
    logits, rc = retention_logits(model, tokens, full(), positions="absolute")
    assert np.abs(logits - model(tokens[None]).data[0]).max() <= 1e-10
    assert rc.peak == 32


def test_window_is_shift_invariant_and_large_windows_are_full(model) -> None:  # type: ignore[no-untyped-def]
    tokens = long_stream(48, seed=3)
    a = retention_nll(model, tokens, window(10), positions="cache")
    b = retention_nll(model, tokens, window(10), positions="absolute")
    assert np.abs(a - b).max() <= 1e-9  # RoPE scores depend on position differences only
    assert np.allclose(
        retention_nll(model, tokens, window(64)), retention_nll(model, tokens, full())
    )


def test_compare_reports_every_policy(model) -> None:  # type: ignore[no-untyped-def]
    tokens = long_stream(96, seed=0)
    mask = answer_mask(tokens)
    assert mask.shape == (95,) and 0 < mask.sum() < 95
    pols = [full(), window(16), sinks(4, 12), sepllm(2, 10, SEPS, 4)]
    report = compare(model, tokens, pols)
    assert list(report) == [p.name for p in pols]
    assert report["full"]["excess_nll"] == 0.0
    assert report["sinks(4+12)"]["max_kept"] == 16
    assert all(np.isfinite(r["mean_nll"]) for r in report.values())
