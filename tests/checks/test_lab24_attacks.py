"""Lab 24 tried as a class would: correct answers written differently, typical mistakes, cheats.

On the simulated world (24.1 with ``real=False``), each rank in its own forked process
(``a2s.checks.harness``): a cheat that reaches for the world's counters finds none
(``comm._world`` does not exist on a rank; the router keeps them in the grader's process).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from a2s.checks import lab24
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError, StudentError
from minitorch.comm.collectives import all_gather, all_reduce, reduce_scatter
from minitorch.parallel import sequence, tensor
from minitorch.parallel.tensor import gelu, gelu_grad
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong

REF = ReferenceCalledError
C = 0.7978845608028654


def rows(a):
    return a.reshape(-1, a.shape[-1])


# --------------------------------------------------------------------------- 24.1 TP MLP
def fwd(comm, x, w1, b1, w2, b2):
    return all_reduce(comm, gelu(x @ w1 + b1) @ w2) + b2


def bwd(comm, x, w1, b1, w2, dy):
    z = x @ w1 + b1
    dz = (dy @ w2.T) * gelu_grad(z)
    return (
        all_reduce(comm, dz @ w1.T),
        rows(x).T @ rows(dz),
        rows(dz).sum(0),
        rows(gelu(z)).T @ rows(dy),
        rows(dy).sum(0),
    )


def fwd_einsum(comm, x, w1, b1, w2, b2):
    import numpy as onp

    z = onp.einsum("sbh,hf->sbf", x, w1) + b1
    a = 0.5 * z * (1 + onp.tanh(C * (z + 0.044715 * z**3)))
    return all_reduce(comm, onp.einsum("sbf,fh->sbh", a, w2)) + b2


class Backward:
    """The backward as a class, its own GeLU derivative."""

    def gelu_prime(self, z):
        u = np.tanh(C * (z + 0.044715 * z**3))
        return 0.5 * (1 + u) + 0.5 * z * (1 - u * u) * C * (1 + 3 * 0.044715 * z * z)

    def __call__(self, comm, x, w1, b1, w2, dy):
        z = np.einsum("sbh,hf->sbf", x, w1) + b1
        dz = np.einsum("sbh,fh->sbf", dy, w2) * self.gelu_prime(z)
        dw1 = np.einsum("sbh,sbf->hf", x, dz)
        dw2 = np.einsum("sbf,sbh->fh", gelu(z), dy)
        return all_reduce(comm, dz @ w1.T), dw1, dz.sum((0, 1)), dw2, dy.sum((0, 1))


def fwd_no_reduce(comm, x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def fwd_bias_inside(comm, x, w1, b1, w2, b2):
    return all_reduce(comm, gelu(x @ w1 + b1) @ w2 + b2)


def bwd_partial_dx(comm, x, w1, b1, w2, dy):
    _, *rest = bwd(comm, x, w1, b1, w2, dy)
    z = x @ w1 + b1
    return (((dy @ w2.T) * gelu_grad(z)) @ w1.T, *rest)


def fwd_replicate_x(comm, x, w1, b1, w2, b2):  # an all-reduce of the input "to be safe"
    x = all_reduce(comm, x) / comm.world_size
    return all_reduce(comm, gelu(x @ w1 + b1) @ w2) + b2


def fwd_reference(comm, x, w1, b1, w2, b2):
    return tensor.tp_mlp_forward(comm, x, w1, b1, w2, b2)


def fwd_partial_ref(comm, x, w1, b1, w2, b2):
    return all_reduce(comm, tensor.mlp_partial(x, w1, b1, w2)[0]) + b2


def bwd_torch(comm, x, w1, b1, w2, dy):
    import torch

    return bwd(comm, torch.tensor(x).numpy(), w1, b1, w2, dy)


def fwd_gather_weights(comm, x, w1, b1, w2, b2):  # the unsharded MLP on every rank
    full1 = all_gather(comm, w1.T).T
    return gelu(x @ full1 + all_gather(comm, b1)) @ all_gather(comm, w2) + b2


def fwd_zero_the_bytes(comm, x, w1, b1, w2, b2):
    """Gathers the weights, then zeroes the world's byte counters."""
    y = fwd_gather_weights(comm, x, w1, b1, w2, b2)
    world = comm._world
    world.bytes_sent[comm.rank] = 2 * (world.world_size - 1) * x.nbytes // world.world_size
    return y


def fwd_grader_truth(comm, x, w1, b1, w2, b2):
    from a2s.checks.lab24 import _truth

    return all_reduce(comm, gelu(x @ w1 + b1) @ w2) * 0 + _truth.plain_mlp(
        {
            "x": x,
            "w1": all_gather(comm, w1.T).T,
            "b1": all_gather(comm, b1),
            "w2": all_gather(comm, w2),
            "b2": b2,
        }
    )


# --------------------------------------------------------------------------- 24.2 attention
def attn(comm, x, wq, wk, wv, wo, bo, heads, mask="causal", scale=None, bias_inside=False):
    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d) for w in (wq, wk, wv))
    sc = np.einsum("sbnd,tbnd->bnst", q, k) * (1 / np.sqrt(d) if scale is None else scale)
    keep = {
        "causal": np.tril(np.ones((s, s), bool)),
        "none": np.ones((s, s), bool),
        "strict": np.tril(np.ones((s, s), bool), -1) | np.eye(s, dtype=bool) * (np.arange(s) == 0),
    }[mask]
    sc = np.where(keep, sc, -np.inf)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    ctx = np.einsum("bnst,tbnd->sbnd", e / e.sum(-1, keepdims=True), v).reshape(s, b, -1)
    if bias_inside:
        return all_reduce(comm, ctx @ wo + bo)
    return all_reduce(comm, ctx @ wo) + bo


def attn_hidden_scale(comm, x, wq, wk, wv, wo, bo, heads):
    return attn(comm, x, wq, wk, wv, wo, bo, heads, scale=1 / np.sqrt(x.shape[-1]))


def attn_loops(comm, x, wq, wk, wv, wo, bo, heads):
    import math

    s, b, _ = x.shape
    d = wq.shape[1] // heads
    ctx = np.zeros((s, b, heads * d))
    for j in range(b):
        for n in range(heads):
            cols = slice(n * d, (n + 1) * d)
            q, k, v = (x[:, j] @ w[:, cols] for w in (wq, wk, wv))
            for i in range(s):
                sc = q[i] @ k[: i + 1].T / math.sqrt(d)
                p = np.exp(sc - sc.max())
                ctx[i, j, cols] = (p / p.sum()) @ v[: i + 1]
    return all_reduce(comm, ctx @ wo) + bo


def attn_reference(comm, x, wq, wk, wv, wo, bo, heads):
    return tensor.tp_attention_forward(comm, x, wq, wk, wv, wo, bo, heads)


def attn_lab26(comm, x, wq, wk, wv, wo, bo, heads):
    from minitorch.parallel import context

    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d).transpose(1, 2, 0, 3) for w in (wq, wk, wv))
    ctx = context.attention(q, k, v, causal=True).transpose(2, 0, 1, 3).reshape(s, b, -1)
    return all_reduce(comm, ctx @ wo) + bo


def attn_torch(comm, x, wq, wk, wv, wo, bo, heads):
    import torch

    return torch.from_numpy(attn(comm, x, wq, wk, wv, wo, bo, heads)).numpy()


def attn_gather_heads(comm, x, wq, wk, wv, wo, bo, heads):  # every head on every rank
    class Alone:  # a one-rank world: the all-reduce inside attn() is the identity
        world_size, rank = 1, 0

    full = [all_gather(comm, w.T).T for w in (wq, wk, wv)]
    return attn(Alone(), x, *full, all_gather(comm, wo), bo, heads * comm.world_size)


def attn_grader_truth(comm, x, wq, wk, wv, wo, bo, heads):
    from a2s.checks.lab24._truth import plain_attention

    w = [all_gather(comm, m.T).T for m in (wq, wk, wv)] + [all_gather(comm, wo)]
    return plain_attention(x, w, bo, heads * comm.world_size)


# --------------------------------------------------------------------------- 24.3 vocab CE
def ce(comm, logits, targets, start, shift="global", mean=True):
    n, v = logits.shape
    m = logits.max(1) if shift == "local" else all_gather(comm, logits.max(1)[None]).max(0)
    e = np.exp(logits - m[:, None])
    total = all_reduce(comm, e.sum(1))
    local = targets - start
    mine = (local >= 0) & (local < v)
    picked = all_reduce(comm, np.where(mine, logits[np.arange(n), np.clip(local, 0, v - 1)], 0.0))
    loss = np.log(total) + m - picked
    grad = e / total[:, None]
    grad[np.arange(n)[mine], local[mine]] -= 1
    return loss, grad / n if mean else grad


def ce_send_recv_max(comm, logits, targets, start):
    """The global max by hand: every rank sends its maxima to every other."""
    m = logits.max(axis=1)
    for peer in range(comm.world_size):
        if peer != comm.rank:
            comm.send(m.copy(), peer)
    best = m.copy()
    for peer in range(comm.world_size):
        if peer != comm.rank:
            best = np.maximum(best, comm.recv(peer))
    e = np.exp(logits - best[:, None])
    total = all_reduce(comm, e.sum(axis=1))
    onehot = np.zeros_like(logits)
    for i, tgt in enumerate(targets):
        if start <= tgt < start + logits.shape[1]:
            onehot[i, tgt - start] = 1.0
    loss = np.log(total) + best - all_reduce(comm, (logits * onehot).sum(axis=1))
    return loss, (e / total[:, None] - onehot) / len(targets)


def ce_owner_off_by_one(comm, logits, targets, start):  # start < target only
    n, v = logits.shape
    m = all_gather(comm, logits.max(1)[None]).max(0)
    e = np.exp(logits - m[:, None])
    total = all_reduce(comm, e.sum(1))
    local = targets - start
    mine = (local > 0) & (local < v)
    picked = all_reduce(comm, np.where(mine, logits[np.arange(n), np.clip(local, 0, v - 1)], 0.0))
    grad = e / total[:, None]
    grad[np.arange(n)[mine], local[mine]] -= 1
    return np.log(total) + m - picked, grad / n


def ce_no_shift(comm, logits, targets, start):
    with np.errstate(over="ignore", invalid="ignore"):
        return _ce_unshifted(comm, logits, targets, start)


def _ce_unshifted(comm, logits, targets, start):
    n, v = logits.shape
    e = np.exp(logits)
    total = all_reduce(comm, e.sum(1))
    local = targets - start
    mine = (local >= 0) & (local < v)
    picked = all_reduce(comm, np.where(mine, logits[np.arange(n), np.clip(local, 0, v - 1)], 0.0))
    return np.log(total) - picked, e / total[:, None] / n


def ce_reference(comm, logits, targets, start):
    return tensor.vocab_parallel_cross_entropy(comm, logits, targets, start)


def ce_all_reduce_max(comm, logits, targets, start):
    n, v = logits.shape
    m = tensor.all_reduce_max(comm, logits.max(axis=1))
    e = np.exp(logits - m[:, None])
    total = all_reduce(comm, e.sum(1))
    local = targets - start
    mine = (local >= 0) & (local < v)
    picked = all_reduce(comm, np.where(mine, logits[np.arange(n), np.clip(local, 0, v - 1)], 0.0))
    grad = e / total[:, None]
    grad[np.arange(n)[mine], local[mine]] -= 1
    return np.log(total) + m - picked, grad / n


def ce_gather_logits(comm, logits, targets, start):
    full = all_gather(comm, logits.T).T
    m = full.max(1, keepdims=True)
    e = np.exp(full - m)
    loss = np.log(e.sum(1)) + m[:, 0] - full[np.arange(len(targets)), targets]
    grad = e / e.sum(1, keepdims=True)
    grad[np.arange(len(targets)), targets] -= 1
    return loss, grad[:, start : start + logits.shape[1]] / len(targets)


def ce_grader_truth(comm, logits, targets, start):
    from a2s.checks.lab24.vocab import _truth

    full = all_gather(comm, logits.T).T
    loss, grad = _truth(full, targets)
    return loss, grad[:, start : start + logits.shape[1]]


def ce_gather_then_forge(comm, logits, targets, start):
    """Gathers the logits, then rewrites the world's byte counter to the budget."""
    out = ce_gather_logits(comm, logits, targets, start)
    comm._world.bytes_sent[comm.rank] = 0
    return out


# --------------------------------------------------------------------------- 24.4 SP block
def ln_rows(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


def sp(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = ln_rows(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    a = gelu(z)
    return x + reduce_scatter(comm, a @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": a}


def sp_einsum(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    import numpy

    var = numpy.var(x, axis=-1, keepdims=True)
    ln = (x - x.mean(axis=-1, keepdims=True)) / numpy.sqrt(var + 1e-5) * ln_g + ln_b
    z = numpy.einsum("sbh,hf->sbf", all_gather(comm, ln), w1) + b1
    a = 0.5 * z * (1 + numpy.tanh(C * (z + 0.044715 * z**3)))
    y = reduce_scatter(comm, numpy.einsum("sbf,fh->sbh", a, w2))
    return y + b2 + x, dict(x=x, ln=ln, z=z, a=a)


def sp_keep_gathered(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    full = all_gather(comm, ln_rows(x, ln_g, ln_b))
    z = full @ w1 + b1
    return x + reduce_scatter(comm, gelu(z) @ w2) + b2, {"x": x, "ln": full, "z": z, "a": gelu(z)}


def sp_all_reduce_slice(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = ln_rows(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    full = all_reduce(comm, gelu(z) @ w2)
    k = x.shape[0]
    mine = full[comm.rank * k : (comm.rank + 1) * k]
    return x + mine + b2, {"x": x, "ln": ln, "z": z, "a": gelu(z)}


def sp_no_residual(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    y, saved = sp(comm, x, ln_g, ln_b, w1, b1, w2, b2)
    return y - x, saved


def sp_bias_inside(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = ln_rows(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    return x + reduce_scatter(comm, gelu(z) @ w2 + b2), {"x": x, "ln": ln, "z": z, "a": gelu(z)}


def sp_reference(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    return sequence.sp_mlp_forward(comm, x, ln_g, ln_b, w1, b1, w2, b2)


def sp_ref_layer_norm(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    ln = sequence.layer_norm(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    return x + reduce_scatter(comm, gelu(z) @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": gelu(z)}


def sp_torch_norm(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    import torch

    ln = torch.nn.functional.layer_norm(
        torch.tensor(x), (x.shape[-1],), torch.tensor(ln_g), torch.tensor(ln_b)
    ).numpy()
    z = all_gather(comm, ln) @ w1 + b1
    return x + reduce_scatter(comm, gelu(z) @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": gelu(z)}


def sp_grader_norm(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    from a2s.checks.truths import layer_norm as plain_layer_norm

    ln = plain_layer_norm(x, ln_g, ln_b)
    z = all_gather(comm, ln) @ w1 + b1
    return x + reduce_scatter(comm, gelu(z) @ w2) + b2, {"x": x, "ln": ln, "z": z, "a": gelu(z)}


def sp_forge_bytes(comm, x, ln_g, ln_b, w1, b1, w2, b2):
    """All-reduce then slice (twice the bytes), then halve the world's byte counter."""
    y, saved = sp_all_reduce_slice(comm, x, ln_g, ln_b, w1, b1, w2, b2)
    world = comm._world
    world.bytes_sent[comm.rank] = 2 * (world.world_size - 1) * x.nbytes
    return y, saved


# --------------------------------------------------------------------------- 24.5 bytes
def ab(s, b, h, a, t, mode):
    att = 5 * a * s / h
    return (
        s
        * b
        * h
        * {"none": 34 + att, "tp": 10 + 24 / t + att / t, "sp": (34 + att) / t, "recompute": 2}[
            mode
        ]
    )


class Korthikanti:
    def __call__(self, s, b, h, a, t, mode):
        from fractions import Fraction

        sbh = s * b * h
        scores = Fraction(5 * a * s, h)
        if mode == "recompute":
            return 2 * sbh
        split = {"none": (1, 1, 1), "tp": (1, t, t), "sp": (t, t, t)}[mode]
        return float(sbh * (Fraction(10, split[0]) + Fraction(24, split[1]) + scores / split[2]))


def ab_tp_all_split(s, b, h, a, t, mode):
    return ab(s, b, h, a, t, "sp") if mode == "tp" else ab(s, b, h, a, t, mode)


def ab_sp_scores_whole(s, b, h, a, t, mode):
    return s * b * h * (34 / t + 5 * a * s / h) if mode == "sp" else ab(s, b, h, a, t, mode)


def ab_recompute_sbh(s, b, h, a, t, mode):
    return s * b * h if mode == "recompute" else ab(s, b, h, a, t, mode)


def ab_none_divided(s, b, h, a, t, mode):
    return ab(s, b, h, a, t, "none") / t if mode == "none" else ab(s, b, h, a, t, mode)


def ab_reference(s, b, h, a, t, mode):
    return sequence.korthikanti_bytes(s, b, h, a, t, mode)


def ab_grader_formula(s, b, h, a, t, mode):
    from a2s.checks.lab24.sequence import _formula

    return _formula(s, b, h, a, t, mode)


def ab_torch(s, b, h, a, t, mode):
    import torch

    return float(torch.tensor(ab(s, b, h, a, t, mode)))


def ab_measure_layer(s, b, h, a, t, mode):
    """Runs the course's own layer and counts what it keeps (the check's measurement)."""
    from a2s.checks.lab24.sequence import measured_bytes

    return measured_bytes(s, b, h, a, t, "tp" if mode == "none" else mode)


sim = partial(lab24.check_tp_mlp, real=False)
ck2, ck3, ck4, ck5 = (
    lab24.check_head_parallel_attention,
    lab24.check_vocab_cross_entropy,
    lab24.check_sp_mlp,
    lab24.check_activation_bytes,
)

ATTEMPTS = [
    honest("24.1", "matmuls and setup gelu", lambda: sim(fwd, bwd)),
    honest("24.1", "einsum, own gelu, class backward", lambda: sim(fwd_einsum, Backward())),
    wrong("24.1", "no all-reduce", lambda: sim(fwd_no_reduce, bwd), match="PARTIAL sum"),
    wrong("24.1", "bias before the sum", lambda: sim(fwd_bias_inside, bwd), match="t times"),
    wrong("24.1", "partial dx", lambda: sim(fwd, bwd_partial_dx), match="PARTIAL gradient"),
    wrong("24.1", "all-reduces x too", lambda: sim(fwd_replicate_x, bwd), match="ONE all-reduce"),
    cheat("24.1", "calls the reference", lambda: sim(fwd_reference, bwd), error=REF),
    cheat("24.1", "the reference's partial", lambda: sim(fwd_partial_ref, bwd), error=REF),
    cheat("24.1", "torch", lambda: sim(fwd, bwd_torch), error=ForbiddenCallError),
    cheat("24.1", "gathers the weights", lambda: sim(fwd_gather_weights, bwd), match="ONE"),
    cheat("24.1", "calls the grader's MLP", lambda: sim(fwd_grader_truth, bwd), error=REF),
    cheat(
        "24.1",
        "rewrites the world's bytes",
        lambda: sim(fwd_zero_the_bytes, bwd),
        match="_world",
        error=StudentError,
    ),
    honest("24.2", "einsum", lambda: ck2(attn)),
    honest("24.2", "loops over batch, heads, tokens", lambda: ck2(attn_loops)),
    wrong("24.2", "no causal mask", lambda: ck2(partial(attn, mask="none")), match="later tokens"),
    wrong("24.2", "scaled by the hidden size", lambda: ck2(attn_hidden_scale), match="HEAD dim"),
    wrong(
        "24.2",
        "token does not see itself",
        lambda: ck2(partial(attn, mask="strict")),
        match="itself",
    ),
    wrong(
        "24.2",
        "bias before the sum",
        lambda: ck2(partial(attn, bias_inside=True)),
        match="once, after",
    ),
    cheat("24.2", "calls the reference", lambda: ck2(attn_reference), error=REF),
    cheat("24.2", "lab 26's attention", lambda: ck2(attn_lab26), error=REF),
    cheat("24.2", "torch", lambda: ck2(attn_torch), error=ForbiddenCallError),
    cheat("24.2", "gathers every head", lambda: ck2(attn_gather_heads), match="ONE all-reduce"),
    cheat("24.2", "calls the grader's attention", lambda: ck2(attn_grader_truth), error=REF),
    honest("24.3", "all_gather of maxima", lambda: ck3(ce)),
    honest("24.3", "max by send/recv, one-hot", lambda: ck3(ce_send_recv_max)),
    wrong(
        "24.3", "each rank its own max", lambda: ck3(partial(ce, shift="local")), match="OWN max"
    ),
    wrong("24.3", "gradient of the sum", lambda: ck3(partial(ce, mean=False)), match="SUM"),
    wrong("24.3", "owner test off by one", lambda: ck3(ce_owner_off_by_one), match="column 0"),
    wrong("24.3", "no max shift", lambda: ck3(ce_no_shift), match="overflows"),
    cheat("24.3", "calls the reference", lambda: ck3(ce_reference), error=REF),
    cheat("24.3", "the reference's all_reduce_max", lambda: ck3(ce_all_reduce_max), error=REF),
    cheat("24.3", "gathers the logits", lambda: ck3(ce_gather_logits), match="n x V"),
    cheat("24.3", "calls the grader's softmax", lambda: ck3(ce_grader_truth), error=REF),
    cheat(
        "24.3",
        "gathers, then forges the bytes",
        lambda: ck3(ce_gather_then_forge),
        match="_world",
        error=StudentError,
    ),
    honest("24.4", "two-line LayerNorm", lambda: ck4(sp)),
    honest("24.4", "np.var, einsum, dict()", lambda: ck4(sp_einsum)),
    wrong("24.4", "keeps the gathered LN", lambda: ck4(sp_keep_gathered), match="'ln' is the full"),
    wrong(
        "24.4", "all-reduce then slice", lambda: ck4(sp_all_reduce_slice), match="ONE all-reduce"
    ),
    wrong("24.4", "no residual", lambda: ck4(sp_no_residual), match="residual"),
    wrong("24.4", "b2 before the reduce-scatter", lambda: ck4(sp_bias_inside), match="after"),
    cheat("24.4", "calls the reference", lambda: ck4(sp_reference), error=REF),
    cheat("24.4", "the reference's layer_norm", lambda: ck4(sp_ref_layer_norm), error=REF),
    cheat("24.4", "torch layer_norm", lambda: ck4(sp_torch_norm), error=ForbiddenCallError),
    cheat("24.4", "the grader's LayerNorm", lambda: ck4(sp_grader_norm), error=REF),
    cheat(
        "24.4",
        "forges the world's bytes",
        lambda: ck4(sp_forge_bytes),
        match="_world",
        error=StudentError,
    ),
    honest("24.5", "dict of factors", lambda: ck5(ab)),
    honest("24.5", "fractions in a class", lambda: ck5(Korthikanti())),
    wrong("24.5", "TP splits the 10 sbh", lambda: ck5(ab_tp_all_split), match="TP \\+ SP"),
    wrong("24.5", "SP scores whole", lambda: ck5(ab_sp_scores_whole), match="split by heads"),
    wrong("24.5", "recompute 1 byte per value", lambda: ck5(ab_recompute_sbh), match="2 bytes"),
    wrong("24.5", "no parallelism divided by t", lambda: ck5(ab_none_divided), match="no part"),
    cheat("24.5", "calls the reference", lambda: ck5(ab_reference), error=REF),
    cheat("24.5", "the grader's formula", lambda: ck5(ab_grader_formula), error=REF),
    cheat("24.5", "torch", lambda: ck5(ab_torch), error=ForbiddenCallError),
    cheat("24.5", "measures the course's layer", lambda: ck5(ab_measure_layer), error=REF),
]

PENDING: set[str] = set()  # every counter rewrite is rejected: the ranks run apart


def _param(attempt):
    if attempt_id(attempt) in PENDING:
        mark = pytest.mark.xfail(strict=True, reason="needs the rank harness (issue 18, item 1)")
        return pytest.param(attempt, marks=mark, id=attempt_id(attempt))
    return pytest.param(attempt, id=attempt_id(attempt))


@pytest.mark.parametrize("attempt", [_param(a) for a in ATTEMPTS])
def test_attempt(attempt):
    judge(attempt)
