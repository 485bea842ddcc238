"""Lab 12 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Frame, ``gc``
and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.

12.5 and 12.6 (prefix tuning), tried after the builder: forward and backward written as loops,
log-sum-exp, the softmax's Jacobian in a class, ``functools.wraps``; the modelled mistakes
(appended, one mask, real-token softmax, the model width's root, no root) and unmodelled ones
(a strict mask, dPV rows reversed: the rule, no mistake named); cheats: the reference, the
grader's torch truth, torch, lab 26's ``attention`` with ``q0 = P + T - Tq``, lab 18's paged
attention, lab 08's FlashAttention backward with padded queries, the course's autograd, lab 09's
grader attention, the answer read from the grader's frame, a gc walk, the truth rebound
mid-check, a replay of an earlier session's answers, an ndarray subclass; for 12.6 lab 34's
``kv_bytes``, MLA's ``kv_elements_per_token``, the public cases replayed, the table's truth
rebound mid-check. Found and fixed: the five course attentions and the autograd passed 12.5
(every ``minitorch`` module is now refused, and the lab 08/09/18/24/26 grader packages), the
frame read passed (each truth is computed after the call it judges), ``kv_bytes`` and
``kv_elements_per_token`` passed 12.6 (``minitorch`` refused).
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab12
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import (
    attempt_id,
    cheat,
    honest,
    judge,
    replay_public,
    wrapped,
    wrong,
)
from tests.helpers.graders import always_equal

TRUTH = "a2s.checks.lab12"
# a hint that names none of 12.5's modelled mistakes (an unmodelled wrong answer gets the rule)
NO_MISTAKE = (
    r"(?s)^(?!.*(Prepend|one sequence|normalises over every|model width|Scale the scores)).*"
)


# --------------------------------------------------------------------------- 12.1 LoRA
def fwd(x, w, b, a, bb, scale):
    y = x @ w.T + scale * ((x @ a.T) @ bb.T)
    return y if b is None else y + b


def bwd(x, w, a, bb, scale, gy):
    gh = scale * (gy @ bb)
    return gh.T @ x, scale * (gy.T @ (x @ a.T)), gy @ w + gh @ a


def fwd_einsum(x, w, b, a, bb, scale):
    h = np.einsum("nd,rd->nr", x, a)
    y = np.einsum("nd,od->no", x, w) + scale * np.einsum("nr,or->no", h, bb)
    return y + (0.0 if b is None else b)


class Backward:
    def __call__(self, x, w, a, bb, scale, gy):
        h = x @ a.T
        d_h = gy @ bb * scale
        return [d_h.T @ x, (gy * scale).T @ h, gy @ w + d_h @ a]


def fwd_merged(x, w, b, a, bb, scale):
    y = x @ (w + scale * bb @ a).T  # builds the (d_out, d_in) update
    return y if b is None else y + b


def bwd_with_dw(x, w, a, bb, scale, gy):
    _dw = gy.T @ x  # a gradient for the frozen W
    return bwd(x, w, a, bb, scale, gy)


def fwd_merged_hiding(x, w, b, a, bb, scale):
    import tracemalloc

    y = fwd_merged(x, w, b, a, bb, scale)
    tracemalloc.reset_peak()  # hide the (d_out, d_in) matrix from the budget
    return y


def fwd_merged_stopping(x, w, b, a, bb, scale):
    import tracemalloc

    y = fwd_merged(x, w, b, a, bb, scale)
    tracemalloc.stop()
    return y


def _ref_fwd(x, w, b, a, bb, scale):
    from minitorch.model.lora import lora_forward

    return lora_forward(x, w, b, a, bb, scale)


def _torch_bwd(x, w, a, bb, scale, gy):
    from a2s.checks.lab12.lora import torch_lora

    return torch_lora(x, w, None, a, bb, scale, gy)[1:]


def lora(f, b):
    return lambda: lab12.check_lora(f, b)


LORA = [
    honest("12.1", "thin matmuls", lora(fwd, bwd)),
    honest("12.1", "einsum, a class for backward", lora(fwd_einsum, Backward())),
    wrong(
        "12.1",
        "no scale on the adapter",
        lora(lambda x, w, b, a, bb, s: fwd(x, w, b, a, bb, 1.0), bwd),
        match="scale",
    ),
    wrong(
        "12.1",
        "dx without the base path",
        lora(fwd, lambda x, w, a, bb, s, gy: (*bwd(x, w, a, bb, s, gy)[:2], s * (gy @ bb) @ a)),
        match="W is frozen, but it still carries gradient",
    ),
    wrong(
        "12.1",
        "dA transposed",
        lora(
            fwd,
            lambda x, w, a, bb, s, gy: (bwd(x, w, a, bb, s, gy)[0].T, *bwd(x, w, a, bb, s, gy)[1:]),
        ),
        match="transposes",
    ),
    wrong("12.1", "forward through W + s B A", lora(fwd_merged, bwd), match="budget"),
    wrong("12.1", "a gradient for the frozen W", lora(fwd, bwd_with_dw), match="no dW"),
    cheat(
        "12.1",
        "the reference",
        lora(_ref_fwd, bwd),
        match="lora_forward",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.1",
        "the grader's torch twin",
        lora(fwd, _torch_bwd),
        match="torch|" + TRUTH,
        error=(ForbiddenCallError, ReferenceCalledError),
    ),
    cheat(
        "12.1",
        "tracemalloc.reset_peak hides B A",
        lora(fwd_merged_hiding, bwd),
        match="tracemalloc",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.1",
        "tracemalloc.stop",
        lora(fwd_merged_stopping, bwd),
        match="tracemalloc",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.1",
        "an array whose == always says yes",
        lora(lambda x, w, b, a, bb, s: always_equal(fwd(x, w, b, a, bb, s)), bwd),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 12.2 merge
def merge(w, a, bb, scale):
    return w + (scale * (bb @ a)).astype(w.dtype)


def unmerge(w, a, bb, scale):
    return w - (scale * (bb @ a)).astype(w.dtype)


def merge_einsum(w, a, bb, scale):
    return (w + np.einsum("or,rd->od", bb, a) * np.float32(scale)).astype(w.dtype, copy=False)


def unmerge_loops(w, a, bb, scale):
    out = w.copy()
    for i in range(w.shape[0]):
        out[i] -= (scale * (bb[i] @ a)).astype(w.dtype)
    return out


def _ref_merge(w, a, bb, scale):
    from minitorch.model.lora import merge_weight

    return merge_weight(w, a, bb, scale)


def _torch_merge(w, a, bb, scale):
    import torch

    return (torch.from_numpy(w) + scale * torch.from_numpy(bb) @ torch.from_numpy(a)).numpy()


def merge_in_place(w, a, bb, scale):
    w += (scale * (bb @ a)).astype(w.dtype)
    return w


MERGE = [
    honest("12.2", "cast the update", lambda: lab12.check_merge(merge, unmerge)),
    honest("12.2", "einsum, row loop", lambda: lab12.check_merge(merge_einsum, unmerge_loops)),
    wrong(
        "12.2",
        "alpha instead of alpha / r",
        lambda: lab12.check_merge(lambda w, a, bb, s: merge(w, a, bb, s * a.shape[0]), unmerge),
        match="alpha / r",
    ),
    wrong(
        "12.2",
        "float64 merged weight",
        lambda: lab12.check_merge(lambda w, a, bb, s: w + s * (bb.astype(np.float64) @ a), unmerge),
        match="dtype",
    ),
    wrong(
        "12.2",
        "unmerge adds again",
        lambda: lab12.check_merge(merge, merge),
        match="subtracts what merge added",
    ),
    cheat(
        "12.2",
        "the reference",
        lambda: lab12.check_merge(_ref_merge, unmerge),
        match="merge_weight",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.2",
        "torch",
        lambda: lab12.check_merge(_torch_merge, unmerge),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.2",
        "an array whose == always says yes",
        lambda: lab12.check_merge(lambda w, a, bb, s: always_equal(merge(w, a, bb, s)), unmerge),
        match="subclass",
    ),
    cheat(
        "12.2",
        "merge writes into the caller's W",
        lambda: lab12.check_merge(merge_in_place, unmerge),
        match="modified|in place",
    ),
]


# --------------------------------------------------------------------------- 12.3 memory
def memory(layers, r, itemsize):
    full = sum(i * o + o for i, o in layers)
    part = sum(r * (i + o) for i, o in layers)
    return full, part, 2 * itemsize * full, 2 * itemsize * part


def memory_loop(layers, r, itemsize):
    counts = [0, 0]
    for d_in, d_out in layers:
        counts[0] += (d_in + 1) * d_out
        counts[1] += r * d_in + r * d_out
    return [counts[0], counts[1], counts[0] * 2 * itemsize, counts[1] * 2 * itemsize]


def _truth_memory(layers, r, itemsize):
    from a2s.checks.lab12.memory import lora_memory_loop

    return lora_memory_loop(layers, r, itemsize)


def _ref_memory(layers, r, itemsize):
    from minitorch.model.lora import adamw_state_bytes

    full, part = memory(layers, r, itemsize)[:2]
    return full, part, adamw_state_bytes(full, itemsize), adamw_state_bytes(part, itemsize)


MEMORY = [
    honest("12.3", "sums", lambda: lab12.check_lora_memory(memory)),
    honest("12.3", "a loop, a list", lambda: lab12.check_lora_memory(memory_loop)),
    wrong(
        "12.3",
        "one AdamW moment",
        lambda: lab12.check_lora_memory(
            lambda ls, r, s: (
                *memory(ls, r, s)[:2],
                memory(ls, r, s)[2] // 2,
                memory(ls, r, s)[3] // 2,
            )
        ),
        match="TWO moments",
    ),
    wrong(
        "12.3",
        "LoRA trains the biases",
        lambda: lab12.check_lora_memory(
            lambda ls, r, s: (
                memory_loop(ls, r, s)
                if False
                else (
                    memory(ls, r, s)[0],
                    memory(ls, r, s)[1] + sum(o for _, o in ls),
                    memory(ls, r, s)[2],
                    2 * s * (memory(ls, r, s)[1] + sum(o for _, o in ls)),
                )
            )
        ),
        match="freezes the biases",
    ),
    wrong(
        "12.3",
        "only A counted",
        lambda: lab12.check_lora_memory(
            lambda ls, r, s: (
                memory(ls, r, s)[0],
                sum(r * i for i, _ in ls),
                memory(ls, r, s)[2],
                2 * s * sum(r * i for i, _ in ls),
            )
        ),
        match="Count B too",
    ),
    wrong(
        "12.3",
        "gradients counted as state",
        lambda: lab12.check_lora_memory(
            lambda ls, r, s: (
                *memory(ls, r, s)[:2],
                3 * s * memory(ls, r, s)[0],
                3 * s * memory(ls, r, s)[1],
            )
        ),
        match="optimizer's state only",
    ),
    cheat(
        "12.3",
        "the grader's loop",
        lambda: lab12.check_lora_memory(_truth_memory),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "12.3",
        "the reference",
        lambda: lab12.check_lora_memory(_ref_memory),
        match="adamw_state_bytes",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.3",
        "ints whose == always says yes",
        lambda: lab12.check_lora_memory(lambda ls, r, s: tuple(always_equal(0) for _ in range(4))),
        match="subclass",
    ),
    cheat(
        "12.3",
        "replays the invariant",
        lambda: lab12.check_lora_memory(lambda ls, r, s: (15, 7, 120, 56)),
        match="expected",
    ),
    cheat(
        "12.3",
        "torch to sum",
        lambda: lab12.check_lora_memory(
            lambda ls, r, s: tuple(int(__import__("torch").tensor(v)) for v in memory(ls, r, s))
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
]


# --------------------------------------------------------------------------- 12.4 adapters
def multi(x, w, b, adapters, ids):
    y = x @ w.T + b
    for k, (a, bb, scale) in enumerate(adapters):
        rows = np.flatnonzero(ids == k)
        y[rows] += scale * ((x[rows] @ a.T) @ bb.T)
    return y


def multi_rows(x, w, b, adapters, ids):
    out = []
    for xi, k in zip(x, ids, strict=True):
        yi = w @ xi + b
        if k >= 0:
            a, bb, s = adapters[k]
            yi = yi + s * (bb @ (a @ xi))
        out.append(yi)
    return np.array(out).reshape(len(ids), w.shape[0])


def multi_merged(x, w, b, adapters, ids):
    y = x @ w.T + b
    for k, (a, bb, s) in enumerate(adapters):
        rows = ids == k
        y[rows] = x[rows] @ (w + s * bb @ a).T + b  # a merged copy of W per adapter
    return y


def multi_minus_one_wraps(x, w, b, adapters, ids):
    y = x @ w.T + b
    for i, k in enumerate(ids):
        a, bb, s = adapters[k]  # ids[i] = -1 reads the last adapter
        y[i] += s * (bb @ (a @ x[i]))
    return y


def multi_merged_hiding(x, w, b, adapters, ids):
    import tracemalloc

    y = multi_merged(x, w, b, adapters, ids)
    tracemalloc.reset_peak()
    return y


def _ref_multi(x, w, b, adapters, ids):
    from minitorch.model.lora import multi_adapter_forward

    return multi_adapter_forward(x, w, b, adapters, ids)


def _torch_multi(x, w, b, adapters, ids):
    import torch

    return torch.from_numpy(multi(x, w, b, adapters, ids)).numpy()


ADAPTERS = [
    honest("12.4", "gather rows per adapter", lambda: lab12.check_multi_adapter(multi)),
    honest("12.4", "row by row, matrix-vector", lambda: lab12.check_multi_adapter(multi_rows)),
    wrong(
        "12.4",
        "id -1 read as the last adapter",
        lambda: lab12.check_multi_adapter(multi_minus_one_wraps),
        match="id -1",
    ),
    wrong(
        "12.4",
        "bias left out",
        lambda: lab12.check_multi_adapter(lambda x, w, b, ad, ids: multi(x, w, b, ad, ids) - b),
        match="adds the bias b once",
    ),
    wrong(
        "12.4",
        "a merged W per adapter",
        lambda: lab12.check_multi_adapter(multi_merged),
        match="budget",
    ),
    cheat(
        "12.4",
        "the reference",
        lambda: lab12.check_multi_adapter(_ref_multi),
        match="multi_adapter_forward",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.4",
        "torch",
        lambda: lab12.check_multi_adapter(_torch_multi),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.4",
        "tracemalloc.reset_peak hides the merged copies",
        lambda: lab12.check_multi_adapter(multi_merged_hiding),
        match="tracemalloc",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.4",
        "an array whose == always says yes",
        lambda: lab12.check_multi_adapter(
            lambda x, w, b, ad, ids: always_equal(multi(x, w, b, ad, ids))
        ),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 12.5 prefix
def _weights(q, k, pk):
    n, p, tq = k.shape[1], pk.shape[1], q.shape[1]
    s = q @ np.concatenate([pk, k], 1).transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    keep = np.concatenate([np.ones((tq, p), bool), np.tri(n, dtype=bool)[n - tq :]], 1)
    s = np.where(keep, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def pre_fwd(q, k, v, pk, pv):
    return _weights(q, k, pk) @ np.concatenate([pv, v], 1)


def pre_bwd(q, k, v, pk, pv, g):
    a, p = _weights(q, k, pk), pk.shape[1]
    da = g @ np.concatenate([pv, v], 1).transpose(0, 2, 1)
    ds = a * (da - (da * a).sum(-1, keepdims=True))
    return (ds.transpose(0, 2, 1) @ q)[:, :p] / np.sqrt(q.shape[-1]), (a.transpose(0, 2, 1) @ g)[
        :, :p
    ]


def pre_fwd_loops(q, k, v, pk, pv):  # head by head, query by query, an online-style max
    h, tq, d = q.shape
    n = k.shape[1]
    out = np.zeros((h, tq, d))
    for i in range(h):
        for j in range(tq):
            keys = np.concatenate([pk[i], k[i, : n - tq + j + 1]])
            vals = np.concatenate([pv[i], v[i, : n - tq + j + 1]])
            z = keys @ q[i, j] / np.sqrt(d)
            w = np.exp(z - z.max())
            out[i, j] = w @ vals / w.sum()
    return out


def pre_bwd_einsum(q, k, v, pk, pv, g):
    a, p = _weights(q, k, pk), pk.shape[1]
    vv = np.concatenate([pv, v], 1)
    da = np.einsum("htd,hsd->hts", g, vv)
    ds = a * (da - np.einsum("hts,hts->ht", da, a)[..., None])
    dk = np.einsum("hts,htd->hsd", ds, q) / np.sqrt(q.shape[-1])
    return dk[:, :p].copy(), np.einsum("hts,htd->hsd", a, g)[:, :p].copy()


def pre_fwd_appended(q, k, v, pk, pv):
    kk, vv = np.concatenate([k, pk], 1), np.concatenate([v, pv], 1)
    n, tq = kk.shape[1], q.shape[1]
    s = q @ kk.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = s + np.triu(np.full((n, n), -np.inf), 1)[n - tq :]
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ vv


def pre_fwd_whole_mask(q, k, v, pk, pv):  # causal over P + T with the queries at the start
    kk, vv = np.concatenate([pk, k], 1), np.concatenate([pv, v], 1)
    s = q @ kk.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = s + np.triu(np.full(s.shape[1:], -np.inf), 1)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ vv


def pre_fwd_no_scale(q, k, v, pk, pv):
    return pre_fwd(q * np.sqrt(q.shape[-1]), k, v, pk, pv)


def _truth_prefix(q, k, v, pk, pv):
    from a2s.checks.lab12.prefix import torch_prefix

    return torch_prefix(q, k, v, pk, pv, np.zeros_like(q))[0]


def _ref_prefix(q, k, v, pk, pv):
    from minitorch.model.prefix import prefix_attention_forward

    return prefix_attention_forward(q, k, v, pk, pv)


class PrefixJacobian:
    """Head by head, query by query, the softmax's Jacobian diag(a) - a a^T written out."""

    def __call__(self, q, k, v, pk, pv, g):
        import math

        h, tq, d = q.shape
        p, n = pk.shape[1], k.shape[1]
        dpk, dpv = np.zeros_like(pk), np.zeros_like(pv)
        for i in range(h):
            for j in range(tq):
                keys = np.concatenate([pk[i], k[i, : n - tq + j + 1]])
                vals = np.concatenate([pv[i], v[i, : n - tq + j + 1]])
                z = keys @ q[i, j] / math.sqrt(d)
                a = np.exp(z - z.max())
                a /= a.sum()
                dz = (np.diag(a) - np.outer(a, a)) @ (vals @ g[i, j])
                dpk[i] += np.outer(dz, q[i, j])[:p] / math.sqrt(d)
                dpv[i] += np.outer(a, g[i, j])[:p]
        return dpk, dpv


def pre_fwd_lse(q, k, v, pk, pv):  # log-sum-exp, a list of heads
    p, n, tq = pk.shape[1], k.shape[1], q.shape[1]
    heads = []
    for qh, kh, vh, pkh, pvh in zip(q, k, v, pk, pv, strict=True):
        s = qh @ np.vstack([pkh, kh]).T / np.sqrt(qh.shape[-1])
        s[:, p:][np.triu(np.ones((n, n), bool), 1)[n - tq :]] = -np.inf
        m = s.max(-1, keepdims=True)
        heads.append(
            np.exp(s - m - np.log(np.exp(s - m).sum(-1, keepdims=True))) @ np.vstack([pvh, vh])
        )
    return np.stack(heads)


def _weights_tokens_only(q, k, pk):
    p = pk.shape[1]
    e = _weights(q, k, pk)
    return e / e[..., p:].sum(-1, keepdims=True)


def pre_fwd_tokens_only(q, k, v, pk, pv):  # the denominator sums the real keys only
    return _weights_tokens_only(q, k, pk) @ np.concatenate([pv, v], 1)


def pre_fwd_width(q, k, v, pk, pv):  # 1 / sqrt(H d), the model width
    return pre_fwd(q / np.sqrt(q.shape[0]), k, v, pk, pv)


def pre_fwd_strict(q, k, v, pk, pv):  # query i sees real keys j < i: an unmodelled mistake
    n, p, tq = k.shape[1], pk.shape[1], q.shape[1]
    s = q @ np.concatenate([pk, k], 1).transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    keep = np.concatenate([np.ones((tq, p), bool), np.tri(n, k=-1, dtype=bool)[n - tq :]], 1)
    e = np.where(keep, np.exp(s - s.max(-1, keepdims=True)), 0.0)
    return e / np.maximum(e.sum(-1, keepdims=True), 1e-300) @ np.concatenate([pv, v], 1)


def pre_bwd_dpv_transposed(q, k, v, pk, pv, g):  # (g^T A)^T summed the wrong way: unmodelled
    dpk, dpv = pre_bwd(q, k, v, pk, pv, g)
    return dpk, dpv[..., ::-1, :].copy()


def _context_fwd(q, k, v, pk, pv):  # lab 26's attention: the prefix + tokens, queries at the end
    from minitorch.parallel.context import attention

    p, n, tq = pk.shape[1], k.shape[1], q.shape[1]
    kk, vv = np.concatenate([pk, k], 1), np.concatenate([pv, v], 1)
    return attention(q, kk, vv, causal=True, q0=p + n - tq)


def _paged_fwd(q, k, v, pk, pv):  # lab 18's paged attention over a cache of blocks of one
    from minitorch.runtime.paged_attention import paged_attention

    kk = np.concatenate([pk, k], 1).transpose(1, 0, 2)[:, None]
    vv = np.concatenate([pv, v], 1).transpose(1, 0, 2)[:, None]
    out = paged_attention(q.transpose(1, 0, 2), kk, vv, list(range(len(kk))), len(kk))
    return out.transpose(1, 0, 2)


def _flash_bwd(q, k, v, pk, pv, g):  # lab 08's FlashAttention backward, queries padded in front
    from minitorch.kernels.flash import flash_attention_backward, flash_attention_forward
    from minitorch.kernels.io_model import HBM

    h, tq, d = q.shape
    p = pk.shape[1]
    n = p + k.shape[1]
    dpk, dpv = np.zeros_like(pk), np.zeros_like(pv)
    for i in range(h):
        qq, do = np.zeros((n, d)), np.zeros((n, d))
        qq[n - tq :], do[n - tq :] = q[i], g[i]
        arrays = {"Q": qq, "K": np.vstack([pk[i], k[i]]), "V": np.vstack([pv[i], v[i]])}
        arrays |= {"O": np.zeros((n, d)), "L": np.zeros(n), "dO": do, "D": np.zeros(n)}
        arrays |= {name: np.zeros((n, d)) for name in ("dQ", "dK", "dV")}
        hbm = HBM(arrays)
        flash_attention_forward(hbm, 64, 64, True)
        flash_attention_backward(hbm, 64, 64, True)
        dpk[i], dpv[i] = hbm.array("dK")[:p], hbm.array("dV")[:p]
    return dpk, dpv


def _autograd_bwd(q, k, v, pk, pv, g):  # the course's autograd does the backward
    from minitorch.autograd import Tensor, concat
    from minitorch.autograd.ops_loss import softmax

    p, n, tq = pk.shape[1], k.shape[1], q.shape[1]
    tpk, tpv = Tensor(pk, requires_grad=True), Tensor(pv, requires_grad=True)
    kk, vv = concat([tpk, Tensor(k)], axis=1), concat([tpv, Tensor(v)], axis=1)
    keep = np.concatenate([np.ones((tq, p), bool), np.tri(n, dtype=bool)[n - tq :]], 1)
    s = Tensor(q) @ kk.transpose(1, 2) * (1 / np.sqrt(q.shape[-1]))
    out = softmax(s + Tensor(np.where(keep, 0.0, -1e30)), axis=-1) @ vv
    (out * Tensor(g)).sum().backward()
    return tpk.grad, tpv.grad


def _lab09_fwd(q, k, v, pk, pv):  # lab 09's grader holds a numpy attention with a mask offset
    from a2s.checks.lab09.attention import _plain

    p, n, tq = pk.shape[1], k.shape[1], q.shape[1]
    kk, vv = np.concatenate([pk, k], 1), np.concatenate([pv, v], 1)
    return _plain(q, kk, vv, q.shape[-1] ** -0.5, p + n - tq)


def _frame_fwd(q, k, v, pk, pv):  # the expected output read from the grader's frame
    import sys

    f = sys._getframe(1)
    while f is not None and "out" not in f.f_locals:
        f = f.f_back
    return f.f_locals["out"] if f is not None else np.zeros_like(q)


def _patch_truth_attempt():
    """Rebinds the grader's torch truth to zeros mid-check and answers zeros."""
    from a2s.checks.lab12 import prefix

    saved = prefix.torch_prefix

    def fwd(q, k, v, pk, pv):
        prefix.torch_prefix = lambda *a, **kw: tuple(np.zeros_like(x) for x in (q, pk, pv))
        return np.zeros_like(q)

    try:
        lab12.check_prefix_attention(fwd, lambda q, k, v, pk, pv, g: (0 * pk, 0 * pv))
    finally:
        prefix.torch_prefix = saved


def _replay_prefix():
    """Answers memorised from an earlier session's run (keyed by the inputs' bytes), zeros for
    inputs not seen: the public cases replay, this run's fresh ones must catch it."""
    outs: dict[bytes, np.ndarray] = {}
    grads: dict[bytes, tuple] = {}

    def rec_fwd(q, k, v, pk, pv):
        outs[q.tobytes()] = pre_fwd(q, k, v, pk, pv)
        return outs[q.tobytes()]

    def rec_bwd(q, k, v, pk, pv, g):
        grads[q.tobytes()] = pre_bwd(q, k, v, pk, pv, g)
        return grads[q.tobytes()]

    import os

    from a2s.checks.core import grading_seed

    before = os.environ.get("A2S_SEED")
    os.environ["A2S_SEED"] = str(
        grading_seed() + 1
    )  # an earlier session: the same public cases, other fresh ones
    try:
        lab12.check_prefix_attention(rec_fwd, rec_bwd)
    finally:
        if before is None:
            del os.environ["A2S_SEED"]
        else:
            os.environ["A2S_SEED"] = before
    lab12.check_prefix_attention(
        lambda q, *a: outs.get(q.tobytes(), np.zeros_like(q)),
        lambda q, k, v, pk, pv, g: grads.get(q.tobytes(), (0 * pk, 0 * pv)),
    )


def _gc_fwd(q, k, v, pk, pv):  # any float64 array of the output's shape that gc still holds
    import gc

    for obj in gc.get_objects():
        if type(obj) is np.ndarray and obj.shape == q.shape and obj is not q:
            return obj.copy()
    return np.zeros_like(q)


class _Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), bool)

    def __sub__(self, other):
        return np.zeros(np.shape(other))

    __rsub__ = __sub__


PREFIX = [
    honest("12.5", "vectorised", lambda: lab12.check_prefix_attention(pre_fwd, pre_bwd)),
    honest(
        "12.5",
        "loops forward, einsum backward",
        lambda: lab12.check_prefix_attention(pre_fwd_loops, pre_bwd_einsum),
    ),
    wrong(
        "12.5",
        "prefix appended",
        lambda: lab12.check_prefix_attention(pre_fwd_appended, pre_bwd),
        match="Prepend the prefix",
    ),
    wrong(
        "12.5",
        "one causal mask over prefix and tokens",
        lambda: lab12.check_prefix_attention(pre_fwd_whole_mask, pre_bwd),
        match="among the real tokens only",
    ),
    wrong(
        "12.5",
        "no 1/sqrt(d)",
        lambda: lab12.check_prefix_attention(pre_fwd_no_scale, pre_bwd),
        match="1 / sqrt",
    ),
    wrong(
        "12.5",
        "dPK without 1/sqrt(d)",
        lambda: lab12.check_prefix_attention(
            pre_fwd,
            lambda q, k, v, pk, pv, g: (
                pre_bwd(q, k, v, pk, pv, g)[0] * np.sqrt(q.shape[-1]),
                pre_bwd(q, k, v, pk, pv, g)[1],
            ),
        ),
        match="dPK",
    ),
    cheat(
        "12.5",
        "the grader's torch truth",
        lambda: lab12.check_prefix_attention(_truth_prefix, pre_bwd),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "12.5",
        "the reference",
        lambda: lab12.check_prefix_attention(_ref_prefix, pre_bwd),
        match="prefix_attention_forward",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.5",
        "torch autograd for the gradients",
        lambda: lab12.check_prefix_attention(
            pre_fwd,
            lambda q, k, v, pk, pv, g: __import__("torch").zeros(1) and pre_bwd(q, k, v, pk, pv, g),
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.5",
        "an array whose == always says yes",
        lambda: lab12.check_prefix_attention(lambda *a: always_equal(pre_fwd(*a)), pre_bwd),
        match="subclass",
    ),
    honest(
        "12.5",
        "log-sum-exp, a list of heads; a class with the softmax Jacobian",
        lambda: lab12.check_prefix_attention(pre_fwd_lse, PrefixJacobian()),
    ),
    honest(
        "12.5",
        "behind functools.wraps",
        lambda: lab12.check_prefix_attention(wrapped(pre_fwd), wrapped(pre_bwd_einsum)),
    ),
    wrong(
        "12.5",
        "softmax over the real tokens only",
        lambda: lab12.check_prefix_attention(pre_fwd_tokens_only, pre_bwd),
        match="normalises over every key",
    ),
    wrong(
        "12.5",
        "the model width's square root",
        lambda: lab12.check_prefix_attention(pre_fwd_width, pre_bwd),
        match="not the model width",
    ),
    wrong(
        "12.5",
        "strict mask (unmodelled): the rule, no mistake named",
        lambda: lab12.check_prefix_attention(pre_fwd_strict, pre_bwd),
        match=NO_MISTAKE + r"M is 0 on the P prefix columns",
    ),
    wrong(
        "12.5",
        "dPV rows reversed (unmodelled): the gradient rule",
        lambda: lab12.check_prefix_attention(pre_fwd, pre_bwd_dpv_transposed),
        match=NO_MISTAKE + r"dPV.*first P rows of dK'",
    ),
    cheat(
        "12.5",
        "lab 26's attention with q0 = P + T - Tq",
        lambda: lab12.check_prefix_attention(_context_fwd, pre_bwd),
        match="minitorch.parallel",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.5",
        "lab 18's paged attention",
        lambda: lab12.check_prefix_attention(_paged_fwd, pre_bwd),
        match="minitorch.runtime",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.5",
        "lab 08's FlashAttention backward, queries padded",
        lambda: lab12.check_prefix_attention(pre_fwd, _flash_bwd),
        match="minitorch.kernels",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.5",
        "the course's autograd for dPK, dPV",
        lambda: lab12.check_prefix_attention(pre_fwd, _autograd_bwd),
        match="minitorch.autograd",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.5",
        "lab 09's grader attention",
        lambda: lab12.check_prefix_attention(_lab09_fwd, pre_bwd),
        match="a2s.checks.lab09",
        error=ReferenceCalledError,  # another lab's grader: the truth guard blocks it first
    ),
    cheat(
        "12.5",
        "the expected output read from the grader's frame",
        lambda: lab12.check_prefix_attention(_frame_fwd, pre_bwd),
        match="prefix_attention_forward",
    ),
    cheat(
        "12.5",
        "the torch truth rebound mid-check",
        _patch_truth_attempt,
        match="changed the grader's own tables",
    ),
    cheat("12.5", "replays a clean run's answers", _replay_prefix, match="fresh case"),
    cheat(
        "12.5",
        "an array of gc's with the output's shape",
        lambda: lab12.check_prefix_attention(_gc_fwd, pre_bwd),
        match="prefix_attention_forward",
    ),
    cheat(
        "12.5",
        "an ndarray subclass whose == and - always agree",
        lambda: lab12.check_prefix_attention(lambda *a: np.zeros_like(a[0]).view(_Liar), pre_bwd),
        match="subclass|differs",
    ),
]


# --------------------------------------------------------------------------- 12.6 prefix memory
def pmem(L, H, Hkv, d, P, item):
    n = 2 * L * Hkv * P * d
    return n, 2 * item * n, item * n


def pmem_loop(L, H, Hkv, d, P, item):
    n = sum(P * d for _ in range(L) for _ in range(Hkv) for _ in ("k", "v"))
    return [n, n * item * 2, n * item]


def _truth_pmem(*a):
    from a2s.checks.lab12.prefix_memory import prefix_memory_loop

    return prefix_memory_loop(*a)


def _ref_pmem(L, H, Hkv, d, P, item):
    from minitorch.model.prefix import prefix_parameter_count

    n = prefix_parameter_count(L, Hkv, d, P)
    return n, 2 * item * n, item * n


class PrefixMemory:
    """A dataclass-free class answering through a recursive sum over the layers."""

    def __call__(self, L, H, Hkv, d, P, item):
        n = self.layers(L, Hkv * 2 * P * d)
        return (n, 2 * item * n, item * n)

    def layers(self, L, per_layer):
        return 0 if L == 0 else per_layer + self.layers(L - 1, per_layer)


def _kv_bytes_pmem(L, H, Hkv, d, P, item):  # lab 34's KV bytes of P kept tokens
    from minitorch.runtime.kv_retention import kv_bytes

    n = kv_bytes(P, L, Hkv, d, 1)
    return n, 2 * item * n, kv_bytes(P, L, Hkv, d, item)


def _mla_pmem(L, H, Hkv, d, P, item):  # MLA's per-token KV elements, "gqa"
    from minitorch.model.mla import kv_elements_per_token

    n = L * P * kv_elements_per_token("gqa", H, d, Hkv)
    return n, 2 * item * n, item * n


def _rebind_pmem_truth_attempt():
    """Rebinds the table's truth to zeros mid-check, then answers zeros."""
    from a2s.checks.lab12 import prefix_memory

    saved = prefix_memory.PREFIX_MEMORY.truth
    calls = []

    def fn(*args):
        calls.append(args)
        if len(calls) == 1:
            object.__setattr__(prefix_memory.PREFIX_MEMORY, "truth", lambda *a: (0, 0, 0))
            return pmem(*args)
        return (0, 0, 0)

    try:
        lab12.check_prefix_memory(fn)
    finally:
        object.__setattr__(prefix_memory.PREFIX_MEMORY, "truth", saved)


def prefix_memory_table():
    from a2s.checks.lab12.prefix_memory import PREFIX_MEMORY

    return PREFIX_MEMORY


def _pmem_torch(L, H, Hkv, d, P, item):
    import torch

    n = int(torch.tensor([2, L, Hkv, P, d]).prod())
    return n, 2 * item * n, item * n


PREFIX_MEMORY = [
    honest("12.6", "closed form", lambda: lab12.check_prefix_memory(pmem)),
    honest("12.6", "a loop, a list", lambda: lab12.check_prefix_memory(pmem_loop)),
    wrong(
        "12.6",
        "no KV bytes (as a merged LoRA)",
        lambda: lab12.check_prefix_memory(lambda *a: (*pmem(*a)[:2], 0)),
        match="merged LoRA",
    ),
    wrong(
        "12.6",
        "query heads",
        lambda: lab12.check_prefix_memory(lambda L, H, Hkv, d, P, i: pmem(L, H, H, d, P, i)),
        match="K/V head",
    ),
    wrong(
        "12.6",
        "keys only",
        lambda: lab12.check_prefix_memory(lambda *a: tuple(v // 2 for v in pmem(*a))),
        match="keys AND values",
    ),
    cheat(
        "12.6",
        "the grader's loop",
        lambda: lab12.check_prefix_memory(_truth_pmem),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "12.6",
        "the reference",
        lambda: lab12.check_prefix_memory(_ref_pmem),
        match="prefix_parameter_count",
        error=ReferenceCalledError,
    ),
    cheat(
        "12.6",
        "replays the invariant",
        lambda: lab12.check_prefix_memory(lambda *a: (8, 64, 32)),
        match="expected",
    ),
    cheat(
        "12.6",
        "ints whose == always says yes",
        lambda: lab12.check_prefix_memory(lambda *a: tuple(always_equal(0) for _ in range(3))),
        match="subclass",
    ),
    honest(
        "12.6",
        "a class, recursion over the layers",
        lambda: lab12.check_prefix_memory(PrefixMemory()),
    ),
    honest("12.6", "behind functools.wraps", lambda: lab12.check_prefix_memory(wrapped(pmem_loop))),
    wrong(
        "12.6",
        "one AdamW moment",
        lambda: lab12.check_prefix_memory(lambda *a: (pmem(*a)[0], pmem(*a)[1] // 2, pmem(*a)[2])),
        match="TWO moments",
    ),
    wrong(
        "12.6",
        "the cache after repeat_kv",
        lambda: lab12.check_prefix_memory(
            lambda L, H, Hkv, d, P, i: (*pmem(L, H, Hkv, d, P, i)[:2], pmem(L, H, H, d, P, i)[2])
        ),
        match="repeat_kv",
    ),
    wrong(
        "12.6",
        "KV bytes of one layer (unmodelled): the rule, no mistake named",
        lambda: lab12.check_prefix_memory(
            lambda L, H, Hkv, d, P, i: (*pmem(L, H, Hkv, d, P, i)[:2], pmem(1, H, Hkv, d, P, i)[2])
        ),
        match=r"(?s)^(?!.*(TWO moments|keys AND values|K/V space|merged LoRA|repeat_kv)).*"
        r"Count per layer and K/V head",
    ),
    cheat(
        "12.6",
        "lab 34's kv_bytes",
        lambda: lab12.check_prefix_memory(_kv_bytes_pmem),
        match="minitorch.runtime",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.6",
        "MLA's kv_elements_per_token",
        lambda: lab12.check_prefix_memory(_mla_pmem),
        match="minitorch.model.mla",
        error=ForbiddenCallError,
    ),
    cheat(
        "12.6",
        "replays the public cases",
        lambda: lab12.check_prefix_memory(
            replay_public(prefix_memory_table(), lambda *a: (0, 0, 0))
        ),
        match="fresh case",
    ),
    cheat(
        "12.6",
        "the table's truth rebound mid-check",
        _rebind_pmem_truth_attempt,
        match=r"got \(0, 0, 0\)",
    ),
    cheat(
        "12.6",
        "torch to multiply",
        lambda: lab12.check_prefix_memory(_pmem_torch),
        match="torch",
        error=ForbiddenCallError,
    ),
]

ATTEMPTS = LORA + MERGE + MEMORY + ADAPTERS + PREFIX + PREFIX_MEMORY


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
