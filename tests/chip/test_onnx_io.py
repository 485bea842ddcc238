"""The captured graph exported to ONNX, checked, run in onnxruntime and imported back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.chip import onnx_io
from minitorch.chip.compile_backend import capture, optimize
from minitorch.compiler import interp
from minitorch.compiler.ir import same_structure, verify
from minitorch.compiler.passes import dce

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.lab31


class Block(torch.nn.Module):
    """Conv + BN + ReLU, then LayerNorm, an MLP with GELU and a softmax: ONNX's usual ops."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(2, 3, 3, stride=2, padding=1), torch.nn.BatchNorm2d(3)
        self.ln, self.fc = torch.nn.LayerNorm(12), torch.nn.Linear(12, 12)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        h = self.bn(self.conv(img)).relu().reshape(4, 12)
        h = torch.nn.functional.gelu(self.fc(self.ln(h)))
        return torch.softmax(h.transpose(0, 1), dim=-1).sum(0, keepdim=True)


@pytest.fixture(scope="module")
def graphs():
    torch.manual_seed(0)
    block = Block().eval()
    img = torch.randn(1, 2, 8, 8)
    raw = capture(block, img)
    optimized, _, _ = optimize(raw)
    return block, img, raw, optimized


@pytest.mark.parametrize("which", ["raw", "optimized"])
def test_export_checks_and_runs_equal_in_onnxruntime(graphs, which: str) -> None:
    block, img, raw, optimized = graphs
    graph = raw if which == "raw" else optimized
    model = onnx_io.to_onnx(graph)
    onnx.checker.check_model(model, full_check=True)
    ours = interp.run(graph, img.numpy())[0]
    theirs = onnx_io.run_onnxruntime(model, img.numpy())[0]
    assert np.abs(ours - theirs).max() < 1e-6  # measured: 0 to 6e-8
    with torch.no_grad():
        assert np.abs(ours - block(img).numpy()).max() < 1e-6


@pytest.mark.parametrize("which", ["raw", "optimized"])
def test_import_gives_back_the_same_graph(graphs, which: str) -> None:
    _, _img, raw, optimized = graphs
    graph = raw if which == "raw" else optimized
    back = onnx_io.from_onnx(onnx_io.to_onnx(graph))
    assert verify(back) == [] and same_structure(back, dce(graph)[0])  # unused weights dropped


def test_fused_graphs_are_refused_with_a_reason(graphs) -> None:
    from minitorch.compiler import fusion

    with pytest.raises(ValueError, match="export before fusion"):
        onnx_io.to_onnx(fusion.fuse(graphs[3]))
    assert onnx_io.missing() is None


def test_the_tiny_gpt_exports_runs_and_comes_back() -> None:
    from tests.chip.conftest import twin

    tm = twin("alibi").eval()
    idx = torch.tensor([[3, 1, 4, 1, 5, 9]])
    graph, _, _ = optimize(capture(tm, idx))
    model = onnx_io.to_onnx(graph, "tiny_gpt")
    onnx.checker.check_model(model, full_check=True)
    ids = idx.numpy().astype(np.float32)  # the IR takes ids in the weights' dtype
    theirs = onnx_io.run_onnxruntime(model, ids)[0]
    ours = interp.run(graph, ids)[0]
    with torch.no_grad():
        want = tm(idx).numpy()
    assert np.abs(theirs - ours).max() < 1e-5 and np.abs(ours - want).max() < 1e-5
    back = onnx_io.from_onnx(model)
    assert verify(back) == [] and same_structure(back, dce(graph)[0])
