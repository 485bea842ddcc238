"""Lab 09 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Frame, ``gc``
and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from a2s.checks import lab09
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

TRUTH = "a2s.checks.lab09"


# --------------------------------------------------------------------------- 09.1 attention
def causal_attention(q, k, v):  # also the name 09.2's `uses=` looks up
    d, t = q.shape[-1], q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    s = np.where(np.triu(np.ones((t, t), bool), k=1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def attention_loops(q, k, v):
    out = np.zeros_like(q)
    scale = 1 / math.sqrt(q.shape[-1])
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            for i in range(q.shape[2]):
                scores = [float(q[b, h, i] @ k[b, h, j]) * scale for j in range(i + 1)]
                top = max(scores)
                w = [math.exp(s - top) for s in scores]
                total = sum(w)
                out[b, h, i] = sum(wj / total * v[b, h, j] for j, wj in enumerate(w))
    return out


def attention_einsum_big_negative(q, k, v):
    s = np.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
    s = s + np.triu(np.full(s.shape[-2:], -1e300), k=1)  # a huge negative, not -inf
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return np.einsum("bhij,bhjd->bhid", e / e.sum(-1, keepdims=True), v)


def attention_unsafe(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.where(np.tril(np.ones(s.shape[-2:], bool)), np.exp(s), 0.0)
    return e / e.sum(-1, keepdims=True) @ v


def attention_no_mask(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def attention_scale_d(q, k, v):
    return causal_attention(q * np.sqrt(q.shape[-1]) / q.shape[-1], k, v)


def attention_zero_masked(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = s * np.tril(np.ones(s.shape[-2:]))  # masked scores set to 0, not -inf
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def _torch_attention(q, k, v):
    import torch
    import torch.nn.functional as F

    t = [torch.from_numpy(a) for a in (q, k, v)]
    return F.scaled_dot_product_attention(*t, is_causal=True).numpy()


def _ref_attention(q, k, v):
    from minitorch.model.attention import scaled_dot_product_attention

    return scaled_dot_product_attention(q, k, v)


def _paged_attention(q, k, v):  # lab 18's attention over a one-block paged cache
    from minitorch.runtime.paged_attention import paged_attention

    b, _h, t, _d = q.shape
    out = np.empty_like(q)
    for i in range(b):
        kc = np.swapaxes(k[i], 0, 1)[None]  # (1 block, T, H, d)
        vc = np.swapaxes(v[i], 0, 1)[None]
        out[i] = np.swapaxes(paged_attention(np.swapaxes(q[i], 0, 1), kc, vc, [0], t), 0, 1)
    return out


def _truth_attention(q, k, v):
    from a2s.checks.lab09.attention import _plain

    return _plain(q, k, v, q.shape[-1] ** -0.5, 0)


ATTENTION = [
    honest(
        "09.1",
        "plain Python loops over rows",
        lambda: lab09.check_causal_attention(attention_loops),
    ),
    honest(
        "09.1",
        "einsum, -1e300 instead of -inf",
        lambda: lab09.check_causal_attention(attention_einsum_big_negative),
    ),
    wrong(
        "09.1",
        "no causal mask",
        lambda: lab09.check_causal_attention(attention_no_mask),
        match="mask the scores above the diagonal",
    ),
    wrong(
        "09.1",
        "scale 1/d",
        lambda: lab09.check_causal_attention(attention_scale_d),
        match="not 1/d",
    ),
    wrong(
        "09.1",
        "masked scores set to 0",
        lambda: lab09.check_causal_attention(attention_zero_masked),
        match="-inf",
    ),
    wrong(
        "09.1",
        "softmax without the row max",
        lambda: lab09.check_causal_attention(attention_unsafe),
        match="maximum score before np.exp",
    ),
    cheat(
        "09.1",
        "torch SDPA",
        lambda: lab09.check_causal_attention(_torch_attention),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "09.1",
        "the reference",
        lambda: lab09.check_causal_attention(_ref_attention),
        match="scaled_dot_product_attention",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.1",
        "lab 18's paged attention",
        lambda: lab09.check_causal_attention(_paged_attention),
        match="paged_attention",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.1",
        "the grader's own numpy truth",
        lambda: lab09.check_causal_attention(_truth_attention),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "09.1",
        "an array whose == always says yes",
        lambda: lab09.check_causal_attention(lambda q, k, v: always_equal(np.zeros_like(q))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 09.2 GQA
def gqa_repeat(q, k, v):
    n = q.shape[1] // k.shape[1]
    return causal_attention(q, np.repeat(k, n, axis=1), np.repeat(v, n, axis=1))


def gqa_grouped(q, k, v):
    b, h, t, d = q.shape
    hkv = k.shape[1]
    qg = q.reshape(b, hkv, h // hkv, t, d)
    out = causal_attention(qg, k[:, :, None], v[:, :, None])  # broadcast over the group
    return out.reshape(b, h, t, d)


def gqa_tiled(q, k, v):
    n = q.shape[1] // k.shape[1]
    return causal_attention(q, np.tile(k, (1, n, 1, 1)), np.tile(v, (1, n, 1, 1)))


def gqa_mixed(q, k, v):
    n = q.shape[1] // k.shape[1]
    return causal_attention(q, np.repeat(k, n, axis=1), np.tile(v, (1, n, 1, 1)))


def gqa_first_kv_head(q, k, v):
    return causal_attention(
        q, np.broadcast_to(k[:, :1], q.shape), np.broadcast_to(v[:, :1], q.shape)
    )


def _ref_gqa(q, k, v):
    from minitorch.autograd import Tensor
    from minitorch.model.attention import repeat_kv

    n = q.shape[1] // k.shape[1]
    return causal_attention(q, repeat_kv(Tensor(k), n).data, repeat_kv(Tensor(v), n).data)


def _paged_gqa(q, k, v):
    return _paged_attention(q, k, v)


def _torch_gqa(q, k, v):
    import torch

    n = q.shape[1] // k.shape[1]
    t = [torch.from_numpy(a) for a in (q, k, v)]
    kk, vv = t[1].repeat_interleave(n, 1), t[2].repeat_interleave(n, 1)
    return causal_attention(q, kk.numpy(), vv.numpy())


def _truth_gqa(q, k, v):
    from a2s.checks.lab09 import attention

    n = q.shape[1] // k.shape[1]
    return attention._plain(q, np.repeat(k, n, 1), np.repeat(v, n, 1), q.shape[-1] ** -0.5, 0)


GQA = [
    honest("09.2", "np.repeat then 09.1", lambda: lab09.check_gqa(gqa_repeat)),
    honest("09.2", "reshape the queries into groups", lambda: lab09.check_gqa(gqa_grouped)),
    wrong("09.2", "np.tile (h % n_kv)", lambda: lab09.check_gqa(gqa_tiled), match="h // n_rep"),
    wrong("09.2", "K repeated, V tiled", lambda: lab09.check_gqa(gqa_mixed), match="same mapping"),
    wrong(
        "09.2",
        "every query head on K/V head 0",
        lambda: lab09.check_gqa(gqa_first_kv_head),
        match="h // n_rep",
    ),
    cheat(
        "09.2",
        "the reference's repeat_kv",
        lambda: lab09.check_gqa(_ref_gqa),
        match="repeat_kv",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.2",
        "lab 18's paged attention (GQA built in)",
        lambda: lab09.check_gqa(_paged_gqa),
        match="paged_attention",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.2",
        "torch repeat_interleave",
        lambda: lab09.check_gqa(_torch_gqa),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "09.2",
        "the grader's own numpy truth",
        lambda: lab09.check_gqa(_truth_gqa),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "09.2",
        "an array whose == always says yes",
        lambda: lab09.check_gqa(lambda q, k, v: always_equal(np.zeros_like(q))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 09.3 RoPE
def rope_pairs(x):
    t, d = x.shape[-2:]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    ang = np.arange(t)[:, None] * theta
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = np.cos(ang), np.sin(ang)
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def rope_complex(x):
    t, d = x.shape[-2:]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(np.arange(t), 10000.0 ** (-np.arange(0, d, 2) / d)))
    return np.stack([z.real, z.imag], -1).reshape(x.shape)


def rope_variant(x, exponent=2.0, half=False, sign=1.0, first=0):
    t, d = x.shape[-2:]
    theta = 10000.0 ** (-np.arange(d // 2) * exponent / d)
    ang = np.arange(first, first + t)[:, None] * theta
    c, s = np.cos(ang), sign * np.sin(ang)
    if half:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([a * c - b * s, a * s + b * c], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def _torch_rope(x):
    import torch

    from a2s.checks.lab09._truth import torch_rope

    return torch_rope(torch.from_numpy(x)).numpy()


def _truth_rope(x):
    from a2s.checks.lab09.positions import _rope_np

    return _rope_np(x, 2.0, False, 1.0)


def _ref_rope(x):
    from minitorch.autograd import Tensor
    from minitorch.model.positions import apply_rope, rope_tables

    cos, sin = rope_tables(x.shape[-2], x.shape[-1], dtype=np.float64)
    return apply_rope(Tensor(x), cos, sin).data


def _paged_rope(x):  # lab 18's private RoPE
    from minitorch.runtime import paged_model

    t, d = x.shape[-2:]
    ang = np.arange(t)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    return paged_model._rope(x, np.cos(ang), np.sin(ang))


ROPE = [
    honest("09.3", "cos/sin of adjacent pairs", lambda: lab09.check_rope(rope_pairs)),
    honest("09.3", "complex numbers", lambda: lab09.check_rope(rope_complex)),
    wrong(
        "09.3",
        "GPT-NeoX halves",
        lambda: lab09.check_rope(lambda x: rope_variant(x, half=True)),
        match="adjacent pairs",
    ),
    wrong(
        "09.3",
        "theta exponent per pair",
        lambda: lab09.check_rope(lambda x: rope_variant(x, exponent=1.0)),
        match="two per pair",
    ),
    wrong(
        "09.3",
        "rotated the wrong way",
        lambda: lab09.check_rope(lambda x: rope_variant(x, sign=-1.0)),
        match=r"exp\(\+j",
    ),
    wrong(
        "09.3",
        "positions from 1",
        lambda: lab09.check_rope(lambda x: rope_variant(x, first=1)),
        match="start at 0",
    ),
    cheat(
        "09.3",
        "the torch twin",
        lambda: lab09.check_rope(_torch_rope),
        match="torch",
        error=(ForbiddenCallError, ReferenceCalledError),
    ),
    cheat(
        "09.3",
        "the grader's own numpy rotation",
        lambda: lab09.check_rope(_truth_rope),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "09.3",
        "the reference",
        lambda: lab09.check_rope(_ref_rope),
        match="rope",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.3",
        "lab 18's _rope",
        lambda: lab09.check_rope(_paged_rope),
        match="_rope",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.3",
        "an array whose == always says yes",
        lambda: lab09.check_rope(lambda x: always_equal(x.copy())),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 09.4 ALiBi
def slopes_closed_form(n):
    p = 2 ** math.floor(math.log2(n))
    base = [2.0 ** (-8.0 * k / p) for k in range(1, p + 1)]
    extra = [2.0 ** (-8.0 * (2 * k - 1) / (2 * p)) for k in range(1, n - p + 1)]
    return np.array(base + extra)


def slopes_recursive(n):
    if n & (n - 1) == 0:
        start = 2.0 ** (-8.0 / n)
        return [start**k for k in range(1, n + 1)]
    p = 1 << (n.bit_length() - 1)
    return slopes_recursive(p) + slopes_recursive(2 * p)[0::2][: n - p]


def _torch_slopes(n):
    from a2s.checks.lab09._truth import torch_alibi_slopes

    return torch_alibi_slopes(n).numpy()


def _truth_slopes(n):
    from a2s.checks.lab09.positions import _slopes

    return _slopes(n)


def _ref_slopes(n):
    from minitorch.model.positions import alibi_slopes

    return alibi_slopes(n)


ALIBI = [
    honest(
        "09.4",
        "closed form of the odd slopes",
        lambda: lab09.check_alibi_slopes(slopes_closed_form),
    ),
    honest("09.4", "recursion, a list", lambda: lab09.check_alibi_slopes(slopes_recursive)),
    wrong(
        "09.4",
        "2^(-8k/n) for every n",
        lambda: lab09.check_alibi_slopes(
            lambda n: [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]
        ),
        match="not a power of two",
    ),
    wrong(
        "09.4",
        "the odd extras",
        lambda: lab09.check_alibi_slopes(
            lambda n: (
                slopes_recursive(1 << (n.bit_length() - 1))
                + slopes_recursive(2 << (n.bit_length() - 1))[1::2][
                    : n - (1 << (n.bit_length() - 1))
                ]
            )
        ),
        match="starting with the first",
    ),
    wrong(
        "09.4",
        "starts at 1",
        lambda: lab09.check_alibi_slopes(lambda n: [2.0 ** (-8.0 * k / n) for k in range(n)]),
        match="not 1",
    ),
    cheat(
        "09.4",
        "the torch twin",
        lambda: lab09.check_alibi_slopes(_torch_slopes),
        match="torch",
        error=(ForbiddenCallError, ReferenceCalledError),
    ),
    cheat(
        "09.4",
        "the grader's closed form",
        lambda: lab09.check_alibi_slopes(_truth_slopes),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "09.4",
        "the reference",
        lambda: lab09.check_alibi_slopes(_ref_slopes),
        match="alibi_slopes",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.4",
        "replays the named head counts",
        lambda: lab09.check_alibi_slopes(
            lambda n: slopes_recursive(n) if n in (1, 2, 8, 16, 6, 12, 3) else [0.5] * n
        ),
        match="fresh case",
    ),
]


# --------------------------------------------------------------------------- 09.5 RMSNorm
def rms_loop(x, weight, eps=1e-5):
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for i, row in enumerate(flat):
        ms = sum(float(v) ** 2 for v in row) / len(row)
        out[i] = row / math.sqrt(ms + eps) * weight
    return out.reshape(x.shape)


class RMS:
    def __call__(self, x, weight, eps=1e-5):
        return x * (np.mean(np.square(x), axis=-1, keepdims=True) + eps) ** -0.5 * weight


def _torch_rms(x, w, eps=1e-5):
    import torch

    return torch.nn.functional.rms_norm(
        torch.from_numpy(x), (x.shape[-1],), torch.from_numpy(w), eps
    ).numpy()


def _ref_rms(x, w, eps=1e-5):
    from minitorch.autograd import Tensor
    from minitorch.model.blocks import rms_norm

    return rms_norm(Tensor(x), Tensor(w), eps).data


def _fusion_rms(x, w, eps=1e-5):
    from minitorch.kernels.fusion import rmsnorm

    return rmsnorm(x, w, eps)


RMS_NORM = [
    honest("09.5", "a loop over rows", lambda: lab09.check_rms_norm(rms_loop)),
    honest("09.5", "a class, power -1/2", lambda: lab09.check_rms_norm(RMS())),
    wrong(
        "09.5",
        "centred (layer norm)",
        lambda: lab09.check_rms_norm(
            lambda x, w, e=1e-5: (
                (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + e) * w
            )
        ),
        match="does not subtract the mean",
    ),
    wrong(
        "09.5",
        "eps outside the root",
        lambda: lab09.check_rms_norm(
            lambda x, w, e=1e-5: x / (np.sqrt((x * x).mean(-1, keepdims=True)) + e) * w
        ),
        match="inside the square root",
    ),
    wrong(
        "09.5",
        "sum of squares, not the mean",
        lambda: lab09.check_rms_norm(
            lambda x, w, e=1e-5: x / np.sqrt((x * x).sum(-1, keepdims=True) + e) * w
        ),
        match="mean of x\\^2",
    ),
    wrong(
        "09.5",
        "no weight",
        lambda: lab09.check_rms_norm(
            lambda x, w, e=1e-5: x / np.sqrt((x * x).mean(-1, keepdims=True) + e)
        ),
        match="Multiply by the weight",
    ),
    cheat(
        "09.5",
        "torch rms_norm",
        lambda: lab09.check_rms_norm(_torch_rms),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "09.5",
        "the reference",
        lambda: lab09.check_rms_norm(_ref_rms),
        match="rms_norm",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.5",
        "lab 08's rmsnorm",
        lambda: lab09.check_rms_norm(_fusion_rms),
        match="rmsnorm",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.5",
        "an array whose == always says yes",
        lambda: lab09.check_rms_norm(lambda x, w, e=1e-5: always_equal(x.copy())),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 09.6 SwiGLU
def swiglu(x, w1, w3, w2):
    g = x @ w1.T
    return (g / (1 + np.exp(-g)) * (x @ w3.T)) @ w2.T


def swiglu_tanh(x, w1, w3, w2):
    g = np.einsum("nc,hc->nh", x, w1)
    sig = 0.5 * (1 + np.tanh(g / 2))  # sigmoid through tanh
    return np.einsum("nh,ch->nc", g * sig * np.einsum("nc,hc->nh", x, w3), w2)


def _sig(z):
    return 1 / (1 + np.exp(-z))


def _torch_swiglu(x, w1, w3, w2):
    import torch

    t = [torch.from_numpy(a) for a in (x, w1, w3, w2)]
    return ((torch.nn.functional.silu(t[0] @ t[1].T) * (t[0] @ t[2].T)) @ t[3].T).numpy()


def _ref_silu(x, w1, w3, w2):
    from minitorch.autograd import Tensor
    from minitorch.model.blocks import silu

    return (silu(Tensor(x @ w1.T)).data * (x @ w3.T)) @ w2.T


def _truth_swiglu(x, w1, w3, w2):
    from a2s.checks.lab09.blocks import _swiglu

    return _swiglu(x, w1, w3, w2)


SWIGLU = [
    honest("09.6", "silu as z / (1 + e^-z)", lambda: lab09.check_swiglu(swiglu)),
    honest("09.6", "einsum, sigmoid via tanh", lambda: lab09.check_swiglu(swiglu_tanh)),
    wrong(
        "09.6",
        "silu on the up branch",
        lambda: lab09.check_swiglu(
            lambda x, w1, w3, w2: ((x @ w1.T) * (x @ w3.T) * _sig(x @ w3.T)) @ w2.T
        ),
        match="silu goes on the gate|swapped",
    ),
    wrong(
        "09.6",
        "sigmoid gate (GLU)",
        lambda: lab09.check_swiglu(lambda x, w1, w3, w2: (_sig(x @ w1.T) * (x @ w3.T)) @ w2.T),
        match="not sigmoid",
    ),
    wrong(
        "09.6",
        "GELU gate (GeGLU)",
        lambda: lab09.check_swiglu(
            lambda x, w1, w3, w2: (
                (
                    0.5
                    * (x @ w1.T)
                    * (1 + np.tanh(0.7978845608028654 * ((x @ w1.T) + 0.044715 * (x @ w1.T) ** 3)))
                    * (x @ w3.T)
                )
                @ w2.T
            )
        ),
        match="GeGLU",
    ),
    cheat(
        "09.6",
        "torch silu",
        lambda: lab09.check_swiglu(_torch_swiglu),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "09.6",
        "the reference's silu",
        lambda: lab09.check_swiglu(_ref_silu),
        match="silu",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.6",
        "the grader's truth",
        lambda: lab09.check_swiglu(_truth_swiglu),
        match="torch|" + TRUTH,
        error=(ForbiddenCallError, ReferenceCalledError),
    ),
    cheat(
        "09.6",
        "an array whose == always says yes",
        lambda: lab09.check_swiglu(lambda x, w1, w3, w2: always_equal(x.copy())),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 09.7 KV cache
def kv_bytes(c, t, b, s):
    return 2 * c.n_layer * c.n_kv_head * c.head_dim * t * b * s


def kv_per_layer(c, t, b, s):
    per_token_layer = 2 * c.n_kv_head * (c.d_model // c.n_head) * s
    return sum(per_token_layer * t * b for _ in range(c.n_layer))


def _quant_serving(c, t, b, s):  # lab 28's float32 bytes per token, rescaled
    from minitorch.runtime.quant_serving import kv_bytes_per_token

    return kv_bytes_per_token(c, int8=False) * t * b * s // 4


def _truth_kv(c, t, b, s):
    from a2s.checks.lab09.kv_cache import _bytes

    return _bytes(c, t, b, s, c.n_kv_head, 2)


_NAMED_KV = {(10, 1, 4): 2 * 3 * 1 * 8 * 10 * 4}

KV = [
    honest("09.7", "the one-line product", lambda: lab09.check_kv_cache_bytes(kv_bytes)),
    honest(
        "09.7",
        "summed layer by layer, head_dim from d_model",
        lambda: lab09.check_kv_cache_bytes(kv_per_layer),
    ),
    wrong(
        "09.7",
        "counts query heads",
        lambda: lab09.check_kv_cache_bytes(
            lambda c, t, b, s: 2 * c.n_layer * c.n_head * c.head_dim * t * b * s
        ),
        match="query heads",
    ),
    wrong(
        "09.7",
        "forgets V",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: kv_bytes(c, t, b, s) // 2),
        match="factor of 2",
    ),
    wrong(
        "09.7",
        "one layer",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: kv_bytes(c, t, b, s) // c.n_layer),
        match="n_layer",
    ),
    wrong(
        "09.7",
        "numbers, not bytes",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: kv_bytes(c, t, b, s) // s),
        match="itemsize",
    ),
    wrong(
        "09.7",
        "a float of bytes",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: kv_bytes(c, t, b, s) / 1.0),
        match="as an int",
    ),
    cheat(
        "09.7",
        "lab 28's kv_bytes_per_token",
        lambda: lab09.check_kv_cache_bytes(_quant_serving),
        match="kv_bytes_per_token",
        error=ReferenceCalledError,
    ),
    cheat(
        "09.7",
        "the grader's closed form",
        lambda: lab09.check_kv_cache_bytes(_truth_kv),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "09.7",
        "an int whose == always says yes",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: always_equal(0)),
        match="subclass",
    ),
    cheat(
        "09.7",
        "replays the first named answer",
        lambda: lab09.check_kv_cache_bytes(lambda c, t, b, s: _NAMED_KV.get((t, b, s), 0)),
        match="expected",
    ),
    cheat(
        "09.7",
        "torch to multiply",
        lambda: lab09.check_kv_cache_bytes(
            lambda c, t, b, s: int(__import__("torch").tensor(kv_bytes(c, t, b, s)).item())
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
]

ATTEMPTS = ATTENTION + GQA + ROPE + ALIBI + RMS_NORM + SWIGLU + KV


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
