"""torch.compile of the tiny GPT's torch twin with the chip backend (one compile a variant).

ALiBi + LayerNorm + GELU lowers whole: the causal mask and the ALiBi bias, built from
constants inside ``forward``, become one constant; RoPE's complex numbers (``aten::polar``)
have no lowering, so that graph runs eagerly and the report says why.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.chip import compile_backend as cb
from tests.chip.conftest import twin

pytestmark = pytest.mark.lab31

if cb.dynamo_unavailable():  # pragma: no cover
    pytest.skip(cb.dynamo_unavailable() or "", allow_module_level=True)


@torch.no_grad()
def test_tiny_gpt_compiles_to_the_chip_and_equals_eager() -> None:
    tm = twin("alibi").eval()
    fn = torch.compile(tm, backend=cb.chip_backend)
    for tokens in ([3, 1, 4, 1, 5, 9], [2, 7, 1, 8, 2, 8]):  # same shape: one graph
        idx = torch.tensor([tokens])
        assert np.abs(fn(idx).numpy() - tm(idx).numpy()).max() < 1e-5  # measured 4e-8
    rep = cb.last_report()
    assert rep.fallback_reason is None and rep.launches == 2 * rep.kernels_after
    assert rep.aten_ops["aten::embedding"] == 1 and rep.aten_ops["aten::native_layer_norm"] == 3
    # measured on torch 2.13: 91 IR kernels lowered, 79 after the passes, 70 after fusion
    assert rep.kernels_before > rep.kernels_optimized > rep.kernels_after
    assert rep.kernels_after <= 70
    assert rep.arena_bytes < rep.naive_bytes


@torch.no_grad()
def test_rope_graph_runs_eagerly_with_the_reason() -> None:
    tm = twin("rope").eval()
    fn = torch.compile(tm, backend=cb.chip_backend)
    idx = torch.tensor([[3, 1, 4, 1, 5, 9]])
    assert torch.equal(fn(idx), tm(idx))
    assert "aten::polar" in (cb.last_report().fallback_reason or "")
