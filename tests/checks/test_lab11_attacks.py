"""Lab 11 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Frame, ``gc``
and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab11
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

TRUTH = "a2s.checks.lab11"


# --------------------------------------------------------------------------- 11.1 quantizer
def quantize_groups(w, bits, group_size, symmetric):  # also the name 11.3/11.4 look up
    out, cols = w.shape
    b = w.reshape(out, cols // group_size, group_size)
    if symmetric:
        hi = 2 ** (bits - 1) - 1
        lo = -hi
        scale = np.abs(b).max(axis=2) / hi
    else:
        lo, hi = 0, 2**bits - 1
        mn, mx = np.minimum(b.min(axis=2), 0.0), np.maximum(b.max(axis=2), 0.0)
        scale = (mx - mn) / hi
    scale = np.where(scale > 0, scale, 1.0)
    zero = np.zeros(scale.shape, np.int64) if symmetric else np.round(-mn / scale).astype(np.int64)
    q = np.clip(np.round(b / scale[..., None]) + zero[..., None], lo, hi)
    return q.reshape(out, cols).astype(np.int64), scale, zero


def dequantize_groups(q, scale, zero):
    g = q.shape[1] // scale.shape[1]
    return (q - np.repeat(zero, g, 1)) * np.repeat(scale, g, 1)


def quantize_loops(w, bits, group_size, symmetric):
    out, cols = w.shape
    n = cols // group_size
    q = np.zeros((out, cols), np.int64)
    scale, zero = np.ones((out, n)), np.zeros((out, n), np.int64)
    for r in range(out):
        for k in range(n):
            vals = w[r, k * group_size : (k + 1) * group_size].tolist()
            if symmetric:
                hi, lo, z = 2 ** (bits - 1) - 1, -(2 ** (bits - 1) - 1), 0
                s = max(map(abs, vals)) / hi
            else:
                lo, hi = 0, 2**bits - 1
                mn, mx = min([*vals, 0.0]), max([*vals, 0.0])
                s = (mx - mn) / hi
            s = s or 1.0
            if not symmetric:
                z = round(-mn / s)
            scale[r, k], zero[r, k] = s, z
            q[r, k * group_size : (k + 1) * group_size] = [
                min(max(round(v / s) + z, lo), hi) for v in vals
            ]
    return q, scale, zero


def _variant(floor=False, zero_off=0, levels=False):
    def quant(w, bits, group_size, symmetric):
        q, scale, zero = quantize_groups(w, bits, group_size, symmetric)
        if levels and not symmetric:
            scale = scale * (2**bits - 1) / 2**bits
        if floor:
            b = w.reshape(w.shape[0], -1, group_size)
            lo, hi = (
                (-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1) if symmetric else (0, 2**bits - 1)
            )
            q = np.clip(np.floor(b / scale[..., None]) + zero[..., None], lo, hi)
            q = q.reshape(w.shape).astype(np.int64)
        return q, scale, zero + (0 if symmetric else zero_off)

    return quant


def quantize_no_zero_guard(w, bits, group_size, symmetric):
    out, cols = w.shape
    b = w.reshape(out, cols // group_size, group_size)
    with np.errstate(all="ignore"):
        q, scale, zero = quantize_groups(w, bits, group_size, symmetric)
        if symmetric:
            scale = np.abs(b).max(axis=2) / (2 ** (bits - 1) - 1)
        else:
            scale = (np.maximum(b.max(2), 0) - np.minimum(b.min(2), 0)) / (2**bits - 1)
    return q, scale, zero


def _ref_quant(w, bits, group_size, symmetric):
    from minitorch.model.quant import quantize_groups as ref

    return ref(w, bits, group_size, symmetric)


def _truth_quant(w, bits, group_size, symmetric):
    from a2s.checks.lab11._truth import quantize_loop

    return quantize_loop(w, bits, group_size, symmetric)


def _torch_quant(w, bits, group_size, symmetric):
    import torch

    q, scale, zero = quantize_groups(w, bits, group_size, symmetric)
    return torch.from_numpy(q).numpy(), scale, zero


QUANT = [
    honest("11.1", "reshape into groups", lambda: lab11.check_quantize(quantize_groups)),
    honest("11.1", "plain loops", lambda: lab11.check_quantize(quantize_loops)),
    wrong(
        "11.1",
        "floor instead of round",
        lambda: lab11.check_quantize(_variant(floor=True)),
        match="Round to nearest",
    ),
    wrong(
        "11.1",
        "zero point off by one",
        lambda: lab11.check_quantize(_variant(zero_off=1)),
        match="off by one",
    ),
    wrong(
        "11.1",
        "2^b levels as steps",
        lambda: lab11.check_quantize(_variant(levels=True)),
        match="2\\^b - 1 steps",
    ),
    wrong(
        "11.1",
        "an all-zero group divides by 0",
        lambda: lab11.check_quantize(quantize_no_zero_guard),
        match="all-zero group",
    ),
    cheat(
        "11.1",
        "the reference",
        lambda: lab11.check_quantize(_ref_quant),
        match="quantize_groups",
        error=ReferenceCalledError,
    ),
    cheat(
        "11.1",
        "the grader's own loop",
        lambda: lab11.check_quantize(_truth_quant),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "11.1",
        "torch",
        lambda: lab11.check_quantize(_torch_quant),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "11.1",
        "an array whose == always says yes",
        lambda: lab11.check_quantize(
            lambda w, b, g, s: (
                (always_equal(np.zeros(w.shape, np.int64)), *quantize_groups(w, b, g, s)[1:])
            )
        ),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 11.2 packing
def pack(q):
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8)
    return (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)


def unpack(p):
    lo, hi = (p & 0xF).astype(np.int8), (p >> 4).astype(np.int8)
    out = np.empty((p.shape[0], 2 * p.shape[1]), np.int8)
    out[:, 0::2] = np.where(lo > 7, lo - 16, lo)
    out[:, 1::2] = np.where(hi > 7, hi - 16, hi)
    return out


def pack_loops(q):
    rows = [
        [(int(r[2 * k]) % 16) + 16 * (int(r[2 * k + 1]) % 16) for k in range(len(r) // 2)]
        for r in q.tolist()
    ]
    return np.array(rows, dtype=np.uint8).reshape(q.shape[0], q.shape[1] // 2)


def unpack_shift(p):
    b = p.astype(np.int8)  # reinterpret, then arithmetic shifts sign-extend
    lo = (b << 4) >> 4
    hi = b >> 4
    return np.stack([lo, hi], -1).reshape(p.shape[0], -1)


_SEEN: dict[bytes, np.ndarray] = {}


def pack_remembering(q):
    p = pack(q)
    _SEEN[p.tobytes()] = q.copy()
    return p


def unpack_replaying(p):
    return _SEEN.get(p.tobytes(), np.zeros((p.shape[0], 2 * p.shape[1]), np.int8))


def _ref_pack(q):
    from minitorch.model.quant import pack_int4

    return pack_int4(q)


def _torch_pack(q):
    import torch

    return torch.from_numpy(pack(q)).numpy()


PACK = [
    honest("11.2", "masks and shifts", lambda: lab11.check_pack_int4(pack, unpack)),
    honest("11.2", "loops, int8 shifts", lambda: lab11.check_pack_int4(pack_loops, unpack_shift)),
    wrong(
        "11.2",
        "nibbles swapped",
        lambda: lab11.check_pack_int4(lambda q: pack(q[:, ::-1])[:, ::-1], unpack),
        match="LOW nibble",
    ),
    wrong(
        "11.2",
        "no sign extension",
        lambda: lab11.check_pack_int4(pack, lambda p: unpack(p) & 0xF),
        match="sign-extend",
    ),
    wrong(
        "11.2",
        "int8 kept, one value a byte",
        lambda: lab11.check_pack_int4(lambda q: q.astype(np.uint8), unpack),
        match="half a byte|bytes, shape",
    ),
    cheat(
        "11.2",
        "the reference",
        lambda: lab11.check_pack_int4(_ref_pack, unpack),
        match="pack_int4",
        error=ReferenceCalledError,
    ),
    cheat(
        "11.2",
        "unpack replays what pack saw",
        lambda: lab11.check_pack_int4(pack_remembering, unpack_replaying),
        match="the grader's own bytes",
    ),
    cheat(
        "11.2",
        "torch",
        lambda: lab11.check_pack_int4(_torch_pack, unpack),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "11.2",
        "an array whose == always says yes",
        lambda: lab11.check_pack_int4(pack, lambda p: always_equal(unpack(p))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 11.3 GPTQ
def _hessian(x):
    h = 2.0 * x.T @ x / x.shape[0]
    return h + 0.01 * np.mean(np.diag(h)) * np.eye(h.shape[0])


def gptq(w, x, bits, group_size, feedback=True, hessian=True):
    w = np.array(w, dtype=np.float64)
    cols = w.shape[1]
    h = _hessian(x) if hessian else np.eye(cols)
    u = np.linalg.cholesky(np.linalg.inv(h)).T
    w_hat = np.empty_like(w)
    for i in range(cols):
        if i % group_size == 0:
            _, scale, zero = quantize_groups(w[:, i : i + group_size], bits, group_size, False)
        q = np.clip(np.round(w[:, i : i + 1] / scale) + zero, 0, 2**bits - 1)
        w_hat[:, i] = ((q - zero) * scale)[:, 0]
        if feedback:
            err = (w[:, i] - w_hat[:, i]) / u[i, i]
            w[:, i + 1 :] -= np.outer(err, u[i, i + 1 :])
    return w_hat


def gptq_obq(w, x, bits, group_size):
    """The OBQ form: update with the inverse Hessian, then remove column i from it."""
    w = np.array(w, dtype=np.float64)
    hinv = np.linalg.inv(_hessian(x))
    w_hat = np.empty_like(w)
    for i in range(w.shape[1]):
        if i % group_size == 0:
            _, scale, zero = quantize_groups(w[:, i : i + group_size], bits, group_size, False)
        q = np.clip(np.round(w[:, i : i + 1] / scale) + zero, 0, 2**bits - 1)
        w_hat[:, i] = ((q - zero) * scale)[:, 0]
        err = (w[:, i] - w_hat[:, i]) / hinv[i, i]
        w[:, i + 1 :] -= np.outer(err, hinv[i, i + 1 :])
        hinv = hinv - np.outer(hinv[:, i], hinv[i, :]) / hinv[i, i]
    return w_hat


def _ref_gptq(w, x, bits, group_size):
    from minitorch.model.quant_gptq import gptq as ref

    return ref(w, x, bits, group_size)


def _torch_gptq(w, x, bits, group_size):
    import torch

    torch.linalg.cholesky(torch.from_numpy(_hessian(x)))
    return gptq(w, x, bits, group_size)


def _finer_grid(w, x, bits, group_size):
    return gptq(w, x, 8, group_size)  # 256 levels where 2^bits are allowed


GPTQ = [
    honest("11.3", "Cholesky of H^-1", lambda: lab11.check_gptq(gptq)),
    honest("11.3", "OBQ inverse-Hessian update", lambda: lab11.check_gptq(gptq_obq)),
    wrong(
        "11.3",
        "no error feedback (RTN)",
        lambda: lab11.check_gptq(lambda w, x, b, g: gptq(w, x, b, g, feedback=False)),
        match="no better than",
    ),
    wrong(
        "11.3",
        "feedback with H = I",
        lambda: lab11.check_gptq(lambda w, x, b, g: gptq(w, x, b, g, hessian=False)),
        match="no better than",
    ),
    wrong(
        "11.3",
        "unquantized weights returned",
        lambda: lab11.check_gptq(lambda w, x, b, g: w),
        match="2\\^bits distinct values",
    ),
    cheat(
        "11.3",
        "the reference",
        lambda: lab11.check_gptq(_ref_gptq),
        match="gptq",
        error=ReferenceCalledError,
    ),
    cheat(
        "11.3",
        "8 bits where 4 are asked",
        lambda: lab11.check_gptq(_finer_grid),
        match="2\\^bits distinct values",
    ),
    cheat(
        "11.3",
        "torch cholesky",
        lambda: lab11.check_gptq(_torch_gptq),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "11.3",
        "the grader's own RTN",
        lambda: lab11.check_gptq(
            lambda w, x, b, g: __import__("a2s.checks.lab11._truth", fromlist=["x"]).rtn(w, b, g)
        ),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "11.3",
        "an array whose == always says yes",
        lambda: lab11.check_gptq(lambda w, x, b, g: always_equal(gptq(w, x, b, g))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 11.4 AWQ
def awq(w, x, bits, group_size):
    act = np.maximum(np.abs(x).mean(axis=0), 1e-8)
    y = x @ w.T
    best, best_s = np.inf, np.ones(w.shape[1])
    for alpha in np.arange(20) / 20:
        s = act**alpha
        s = s / np.sqrt(s.max() * s.min())
        w_hat = dequantize_groups(*quantize_groups(w * s, bits, group_size, False)) / s
        err = np.sum((y - x @ w_hat.T) ** 2)
        if err < best:
            best, best_s = err, s
    return best_s


def awq_linspace(w, x, bits, group_size):
    act = np.abs(x).mean(0) + 1e-12
    errs = []
    for alpha in np.linspace(0, 0.95, 20):
        s = act**alpha
        w_hat = dequantize_groups(*quantize_groups(w * s, bits, group_size, False)) / s
        errs.append((float(np.square(x @ (w - w_hat).T).sum()), alpha))
    return act ** min(errs)[1]


def _ref_awq(w, x, bits, group_size):
    from minitorch.model.quant_awq import awq_scales

    return awq_scales(w, x, bits, group_size)


def _torch_awq(w, x, bits, group_size):
    import torch

    return torch.from_numpy(awq(w, x, bits, group_size)).numpy()


def _truth_awq(w, x, bits, group_size):
    from a2s.checks.lab11._truth import rel_error, rtn

    act = np.abs(x).mean(0)
    return min(
        (act**a for a in np.arange(20) / 20),
        key=lambda s: rel_error(w, rtn(w * s, bits, group_size) / s, x),
    )


AWQ = [
    honest("11.4", "search alpha, normalised s", lambda: lab11.check_awq_scales(awq)),
    honest("11.4", "np.linspace, min over pairs", lambda: lab11.check_awq_scales(awq_linspace)),
    wrong(
        "11.4",
        "scales from the weights",
        lambda: lab11.check_awq_scales(lambda w, x, b, g: np.abs(w).mean(0) ** 0.5),
        match="ACTIVATIONS",
    ),
    wrong(
        "11.4",
        "s = 1 (alpha 0 only)",
        lambda: lab11.check_awq_scales(lambda w, x, b, g: np.ones(w.shape[1])),
        match="Search s",
    ),
    wrong(
        "11.4",
        "inverted scales",
        lambda: lab11.check_awq_scales(lambda w, x, b, g: 1 / awq(w, x, b, g)),
        match="ACTIVATIONS|Search",
    ),
    cheat(
        "11.4",
        "the reference",
        lambda: lab11.check_awq_scales(_ref_awq),
        match="awq_scales",
        error=ReferenceCalledError,
    ),
    cheat(
        "11.4",
        "torch",
        lambda: lab11.check_awq_scales(_torch_awq),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "11.4",
        "the grader's own RTN to search",
        lambda: lab11.check_awq_scales(_truth_awq),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "11.4",
        "an array whose == always says yes",
        lambda: lab11.check_awq_scales(lambda w, x, b, g: always_equal(awq(w, x, b, g))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 11.5 SmoothQuant
def smooth(xa, wa, alpha):
    return np.maximum(xa, 1e-8) ** alpha / np.maximum(wa, 1e-8) ** (1 - alpha)


def smooth_logs(xa, wa, alpha):
    lx, lw = np.log(np.maximum(xa, 1e-8)), np.log(np.maximum(wa, 1e-8))
    return np.exp(alpha * lx - (1 - alpha) * lw)


def _ref_smooth(xa, wa, alpha):
    from minitorch.model.quant_smooth import smooth_scales

    return smooth_scales(xa, wa, alpha)


def _torch_smooth(xa, wa, alpha):
    import torch

    return (torch.from_numpy(np.asarray(xa, float)) ** alpha).numpy() / np.maximum(wa, 1e-8) ** (
        1 - alpha
    )


SMOOTH = [
    honest("11.5", "the closed form", lambda: lab11.check_smooth_scales(smooth)),
    honest("11.5", "through logarithms", lambda: lab11.check_smooth_scales(smooth_logs)),
    wrong(
        "11.5",
        "exponents swapped",
        lambda: lab11.check_smooth_scales(lambda xa, wa, a: smooth(xa, wa, 1 - a)),
        match="swapped",
    ),
    wrong(
        "11.5",
        "inverted",
        lambda: lab11.check_smooth_scales(lambda xa, wa, a: 1 / smooth(xa, wa, a)),
        match="Inverted",
    ),
    wrong(
        "11.5",
        "weights to the alpha too",
        lambda: lab11.check_smooth_scales(
            lambda xa, wa, a: np.maximum(xa, 1e-8) ** a / np.maximum(wa, 1e-8) ** a
        ),
        match="exponent 1 - alpha, not alpha",
    ),
    cheat(
        "11.5",
        "the reference",
        lambda: lab11.check_smooth_scales(_ref_smooth),
        match="smooth_scales",
        error=ReferenceCalledError,
    ),
    cheat(
        "11.5",
        "torch pow",
        lambda: lab11.check_smooth_scales(_torch_smooth),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "11.5",
        "an array whose == always says yes",
        lambda: lab11.check_smooth_scales(lambda xa, wa, a: always_equal(smooth(xa, wa, a))),
        match="subclass",
    ),
    cheat(
        "11.5",
        "replays the invariant",
        lambda: lab11.check_smooth_scales(lambda xa, wa, a: np.full(np.shape(xa), 2.0)),
        match="differs",
    ),
    wrong(
        "11.5",
        "X and W swapped",
        lambda: lab11.check_smooth_scales(lambda xa, wa, a: smooth(wa, xa, a)),
        match="X and W are swapped",
    ),
]

ATTEMPTS = QUANT + PACK + GPTQ + AWQ + SMOOTH


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
