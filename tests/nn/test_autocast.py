"""Emulated BF16/FP16 compute: rounding in forward and backward, FP32 master weights."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.nn import Conv2d, Linear, autocast, cast, compute_format, round_to

rng = np.random.default_rng(0)


def _is_bf16(a):
    return np.all((np.asarray(a, np.float32).view(np.uint32) & 0xFFFF) == 0)


def test_round_to_matches_torch_casts():
    x = (rng.standard_normal(1000) * 10).astype(np.float32)
    want_bf16 = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    want_fp16 = torch.from_numpy(x).to(torch.float16).float().numpy()
    np.testing.assert_array_equal(round_to(x, "bf16"), want_bf16)
    np.testing.assert_array_equal(round_to(x, "fp16"), want_fp16)
    with pytest.raises(ValueError, match="format"):
        round_to(x, "fp8")


def test_cast_rounds_the_gradient_too():
    x = Tensor(rng.standard_normal(64).astype(np.float32), requires_grad=True)
    y = cast(x, "bf16")
    assert _is_bf16(y.data)
    g = rng.standard_normal(64).astype(np.float32)
    y.backward(g)
    np.testing.assert_array_equal(x.grad, round_to(g, "bf16"))


def test_linear_under_autocast_matches_torch_bf16():
    lin = Linear(64, 32, rng=rng)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    with autocast("bf16"):
        assert compute_format() == "bf16"
        y = lin(Tensor(x))
    assert compute_format() is None and _is_bf16(y.data)
    bf = torch.bfloat16
    want = torch.nn.functional.linear(
        torch.from_numpy(x).to(bf),
        torch.from_numpy(lin.weight.data).to(bf),
        torch.from_numpy(lin.bias.data).to(bf),
    ).float()
    np.testing.assert_allclose(y.data, want.numpy(), rtol=2**-7, atol=1e-2)
    y.sum().backward()
    assert lin.weight.grad.dtype == np.float32  # FP32 master weights get FP32 grads
    assert lin.weight.data.dtype == np.float32


def test_conv_under_autocast_outputs_are_representable():
    conv = Conv2d(2, 3, 3, rng=rng)
    with autocast("fp16"):
        y = conv(Tensor(rng.standard_normal((1, 2, 5, 5)).astype(np.float32)))
    assert np.array_equal(y.data, round_to(y.data, "fp16"))


def test_fp16_gradients_underflow_without_scaling():
    lin = Linear(16, 1, rng=rng)
    x = Tensor(rng.standard_normal((4, 16)).astype(np.float32))
    with autocast("fp16"):
        (lin(x) * 1e-8).sum().backward()  # tiny grads: below fp16's 2^-24
    assert not lin.weight.grad.any()
    lin.zero_grad()
    with autocast("fp16"):
        (lin(x) * 1e-8 * 2.0**16).sum().backward()  # scaled: representable
    assert lin.weight.grad.all()


def test_autocast_rejects_unknown_format():
    with pytest.raises(ValueError, match="format"), autocast("fp8"):
        pass
