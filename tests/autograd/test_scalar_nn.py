"""The scalar MLP: forward and gradients against the same network in torch (float64)."""

from __future__ import annotations

import numpy as np
import torch

from minitorch.autograd import Value
from minitorch.autograd.scalar_nn import MLP, Neuron


def _torch_forward(model: MLP, x: list[float]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    params, h = [], torch.tensor(x, dtype=torch.float64)
    for k, layer in enumerate(model.layers):
        w = torch.tensor([[v.data for v in n.w] for n in layer.neurons], dtype=torch.float64)
        b = torch.tensor([n.b.data for n in layer.neurons], dtype=torch.float64)
        w.requires_grad_(True)
        b.requires_grad_(True)
        params += [w, b]
        h = h @ w.T + b
        if k < len(model.layers) - 1:
            h = torch.tanh(h)
    return h, params


def test_forward_and_grads_match_torch() -> None:
    model, x = MLP(3, [5, 4, 1], seed=2), [0.3, -1.2, 0.8]
    out = model(x)
    assert isinstance(out, Value)
    out.backward()
    ref, params = _torch_forward(model, x)
    ref[0].backward()
    assert np.isclose(out.data, ref.item(), rtol=1e-12)
    want = np.concatenate(
        [
            torch.cat([w.grad, b.grad[:, None]], 1).numpy().ravel()
            for w, b in zip(params[::2], params[1::2], strict=True)
        ]
    )
    got = np.array([p.grad for p in model.parameters()])
    assert np.allclose(got, want, rtol=1e-10, atol=1e-14)


def test_several_outputs_come_back_as_a_list() -> None:
    out = MLP(2, [3, 2], seed=0)([1.0, 2.0])
    assert isinstance(out, list) and len(out) == 2


def test_parameter_count_init_range_and_seed() -> None:
    model = MLP(2, [8, 8, 1], seed=7)
    assert len(model.parameters()) == (2 + 1) * 8 + (8 + 1) * 8 + (8 + 1) * 1
    assert "2 -> 8 -> 8 -> 1" in repr(model)
    first = [abs(p.data) for p in model.layers[0].parameters()]
    assert max(first) <= 1 / np.sqrt(2)
    again = MLP(2, [8, 8, 1], seed=7)
    assert [p.data for p in model.parameters()] == [p.data for p in again.parameters()]


def test_neuron_without_nonlinearity_is_affine() -> None:
    n = Neuron(2, nonlin=False, rng=np.random.default_rng(0))
    y = n([2.0, -1.0])
    assert np.isclose(y.data, n.b.data + 2 * n.w[0].data - n.w[1].data)
