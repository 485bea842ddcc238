"""minitorch.model.qat and quant_calib: fake quantization and its straight-through gradient
against torch, QAT against PTQ on the trained tiny GPT at INT4/INT3, and KL calibration
against a plain-loop histogram search and max calibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from minitorch.autograd import Tensor, no_grad
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.gpt import GPT
from minitorch.model.qat import fake_quant, fake_quant_range, fake_quantized, qat_finetune
from minitorch.model.quant import rtn
from minitorch.model.quant_calib import (
    activations_quantized,
    calibrate,
    kl_threshold,
    max_threshold,
    quant_error,
    quantize_symmetric,
)
from minitorch.model.quant_model import linear_layers, quantized_model


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Tiny matrices: BLAS threads only contend with the other test workers."""
    with threadpool_limits(limits=1):
        yield


X, Y = task_batch(["reverse", "sort"], 128, seed=4242)


def _loss(model: GPT) -> float:
    with no_grad():
        return model.loss(X, Y, ignore=IGNORE).item()


@pytest.fixture(scope="module")
def trained() -> GPT:
    return load_pretrained()


@pytest.mark.parametrize("bits, group", [(4, 16), (3, "channel"), (8, "tensor")])
def test_fake_quant_is_lab11_rtn_forward_and_identity_backward(bits, group):
    w = np.random.default_rng(bits).standard_normal((8, 32))
    t = Tensor(w.copy(), requires_grad=True)
    out = fake_quant(t, bits, group)
    assert np.array_equal(out.data, rtn(w, bits, granularity=group))
    g = np.random.default_rng(9).standard_normal(w.shape)
    (out * Tensor(g)).sum().backward()
    assert np.array_equal(t.grad, g)


@pytest.mark.parametrize("lo, hi, bits, symmetric", [(-1.0, 1.5, 4, False), (-2.0, 2.0, 3, True)])
def test_fake_quant_range_matches_torch_forward_and_clip_mask(lo, hi, bits, symmetric):
    x = np.random.default_rng(1).uniform(-3, 3, 400)
    t = Tensor(x.copy(), requires_grad=True)
    out = fake_quant_range(t, lo, hi, bits, symmetric)
    out.sum().backward()
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale, zero, qmin = hi / qmax, 0, -qmax
    else:
        qmin, qmax = 0, 2**bits - 1
        scale = (hi - lo) / qmax
        zero = int(np.round(-lo / scale))
    ref = torch.from_numpy(x.copy()).requires_grad_()
    want = torch.fake_quantize_per_tensor_affine(ref, scale, zero, qmin, qmax)
    want.sum().backward()
    assert np.allclose(out.data, want.detach().numpy(), atol=1e-12)
    assert np.array_equal(t.grad, ref.grad.numpy())
    assert 0 < t.grad.sum() < x.size  # some values clipped, their gradient blocked


def test_fake_quantized_model_runs_the_ptq_forward_and_trains_the_fp32_weights(trained):
    model = quantized_model(trained, "fp32")
    with fake_quantized(model, 3, 16):
        assert _loss(model) == pytest.approx(_loss(quantized_model(trained, "rtn", 3, 16)))
        model.loss(X[:8], Y[:8], ignore=IGNORE).backward()
    assert all(layer.weight.grad is not None for layer in linear_layers(model).values())
    assert _loss(model) == pytest.approx(_loss(trained))  # restored outside the block


@pytest.mark.parametrize("bits", [4, 3])
def test_qat_beats_ptq_at_low_bits(trained, bits):
    ptq = quantized_model(trained, "rtn", bits, "channel")
    qat = quantized_model(qat_finetune(trained, bits, "channel", steps=25), "rtn", bits, "channel")
    assert _loss(qat) < 0.85 * _loss(ptq), (_loss(qat), _loss(ptq))


def _loop_kl_threshold(x: np.ndarray, bits: int, bins: int) -> float:
    """TensorRT's entropy calibration written with plain loops over bins and groups."""
    a = np.abs(x).ravel()
    hist, edges = np.histogram(a, bins=bins, range=(0.0, a.max()))
    levels = 2 ** (bits - 1)
    best, best_i = float("inf"), bins
    for i in range(levels, bins + 1):
        p = [float(h) for h in hist[:i]]
        p[-1] += float(hist[i:].sum())
        q = [0.0] * i
        for chunk in np.array_split(np.arange(i), levels):
            nz = [j for j in chunk if hist[j] > 0]
            for j in nz:
                q[j] = float(hist[chunk].sum()) / len(nz)
        sp, sq = sum(p), sum(q)
        kl = sum(
            pj / sp * np.log((pj / sp) / max(qj / sq, 1e-12))
            for pj, qj in zip(p, q, strict=True)
            if pj > 0
        )
        if kl < best:
            best, best_i = kl, i
    return float(edges[best_i])


@pytest.mark.parametrize("bits, bins", [(4, 64), (3, 100)])
def test_kl_threshold_matches_the_plain_loop(bits, bins):
    x = np.random.default_rng(bits).laplace(size=3000)
    assert kl_threshold(x, bits, bins) == pytest.approx(_loop_kl_threshold(x, bits, bins))


def test_kl_clips_heavy_tails_and_errs_less_than_max_at_int4():
    x = np.random.default_rng(0).standard_t(3, size=20000)
    t_max, t_kl = max_threshold(x), kl_threshold(x, 4, 512)
    assert t_kl < t_max and quant_error(x, t_kl, 4) < 0.5 * quant_error(x, t_max, 4)
    q = quantize_symmetric(x, t_kl, 4)
    assert np.abs(q).max() <= t_kl * (1 + 1e-12) and len(np.unique(q)) <= 15
    assert kl_threshold(np.zeros(5)) == 0.0
    with pytest.raises(ValueError):
        kl_threshold(x, 8, bins=64)


def test_kl_calibrated_int4_activations_beat_max_on_the_model(trained):
    calib, _ = task_batch(["reverse", "sort"], 32, seed=99)
    th = {m: calibrate(trained, calib, m, bits=4, bins=512) for m in ("max", "kl")}
    assert set(th["kl"]) == set(linear_layers(trained))
    losses = {}
    for method, thresholds in th.items():
        with activations_quantized(trained, thresholds, bits=4):
            losses[method] = _loss(trained)
    assert losses["kl"] < losses["max"], losses
    with pytest.raises(ValueError):
        calibrate(trained, calib, "mse")
