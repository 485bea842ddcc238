"""Lab 12 graders: the reference passes; wrong values, reference calls and answers that are
right but build B A or a weight gradient (the memory budget) fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.model.lora as lora
import minitorch.model.prefix as prefix
from a2s.checks import lab12
from a2s.checks.core import CheckFailure, ReferenceCalledError
from a2s.checks.lab12.memory import lora_memory_loop
from a2s.checks.lab12.prefix_memory import prefix_memory_loop
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")
fwd, bwd = unblocked(lora.lora_forward), unblocked(lora.lora_backward)
merge, unmerge = unblocked(lora.merge_weight), unblocked(lora.unmerge_weight)
multi = unblocked(lora.multi_adapter_forward)


# --------------------------------------------------------------------------- 12.1
def test_lora_passes(capsys):
    lab12.check_lora(fwd, bwd)
    assert "✔ Exercise 12.1 passed" in capsys.readouterr().out


def fwd_merged(x, w, b, a, bb, s):  # right values, builds the (d_out, d_in) update
    y = x @ (w + s * (bb @ a)).T
    return y if b is None else y + b


def bwd_with_dw(x, w, a, bb, s, gy):  # right values, computes the frozen weight's gradient
    _ = gy.T @ x
    return bwd(x, w, a, bb, s, gy)


@pytest.mark.parametrize(
    ("f", "g", "match"),
    [
        (lambda x, w, b, a, bb, s: fwd(x, w, b, a, bb, 1.0), bwd, "scale"),
        (
            fwd,
            lambda x, w, a, bb, s, gy: (*bwd(x, w, a, bb, s, gy)[:2], s * (gy @ bb) @ a),
            "frozen",
        ),
        (fwd, lambda x, w, a, bb, s, gy: bwd(x, w, a, bb, 1.0, gy), "scale"),
        (fwd, lambda x, w, a, bb, s, gy: bwd(x, w, a, bb, s, gy)[:2], "triple"),
        (fwd_merged, bwd, "never builds"),
        (fwd, bwd_with_dw, "no dW"),
        (
            fwd,
            lambda x, w, a, bb, s, gy: (
                bwd(x, w, a, bb, s, gy)[0] * 2,
                *bwd(x, w, a, bb, s, gy)[1:],
            ),
            r"dA = scale \(gy B\)\^T x\.$",
        ),
        (
            fwd,
            lambda x, w, a, bb, s, gy: (bwd(x, w, a, bb, s, gy)[0].T, *bwd(x, w, a, bb, s, gy)[1:]),
            "transposes",
        ),
    ],
)
def test_lora_rejects_wrong_and_over_budget(f, g, match):
    rejects(lab12.check_lora, f, g, match=match)


def test_lora_rejects_the_reference():
    rejects(
        lab12.check_lora, lora.lora_forward, bwd, match="lora_forward", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 12.2
def test_merge_passes(capsys):
    lab12.check_merge(merge, unmerge)
    assert "✔ Exercise 12.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("f", "g", "match"),
    [
        (lambda w, a, bb, s: w + bb @ a, unmerge, "scale B A"),
        (merge, lambda w, a, bb, s: w + s * (bb @ a), "subtracts"),
        (lambda w, a, bb, s: w.astype(np.float64) + s * (bb @ a), unmerge, "dtype"),
    ],
)
def test_merge_rejects_wrong_answers(f, g, match):
    rejects(lab12.check_merge, f, g, match=match)


def test_merge_rejects_the_reference():
    rejects(
        lab12.check_merge,
        lora.merge_weight,
        unmerge,
        match="merge_weight",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 12.3
def test_lora_memory_passes(capsys):
    lab12.check_lora_memory(lambda layers, r, itemsize: _counts(layers, r, itemsize))
    assert "✔ Exercise 12.3 passed" in capsys.readouterr().out


def test_lora_memory_rejects_the_graders_loop():
    rejects(
        lab12.check_lora_memory, lora_memory_loop, match="reference", error=ReferenceCalledError
    )


def _counts(layers, r, itemsize):
    full = sum(i * o + o for i, o in layers)
    part = sum(r * (i + o) for i, o in layers)
    return full, part, 2 * itemsize * full, 2 * itemsize * part


def test_lora_memory_rejects_wrong_answers():
    """The modelled mistakes are fed by tests/checks/test_tables.py; a cheat here."""
    rejects(
        lab12.check_lora_memory,
        lambda ls, r, it: tuple(always_equal(v) for v in _counts(ls, r, it)),
        match="subclass",
    )


def test_lora_memory_rejects_the_reference():
    def via_reference(layers, r, itemsize):
        full, part, _, _ = _counts(layers, r, itemsize)
        return (
            full,
            part,
            lora.adamw_state_bytes(full, itemsize),
            lora.adamw_state_bytes(part, itemsize),
        )

    rejects(
        lab12.check_lora_memory,
        via_reference,
        match="adamw_state_bytes",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 12.4
def test_multi_adapter_passes(capsys):
    lab12.check_multi_adapter(multi)
    assert "✔ Exercise 12.4 passed" in capsys.readouterr().out


def multi_merged(x, w, b, adapters, ids):  # right values, a merged copy of W per adapter
    y = x @ w.T + b
    for k, (a, bb, s) in enumerate(adapters):
        rows = ids == k
        y[rows] = x[rows] @ (w + s * (bb @ a)).T + b
    return y


def multi_minus_one_wraps(x, w, b, adapters, ids):  # ids -1 indexes the last adapter
    y = x @ w.T + b
    for i, k in enumerate(ids):
        a, bb, s = adapters[k]
        y[i] += s * (bb @ (a @ x[i]))
    return y


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (multi_minus_one_wraps, "base layer alone"),
        (multi_merged, "Do not merge"),
        (lambda x, w, b, adapters, ids: multi(x, w, b, adapters, ids) - b, "adds the bias b"),
    ],
)
def test_multi_adapter_rejects_wrong_and_over_budget(wrong, match):
    rejects(lab12.check_multi_adapter, wrong, match=match)


def test_multi_adapter_rejects_the_reference():
    rejects(
        lab12.check_multi_adapter,
        lora.multi_adapter_forward,
        match="multi_adapter_forward",
        error=ReferenceCalledError,
    )


def test_budgets_cannot_be_hidden_from_tracemalloc():
    """Resetting or stopping tracemalloc inside the answer is a forbidden call, not a pass."""
    from a2s.checks.core import ForbiddenCallError
    from tests.checks.test_lab12_attacks import (
        bwd,
        fwd_merged_hiding,
        fwd_merged_stopping,
        multi_merged_hiding,
    )

    for f in (fwd_merged_hiding, fwd_merged_stopping):
        with pytest.raises(ForbiddenCallError, match="tracemalloc"):
            lab12.check_lora(f, bwd)
    with pytest.raises(ForbiddenCallError, match="tracemalloc"):
        lab12.check_multi_adapter(multi_merged_hiding)


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("12.1", "Exercise code may not call torch", "test_attempt"),
    (
        "12.1",
        "nor the `minitorch` reference of the function the exercise asks you to write",
        "test_attempt",
    ),
    (
        "12.1",
        "**Budget:** on a $512 \\times 512$ layer (2 MiB of float64), each call may allocate "
        "at most 512 KiB, so computing $x(W + sBA)^\\top$ or a weight gradient fails",
        "test_budgets_cannot_be_hidden_from_tracemalloc",
    ),
    (
        "12.1",
        "The peak is measured with `tracemalloc`, which your code may not call",
        "test_budgets_cannot_be_hidden_from_tracemalloc",
    ),
    (
        "12.1",
        "*Invariant:* with `bb = 0`, `lora_forward` equals `x @ w.T + b` and `dA = 0`",
        "test_attempt",
    ),
    ("12.2", "without modifying the inputs", "test_attempt"),
    ("12.2", "*Invariant:* `merge(w, a, 0 * bb, s)` equals `w`", "test_attempt"),
    ("12.3", "*Invariant:* `lora_memory([(4, 3)], 1, 4) == (15, 7, 120, 56)`", "test_attempt"),
    ("12.3", "A frozen parameter keeps only its weight", "test_attempt"),
    (
        "12.4",
        "**Budget:** 16 rows through a $512 \\times 512$ base with 4 adapters may allocate at "
        "most 512 KiB",
        "test_budgets_cannot_be_hidden_from_tracemalloc",
    ),
    (
        "12.4",
        "*Invariant:* with every id equal to $k$, the result is `lora_forward` with adapter $k$",
        "test_attempt",
    ),
]


# --------------------------------------------------------------------------- 12.5
pfwd = unblocked(prefix.prefix_attention_forward)
pbwd = unblocked(prefix.prefix_attention_backward)


def test_prefix_attention_passes(capsys):
    lab12.check_prefix_attention(pfwd, pbwd)
    assert "✔ Exercise 12.5 passed" in capsys.readouterr().out


def _attend(q, kk, vv, add, scale, denom_from=0):
    s = q @ kk.transpose(0, 2, 1) * scale + add
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e[..., denom_from:].sum(axis=-1, keepdims=True) @ vv


def fwd_one_sequence(q, k, v, pk, pv):  # the mask of P + T keys with the queries at its start
    kk, vv = np.concatenate([pk, k], 1), np.concatenate([pv, v], 1)
    add = np.triu(np.full((q.shape[1], kk.shape[1]), -np.inf), 1)
    return _attend(q, kk, vv, add, 1 / np.sqrt(q.shape[-1]))


def fwd_appended(q, k, v, pk, pv):  # [k; pk] under the course's causal mask
    kk, vv = np.concatenate([k, pk], 1), np.concatenate([v, pv], 1)
    n, tq = kk.shape[1], q.shape[1]
    add = np.triu(np.full((n, n), -np.inf), 1)[n - tq :]
    return _attend(q, kk, vv, add, 1 / np.sqrt(q.shape[-1]))


def fwd_tokens_only(q, k, v, pk, pv):  # the softmax normalised over the real keys only
    kk, vv = np.concatenate([pk, k], 1), np.concatenate([pv, v], 1)
    p = pk.shape[1]
    add = unblocked(prefix.prefix_mask)(p, q.shape[1], k.shape[1])
    return _attend(q, kk, vv, add, 1 / np.sqrt(q.shape[-1]), denom_from=p)


def fwd_d_model(q, k, v, pk, pv):  # 1 / sqrt(H d)
    return pfwd(q * np.sqrt(q.shape[-1]) / np.sqrt(q.shape[0] * q.shape[-1]), k, v, pk, pv)


@pytest.mark.parametrize(
    ("f", "g", "match"),
    [
        (fwd_one_sequence, pbwd, "among the real tokens only"),
        (fwd_appended, pbwd, "Prepend the prefix"),
        (fwd_tokens_only, pbwd, "normalises over every key"),
        (fwd_d_model, pbwd, "not the model width"),
        (pfwd, lambda q, k, v, pk, pv, g: pbwd(q, k, v, pk, pv, g)[::-1], "dPK and dPV"),
        (pfwd, lambda q, k, v, pk, pv, g: pbwd(q, k, v, pk, pv, g)[0], r"\(dPK, dPV\)"),
    ],
)
def test_prefix_attention_rejects_wrong_answers(f, g, match):
    rejects(lab12.check_prefix_attention, f, g, match=match)


def test_prefix_hint_names_a_mistake_only_when_it_is_that_mistake():
    """A forward that is off by a constant gets the rule, not a guessed cause."""
    with pytest.raises(CheckFailure) as err:
        lab12.check_prefix_attention(lambda *a: pfwd(*a) + 1e-3, pbwd)
    text = str(err.value)
    assert "M is 0 on the P prefix columns" in text
    assert not any(m in text for m in ("Prepend", "normalises over every", "model width"))


def test_prefix_attention_rejects_the_reference():
    rejects(
        lab12.check_prefix_attention,
        prefix.prefix_attention_forward,
        pbwd,
        match="prefix_attention_forward",
        error=ReferenceCalledError,
    )


def test_prefix_attention_rejects_the_course_attention():
    from minitorch.model.attention import scaled_dot_product_attention as sdpa

    def via_sdpa(q, k, v, pk, pv):
        return sdpa(q, np.concatenate([pk, k], 1), np.concatenate([pv, v], 1))

    rejects(
        lab12.check_prefix_attention,
        via_sdpa,
        pbwd,
        match="scaled_dot_product_attention",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 12.6
def _prefix_counts(L, H, Hkv, d, P, item):
    n = 2 * L * Hkv * P * d
    return n, 2 * item * n, item * n


def test_prefix_memory_passes(capsys):
    lab12.check_prefix_memory(_prefix_counts)
    assert "✔ Exercise 12.6 passed" in capsys.readouterr().out


def test_prefix_memory_rejects_wrong_answers():
    """The modelled mistakes are fed by tests/checks/test_tables.py; a cheat here."""
    rejects(
        lab12.check_prefix_memory,
        lambda *a: tuple(always_equal(v) for v in _prefix_counts(*a)),
        match="subclass",
    )
    rejects(lab12.check_prefix_memory, lambda *a: (*_prefix_counts(*a)[:2], 0), match="merged")


def test_prefix_memory_rejects_the_reference():
    def via_reference(L, H, Hkv, d, P, item):
        n = prefix.prefix_parameter_count(L, Hkv, d, P)
        return n, 2 * item * n, item * n

    rejects(
        lab12.check_prefix_memory,
        via_reference,
        match="prefix_parameter_count",
        error=ReferenceCalledError,
    )
    rejects(
        lab12.check_prefix_memory, prefix_memory_loop, match="reference", error=ReferenceCalledError
    )


MUSTS += [
    (
        "12.5",
        "Write the softmax yourself, with numpy",
        "test_prefix_attention_rejects_the_course_attention",
    ),
    (
        "12.5",
        "torch and every `minitorch` module (the course's other attentions of labs 08, 09, 18 and "
        "26, its autograd) are refused",
        "test_attempt",
    ),
    (
        "12.6",
        "by plain arithmetic (every `minitorch` module is refused)",
        "test_attempt",
    ),
    (
        "12.5",
        "The causal mask applies **among the real tokens only**",
        "test_prefix_attention_rejects_wrong_answers",
    ),
    (
        "12.5",
        "*Invariant:* with `P = 0` the forward is plain causal attention",
        "test_attempt",
    ),
    (
        "12.6",
        "*Invariant:* `prefix_memory(1, 1, 1, 4, 1, 4) == (8, 64, 32)`",
        "test_attempt",
    ),
    (
        "12.6",
        "**every sequence's KV cache holds the prefix's keys and values**",
        "test_prefix_memory_rejects_wrong_answers",
    ),
]
