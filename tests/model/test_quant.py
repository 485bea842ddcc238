"""minitorch.model.quant against torch's quantized tensors and closed-form bounds.

torch quantizes float32 (scales in float32, so a value within 1e-7 of a rounding tie may
round the other way): the cases use weights away from ties.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.model.quant import (
    dequant_matmul,
    dequantize,
    pack_int4,
    qrange,
    quantize,
    rtn,
    unpack_int4,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

W = np.random.default_rng(0).standard_normal((6, 64)) * 2


@pytest.mark.parametrize("granularity", ["tensor", "channel", 16, 8])
@pytest.mark.parametrize("bits", [4, 8])
def test_asymmetric_matches_torch_quantize_per_channel(granularity, bits):
    qt = quantize(W, bits, granularity=granularity)
    g = qt.group_size
    rows = torch.from_numpy(W.reshape(-1, g)).float()
    scale = torch.from_numpy(qt.scale.reshape(-1))
    zero = torch.from_numpy(qt.zero.reshape(-1).astype(np.int64))
    want = torch.quantize_per_channel(rows, scale, zero, 0, torch.quint8).int_repr().numpy()
    lo, hi = qrange(bits, symmetric=False)
    assert np.array_equal(qt.q.reshape(-1, g), np.clip(want, lo, hi))


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("granularity", ["tensor", "channel", 16])
@pytest.mark.parametrize("bits", [3, 4, 8])
def test_round_trip_within_half_a_step(symmetric, granularity, bits):
    qt = quantize(W, bits, symmetric=symmetric, granularity=granularity)
    lo, hi = qrange(bits, symmetric)
    assert qt.q.min() >= lo and qt.q.max() <= hi
    bound = np.repeat(qt.scale, qt.group_size, axis=1) / 2
    assert np.all(np.abs(dequantize(qt) - W) <= bound * (1 + 1e-12))


def test_symmetric_int8_matches_torch_per_tensor():
    qt = quantize(W, 8, symmetric=True, granularity="tensor")
    x = torch.from_numpy(W).float()
    want = torch.quantize_per_tensor(x, float(qt.scale[0, 0]), 0, torch.qint8)
    assert np.array_equal(qt.q, want.int_repr().numpy())


def test_finer_groups_err_less_and_cost_more_bytes():
    errs = [np.abs(rtn(W, 4, granularity=g) - W).mean() for g in ("tensor", "channel", 16)]
    assert errs[0] > errs[1] > errs[2]
    assert quantize(W, 4, granularity=16).nbytes() > quantize(W, 4, granularity="channel").nbytes()


def test_pack_int4_layout_and_round_trip():
    assert pack_int4(np.array([[1, 2]])).tolist() == [[0x21]]
    q = np.random.default_rng(1).integers(-8, 8, (5, 32)).astype(np.int8)
    p = pack_int4(q)
    assert p.dtype == np.uint8 and p.nbytes == q.size // 2
    assert np.array_equal(unpack_int4(p), q)
    u = q.astype(np.int16) + 8
    assert np.array_equal(unpack_int4(pack_int4(u), signed=False), u)


def test_dequant_matmul_equals_dense():
    qt = quantize(W, 4, granularity=16)
    x = np.random.default_rng(2).standard_normal((3, 64))
    assert np.allclose(dequant_matmul(x, qt, block=4), x @ dequantize(qt).T)


def test_zero_rows_do_not_divide_by_zero():
    w = np.zeros((2, 8))
    assert np.array_equal(rtn(w, 4, granularity=4), w)
