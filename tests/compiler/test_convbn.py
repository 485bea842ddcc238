"""Convolution-BatchNorm folding: one conv, bit-close to the pair and to torch's eval run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.compiler import interp
from minitorch.compiler.convbn import conv2d, fold_conv_bn
from minitorch.compiler.ir import Graph, op_counts, verify

pytestmark = pytest.mark.lab31


def _cnn(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 3, stride=2),
        torch.nn.BatchNorm2d(4),
    ).eval()
    for m in net:
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.25, 4)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return net


def _graph(net: torch.nn.Module, shape: tuple[int, ...]) -> Graph:
    g = Graph()
    h = g.placeholder("x", shape)
    c = lambda t: g.constant(t.detach().numpy().copy())  # noqa: E731
    for m in net:
        if isinstance(m, torch.nn.Conv2d):
            h = g.op("conv2d", [h, c(m.weight), c(m.bias)], stride=m.stride, padding=m.padding)
        elif isinstance(m, torch.nn.BatchNorm2d):
            ins = [c(m.running_mean), c(m.running_var), c(m.weight), c(m.bias)]
            h = g.op("batch_norm", [h, *ins], eps=m.eps)
        else:
            h = g.op("relu", [h])
    g.outputs = (h,)
    return g


def test_conv_kernel_equals_torch() -> None:
    g = np.random.default_rng(0)
    x, w, b = g.standard_normal((2, 3, 7, 6)), g.standard_normal((5, 3, 3, 2)), g.standard_normal(5)
    want = torch.nn.functional.conv2d(
        *map(torch.from_numpy, (x, w, b)), stride=(2, 1), padding=(1, 0)
    )
    assert np.abs(conv2d(x, w, b, (2, 1), (1, 0)) - want.numpy()).max() < 1e-12


def test_fold_is_bit_close_on_a_small_cnn() -> None:
    net = _cnn()
    x = torch.randn(2, 3, 9, 9)
    graph = _graph(net, tuple(x.shape))
    folded, changes = fold_conv_bn(graph)
    assert changes == 2 and verify(folded) == []
    assert op_counts(folded) == {"conv2d": 2, "relu": 1}
    a, b = interp.run(graph, x.numpy())[0], interp.run(folded, x.numpy())[0]
    with torch.no_grad():
        want = net(x).numpy()
    assert np.abs(a - b).max() < 1e-5 and np.abs(b - want).max() < 1e-5  # measured ~1e-6


def test_no_fold_when_the_conv_has_another_user_or_weights_are_inputs() -> None:
    net = _cnn()
    graph = _graph(net[:2], (1, 3, 5, 5))
    conv = next(n.name for n in graph.nodes if n.op == "conv2d")
    graph.outputs = (*graph.outputs, conv)  # the conv's output is needed too
    assert fold_conv_bn(graph)[1] == 0
    g = Graph()
    x, w = g.placeholder("x", (1, 3, 5, 5)), g.placeholder("w", (4, 3, 3, 3))
    b = g.constant(np.zeros(4, np.float32))
    y = g.op("conv2d", [x, w, b], stride=(1, 1), padding=(0, 0))
    stats = [g.constant(np.ones(4, np.float32)) for _ in range(4)]
    g.outputs = (g.op("batch_norm", [y, *stats], eps=1e-5),)
    assert fold_conv_bn(g)[1] == 0
