"""FlashAttention forward and backward against torch's SDPA and autograd, and their traffic."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.kernels.attention import naive_attention
from minitorch.kernels.flash import (
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
)
from minitorch.kernels.io_model import (
    HBM,
    flash_backward_traffic,
    flash_forward_traffic,
    kv_blocks,
    q_blocks,
)

CASES = [(37, 8, 8, 16, True), (37, 8, 16, 8, False), (64, 16, 16, 16, True), (5, 4, 8, 8, True)]


def _limits(bq: int, bk: int, d: int) -> dict[str, int]:
    rows = {"Q": bq, "O": bq, "dO": bq, "dQ": bq, "K": bk, "V": bk, "dK": bk, "dV": bk}
    return {**{k: r * d for k, r in rows.items()}, "L": bq, "D": bq}


@pytest.mark.parametrize(("n", "d", "bq", "bk", "causal"), CASES)
def test_flash_matches_torch_forward_and_backward(n, d, bq, bk, causal) -> None:
    g = np.random.default_rng(n + d)
    q, k, v, do = (g.standard_normal((n, d)) for _ in range(4))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    o = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    o.backward(torch.from_numpy(do))
    zeros = np.zeros((n, d))
    fwd = HBM({"Q": q, "K": k, "V": v, "O": zeros, "L": np.zeros(n)}, _limits(bq, bk, d))
    flash_attention_forward(fwd, bq, bk, causal)
    np.testing.assert_allclose(fwd.array("O"), o.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(fwd.array("L"), naive_attention(q, k, v, causal)[1], atol=1e-12)
    assert fwd.traffic() == flash_forward_traffic(n, d, bq, bk, causal)
    arrays = {"Q": q, "K": k, "V": v, "O": fwd.array("O"), "L": fwd.array("L"), "dO": do}
    bwd = HBM({**arrays, "dQ": zeros, "dK": zeros, "dV": zeros, "D": np.zeros(n)})
    bwd.limits.update(_limits(bq, bk, d))
    flash_attention_backward(bwd, bq, bk, causal)
    for name, t in (("dQ", tq), ("dK", tk), ("dV", tv)):
        np.testing.assert_allclose(bwd.array(name), t.grad.numpy(), atol=1e-12)
    assert bwd.traffic() == flash_backward_traffic(n, d, bq, bk, causal)


def test_traffic_formulas_in_closed_form() -> None:
    n, d, b = 256, 32, 64  # t = 4 blocks of each
    t = n // b
    assert flash_forward_traffic(n, d, b, b).reads == (n * d + t * 2 * n * d) * 8
    assert flash_forward_traffic(n, d, b, b).writes == (n * d + n) * 8
    causal_kv = sum(range(1, t + 1)) * 2 * b * d  # block i sees i + 1 key blocks
    assert flash_forward_traffic(n, d, b, b, True).reads == (n * d + causal_kv) * 8
    bwd = flash_backward_traffic(n, d, b, b)
    assert bwd.reads == (2 * n * d + 2 * n * d + t * (3 * n * d + 2 * n)) * 8
    assert bwd.writes == (n + t * n * d + 2 * n * d) * 8


def test_blocks_cover_every_row_once() -> None:
    assert q_blocks(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert kv_blocks(10, 4, i1=5, causal=True) == [(0, 4), (4, 8)]


def test_flash_attention_wrapper_and_custom_scale() -> None:
    q, k, v = (np.random.default_rng(3).standard_normal((19, 4)) for _ in range(3))
    o, lse = flash_attention(q, k, v, causal=True, block_q=4, block_kv=8, scale=0.3)
    want, want_lse = naive_attention(q, k, v, causal=True, scale=0.3)
    np.testing.assert_allclose(o, want, atol=1e-13)
    np.testing.assert_allclose(lse, want_lse, atol=1e-13)
