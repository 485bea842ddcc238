"""Ring attention and Ulysses on the simulated world equal full attention (torch's SDPA)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.comm.simworld import SimWorld
from minitorch.parallel.context import (
    attention,
    merge_block,
    ring_attention,
    ring_bytes,
    ulysses_attention,
    ulysses_bytes,
)


def _torch_attention(q, k, v, causal):
    t = [torch.from_numpy(a) for a in (q, k, v)]
    return torch.nn.functional.scaled_dot_product_attention(*t, is_causal=causal).numpy()


def _qkv(seed, h, n, d):
    gen = np.random.default_rng(seed)
    return [gen.standard_normal((h, n, d)) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_torch(causal):
    q, k, v = _qkv(0, 2, 6, 4)
    np.testing.assert_allclose(
        attention(q, k, v, causal), _torch_attention(q, k, v, causal), atol=1e-12
    )


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_ring_attention_equals_full_attention(p, causal):
    q, k, v = _qkv(p, 2, 4 * p, 3)
    world = SimWorld(p)
    split = [np.split(a, p, axis=-2) for a in (q, k, v)]
    outs = world.run(ring_attention, *split, [causal] * p, per_rank=True)
    np.testing.assert_allclose(
        np.concatenate(outs, axis=-2), _torch_attention(q, k, v, causal), atol=1e-12
    )
    assert world.bytes_sent == [ring_bytes(split[1][0].nbytes, p)] * p
    assert set(world.link_bytes) == {(r, (r + 1) % p) for r in range(p)}  # ring links only


def test_merge_without_rescaling_is_wrong():
    """Adding two partial softmaxes without e^(m - m') differs from the true merge."""
    gen = np.random.default_rng(1)
    q, k, v = (
        gen.standard_normal((3, 4)),
        gen.standard_normal((6, 4)) * 3,
        gen.standard_normal((6, 2)),
    )
    s = q @ k.T / 2
    state = (np.zeros((3, 2)), np.full(3, -np.inf), np.zeros(3))
    for cols in (slice(0, 3), slice(3, 6)):
        state = merge_block(state, s[:, cols], v[cols])
    np.testing.assert_allclose(state[0] / state[2][:, None], attention(q, k, v), atol=1e-12)
    naive = sum(
        np.exp(s[:, c] - s[:, c].max(1, keepdims=True)) @ v[c] for c in (slice(0, 3), slice(3, 6))
    )
    norm = sum(
        np.exp(s[:, c] - s[:, c].max(1, keepdims=True)).sum(1) for c in (slice(0, 3), slice(3, 6))
    )
    assert not np.allclose(naive / norm[:, None], attention(q, k, v), atol=1e-6)


@pytest.mark.parametrize("p", [2, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_ulysses_equals_full_attention(p, causal):
    q, k, v = _qkv(10 + p, 4, 2 * p, 3)
    world = SimWorld(p)
    split = [np.split(a, p, axis=-2) for a in (q, k, v)]
    outs = world.run(ulysses_attention, *split, [causal] * p, per_rank=True)
    np.testing.assert_allclose(
        np.concatenate(outs, axis=-2), _torch_attention(q, k, v, causal), atol=1e-12
    )
    assert world.bytes_sent == [ulysses_bytes(split[0][0].nbytes, p)] * p


def test_ulysses_needs_heads_divisible():
    q, k, v = _qkv(0, 3, 4, 2)
    split = [np.split(a, 2, axis=-2) for a in (q, k, v)]
    with pytest.raises(ValueError, match="heads"):
        SimWorld(2).run(ulysses_attention, *split, per_rank=True)
