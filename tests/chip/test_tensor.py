"""The chip tensor: ATen ops as numpy kernels, equal to CPU torch forward and backward."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from minitorch.chip.device import Chip
from minitorch.chip.fallback import NoKernel, recording
from minitorch.chip.kernels import OPS
from minitorch.chip.tensor import ChipTensor, is_chip, move_module, to_chip, to_cpu
from tests.chip.conftest import twin

pytestmark = pytest.mark.lab31

F = torch.nn.functional
# (label, function of tensors, input shapes): each must run on the chip with no fallback
CASES = [
    ("mm", lambda a, b: a @ b, [(3, 4), (4, 5)]),
    ("addmm", lambda a, w, b: F.linear(a, w, b), [(3, 4), (5, 4), (5,)]),
    ("bmm", lambda a, b: torch.bmm(a, b), [(2, 3, 4), (2, 4, 2)]),
    ("add_mul_bcast", lambda a, b: a * b + 2.0 - b, [(3, 4), (4,)]),
    ("div_neg_exp", lambda a: (-a).exp() / 3, [(5,)]),
    ("softmax", lambda a: F.softmax(a, -1), [(3, 7)]),
    ("log_softmax", lambda a: F.log_softmax(a, 0), [(4, 3)]),
    ("layer_norm", lambda a, w, b: F.layer_norm(a, (6,), w, b), [(2, 3, 6), (6,), (6,)]),
    (
        "rms_norm",
        lambda a, w: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-5) * w,
        [(3, 8), (8,)],
    ),
    ("F.rms_norm", lambda a, w: F.rms_norm(a, (8,), w, 1e-5), [(3, 8), (8,)]),  # torch >= 2.4
    ("gelu", lambda a: F.gelu(a), [(4, 5)]),
    ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh"), [(4, 5)]),
    ("silu_sigmoid_tanh_relu", lambda a: F.silu(a) + a.sigmoid() * a.tanh() + a.relu(), [(6,)]),
    ("views", lambda a: a.view(4, 3).t().reshape(2, 6).permute(1, 0).transpose(0, 1), [(3, 4)]),
    ("expand_clone", lambda a: a.unsqueeze(0).expand(3, 2, 4).clone().sum(0), [(2, 4)]),
    ("reductions", lambda a: a.sum() + a.mean(1).sum() + a.amax(0).sum(), [(3, 5)]),
]


def _inputs(shapes: list[tuple[int, ...]], seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=torch.float64, requires_grad=True) for s in shapes]


@pytest.mark.parametrize(("label", "fn", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_op_equals_cpu_torch_forward_and_backward(label: str, fn, shapes) -> None:
    xs = _inputs(shapes, 0)
    want = fn(*xs)
    want.sum().backward()
    cs = [to_chip(x) for x in xs]
    with recording(forbid=True) as rep:
        got = fn(*cs)
        got.sum().backward()
    assert is_chip(got) and rep.on_chip
    assert np.allclose(to_cpu(got).numpy(), want.detach().numpy(), atol=1e-12)
    for c, x in zip(cs, xs, strict=True):
        assert is_chip(c.grad), label
        assert np.allclose(to_cpu(c.grad).numpy(), x.grad.numpy(), atol=1e-12), label


def test_embedding_and_cross_entropy_with_gradients() -> None:
    w = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
    idx, tgt = torch.tensor([[1, 3, 3], [0, 9, 1]]), torch.tensor([2, 0, 3, 1, 1, 3])
    F.cross_entropy(F.embedding(idx, w).reshape(6, 4), tgt).backward()
    wc = to_chip(w)
    with recording(forbid=True):
        loss = F.cross_entropy(F.embedding(to_chip(idx), wc).reshape(6, 4), to_chip(tgt))
        loss.backward()
    assert np.allclose(to_cpu(wc.grad).numpy(), w.grad.numpy(), atol=1e-12)


def test_a_missing_op_is_refused_when_fallback_is_forbidden() -> None:
    x = to_chip(torch.randn(4))
    with recording(forbid=True), pytest.raises(NoKernel, match="aten::cumsum"):
        torch.cumsum(x, 0)


def test_views_share_the_buffer_and_memory_follows_lifetimes() -> None:
    chip = Chip()
    x = to_chip(torch.randn(64, 64), chip)
    live = chip.bytes_live
    views = [x.t()[1:3], x.reshape(-1)[:5], x.unsqueeze(0).expand(2, 64, 64), x.detach()]
    assert chip.bytes_live == live
    assert all(v._chip_storage is x._chip_storage for v in views)
    y = x @ x
    assert chip.bytes_live == 2 * live and chip.h2d_copies == 1 and chip.d2h_copies == 0
    del y
    gc.collect()
    assert chip.bytes_live == live
    assert x.to(torch.float64).dtype == torch.float64 and chip.h2d_copies == 1


def test_tiny_gpt_twin_forward_and_backward_equal_cpu(variant: str) -> None:
    ref, tm = twin(variant), move_module(twin(variant))
    assert all(isinstance(p, ChipTensor) for p in tm.parameters())
    idx = torch.tensor([[3, 1, 4, 1, 5, 9]]) % 16
    ref_loss = F.cross_entropy(ref(idx).reshape(-1, 16), idx.reshape(-1))
    ref_loss.backward()
    with recording() as rep:
        logits = tm(to_chip(idx))
        F.cross_entropy(logits.reshape(-1, 16), to_chip(idx.reshape(-1))).backward()
    assert np.abs(to_cpu(logits).numpy() - ref(idx).detach().numpy()).max() < 1e-5
    grads = dict(ref.named_parameters())
    for name, p in tm.named_parameters():
        assert np.abs(to_cpu(p.grad).numpy() - grads[name].grad.numpy()).max() < 1e-5, name
    expected = {"rope": {"aten::view_as_complex", "aten::view_as_real"}, "alibi": set()}
    assert set(rep.fallbacks) == expected[variant]
    softmax = (
        "aten::_safe_softmax" if hasattr(torch.ops.aten, "_safe_softmax") else "aten::_softmax"
    )
    assert {"aten::mm", "aten::bmm", softmax} <= set(rep.on_chip)


def test_op_table_entries_exist_on_this_torch() -> None:
    missing = []
    for name in OPS:
        base, _, overload = name.removeprefix("aten::").partition(".")
        packet = getattr(torch.ops.aten, base, None)
        if packet is None or not hasattr(packet, overload or "default"):
            missing.append(name)
    assert set(missing) <= {"aten::_safe_softmax"}, missing
    assert len(OPS) >= 60


def test_the_kernels_compute_with_numpy_not_torch() -> None:
    import ast
    from pathlib import Path

    import minitorch.chip.device as device
    import minitorch.chip.kernels as kernels

    for mod in (kernels, device):
        tree = ast.parse(Path(str(mod.__file__)).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(m.split(".")[0] == "torch" for m in imported), mod.__name__
