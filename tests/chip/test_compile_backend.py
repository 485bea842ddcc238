"""torch.compile with the chip backend: equal to eager, fewer kernels after fusion.

One compile for the whole module (Dynamo warms up slowly): a small CNN with BatchNorm and an
attention + MLP block, both in one graph.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.chip import compile_backend as cb
from minitorch.chip.device import Chip

pytestmark = pytest.mark.lab31
F = torch.nn.functional

if cb.dynamo_unavailable():  # pragma: no cover
    pytest.skip(cb.dynamo_unavailable() or "", allow_module_level=True)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.qkv = torch.nn.Linear(8, 24)
        self.ln = torch.nn.LayerNorm(8)
        self.up, self.down = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def forward(self, img: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.bn(self.conv(img)).relu()
        q, k, v = self.qkv(self.ln(x)).view(5, 3, 8).permute(1, 0, 2)
        att = F.softmax(q @ k.transpose(0, 1) / 8**0.5, dim=-1) @ v
        h = x + att
        return c, h + self.down(F.gelu(self.up(h)))


@pytest.fixture(scope="module")
def compiled() -> tuple[Net, object, cb.ChipGraph, tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    net = Net().eval()
    net.bn.running_mean.uniform_(-0.5, 0.5)
    net.bn.running_var.uniform_(0.5, 2.0)
    chip = Chip("compile")
    fn = torch.compile(net, backend=lambda gm, ex: cb.chip_backend(gm, ex, chip=chip))
    inputs = (torch.randn(2, 3, 6, 6), torch.randn(5, 8))
    with torch.no_grad():
        fn(*inputs)
    return net, fn, cb.GRAPHS[-1], inputs


# One test on the compiled graph (a module fixture would compile once per xdist worker)
@torch.no_grad()
def test_compiled_net_equals_eager_runs_on_the_chip_and_reports_fusion(compiled) -> None:
    net, fn, graph, (img, x) = compiled
    for seed in (1, 2):  # fresh inputs, same graph
        g = torch.Generator().manual_seed(seed)
        img2, x2 = torch.randn(2, 3, 6, 6, generator=g), torch.randn(5, 8, generator=g)
        for got, want in zip(fn(img2, x2), net(img2, x2), strict=True):
            assert np.abs(got.numpy() - want.numpy()).max() < 1e-5

    rep = graph.report
    assert rep.fallback_reason is None and rep.folded_conv_bn == 1
    assert rep.aten_ops["aten::convolution"] == 1 and rep.aten_ops["aten::addmm"] == 3
    assert rep.kernels_before > rep.kernels_optimized > rep.kernels_after
    assert "batch_norm" not in rep.ir_ops and rep.ir_ops["conv2d"] == 1
    assert any(g.startswith("matmul+add") for g in rep.fused_groups)
    assert rep.bytes_after < rep.bytes_before
    assert 0 < rep.arena_bytes <= rep.naive_bytes
    assert rep.launches == 3 * rep.kernels_after  # three calls so far, one launch a kernel

    chip, before = graph.chip, graph.chip.stats()
    full: list[torch.Tensor | None] = [None] * (max(graph.feeds) + 1)
    for pos, t in zip(graph.feeds, (img, x), strict=True):
        full[pos] = t
    graph(*full)  # type: ignore[arg-type]
    after = chip.stats()
    assert after["h2d_bytes"] - before["h2d_bytes"] == (img.numel() + x.numel()) * 4
    assert after["bytes_live"] == before["bytes_live"]
    assert after["peak"] >= graph.report.arena_bytes


def test_unsupported_graph_runs_eagerly_with_a_reason() -> None:
    gm = torch.fx.symbolic_trace(lambda x: torch.cumsum(x, 0))
    fn = cb.chip_backend(gm, [torch.randn(4)])
    assert "aten::cumsum" in (cb.last_report().fallback_reason or "")
    assert torch.equal(fn(torch.arange(3.0)), torch.tensor([0.0, 1.0, 3.0]))
