"""Graders of lab 24: right answers pass; wrong values, broken budgets, reference calls fail."""

from __future__ import annotations

from functools import partial

import numpy as np

from a2s.checks import lab24
from a2s.checks.core import ReferenceCalledError
from minitorch.comm.collectives import all_gather, all_reduce, reduce_scatter
from minitorch.parallel import sequence, tensor
from minitorch.parallel.tensor import gelu, gelu_grad
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.parallel")
simulated = partial(lab24.check_tp_mlp, real=False)


def _rows(a):
    return a.reshape(-1, a.shape[-1])


# --------------------------------------------------------------------------- 24.1 TP MLP
def tp_mlp_forward(comm, x, w1, b1, w2, b2):
    partial_sum = gelu(x @ w1 + b1) @ w2
    return all_reduce(comm, partial_sum) + b2


def tp_mlp_backward(comm, x, w1, b1, w2, dy):
    z = x @ w1 + b1
    dz = (dy @ w2.T) * gelu_grad(z)
    dw2, db2 = _rows(gelu(z)).T @ _rows(dy), _rows(dy).sum(axis=0)
    dw1, db1 = _rows(x).T @ _rows(dz), _rows(dz).sum(axis=0)
    return all_reduce(comm, dz @ w1.T), dw1, db1, dw2, db2


def forward_without_all_reduce(comm, x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def forward_bias_before_sum(comm, x, w1, b1, w2, b2):
    return all_reduce(comm, gelu(x @ w1 + b1) @ w2 + b2)


def forward_gathering_weights(comm, x, w1, b1, w2, b2):  # right values, weights moved
    w1_full = all_gather(comm, w1.T).T
    return gelu(x @ w1_full + all_gather(comm, b1)) @ all_gather(comm, w2) + b2


def backward_partial_dx(comm, x, w1, b1, w2, dy):
    _, *grads = tp_mlp_backward(comm, x, w1, b1, w2, dy)
    z = x @ w1 + b1
    return (((dy @ w2.T) * gelu_grad(z)) @ w1.T, *grads)


def backward_synchronising_db2(comm, x, w1, b1, w2, dy):  # right values, one more all-reduce
    dx, dw1, db1, dw2, db2 = tp_mlp_backward(comm, x, w1, b1, w2, dy)
    return dx, dw1, db1, dw2, all_reduce(comm, db2) / comm.world_size


def test_tp_mlp_on_two_gloo_processes():
    # the one honest spawn of these tests; the backward names a module alias and a constant
    lab24.check_tp_mlp(tp_mlp_forward, backward_with_module_alias_and_constant)


def test_tp_mlp_simulated():
    simulated(unblocked(tensor.tp_mlp_forward), unblocked(tensor.tp_mlp_backward))
    rejects(
        lab24.check_tp_mlp,  # fails on the simulated world, before any spawn
        forward_without_all_reduce,
        tp_mlp_backward,
        match="without the all-reduce",
    )
    rejects(simulated, forward_bias_before_sum, tp_mlp_backward, match="counted t times")
    rejects(simulated, forward_gathering_weights, tp_mlp_backward, match="ONE all-reduce")
    rejects(simulated, tp_mlp_forward, backward_partial_dx, match="PARTIAL gradient")
    rejects(simulated, tp_mlp_forward, backward_synchronising_db2, match="ONE all-reduce, of dx")
    rejects(
        lab24.check_tp_mlp,
        tensor.tp_mlp_forward,
        tp_mlp_backward,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 24.2 attention
def attention(x, wq, wk, wv, wo, heads, causal=True, scale=None):
    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d) for w in (wq, wk, wv))
    scores = np.einsum("sbnd,tbnd->bnst", q, k) * (scale or 1 / np.sqrt(d))
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    ctx = np.einsum("bnst,tbnd->sbnd", e / e.sum(-1, keepdims=True), v)
    return ctx.reshape(s, b, heads * d) @ wo


def tp_attention_forward(comm, x, wq, wk, wv, wo, bo, heads):
    return all_reduce(comm, attention(x, wq, wk, wv, wo, heads)) + bo


def attention_not_causal(comm, x, wq, wk, wv, wo, bo, heads):
    return all_reduce(comm, attention(x, wq, wk, wv, wo, heads, causal=False)) + bo


def attention_hidden_scale(comm, x, wq, wk, wv, wo, bo, heads):
    scale = 1 / np.sqrt(x.shape[-1])
    return all_reduce(comm, attention(x, wq, wk, wv, wo, heads, scale=scale)) + bo


def attention_no_all_reduce(comm, x, wq, wk, wv, wo, bo, heads):
    return attention(x, wq, wk, wv, wo, heads) + bo


def attention_reducing_x_too(comm, x, wq, wk, wv, wo, bo, heads):  # right, 2 all-reduces
    x = all_reduce(comm, x) / comm.world_size
    return tp_attention_forward(comm, x, wq, wk, wv, wo, bo, heads)


def test_head_parallel_attention():
    lab24.check_head_parallel_attention(tp_attention_forward)
    lab24.check_head_parallel_attention(unblocked(tensor.tp_attention_forward))
    rejects(lab24.check_head_parallel_attention, attention_not_causal, match="causal")
    rejects(lab24.check_head_parallel_attention, attention_hidden_scale, match="HEAD dimension")
    rejects(lab24.check_head_parallel_attention, attention_no_all_reduce, match="partial sum")
    rejects(lab24.check_head_parallel_attention, attention_reducing_x_too, match="ONE all-reduce")
    rejects(
        lab24.check_head_parallel_attention,
        tensor.tp_attention_forward,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 24.3 vocab CE
def cross_entropy(comm, logits, targets, start, shift="global", mean=True):
    n, v = logits.shape
    m = logits.max(axis=1)
    if shift == "global":
        m = all_gather(comm, m[None]).max(axis=0)
    elif shift == "none":
        m = np.zeros(n)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits - m[:, None])
    total = all_reduce(comm, e.sum(axis=1))
    local = targets - start
    mine = (local >= 0) & (local < v)
    picked = np.where(mine, logits[np.arange(n), np.where(mine, local, 0)], 0.0)
    loss = np.log(total) + m - all_reduce(comm, picked)
    with np.errstate(invalid="ignore"):
        grad = e / total[:, None]
    grad[np.arange(n)[mine], local[mine]] -= 1
    return loss, grad / n if mean else grad


def ce_gathering_logits(comm, logits, targets, start):  # right values, n x V moved
    full = all_gather(comm, logits.T).T
    m = full.max(axis=1, keepdims=True)
    e = np.exp(full - m)
    loss = np.log(e.sum(axis=1)) + m[:, 0] - full[np.arange(len(targets)), targets]
    grad = e / e.sum(axis=1, keepdims=True)
    grad[np.arange(len(targets)), targets] -= 1
    return loss, (grad / len(targets))[:, start : start + logits.shape[1]]


def test_vocab_cross_entropy():
    lab24.check_vocab_cross_entropy(cross_entropy)
    lab24.check_vocab_cross_entropy(unblocked(tensor.vocab_parallel_cross_entropy))
    rejects(lab24.check_vocab_cross_entropy, ce_gathering_logits, match="n x V values")
    rejects(lab24.check_vocab_cross_entropy, partial(cross_entropy, shift="local"), match="OWN max")
    rejects(
        lab24.check_vocab_cross_entropy, partial(cross_entropy, shift="none"), match="overflows"
    )
    rejects(
        lab24.check_vocab_cross_entropy, partial(cross_entropy, mean=False), match="divide by n"
    )
    rejects(
        lab24.check_vocab_cross_entropy,
        tensor.vocab_parallel_cross_entropy,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 24.4 SP block
def layer_norm(x, g, b):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def sp_mlp_forward(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = layer_norm(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    a = gelu(z)
    return x + reduce_scatter(comm, a @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": a}


def sp_keeping_gathered_ln(comm, x, ln_g, ln_b, w1, b1, w2, b2):  # right y, sbh kept
    ln = all_gather(comm, layer_norm(x, ln_g, ln_b))
    z = ln @ w1 + b1
    a = gelu(z)
    return x + reduce_scatter(comm, a @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": a}


def sp_all_reduce_then_slice(comm, x, ln_g, ln_b, w1, b1, w2, b2):  # right y, more bytes
    ln = layer_norm(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    a = gelu(z)
    full = all_reduce(comm, a @ w2)
    rows = len(x)
    y = x + full[comm.rank * rows : (comm.rank + 1) * rows] + b2
    return y, {"x": x, "ln": ln, "z": z, "a": a}


def sp_every_row(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = layer_norm(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    a = gelu(z)
    return all_gather(comm, x) + all_reduce(comm, a @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": a}


def test_sp_mlp():
    lab24.check_sp_mlp(sp_mlp_forward)
    lab24.check_sp_mlp(unblocked(sequence.sp_mlp_forward))
    rejects(lab24.check_sp_mlp, sp_keeping_gathered_ln, match="'ln' is the full")
    rejects(lab24.check_sp_mlp, sp_all_reduce_then_slice, match="ONE all-reduce")
    rejects(lab24.check_sp_mlp, sp_every_row, match="ITS s/t rows")
    rejects(
        lab24.check_sp_mlp, sequence.sp_mlp_forward, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 24.5 bytes
def activation_bytes_per_layer(s, b, h, a, t, mode):
    sbh, att = s * b * h, 5 * a * s / h
    return {
        "none": sbh * (34 + att),
        "tp": sbh * (10 + 24 / t + att / t),
        "sp": sbh * (34 / t + att / t),
        "recompute": 2 * sbh,
    }[mode]


def bytes_tp_all_divided(s, b, h, a, t, mode):
    if mode == "tp":
        return activation_bytes_per_layer(s, b, h, a, t, "sp")
    return activation_bytes_per_layer(s, b, h, a, t, mode)


def bytes_recompute_one_per_value(s, b, h, a, t, mode):
    return s * b * h if mode == "recompute" else activation_bytes_per_layer(s, b, h, a, t, mode)


def test_activation_bytes():
    lab24.check_activation_bytes(activation_bytes_per_layer)
    lab24.check_activation_bytes(unblocked(sequence.korthikanti_bytes))
    rejects(lab24.check_activation_bytes, bytes_tp_all_divided, match="That is TP \\+ SP")
    rejects(lab24.check_activation_bytes, bytes_recompute_one_per_value, match="2 bytes per value")
    rejects(
        lab24.check_activation_bytes,
        sequence.korthikanti_bytes,
        match="reference",
        error=ReferenceCalledError,
    )


# ------------------------------------------------------------------------ 24.1 gloo ranks
def _on_gloo(comm):
    return type(comm).__module__.startswith("a2s.checks.rank")  # a gloo rank's proxy


def forward_torch_collective(comm, x, w1, b1, w2, b2):  # honest on SimWorld only
    p = gelu(x @ w1 + b1) @ w2
    if not _on_gloo(comm):
        return all_reduce(comm, p) + b2
    import torch
    import torch.distributed.distributed_c10d as c10d

    t = torch.from_numpy(p.copy())
    c10d.all_reduce(t)
    return t.numpy() + b2


HALF = 0.5


def _half_sum(v):
    return v.sum(axis=0) * HALF * 2


def backward_with_module_alias_and_constant(comm, x, w1, b1, w2, dy):  # right, other globals
    z = x @ w1 + b1
    dz = (dy @ w2.T) * tensor.gelu_grad(z)
    x2, dz2, a2, dy2 = (v.reshape(-1, v.shape[-1]) for v in (x, dz, gelu(z), dy))
    return all_reduce(comm, dz @ w1.T), x2.T @ dz2, _half_sum(dz2), a2.T @ dy2, _half_sum(dy2)


def test_tp_mlp_gloo_ranks_refuse_torch():
    """One spawn of 2 gloo ranks: the learner's function runs in a sealed child of each rank,
    where a torch.distributed collective is a forbidden call (the kernel's message)."""
    from a2s.checks.errors import ForbiddenCallError

    rejects(
        lab24.check_tp_mlp,
        forward_torch_collective,
        tp_mlp_backward,
        match="torch",
        error=ForbiddenCallError,
    )


# --------------------------------------------------------------------------- review additions
def forward_zeroing_the_case(comm, x, w1, b1, w2, b2):  # cheat: zero the grader's shards
    for a in (x, w1, b1, w2):
        a[...] = 0
    return np.broadcast_to(b2, x.shape).copy()


def backward_float32_dx(comm, x, w1, b1, w2, dy):
    dx, *grads = tp_mlp_backward(comm, x, w1, b1, w2, dy)
    return (dx.astype(np.float32), *grads)


def attention_without_diagonal(comm, x, wq, wk, wv, wo, bo, heads):
    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d) for w in (wq, wk, wv))
    scores = np.einsum("sbnd,tbnd->bnst", q, k) / np.sqrt(d)
    mask = np.tril(np.ones((s, s), bool), -1)
    mask[0, 0] = True
    e = np.exp(np.where(mask, scores, -np.inf) - scores.max(-1, keepdims=True))
    ctx = np.einsum("bnst,tbnd->sbnd", e / e.sum(-1, keepdims=True), v)
    return all_reduce(comm, ctx.reshape(s, b, heads * d) @ wo) + bo


def sp_without(comm, x, ln_g, ln_b, w1, b1, w2, b2, drop):
    y, saved = sp_mlp_forward(comm, x, ln_g, ln_b, w1, b1, w2, b2)
    return y - {"residual": x, "b2": b2}[drop], saved


def bytes_sp_scores_whole(s, b, h, a, t, mode):
    if mode == "sp":
        return s * b * h * (34 / t + 5 * a * s / h)
    return activation_bytes_per_layer(s, b, h, a, t, mode)


def test_review_wrong_answers_and_cheats():
    rejects(simulated, forward_zeroing_the_case, tp_mlp_backward, match="y is")
    rejects(simulated, tp_mlp_forward, backward_float32_dx, match="float32.*keep float64")
    rejects(
        lab24.check_head_parallel_attention,
        attention_without_diagonal,
        match="first difference at index.*attend to itself",
    )
    rejects(lab24.check_sp_mlp, partial(sp_without, drop="residual"), match="residual is missing")
    rejects(lab24.check_sp_mlp, partial(sp_without, drop="b2"), match="b2 is missing")
    rejects(lab24.check_activation_bytes, bytes_sp_scores_whole, match="split by heads")


def mlp_not_implemented(comm, x, w1, b1, w2, b2):
    raise NotImplementedError("Exercise 24.1: ...")


def test_whole_layer_counts_two_all_reduces_forward(capsys):
    lab24.check_head_parallel_attention(tp_attention_forward, tp_mlp_forward)
    assert "whole layers with your 24.1 MLP: 2 all-reduces forward" in capsys.readouterr().out
    for mlp in (mlp_not_implemented, forward_gathering_weights, forward_bias_before_sum):
        lab24.check_head_parallel_attention(tp_attention_forward, mlp)  # 24.1's mistake
        assert "layers skipped: your tp_mlp_forward does not pass 24.1" in capsys.readouterr().out
    rejects(
        lab24.check_head_parallel_attention,
        attention_reducing_x_too,
        tp_mlp_forward,
        match="ONE all-reduce",
    )


def attention_from_lab26(comm, x, wq, wk, wv, wo, bo, heads):
    from minitorch.parallel.context import attention as causal

    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d).transpose(1, 2, 0, 3) for w in (wq, wk, wv))
    ctx = causal(q, k, v, causal=True).transpose(2, 0, 1, 3).reshape(s, b, heads * d)
    return all_reduce(comm, ctx @ wo) + bo


def test_lab26_attention_is_blocked():
    rejects(
        lab24.check_head_parallel_attention,
        attention_from_lab26,
        match="reference",
        error=ReferenceCalledError,
    )


# Every "must", "only", budget and invariant of the lab's prose, and the test that fails when
# it is broken (test_attempt: the adversarial battery, tests/checks/test_lab24_attacks.py).
MUSTS = [
    ("24.1", "ONE all-reduce of $(s, b, h)$ forward and ONE backward", "test_tp_mlp_simulated"),
    (
        "24.1",
        "A row-parallel layer without the all-reduce, a bias added before it, or a partial "
        "`dx` fails",
        "test_attempt",
    ),
    (
        "24.1",
        "equal to the unsharded MLP (float64, 1e-9) on $t$ = 1, 2, 4 and on 2 gloo processes",
        "test_tp_mlp_on_two_gloo_processes",
    ),
    (
        "24.1",
        "whose messages and bytes are counted outside it, where your code cannot reach them",
        "test_attempt",
    ),
    (
        "24.2",
        r"position $i$ attends to positions $j \le i$ only; scale by $1/\sqrt{d}$",
        "test_attempt",
    ),
    (
        "24.2",
        "ONE all-reduce of $(s, b, h)$. The check then stacks your attention",
        "test_head_parallel_attention",
    ),
    ("24.2", "counts TWO all-reduces forward", "test_head_parallel_attention"),
    ("24.3", "logits are around 800, so `exp` overflows without the global max", "test_attempt"),
    (
        "24.3",
        "the ranks send at most three all-gathers' worth of $n$ values; gathering the logits fails",
        "test_vocab_cross_entropy",
    ),
    ("24.3", "this rank's $(n, V/t)$ gradient of the **mean** loss", "test_attempt"),
    (
        "24.4",
        "one all-gather plus one reduce-scatter of $(s, b, h)$ (one all-reduce's bytes)",
        "test_sp_mlp",
    ),
    ("24.4", r"at most $20\,sbh/t$ bytes kept (2 per value)", "test_sp_mlp"),
    (
        "24.4",
        "Keeping the gathered LayerNorm output, or an all-reduce followed by a slice, gives "
        "the right `y` and fails",
        "test_attempt",
    ),
    ("24.5", 'at $t = 1$, `"tp"` and `"sp"` equal `"none"`', "test_activation_bytes"),
    ("24.5", "The check compares it with the closed forms", "test_attempt"),
]
