"""Graders of lab 09: the reference passes; realistic wrong answers and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.model.attention as attention
import minitorch.model.blocks as blocks
import minitorch.model.positions as positions
from a2s.checks import lab09
from a2s.checks.core import ReferenceCalledError
from minitorch.autograd import Tensor
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")
sdpa = unblocked(attention.scaled_dot_product_attention)  # cloned before any guard is active
rope_tables, apply_rope = unblocked(positions.rope_tables), unblocked(positions.apply_rope)
rms_norm, silu = unblocked(blocks.rms_norm), unblocked(blocks.silu)


def softmax_attention(q, k, v, scale, diagonal=0, mask=True):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool), k=diagonal), s, -np.inf)
    with np.errstate(invalid="ignore"):  # a fully masked row is the "diagonal" mistake: NaN
        p = np.exp(s - s.max(-1, keepdims=True))
        return p / p.sum(-1, keepdims=True) @ v


# --------------------------------------------------------------------------- 09.1 attention
def test_causal_attention_reference_passes(capsys):
    lab09.check_causal_attention(lambda q, k, v: sdpa(q, k, v))
    assert "✔ Exercise 09.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda q, k, v: softmax_attention(q, k, v, q.shape[-1] ** -0.5, mask=False), "mask"),
        (lambda q, k, v: softmax_attention(q, k, v, 1.0), r"1/sqrt\(d\)"),
        (lambda q, k, v: softmax_attention(q, k, v, 1.0 / q.shape[-1]), "not 1/d"),
        (lambda q, k, v: softmax_attention(q, k, v, q.shape[-1] ** -0.5, diagonal=-1), "diagonal"),
    ],
)
def test_causal_attention_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_causal_attention, wrong, match=match)


def test_causal_attention_rejects_the_reference():
    rejects(
        lab09.check_causal_attention,
        lambda q, k, v: attention.scaled_dot_product_attention(q, k, v),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 09.2 GQA
def causal_attention(q, k, v):  # the student's 09.1, looked up by name by 09.2's `uses=`
    return softmax_attention(q, k, v, q.shape[-1] ** -0.5)


def gqa_right(q, k, v):
    n = q.shape[1] // k.shape[1]
    return causal_attention(q, np.repeat(k, n, axis=1), np.repeat(v, n, axis=1))


def gqa_tiled(q, k, v):
    n = q.shape[1] // k.shape[1]
    return causal_attention(q, np.tile(k, (1, n, 1, 1)), np.tile(v, (1, n, 1, 1)))


def test_gqa_passes(capsys):
    lab09.check_gqa(gqa_right)
    assert "✔ Exercise 09.2 passed" in capsys.readouterr().out


def test_gqa_rejects_the_interleaved_head_mapping():
    rejects(lab09.check_gqa, gqa_tiled, match=r"h // n_rep")


def test_gqa_rejects_the_reference():
    def via_reference(q, k, v):
        n = q.shape[1] // k.shape[1]
        return causal_attention(
            q, attention.repeat_kv(Tensor(k), n).data, attention.repeat_kv(Tensor(v), n).data
        )

    rejects(lab09.check_gqa, via_reference, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 09.3 RoPE
def rope_ref(x):
    cos, sin = rope_tables(x.shape[-2], x.shape[-1], dtype=np.float64)
    return apply_rope(Tensor(x), cos, sin).data


def rope_variant(x, exponent=2.0, half=False, sign=1.0):
    t, d = x.shape[-2:]
    theta = 10000.0 ** (-np.arange(d // 2) * exponent / d)
    ang = np.arange(t)[:, None] * theta
    c, s = np.cos(ang), sign * np.sin(ang)
    if half:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([a * c - b * s, a * s + b * c], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def test_rope_reference_passes(capsys):
    lab09.check_rope(rope_ref)
    assert "✔ Exercise 09.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda x: rope_variant(x, half=True), "adjacent pairs"),
        (lambda x: rope_variant(x, exponent=1.0), "two per pair"),
        (lambda x: rope_variant(x, sign=-1.0), r"exp\(\+j"),
        (lambda x: x + 0.0, "differs from torch"),
    ],
)
def test_rope_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_rope, wrong, match=match)


def test_rope_rejects_the_reference():
    def via_reference(x):
        cos, sin = positions.rope_tables(x.shape[-2], x.shape[-1], dtype=np.float64)
        return positions.apply_rope(Tensor(x), cos, sin).data

    rejects(lab09.check_rope, via_reference, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 09.4 ALiBi
def test_alibi_slopes_reference_passes(capsys):
    lab09.check_alibi_slopes(unblocked(positions.alibi_slopes))
    assert "✔ Exercise 09.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (
            lambda n: np.array([2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]),
            "not a power of two",
        ),
        (lambda n: np.array([2.0 ** (-8.0 * k / n) for k in range(n)]), "not 1"),
    ],
)
def test_alibi_slopes_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_alibi_slopes, wrong, match=match)


def test_alibi_slopes_rejects_the_reference():
    rejects(
        lab09.check_alibi_slopes,
        lambda n: positions.alibi_slopes(n),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 09.5 RMSNorm
def rms_ref(x, w, eps):
    return rms_norm(Tensor(x), Tensor(w), eps).data


def test_rms_norm_reference_passes(capsys):
    lab09.check_rms_norm(rms_ref)
    assert "✔ Exercise 09.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (
            lambda x, w, e: (
                (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + e) * w
            ),
            "does not subtract the mean",
        ),
        (
            lambda x, w, e: x / (np.sqrt((x * x).mean(-1, keepdims=True)) + e) * w,
            "inside the square root",
        ),
        (lambda x, w, e: x / np.sqrt((x * x).mean(-1, keepdims=True) + e), "weight"),
    ],
)
def test_rms_norm_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_rms_norm, wrong, match=match)


def test_rms_norm_rejects_the_reference():
    rejects(
        lab09.check_rms_norm,
        lambda x, w, e: blocks.rms_norm(Tensor(x), Tensor(w), e).data,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 09.6 SwiGLU
def swiglu_ref(x, w1, w3, w2):
    a, b = Tensor(x) @ Tensor(w1).T, Tensor(x) @ Tensor(w3).T
    return ((silu(a) * b) @ Tensor(w2).T).data


def sig(z):
    return 1 / (1 + np.exp(-z))


def test_swiglu_reference_passes(capsys):
    lab09.check_swiglu(swiglu_ref)
    assert "✔ Exercise 09.6 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda x, w1, w3, w2: ((x @ w1.T) * (x @ w3.T) * sig(x @ w3.T)) @ w2.T, "gate branch"),
        (lambda x, w1, w3, w2: (sig(x @ w1.T) * (x @ w3.T)) @ w2.T, "original GLU"),
        (
            lambda x, w1, w3, w2: (
                ((x @ w1) * sig(x @ w1) * (x @ w3)) @ w2
                if x.shape[1] == w1.shape[0]
                else (x @ w1.T) @ w2.T
            ),
            "out, in",
        ),
    ],
)
def test_swiglu_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_swiglu, wrong, match=match)


def test_swiglu_rejects_the_reference():
    def via_reference(x, w1, w3, w2):
        a = Tensor(x) @ Tensor(w1).T
        return ((blocks.silu(a) * (Tensor(x) @ Tensor(w3).T)) @ Tensor(w2).T).data

    rejects(lab09.check_swiglu, via_reference, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 09.7 KV cache
def kv_bytes(c, t, b, s):
    return 2 * c.n_layer * c.n_kv_head * c.head_dim * t * b * s


def test_kv_cache_bytes_passes(capsys):
    lab09.check_kv_cache_bytes(kv_bytes)
    assert "✔ Exercise 09.7 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda c, t, b, s: 2 * c.n_layer * c.n_head * c.head_dim * t * b * s, "query heads"),
        (lambda c, t, b, s: kv_bytes(c, t, b, s) // 2, "factor of 2"),
        (lambda c, t, b, s: kv_bytes(c, t, b, s) // c.n_layer, "n_layer"),
        (lambda c, t, b, s: float(kv_bytes(c, t, b, s)) + 0.5, "as an int"),
        (lambda c, t, b, s: kv_bytes(c, t, b, s) + 1, "expected"),
        (lambda c, t, b, s: "a lot", "as an int"),
    ],
)
def test_kv_cache_bytes_rejects_wrong_answers(wrong, match):
    rejects(lab09.check_kv_cache_bytes, wrong, match=match)


# --------------------------------------------------------------------------- review additions
def attention_zeroing_inputs(q, k, v):  # cheat: zero the grader's arrays, answer zeros
    for a in (q, k, v):
        a[...] = 0
    return np.zeros_like(q)


def attention_float32(q, k, v):
    f = [a.astype(np.float32) for a in (q, k, v)]
    return softmax_attention(*f, np.float32(q.shape[-1] ** -0.5))


def test_review_wrong_answers_and_cheats():
    rejects(lab09.check_causal_attention, attention_zeroing_inputs, match="differs from torch")
    rejects(lab09.check_causal_attention, attention_float32, match="compute in float64")


def attention_from_lab26(q, k, v):
    from minitorch.parallel.context import attention as causal

    return causal(q, k, v, causal=True)


def rms_norm_from_lab08(x, w, eps=1e-5):
    from minitorch.kernels.fusion import rmsnorm

    return rmsnorm(x, w, eps)


def test_other_course_implementations_are_blocked():
    for check, fn in (
        (lab09.check_causal_attention, attention_from_lab26),
        (lab09.check_rms_norm, rms_norm_from_lab08),
    ):
        rejects(check, fn, match="reference", error=ReferenceCalledError)


def test_causal_attention_needs_a_safe_softmax():
    """Without the row max, exp overflows on the large-score case: NaN, named."""

    def unsafe(q, k, v):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        e = np.where(np.tril(np.ones(s.shape[-2:], bool)), np.exp(s), 0.0)
        return e / e.sum(-1, keepdims=True) @ v

    with np.errstate(all="ignore"):
        rejects(lab09.check_causal_attention, unsafe, match="maximum score before np.exp")


def test_gqa_k_and_v_share_one_mapping():
    def mixed(q, k, v):
        n = q.shape[1] // k.shape[1]
        return causal_attention(q, np.repeat(k, n, axis=1), np.tile(v, (1, n, 1, 1)))

    rejects(lab09.check_gqa, mixed, match="same mapping")


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("09.1", "Exercise code may not call torch", "test_attempt"),
    (
        "09.1",
        "nor the `minitorch.model` reference of the piece the exercise asks you to write",
        "test_causal_attention_rejects_the_reference",
    ),
    ("09.1", "$-\\infty$ above the diagonal", "test_causal_attention_rejects_wrong_answers"),
    (
        "09.1",
        "a numerically safe softmax over the keys (subtract the row maximum)",
        "test_causal_attention_needs_a_safe_softmax",
    ),
    ("09.1", "numpy only", "test_attempt"),
    (
        "09.1",
        "*Invariant:* row 0 of the attention weights is one-hot on key 0",
        "test_causal_attention_rejects_wrong_answers",
    ),
    ("09.2", "*Invariant:* with $H_{kv} = H$ the result equals 09.1's", "test_attempt"),
    (
        "09.2",
        "give query head $h$ the K/V head $h // (H / H_{kv})$",
        "test_gqa_rejects_the_interleaved_head_mapping",
    ),
    ("09.2", "K and V mapped differently", "test_gqa_k_and_v_share_one_mapping"),
    (
        "09.3",
        "a query at $m$ and a key at $n$ must score the same as at $m + s$ and $n + s$",
        "test_rope_rejects_wrong_answers",
    ),
    (
        "09.3",
        "*Invariant:* $\\lVert \\mathrm{rope}(x)_m \\rVert = \\lVert x_m \\rVert$ (a rotation)",
        "test_rope_rejects_wrong_answers",
    ),
    (
        "09.4",
        "*Invariant:* `alibi_slopes(8)` is $1/2, 1/4, \\dots, 1/256$",
        "test_alibi_slopes_rejects_wrong_answers",
    ),
    (
        "09.5",
        "*Invariant:* every row of `rms_norm(x, 1, 0)` has mean square 1",
        "test_rms_norm_rejects_wrong_answers",
    ),
    ("09.6", "*Invariant:* with `w3 = 0` the output is 0", "test_swiglu_rejects_wrong_answers"),
    ("09.7", "the bytes (an int) of K and V", "test_kv_cache_bytes_rejects_wrong_answers"),
    (
        "09.7",
        "names counting query heads, forgetting V, forgetting layers and counting numbers "
        "instead of bytes",
        "test_kv_cache_bytes_rejects_wrong_answers",
    ),
    (
        "09.7",
        "*Invariant:* MQA's cache is $1/H$ of MHA's",
        "test_kv_cache_bytes_rejects_wrong_answers",
    ),
]


def test_kv_cache_bytes_rejects_the_reference():
    """Lab 28's bytes-per-token (the course's reference for the same count) and the grader's
    own closed form are blocked in 09.7."""

    def via_lab28(c, t, b, s):
        from minitorch.runtime.quant_serving import kv_bytes_per_token

        return kv_bytes_per_token(c, int8=False) * t * b * s // 4

    with pytest.raises(ReferenceCalledError):
        lab09.check_kv_cache_bytes(via_lab28)
