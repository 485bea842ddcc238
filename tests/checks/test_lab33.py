"""Graders of lab 33: right answers pass; realistic wrong answers, budget breakers and
reference calls fail with the hint of their mistake."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from a2s.checks import lab33
from a2s.checks.core import CheckFailure, ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab33 import _truth
from minitorch.autograd import Tensor
from minitorch.model import distill, pruning_structured, qat, sparse24
from minitorch.model.config import GPTConfig
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Tiny matrices: BLAS threads only contend with the other test workers."""
    with threadpool_limits(limits=1):
        yield


# --------------------------------------------------------------------------- answers
def compress_24(w, bug=""):
    out = w.shape[0]
    g = w.reshape(out, -1, 4)
    key = np.abs(g) if bug != "signed" else g
    order = np.argsort(-key, axis=-1, kind="stable")
    if bug == "ties high":
        order = np.argsort(np.abs(g), axis=-1, kind="stable")[..., ::-1]
    pos = np.sort(order[..., :2], axis=-1)
    values = np.take_along_axis(g, pos, axis=-1).reshape(out, -1)
    p = pos.reshape(out, -1, 4).astype(np.uint8)
    if bug == "unpacked":
        return values, pos.reshape(out, -1).astype(np.uint8)
    if bug == "float64":
        values = values.astype(np.float64)
    meta = p[..., 0] | p[..., 1] << 2 | p[..., 2] << 4 | p[..., 3] << 6
    return values, meta


def compress_24_loop(w):
    out, cols = w.shape
    values, meta = [], []
    for r in range(out):
        vals, idx = [], []
        for k in range(0, cols, 4):
            group = [abs(float(v)) for v in w[r, k : k + 4]]
            keep = sorted(sorted(range(4), key=lambda j, g=group: -g[j])[:2])
            vals += [w[r, k + j] for j in keep]
            idx += keep
        values.append(vals)
        meta.append([sum(idx[4 * b + j] << (2 * j) for j in range(4)) for b in range(cols // 8)])
    return np.array(values, dtype=w.dtype), np.array(meta, dtype=np.uint8)


def sparse24_matmul(hbm, mul, n, out, cols, bug=""):
    x = hbm.load("x")
    base = 4 * np.repeat(np.arange(cols // 4), 2)
    step = 32 if bug == "big block" else 16
    for r0 in range(0, out, step):
        r1 = min(r0 + step, out)
        if bug == "x per block":
            x = hbm.load("x")
        v, m = hbm.load("values", r0, r1), hbm.load("meta", r0, r1)
        idx = np.stack([(m >> (2 * j)) & 3 for j in range(4)], axis=-1).reshape(r1 - r0, -1)
        if bug == "reversed bits":
            idx = np.stack([(m >> (6 - 2 * j)) & 3 for j in range(4)], -1).reshape(r1 - r0, -1)
        if bug == "dense":
            w = np.zeros((r1 - r0, cols))
            np.put_along_axis(w, base[None, :] + idx, v, axis=-1)
            prod = mul(x[:, None, :], w[None, :, :])
        elif bug == "read w":
            hbm.load("w", r0, r1)
            prod = mul(x[:, base[None, :] + idx], v[None, :, :])
        else:
            prod = mul(x[:, base[None, :] + idx], v[None, :, :])
        hbm.store(r0, prod.sum(axis=-1))


def sparse24_matmul_rows(hbm, mul, n, out, cols):
    """Another honest kernel: one weight row at a time, a loop over its kept slots."""
    x = hbm.load("x")
    for r in range(out):
        v, m = hbm.load("values", r, r + 1)[0], hbm.load("meta", r, r + 1)[0]
        y = np.zeros(n)
        for s in range(cols // 2):
            col = 4 * (s // 2) + ((int(m[s // 4]) >> (2 * (s % 4))) & 3)
            y += mul(x[:, col], v[s])
        hbm.store(r, y[:, None])


def local_product(hbm, mul, n, out, cols):
    """Computes y in its own process without the multiplier."""
    x = hbm.load("x")
    for r0 in range(0, out, 16):
        r1 = min(r0 + 16, out)
        v, m = hbm.load("values", r0, r1), hbm.load("meta", r0, r1)
        idx = np.stack([(m >> (2 * j)) & 3 for j in range(4)], -1).reshape(r1 - r0, -1)
        col = 4 * np.repeat(np.arange(cols // 4), 2)[None, :] + idx
        hbm.store(r0, (x[:, col] * v[None]).sum(-1))


def head_savings(d_model, n_head, n_kv_head, removed, seq_len, itemsize, bug=""):
    d, rep = d_model // n_head, n_head // n_kv_head
    gone = set(removed)
    groups = sum(all(h in gone for h in range(g * rep, (g + 1) * rep)) for g in range(n_kv_head))
    if bug == "kv per head":
        groups = len(gone)
    if bug == "no kv":
        groups = 0
    mats = len(gone) + groups
    core = 4 * d * seq_len**2 if bug == "square" else 2 * d * seq_len * (seq_len + 1)
    return (
        4 * d_model * d * mats,
        2 * d_model * d * mats * itemsize,
        2 * d * groups * itemsize,
        core * len(gone),
    )


def head_savings_from_config(d_model, n_head, n_kv_head, removed, seq_len, itemsize):
    """Another honest answer: counting matrix shapes as the reference's compact_heads would."""
    d = d_model // n_head
    rep = n_head // n_kv_head
    kept_q = [h for h in range(n_head) if h not in removed]
    kept_kv = [
        g for g in range(n_kv_head) if any(h in kept_q for h in range(g * rep, g * rep + rep))
    ]
    w = lambda q, kv: 2 * d * d_model * (q + kv)  # noqa: E731
    removed_w = w(n_head, n_kv_head) - w(len(kept_q), len(kept_kv))
    core = sum(4 * d * t for t in range(1, seq_len + 1)) * (n_head - len(kept_q))
    return 2 * removed_w, removed_w * itemsize, 2 * d * (n_kv_head - len(kept_kv)) * itemsize, core


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def distill_loss(zs, zt, targets, t, alpha, bug=""):
    scored = targets != -1
    if bug == "all rows":
        scored = np.ones_like(scored)
    rows = scored.sum()
    ps, pt, p1 = _softmax(zs / t), _softmax(zt / (1.0 if bug == "teacher raw" else t)), _softmax(zs)
    y = np.where(targets == -1, 0, targets)
    kl = (pt * (np.log(pt) - np.log(ps))).sum(-1)
    factor = 1.0 if bug == "no T2" else t**2
    ce = -np.log(p1[np.arange(len(y)), y])
    loss = ((alpha * factor * kl + (1 - alpha) * ce) * scored).sum() / rows
    grad = alpha * factor / t * (ps - pt) + (1 - alpha) * (p1 - np.eye(zs.shape[1])[y])
    return float(loss), grad * scored[:, None] / rows


def distill_loss_autograd(zs, zt, targets, t, alpha):
    """Another honest answer: minitorch's autograd (not the reference's distill module)."""
    from minitorch.autograd import log_softmax

    keep = np.flatnonzero(targets != -1)
    z = Tensor(zs[keep].copy(), requires_grad=True)
    pt = _softmax(zt[keep] / t)
    soft = (log_softmax(z * (1.0 / t), axis=-1) * Tensor(pt)).sum() * (-1.0 / len(keep))
    hard_lp = log_softmax(z, axis=-1)
    onehot = np.eye(zs.shape[1])[targets[keep]]
    hard = (hard_lp * Tensor(onehot)).sum() * (-1.0 / len(keep))
    ent = float((pt * np.log(pt)).sum()) / len(keep)
    loss = (soft + ent) * (alpha * t * t) + hard * (1 - alpha)
    loss.backward()
    grad = np.zeros_like(zs)
    grad[keep] = z.grad
    return loss.item(), grad


def fake_quant(x, lo, hi, bits, g, bug=""):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmax = 2**bits - 1
    s = (hi - lo) / qmax
    z = np.round(-lo / s)
    r = np.round(x / s + z)
    inside = (r >= 0) & (r <= qmax)
    if bug == "raw mask":
        inside = (x >= lo) & (x <= hi)
    if bug == "no clip":
        inside = np.ones_like(inside)
    return (np.clip(r, 0, qmax) - z) * s, g * inside


def fake_quant_loop(x, lo, hi, bits, g):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / (2**bits - 1)
    z = round(-lo / s)
    xh, gr = np.empty_like(x, dtype=float), np.empty_like(x, dtype=float)
    for i in np.ndindex(x.shape):
        q = round(float(x[i]) / s + z)
        xh[i] = (min(max(q, 0), 2**bits - 1) - z) * s
        gr[i] = g[i] if 0 <= q <= 2**bits - 1 else 0.0
    return xh, gr


# --------------------------------------------------------------------------- 33.1
def test_compress_passes(capsys):
    lab33.check_compress_24(compress_24)
    lab33.check_compress_24(compress_24_loop)
    assert capsys.readouterr().out.count("✔ Exercise 33.1 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("ties high", "LOWER index"),
        ("signed", "magnitude"),
        ("unpacked", "four 2-bit positions packed"),
        ("float64", "in w's dtype"),
    ],
)
def test_compress_rejects_wrong_formats(bug, match):
    rejects(lab33.check_compress_24, lambda w: compress_24(w, bug), match=match)


def test_compress_rejects_keeping_three_of_four():
    def three(w):
        v, m = compress_24(w)
        return np.concatenate([v, v[:, :1]], axis=1), m

    rejects(lab33.check_compress_24, three, match="two kept values per group")


def test_compress_rejects_a_wrong_round_trip():
    def shifted(w):
        v, m = compress_24(w)
        return v, (m + 1).astype(np.uint8)

    rejects(lab33.check_compress_24, shifted, match="not w times the 2:4 mask")


def test_compress_rejects_the_reference():
    def ref(w):
        sp = sparse24.compress_24(w)
        return sp.values, sp.meta

    rejects(lab33.check_compress_24, ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 33.2
def test_sparse_matmul_passes(capsys):
    lab33.check_sparse24_matmul(sparse24_matmul)
    lab33.check_sparse24_matmul(sparse24_matmul_rows)
    assert capsys.readouterr().out.count("✔ Exercise 33.2 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("dense", "the dense count.*never multiply the pruned zeros"),
        ("read w", "dense weight w"),
        ("x per block", "load each of x, values and meta once"),
        ("big block", "SRAM holds 16 weight rows"),
        ("reversed bits", "unpack the 2-bit indices"),
    ],
)
def test_sparse_matmul_rejects_budget_breakers(bug, match):
    rejects(lab33.check_sparse24_matmul, lambda *a: sparse24_matmul(*a, bug=bug), match=match)


def test_sparse_matmul_counts_multiplies_itself():
    rejects(lab33.check_sparse24_matmul, local_product, match="every multiply .* goes through mul")


def test_sparse_matmul_rejects_a_padded_multiply_count():
    def padded(hbm, mul, n, out, cols):
        local_product(hbm, mul, n, out, cols)
        mul(np.ones(n * out * cols // 2), 0.5)

    rejects(lab33.check_sparse24_matmul, padded, match="each product summed into y once")


def test_sparse_matmul_rejects_made_up_products():
    """y with numpy, then mul fed zeros and y's total: the count and the sum both match."""

    def made_up(hbm, mul, n, out, cols):
        x, total = hbm.load("x"), 0.0
        for r0 in range(0, out, 16):
            v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
            idx = np.stack([(m >> (2 * j)) & 3 for j in range(4)], -1).reshape(len(v), -1)
            y = (x[:, 4 * (np.arange(cols // 2) // 2) + idx] * v[None]).sum(-1)
            hbm.store(r0, y)
            total += float(y.astype(np.float64).sum())
        mul(np.zeros(n * out * cols // 2 - 1), 0.0)
        mul(np.array([total]), 1.0)

    rejects(lab33.check_sparse24_matmul, made_up, match="other products than the kernel's")


def test_sparse_matmul_requires_every_column_stored_once():
    def twice(hbm, mul, n, out, cols):
        sparse24_matmul(hbm, mul, n, out, cols)
        hbm.store(0, np.zeros((n, 1)))

    rejects(lab33.check_sparse24_matmul, twice, match="stored exactly once")


def test_sparse_matmul_counters_are_out_of_reach():
    """The learner's process holds proxies only: rewriting what it can reach changes nothing."""

    def tamper(hbm, mul, n, out, cols):
        for obj in (hbm, mul):
            for attr in ("reads", "multiplies", "__self__"):
                try:
                    setattr(obj, attr, 0)
                except (AttributeError, TypeError):
                    pass
        local_product(hbm, mul, n, out, cols)

    rejects(lab33.check_sparse24_matmul, tamper, match="goes through mul")


def test_sparse_matmul_rejects_the_reference():
    def ref(hbm, mul, n, out, cols):
        sparse24.sparse24_cost(n, out, cols)
        sparse24_matmul(hbm, mul, n, out, cols)

    rejects(lab33.check_sparse24_matmul, ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 33.3
def test_head_savings_passes(capsys):
    lab33.check_head_savings(head_savings)
    lab33.check_head_savings(head_savings_from_config)
    assert capsys.readouterr().out.count("✔ Exercise 33.3 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("kv per head", "EVERY query head of its group"),
        ("no kv", "its K/V head goes too"),
        ("square", "not 4 d T\\^2"),
    ],
)
def test_head_savings_rejects_wrong_counts(bug, match):
    rejects(lab33.check_head_savings, lambda *a: head_savings(*a, bug=bug), match=match)


def test_head_savings_groups_consecutive_heads():
    def interleaved(d_model, n_head, n_kv_head, removed, seq_len, itemsize):
        d, gone = d_model // n_head, set(removed)
        groups = sum(all(h in gone for h in range(g, n_head, n_kv_head)) for g in range(n_kv_head))
        mats = len(gone) + groups
        core = 2 * d * seq_len * (seq_len + 1) * len(gone)
        return (
            4 * d_model * d * mats,
            2 * d_model * d * mats * itemsize,
            2 * d * groups * itemsize,
            core,
        )

    rejects(lab33.check_head_savings, interleaved, match="CONSECUTIVE query heads")


def test_head_savings_wants_integers():
    rejects(lab33.check_head_savings, lambda *a: tuple(map(float, head_savings(*a))), match="//")


def test_head_savings_rejects_the_reference():
    def ref(c, h, kv, removed, t, s):
        cfg = GPTConfig(vocab_size=16, block_size=32, n_layer=1, n_head=h, n_kv_head=kv, d_model=c)
        pruning_structured.head_savings(cfg, {0: removed}, t, s)
        return head_savings(c, h, kv, removed, t, s)

    rejects(lab33.check_head_savings, ref, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 33.4
def test_distill_loss_passes(capsys):
    lab33.check_distill_loss(distill_loss)
    lab33.check_distill_loss(distill_loss_autograd)
    assert capsys.readouterr().out.count("✔ Exercise 33.4 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [("no T2", "T\\^2"), ("teacher raw", "Soften the teacher"), ("all rows", "IGNORE")],
)
def test_distill_loss_rejects_wrong_losses(bug, match):
    rejects(lab33.check_distill_loss, lambda *a: distill_loss(*a, bug=bug), match=match)


def test_distill_loss_checks_the_gradient():
    def loss_only(*a):
        loss, grad = distill_loss(*a)
        return loss, grad * 2

    rejects(lab33.check_distill_loss, loss_only, match="the gradient is wrong")


def test_distill_loss_rejects_the_reference():
    def ref(zs, zt, y, t, a):
        loss = distill.distill_loss(Tensor(zs, requires_grad=True), zt, y, t, a)
        return loss.item(), np.zeros_like(zs)

    rejects(lab33.check_distill_loss, ref, match="reference", error=ReferenceCalledError)


def test_truths_agree_with_the_reference():
    g = np.random.default_rng(0)
    zs, zt = g.standard_normal((6, 5)), g.standard_normal((6, 5))
    y = np.array([0, 1, -1, 3, 4, -1])
    want, grad = _truth.distill_loop(zs, zt, y, 2.0, 0.3, -1)
    z = Tensor(zs.copy(), requires_grad=True)
    ref = unblocked(distill.distill_loss)(z, zt, y, 2.0, 0.3)
    ref.backward()
    assert ref.item() == pytest.approx(want) and np.allclose(z.grad, grad)
    w = g.standard_normal((4, 16))
    sp = unblocked(sparse24.compress_24)(w)
    values, meta = _truth.compress_loop(w)
    assert np.array_equal(sp.values, values) and np.array_equal(sp.meta, meta)
    x = g.uniform(-3, 3, 50)
    t = Tensor(x.copy(), requires_grad=True)
    out = unblocked(qat.fake_quant_range)(t, -1.0, 1.5, 4)
    out.sum().backward()
    xh, gr = _truth.fake_quant_loop(x, -1.0, 1.5, 4, np.ones_like(x))
    assert np.allclose(out.data, xh) and np.array_equal(t.grad, gr)
    cfg = GPTConfig(vocab_size=16, block_size=32, n_layer=1, n_head=4, n_kv_head=2, d_model=64)
    s = unblocked(pruning_structured.head_savings)(cfg, {0: [0, 1, 3]}, 20, 2)
    got = _truth.head_savings_loop(64, 4, 2, [0, 1, 3], 20, 2)
    assert got == (s.linear_flops, s.weight_bytes, s.kv_bytes, s.attention_flops)


# --------------------------------------------------------------------------- 33.5
def test_fake_quant_passes(capsys):
    lab33.check_fake_quant(fake_quant)
    lab33.check_fake_quant(fake_quant_loop)
    assert capsys.readouterr().out.count("✔ Exercise 33.5 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [("raw mask", "ROUNDED value"), ("no clip", "Block the gradient")],
)
def test_fake_quant_rejects_wrong_gradients(bug, match):
    rejects(lab33.check_fake_quant, lambda *a: fake_quant(*a, bug=bug), match=match)


def test_fake_quant_widens_the_range_to_hold_zero():
    def narrow(x, lo, hi, bits, g):
        s = (hi - lo) / (2**bits - 1)
        z = np.round(-lo / s)
        r = np.round(x / s + z)
        return (np.clip(r, 0, 2**bits - 1) - z) * s, g * ((r >= 0) & (r <= 2**bits - 1))

    rejects(lab33.check_fake_quant, narrow, match="hold 0")


def test_sparse_matmul_accepts_a_last_block_past_the_end():
    def overrun(hbm, mul, n, out, cols):
        x = hbm.load("x")
        base = 4 * np.repeat(np.arange(cols // 4), 2)
        for r0 in range(0, out, 16):
            v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
            idx = np.stack([(m >> (2 * j)) & 3 for j in range(4)], -1).reshape(len(v), -1)
            hbm.store(r0, mul(x[:, base[None, :] + idx], v[None]).sum(-1))

    lab33.check_sparse24_matmul(overrun)


def test_fake_quant_rejects_a_zero_gradient():
    rejects(
        lab33.check_fake_quant,
        lambda *a: (fake_quant(*a)[0], np.zeros_like(a[0])),
        match="straight-through estimator",
    )


def test_fake_quant_rejects_the_reference():
    def ref(x, lo, hi, bits, g):
        qat.fake_quant_range(Tensor(x), lo, hi, bits)
        return fake_quant(x, lo, hi, bits, g)

    rejects(lab33.check_fake_quant, ref, match="reference", error=ReferenceCalledError)


def test_torch_is_a_forbidden_call():
    def with_torch(x, lo, hi, bits, g):
        import torch

        s = (max(hi, 0.0) - min(lo, 0.0)) / (2**bits - 1)
        z = round(-min(lo, 0.0) / s)
        t = torch.tensor(x, requires_grad=True)
        out = torch.fake_quantize_per_tensor_affine(t, s, z, 0, 2**bits - 1)
        out.backward(torch.tensor(g))
        return out.detach().numpy(), t.grad.numpy()

    rejects(lab33.check_fake_quant, with_torch, match="torch", error=ForbiddenCallError)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("check", "answer", "match"),
    [
        (lab33.check_compress_24, lambda w: None, "the pair"),
        (lab33.check_compress_24, lambda w: ("a", [1, [2]]), "arrays of numbers|shape"),
        (lab33.check_sparse24_matmul, lambda h, m, *a: h.load("nothing"), "HBM holds"),
        (lab33.check_sparse24_matmul, lambda h, m, *a: h.store(0, "x"), "block is"),
        (lab33.check_sparse24_matmul, lambda h, m, *a: m("a", [1]), "arrays of numbers"),
        (lab33.check_head_savings, lambda *a: None, "return \\(linear_flops"),
        (lab33.check_distill_loss, lambda *a: 1.0, "the pair"),
        (lab33.check_distill_loss, lambda *a: (1.0, "x"), "an \\(N, V\\) array"),
        (lab33.check_fake_quant, lambda *a: None, "the pair"),
        (lab33.check_fake_quant, lambda x, *a: (x, x[:2]), "grad has shape"),
    ],
)
def test_bad_answers_get_a_clear_message(check, answer, match):
    rejects(check, answer, match=match)


def test_the_stub_fails_every_check():
    def stub(*a):
        raise NotImplementedError("Exercise 33.x")

    for check in (
        lab33.check_compress_24,
        lab33.check_sparse24_matmul,
        lab33.check_head_savings,
        lab33.check_distill_loss,
        lab33.check_fake_quant,
    ):
        with pytest.raises(CheckFailure):
            check(stub)


# --------------------------------------------------------------------------- musts
MUSTS = [
    ("33.1", "Keep exactly 2 of every 4", "test_compress_rejects_keeping_three_of_four"),
    ("33.1", "**the two largest magnitudes** $|w|$", "test_compress_rejects_wrong_formats"),
    ("33.1", "on equal magnitudes the lower index", "test_compress_rejects_wrong_formats"),
    (
        "33.1",
        "the round trip must give `w` times the mask",
        "test_compress_rejects_a_wrong_round_trip",
    ),
    ("33.1", "4 positions per byte", "test_compress_rejects_wrong_formats"),
    (
        "33.2",
        "Every multiply of your kernel must go through `mul`",
        "test_sparse_matmul_counts_multiplies_itself",
    ),
    (
        "33.2",
        "Every multiply of your kernel must go through `mul`",
        "test_sparse_matmul_rejects_a_padded_multiply_count",
    ),
    (
        "33.2",
        "Load `x`, `values` and `meta` **once each**",
        "test_sparse_matmul_rejects_budget_breakers",
    ),
    (
        "33.2",
        "store every column of `y` once",
        "test_sparse_matmul_requires_every_column_stored_once",
    ),
    ("33.2", "at most **16 rows**", "test_sparse_matmul_rejects_budget_breakers"),
    (
        "33.2",
        "Reading `w`, or multiplying the pruned zeros, breaks the budget",
        "test_sparse_matmul_rejects_budget_breakers",
    ),
    (
        "33.2",
        "its counters are not in your process",
        "test_sparse_matmul_counters_are_out_of_reach",
    ),
    (
        "33.3",
        "it goes only when **every** query head of its group is removed",
        "test_head_savings_rejects_wrong_counts",
    ),
    ("33.3", "Return four integers", "test_head_savings_wants_integers"),
    (
        "33.4",
        "with zero rows where the target is `IGNORE`",
        "test_distill_loss_rejects_wrong_losses",
    ),
    ("33.4", "Soften both with the same $T$", "test_distill_loss_rejects_wrong_losses"),
    ("33.4", "and its gradient in `zs`", "test_distill_loss_checks_the_gradient"),
    ("33.5", "The rounded value decides the mask", "test_fake_quant_rejects_wrong_gradients"),
    ("33.5", "blocks it where the value was clipped", "test_fake_quant_rejects_wrong_gradients"),
    (
        "33.5",
        "on the unsigned $b$-bit affine grid of a range $[lo, hi]$ (widened to hold 0)",
        "test_fake_quant_widens_the_range_to_hold_zero",
    ),
    ("33.5", "Exercise code may not call torch", "test_torch_is_a_forbidden_call"),
    ("33.1", "in `w`'s dtype", "test_compress_rejects_wrong_formats"),
    ("33.1", "the 2 kept values of each group of 4, in position order", "test_attempt"),
    ("33.1", "(the first in the low bits)", "test_attempt"),
    (
        "33.2",
        "Every multiply of your kernel must go through `mul`",
        "test_sparse_matmul_rejects_made_up_products",
    ),
    (
        "33.2",
        r"do exactly $n \cdot \text{out} \cdot \text{cols} / 2$ multiplies",
        "test_sparse_matmul_rejects_budget_breakers",
    ),
    (
        "33.3",
        r"head $h$ belongs to K/V group $h \cdot n_\text{kv} /",
        "test_head_savings_groups_consecutive_heads",
    ),
    ("33.3", "query $t$ attends to $t$ keys", "test_head_savings_rejects_wrong_counts"),
    ("33.4", "the hard term at $T = 1$", "test_attempt"),
    ("33.4", "(a float, the mean over the scored rows)", "test_attempt"),
    ("33.5", "Use `np.round` (half to even", "test_attempt"),
    ("33.5", "the unsigned $b$-bit affine grid", "test_attempt"),
    (
        "33.1",
        "nor the `minitorch` reference of the function",
        "test_compress_rejects_the_reference",
    ),
    (
        "33.2",
        "nor the `minitorch` reference of the function",
        "test_sparse_matmul_rejects_the_reference",
    ),
    (
        "33.3",
        "nor the `minitorch` reference of the function",
        "test_head_savings_rejects_the_reference",
    ),
    (
        "33.4",
        "nor the `minitorch` reference of the function",
        "test_distill_loss_rejects_the_reference",
    ),
    (
        "33.5",
        "nor the `minitorch` reference of the function",
        "test_fake_quant_rejects_the_reference",
    ),
]
