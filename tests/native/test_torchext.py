"""Operator counts from torch's CPU profiler; the bias + GELU as a torch C++ extension."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

from minitorch.native import torchext
from minitorch.native.build import ToolMissing
from tests.native.conftest import needs_gxx

BUILD = os.environ.get("A2S_TORCH_EXT") == "1"


def test_op_counts_are_the_profilers() -> None:
    x, w, b = torch.randn(4, 8), torch.randn(16, 8), torch.randn(16)
    counts = torchext.op_counts(torch.nn.functional.linear, x, w, b)
    assert counts["aten::linear"] == 1 and counts["aten::addmm"] == 1
    assert all(k.startswith("aten::") for k in counts)

    def three_layers(h: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            h = torch.tanh(h @ w.T @ w)
        return h

    counts = torchext.op_counts(three_layers, x)
    assert (counts["aten::mm"], counts["aten::tanh"]) == (6, 3)


def test_a_missing_ninja_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(
        torchext.shutil, "which", lambda name: None if name == "ninja" else real(name)
    )
    with pytest.raises(ToolMissing, match="ninja-build"):
        torchext.load_extension()


@needs_gxx
@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")
@pytest.mark.skipif(not BUILD, reason="a torch C++ extension builds for minutes: A2S_TORCH_EXT=1")
def test_the_extension_equals_torch_forward_and_backward() -> None:
    module = torchext.load_extension()
    fn = torchext.bias_gelu_function(module)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, generator=g, requires_grad=True)
    want = torch.nn.functional.gelu(x + b, approximate="tanh")
    torch.testing.assert_close(fn.apply(x, b), want, rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradcheck(fn.apply, (x, b))
    with pytest.raises(RuntimeError, match="float64"):
        module.bias_gelu_forward(x.float(), b.float())
