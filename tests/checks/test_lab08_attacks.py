"""Lab 08 tried as a class would: correct kernels written differently, realistic mistakes
(each must get the hint that names it) and cheats (the reference, torch, the counters or the
arrays reached through reflection or ``gc``, every tile kept, the memory meter reset).

The kernels run in a forked child (:mod:`a2s.checks.harness`); the HBM and its counts
stay in the grader's process, so what a cheat does to the objects it can reach changes the
child's copy only and the grade is taken from the parent's.
"""

from __future__ import annotations

import gc
import math
import operator

import numpy as np
import pytest

import minitorch.kernels.attention as attention
import minitorch.kernels.flash as flash
import minitorch.kernels.fusion as fusion
import minitorch.kernels.io_model as io_model
from a2s.checks import lab08
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from a2s.checks.lab08 import traffic as truth
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal, unblocked_in

unblocked = unblocked_in("minitorch.kernels")
_fwd, _bwd = unblocked(flash.flash_attention_forward), unblocked(flash.flash_attention_backward)
_gelu_fused, _rms_fused = unblocked(fusion.bias_gelu_fused), unblocked(fusion.add_rmsnorm_fused)


def _rows(n, t):
    return [slice(i, min(i + t, n)) for i in range(0, n, t)]


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _device_copy(hbm=None, name="Q"):
    """The child's copy of the grader's HBM, found the way a cheat would (gc): the newest one
    whose ``name`` has the shape the kernel's HBM reports."""
    found = [o for o in gc.get_objects() if type(o) is io_model.HBM]
    if hbm is not None:
        want = hbm.shape(name)
        found = [o for o in found if name in o._arrays and o._arrays[name].shape == want]
    return found[-1]


# --------------------------------------------------------------------------- 08.1
def gelu_with_np_array(hbm, tile_rows):  # np.array everywhere (the old deny-list refused it)
    n, _ = hbm.shape("X")
    b = np.array(hbm.load("B"))
    for rows in _rows(n, tile_rows):
        hbm.store("Y", np.array(_gelu(hbm.load("X", rows) + b)), rows)


def rmsnorm_with_while(hbm, tile_rows, eps):
    import math as m  # an import inside the kernel

    n, d = hbm.shape("X")
    g, i = hbm.load("G"), 0
    while i < n:
        rows = slice(i, min(i + tile_rows, n))
        h = hbm.load("X", rows) + hbm.load("R", rows)
        hbm.store("H", h, rows)
        hbm.store("Y", g * h / np.sqrt((h**2).sum(axis=1, keepdims=True) / d + eps), rows)
        i += tile_rows
    assert m.isfinite(eps)


class GeluKernel:  # a class with the kernel as __call__
    def __init__(self, c=0.044715):
        self.c = c

    def __call__(self, hbm, tile_rows):
        n, _ = hbm.shape("X")
        b = hbm.load("B")
        for rows in _rows(n, tile_rows):
            x = hbm.load("X", rows) + b
            inner = np.sqrt(2 / np.pi) * (x + self.c * x * x * x)
            hbm.store("Y", x * (1 + np.tanh(inner)) / 2, rows)


def gelu_unfused(hbm, tile_rows):
    n, d = hbm.shape("X")
    hbm.alloc("H", (n, d))
    b = hbm.load("B")
    for rows in _rows(n, tile_rows):
        hbm.store("H", hbm.load("X", rows) + b, rows)
    for rows in _rows(n, tile_rows):
        hbm.store("Y", _gelu(hbm.load("H", rows)), rows)


def gelu_reloading_b(hbm, tile_rows):
    n, _ = hbm.shape("X")
    for rows in _rows(n, tile_rows):
        hbm.store("Y", _gelu(hbm.load("X", rows) + hbm.load("B")), rows)


def gelu_exact_erf(hbm, tile_rows):  # the erf GELU, not the tanh form asked
    n, _ = hbm.shape("X")
    b = hbm.load("B")
    erf = np.vectorize(math.erf)
    for rows in _rows(n, tile_rows):
        x = hbm.load("X", rows) + b
        hbm.store("Y", 0.5 * x * (1 + erf(x / math.sqrt(2))), rows)


def rmsnorm_without_residual(hbm, tile_rows, eps):
    n, _ = hbm.shape("X")
    g = hbm.load("G")
    for rows in _rows(n, tile_rows):
        h = hbm.load("X", rows) + hbm.load("R", rows)
        hbm.store("Y", g * h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + eps), rows)


def gelu_torch(hbm, tile_rows):
    import torch

    n, _ = hbm.shape("X")
    b = hbm.load("B")
    for rows in _rows(n, tile_rows):
        x = torch.from_numpy(hbm.load("X", rows) + b)
        hbm.store("Y", torch.nn.functional.gelu(x, approximate="tanh").numpy(), rows)


def gelu_unfused_then_counters_reset(hbm, tile_rows):  # rewrites the counts it can reach
    gelu_unfused(hbm, tile_rows)
    dev = _device_copy(hbm, "X")
    n, d = dev.shape("X")
    dev.reads.update(X=n * d * 8, B=d * 8, H=0)
    dev.writes.update(Y=n * d * 8, H=0)


def gelu_writing_the_array_directly(hbm, tile_rows):  # no store: into the arrays via gc
    dev = _device_copy(hbm, "X")
    y = dev._arrays["Y"]
    y[...] = _gelu(dev._arrays["X"] + dev._arrays["B"])


def gelu_reading_private_arrays(hbm, tile_rows):
    arrays = operator.attrgetter("_arrays")(hbm)
    hbm.store("Y", _gelu(arrays["X"] + arrays["B"]))


FUSION = [
    honest(
        "08.1",
        "np.array and a while loop",
        lambda: lab08.check_fusion(gelu_with_np_array, rmsnorm_with_while),
    ),
    honest("08.1", "a kernel class", lambda: lab08.check_fusion(GeluKernel(), _rms_fused)),
    wrong("08.1", "unfused", lambda: lab08.check_fusion(gelu_unfused, _rms_fused), match="unfused"),
    wrong(
        "08.1",
        "B per tile",
        lambda: lab08.check_fusion(gelu_reloading_b, _rms_fused),
        match="once per tile",
    ),
    wrong(
        "08.1",
        "erf GELU",
        lambda: lab08.check_fusion(gelu_exact_erf, _rms_fused),
        match="tanh form",
    ),
    wrong(
        "08.1",
        "no residual",
        lambda: lab08.check_fusion(_gelu_fused, rmsnorm_without_residual),
        match="Store h",
    ),
    cheat(
        "08.1",
        "the reference",
        lambda: lab08.check_fusion(fusion.bias_gelu_fused, _rms_fused),
        match="bias_gelu_fused",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.1",
        "torch gelu",
        lambda: lab08.check_fusion(gelu_torch, _rms_fused),
        error=ForbiddenCallError,
    ),
    cheat(
        "08.1",
        "counters rewritten via gc",
        lambda: lab08.check_fusion(gelu_unfused_then_counters_reset, _rms_fused),
        match="unfused",
    ),
    cheat(
        "08.1",
        "writes the arrays via gc",
        lambda: lab08.check_fusion(gelu_writing_the_array_directly, _rms_fused),
        match="Y differs",
    ),
    cheat(
        "08.1",
        "attrgetter _arrays",
        lambda: lab08.check_fusion(gelu_reading_private_arrays, _rms_fused),
        match="_arrays",
        error=StudentError,
    ),
    cheat(
        "08.1",
        "private attribute of its own",
        lambda: lab08.check_fusion(lambda hbm, t: setattr(hbm, "_arrays", {}), _rms_fused),
        match="_arrays",
        error=StudentError,
    ),
]


# --------------------------------------------------------------------------- 08.2
def softmax_logaddexp(hbm, block):  # another algorithm: a running logsumexp
    r, n = hbm.shape("X")
    lse = np.full(r, -np.inf)
    for c in _rows(n, block):
        x = hbm.load("X", cols=c)
        top = x.max(axis=1)
        lse = np.logaddexp(lse, top + np.log(np.exp(x - top[:, None]).sum(axis=1)))
    for c in _rows(n, block):
        hbm.store("Y", np.exp(hbm.load("X", cols=c) - lse[:, None]), cols=c)


def softmax_generator(hbm, block):  # a generator of tiles, stats in a dict
    r, n = hbm.shape("X")

    def tiles():
        for j in range(0, n, block):
            yield slice(j, min(j + block, n)), hbm.load("X", cols=slice(j, min(j + block, n)))

    st = {"m": np.full(r, -np.inf), "l": np.zeros(r)}
    for _, x in tiles():
        m = np.maximum(st["m"], np.array(x).max(axis=1))
        st["l"] = st["l"] * np.exp(st["m"] - m) + np.exp(x - m[:, None]).sum(axis=1)
        st["m"] = m
    for c, x in tiles():
        hbm.store("Y", np.exp(x - st["m"][:, None]) / st["l"][:, None], cols=c)


def _two_pass(factor):
    def kernel(hbm, block):
        r, n = hbm.shape("X")
        m, l = np.full(r, -np.inf), np.zeros(r)
        for c in _rows(n, block):
            x = hbm.load("X", cols=c)
            m_new = np.maximum(m, x.max(axis=1))
            with np.errstate(over="ignore", invalid="ignore"):
                l = l * factor(m, m_new) + np.exp(x - m_new[:, None]).sum(axis=1)
            m = m_new
        for c in _rows(n, block):
            hbm.store("Y", np.exp(hbm.load("X", cols=c) - m[:, None]) / l[:, None], cols=c)

    return kernel


def softmax_three_passes(hbm, block):
    r, n = hbm.shape("X")
    m, s = np.full(r, -np.inf), np.zeros(r)
    for c in _rows(n, block):
        m = np.maximum(m, hbm.load("X", cols=c).max(axis=1))
    for c in _rows(n, block):
        s += np.exp(hbm.load("X", cols=c) - m[:, None]).sum(axis=1)
    for c in _rows(n, block):
        hbm.store("Y", np.exp(hbm.load("X", cols=c) - m[:, None]) / s[:, None], cols=c)


def softmax_without_shift(hbm, block):
    r, n = hbm.shape("X")
    s = np.zeros(r)
    with np.errstate(over="ignore", invalid="ignore"):
        for c in _rows(n, block):
            s += np.exp(hbm.load("X", cols=c)).sum(axis=1)
        for c in _rows(n, block):
            hbm.store("Y", np.exp(hbm.load("X", cols=c)) / s[:, None], cols=c)


def softmax_keeping_every_tile(hbm, block):  # loads X twice (traffic right), keeps pass 1
    r, n = hbm.shape("X")
    m, l, kept = np.full(r, -np.inf), np.zeros(r), []
    for c in _rows(n, block):
        x = hbm.load("X", cols=c)
        kept.append(x)
        m_new = np.maximum(m, x.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(x - m_new[:, None]).sum(axis=1)
        m = m_new
    for c, x in zip(_rows(n, block), kept, strict=True):
        hbm.load("X", cols=c)  # for the count
        hbm.store("Y", np.exp(x - m[:, None]) / l[:, None], cols=c)


def softmax_kept_and_meter_reset(hbm, block):
    import tracemalloc

    softmax_keeping_every_tile(hbm, block)
    tracemalloc.reset_peak()


def softmax_three_passes_counters_reset(hbm, block):
    softmax_three_passes(hbm, block)
    dev = _device_copy(hbm, "X")
    dev.reads["X"] = 2 * dev._arrays["X"].nbytes  # the count the check asks for


def softmax_torch(hbm, block):
    import torch

    x = torch.from_numpy(
        np.concatenate([hbm.load("X", cols=c) for c in _rows(hbm.shape("X")[1], block)], 1)
    )
    y = torch.softmax(x, dim=1).numpy()
    for c in _rows(x.shape[1], block):
        hbm.load("X", cols=c)
        hbm.store("Y", y[:, c], cols=c)


SOFTMAX = [
    honest("08.2", "running logsumexp", lambda: lab08.check_online_softmax(softmax_logaddexp)),
    honest("08.2", "a generator of tiles", lambda: lab08.check_online_softmax(softmax_generator)),
    wrong(
        "08.2",
        "three passes",
        lambda: lab08.check_online_softmax(softmax_three_passes),
        match="Three passes",
    ),
    wrong(
        "08.2",
        "sum not rescaled",
        lambda: lab08.check_online_softmax(_two_pass(lambda m, mn: 1.0)),
        match="multiply it by exp",
    ),
    wrong(
        "08.2",
        "rescaled the wrong way",
        lambda: lab08.check_online_softmax(_two_pass(lambda m, mn: np.exp(mn - m))),
        match="yours multiplies by exp",
    ),
    wrong(
        "08.2",
        "no max shift",
        lambda: lab08.check_online_softmax(softmax_without_shift),
        match="Subtract the running",
    ),
    cheat(
        "08.2",
        "the reference",
        lambda: lab08.check_online_softmax(attention.online_softmax_hbm),
        match="online_softmax",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.2",
        "torch softmax",
        lambda: lab08.check_online_softmax(softmax_torch),
        error=ForbiddenCallError,
    ),
    cheat(
        "08.2",
        "keeps every tile",
        lambda: lab08.check_online_softmax(softmax_keeping_every_tile),
        match="allocated",
    ),
    cheat(
        "08.2",
        "resets the memory meter",
        lambda: lab08.check_online_softmax(softmax_kept_and_meter_reset),
        match="reset_peak",
        error=ForbiddenCallError,
    ),
    cheat(
        "08.2",
        "counters rewritten via gc",
        lambda: lab08.check_online_softmax(softmax_three_passes_counters_reset),
        match="Three passes",
    ),
]


# --------------------------------------------------------------------------- 08.3
def predict_closed_form(n, d, bq, bk, causal, itemsize):
    from math import ceil  # an import inside

    flash = 0
    for i in range(ceil(n / bq)):
        i0, i1 = i * bq, min((i + 1) * bq, n)
        seen = min(n, ceil(i1 / bk) * bk) if causal else n
        flash += 2 * (i1 - i0) * d + (i1 - i0) + 2 * seen * d
    return [itemsize * (4 * n * d + 4 * n * n), itemsize * flash]  # a list is a pair


def predict_recursive(n, d, bq, bk, causal, itemsize, i0=0):
    if i0 >= n:
        return (itemsize * 4 * n * (n + d), 0)
    i1 = min(i0 + bq, n)
    kv = sum(2 * (min(j + bk, n) - j) * d for j in range(0, n, bk) if not causal or j < i1)
    naive, rest = predict_recursive(n, d, bq, bk, causal, itemsize, i1)
    return naive, rest + itemsize * ((i1 - i0) * (2 * d + 1) + kv)


def _ref_pair(n, d, bq, bk, causal, itemsize):
    return truth._want(n, d, bq, bk, causal, itemsize)


_MEMO = {(64, 16, 16, 16, False, 8): (163840, 82432)}


TRAFFIC = [
    honest(
        "08.3",
        "closed form per block, a list",
        lambda: lab08.check_predicted_traffic(predict_closed_form),
    ),
    honest(
        "08.3",
        "recursion over query blocks",
        lambda: lab08.check_predicted_traffic(predict_recursive),
    ),
    wrong(
        "08.3",
        "causal ignored",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: predict_recursive(n, d, bq, bk, False, s)
        ),
        match="Causal attention skips",
    ),
    wrong(
        "08.3",
        "L not written",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: (lambda a, b: (a, b - n * s))(
                *predict_recursive(n, d, bq, bk, c, s)
            )
        ),
        match="logsumexp",
    ),
    wrong(
        "08.3",
        "floor of the blocks",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: predict_recursive(n // bq * bq, d, bq, bk, c, s)
        ),
        match="ceil",
    ),
    wrong(
        "08.3",
        "S and P written only",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: (
                s * (4 * n * d + 2 * n * n),
                predict_recursive(n, d, bq, bk, c, s)[1],
            )
        ),
        match="writes S and P",
    ),
    cheat(
        "08.3",
        "the reference formulas",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: (
                io_model.naive_attention_traffic(n, d, s).total,
                io_model.flash_forward_traffic(n, d, bq, bk, c, s).total,
            )
        ),
        match="naive_attention_traffic",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.3",
        "the grader's own loop",
        lambda: lab08.check_predicted_traffic(_ref_pair),
        match="_want",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.3",
        "torch arithmetic",
        lambda: lab08.check_predicted_traffic(
            lambda n, d, bq, bk, c, s: tuple(
                int(v) for v in __import__("torch").tensor(predict_recursive(n, d, bq, bk, c, s))
            )
        ),
        error=ForbiddenCallError,
    ),
    cheat(
        "08.3",
        "a memorised answer",
        lambda: lab08.check_predicted_traffic(lambda *a: _MEMO.get(a, (0, 0))),
        match="predicted",
    ),
    cheat(
        "08.3",
        "values that decide their own equality",
        lambda: lab08.check_predicted_traffic(lambda *a: tuple(always_equal(v) for v in (0, 0))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 08.4
def forward_einsum_class(hbm, block_q, block_kv, causal, scale):  # a class of running stats
    class Row:
        def __init__(self, r, d):
            self.m, self.l, self.acc = np.full(r, -np.inf), np.zeros(r), np.zeros((r, d))

        def add(self, s, v):
            m = np.maximum(self.m, s.max(axis=1))
            p, a = np.exp(s - m[:, None]), np.exp(self.m - m)
            self.l = a * self.l + p.sum(axis=1)
            self.acc = a[:, None] * self.acc + np.einsum("ij,jd->id", p, v)
            self.m = m

    n, d = hbm.shape("Q")
    sc = scale if scale is not None else d**-0.5
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        q, row = hbm.load("Q", slice(i0, i1)), Row(i1 - i0, d)
        for j0 in range(0, i1 if causal else n, block_kv):
            j1 = min(j0 + block_kv, n)
            s = sc * np.einsum("id,jd->ij", q, hbm.load("K", slice(j0, j1)))
            if causal:
                s[np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]] = -np.inf
            row.add(s, hbm.load("V", slice(j0, j1)))
        hbm.store("O", row.acc / row.l[:, None], slice(i0, i1))
        hbm.store("L", row.m + np.log(row.l), slice(i0, i1))


def _forward(bug=""):
    def kernel(hbm, bq, bk, causal, scale):
        n, d = hbm.shape("Q")
        sc = 1 / np.sqrt(d) if scale is None or bug == "scale" else scale
        for i0 in range(0, n, bq):
            i1 = min(i0 + bq, n)
            q = hbm.load("Q", slice(i0, i1))
            m, l, acc = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0), np.zeros((i1 - i0, d))
            for j0 in range(0, n, bk):
                if causal and j0 >= i1 and bug != "no skip":
                    break
                j1 = min(j0 + bk, n)
                k, v = hbm.load("K", slice(j0, j1)), hbm.load("V", slice(j0, j1))
                s = sc * (q @ k.T)
                if causal:
                    cols, rows = np.arange(j0, j1)[None], np.arange(i0, i1)[:, None]
                    s = np.where(cols >= rows if bug == "diagonal" else cols > rows, -np.inf, s)
                with np.errstate(invalid="ignore", divide="ignore"):
                    m_new = np.maximum(m, s.max(axis=1))
                    p = np.nan_to_num(np.exp(s - m_new[:, None]))
                    alpha = np.nan_to_num(np.exp(m - m_new))
                a_l = np.ones_like(alpha) if bug in ("no rescale", "l") else alpha
                a_o = np.ones_like(alpha) if bug in ("no rescale", "acc") else alpha
                l, acc, m = a_l * l + p.sum(axis=1), a_o[:, None] * acc + p @ v, m_new
            with np.errstate(invalid="ignore", divide="ignore"):
                hbm.store("O", acc / l[:, None], slice(i0, i1))
                hbm.store("L", np.log(l) if bug == "L" else m + np.log(l), slice(i0, i1))

    return kernel


def forward_every_tile_kept(hbm, bq, bk, causal, scale):  # right traffic, K and V kept whole
    n, d = hbm.shape("Q")
    sc = 1 / np.sqrt(d) if scale is None else scale
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        q = hbm.load("Q", slice(i0, i1))
        blocks = [(j0, min(j0 + bk, n)) for j0 in range(0, n, bk) if not causal or j0 < i1]
        k = np.concatenate([hbm.load("K", slice(a, b)) for a, b in blocks])
        v = np.concatenate([hbm.load("V", slice(a, b)) for a, b in blocks])
        s = sc * q @ k.T
        if causal:
            s = np.where(np.arange(len(k))[None] > np.arange(i0, i1)[:, None], -np.inf, s)
        m = s.max(axis=1)
        p = np.exp(s - m[:, None])
        hbm.store("O", p @ v / p.sum(axis=1)[:, None], slice(i0, i1))
        hbm.store("L", m + np.log(p.sum(axis=1)), slice(i0, i1))


def forward_from_the_copy(hbm, bq, bk, causal, scale):  # Q, K, V uncounted (gc), loads for show
    dev = _device_copy(hbm)
    q, k, v = (dev._arrays[a] for a in "QKV")
    n, d = q.shape
    s = (q @ k.T) * (1 / np.sqrt(d) if scale is None else scale)
    if causal:
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    m = s.max(axis=1)
    p = np.exp(s - m[:, None])
    o, lse = p @ v / p.sum(axis=1)[:, None], m + np.log(p.sum(axis=1))
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        hbm.load("Q", slice(i0, i1))
        for j0 in range(0, i1 if causal else n, bk):
            hbm.load("K", slice(j0, min(j0 + bk, n)))
            hbm.load("V", slice(j0, min(j0 + bk, n)))
        hbm.store("O", o[i0:i1], slice(i0, i1))
        hbm.store("L", lse[i0:i1], slice(i0, i1))


def forward_meter_stopped(hbm, bq, bk, causal, scale):
    import tracemalloc

    tracemalloc.stop()
    forward_every_tile_kept(hbm, bq, bk, causal, scale)


FORWARD = [
    honest(
        "08.4",
        "a class of running stats, einsum",
        lambda: lab08.check_flash_forward(forward_einsum_class),
    ),
    honest("08.4", "the solution's loop", lambda: lab08.check_flash_forward(_forward())),
    wrong(
        "08.4",
        "no rescale",
        lambda: lab08.check_flash_forward(_forward("no rescale")),
        match="rescale both l",
    ),
    wrong(
        "08.4",
        "accumulator not rescaled",
        lambda: lab08.check_flash_forward(_forward("acc")),
        match="but not the output accumulator",
    ),
    wrong(
        "08.4",
        "diagonal masked",
        lambda: lab08.check_flash_forward(_forward("diagonal")),
        match="its own key",
    ),
    wrong(
        "08.4",
        "future blocks read",
        lambda: lab08.check_flash_forward(_forward("no skip")),
        match="Causal: skip",
    ),
    wrong(
        "08.4",
        "scale ignored",
        lambda: lab08.check_flash_forward(_forward("scale")),
        match="scale you are given",
    ),
    wrong(
        "08.4",
        "L without m",
        lambda: lab08.check_flash_forward(_forward("L")),
        match="without the running maximum",
    ),
    cheat(
        "08.4",
        "the reference",
        lambda: lab08.check_flash_forward(flash.flash_attention_forward),
        match="flash_attention_forward",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.4",
        "torch SDPA",
        lambda: lab08.check_flash_forward(
            lambda hbm, *a: __import__("torch").nn.functional.scaled_dot_product_attention(
                *(__import__("torch").from_numpy(hbm.load(x, slice(0, 1))) for x in "QKV")
            )
        ),
        error=ForbiddenCallError,
    ),
    cheat(
        "08.4",
        "keeps every K, V tile",
        lambda: lab08.check_flash_forward(forward_every_tile_kept),
        match="allocated",
    ),
    cheat(
        "08.4",
        "reads Q K V uncounted via gc",
        lambda: lab08.check_flash_forward(forward_from_the_copy),
        match="allocated|differs",
    ),
    cheat(
        "08.4",
        "stops the memory meter",
        lambda: lab08.check_flash_forward(forward_meter_stopped),
        match="tracemalloc.stop",
        error=ForbiddenCallError,
    ),
]


# --------------------------------------------------------------------------- 08.5
def backward_written_apart(hbm, block_q, block_kv, causal, scale):  # D in its own helper
    n, d = hbm.shape("Q")
    sc = d**-0.5 if scale is None else scale

    def rows(i0):
        return slice(i0, min(i0 + block_q, n))

    for i0 in range(0, n, block_q):
        hbm.store(
            "D", np.einsum("id,id->i", hbm.load("dO", rows(i0)), hbm.load("O", rows(i0))), rows(i0)
        )
    for j0 in range(0, n, block_kv):
        cs = slice(j0, min(j0 + block_kv, n))
        k, v = hbm.load("K", cs), hbm.load("V", cs)
        dk, dv = np.zeros(k.shape), np.zeros(v.shape)
        for i0 in range(0, n, block_q):
            r = rows(i0)
            if causal and r.stop <= j0:
                continue
            q, do, lse, dd = hbm.load("Q", r), hbm.load("dO", r), hbm.load("L", r), hbm.load("D", r)
            s = sc * q @ k.T
            if causal:
                s[
                    np.arange(cs.start, cs.stop)[None] > np.arange(r.start, r.stop)[:, None]
                ] = -np.inf
            p = np.exp(s - lse[:, None])
            ds = p * (do @ v.T - dd[:, None])
            hbm.store("dQ", hbm.load("dQ", r) + sc * ds @ k, r)
            dv, dk = dv + p.T @ do, dk + sc * ds.T @ q
        hbm.store("dK", dk, cs)
        hbm.store("dV", dv, cs)


def backward_without_d(hbm, bq, bk, causal, scale):  # dS = P * dP: D never subtracted
    n, d = hbm.shape("Q")
    sc = d**-0.5 if scale is None else scale
    for i0 in range(0, n, bq):
        r = slice(i0, min(i0 + bq, n))
        hbm.store("D", np.zeros(r.stop - i0), r)
        hbm.load("dO", r), hbm.load("O", r)
    for j0 in range(0, n, bk):
        cs = slice(j0, min(j0 + bk, n))
        k, v = hbm.load("K", cs), hbm.load("V", cs)
        dk, dv = np.zeros(k.shape), np.zeros(v.shape)
        for i0 in range(0, n, bq):
            r = slice(i0, min(i0 + bq, n))
            if causal and r.stop <= j0:
                continue
            q, do, lse = hbm.load("Q", r), hbm.load("dO", r), hbm.load("L", r)
            hbm.load("D", r)  # read (the traffic), not used: the mistake
            s = sc * q @ k.T
            if causal:
                s[np.arange(j0, cs.stop)[None] > np.arange(i0, r.stop)[:, None]] = -np.inf
            p = np.exp(s - lse[:, None])
            ds = p * (do @ v.T)
            hbm.store("dQ", hbm.load("dQ", r) + sc * ds @ k, r)
            dv, dk = dv + p.T @ do, dk + sc * ds.T @ q
        hbm.store("dK", dk, cs)
        hbm.store("dV", dv, cs)


def backward_ignoring_scale(hbm, bq, bk, causal, scale):
    backward_written_apart(hbm, bq, bk, causal, None)


def backward_storing_p(hbm, bq, bk, causal, scale):
    n, _ = hbm.shape("Q")
    hbm.alloc("P", (n, n))
    for i0 in range(0, n, bq):
        for j0 in range(0, n, bk):
            hbm.store(
                "P",
                np.zeros((min(bq, n - i0), min(bk, n - j0))),
                slice(i0, min(i0 + bq, n)),
                slice(j0, min(j0 + bk, n)),
            )
    backward_written_apart(hbm, bq, bk, causal, scale)


def backward_full_p_kept(hbm, bq, bk, causal, scale):
    n, _ = hbm.shape("Q")
    cache = np.ones((n, n))  # a cache of every recomputed tile
    backward_written_apart(hbm, bq, bk, causal, scale)
    del cache


def backward_storing_p_counters_reset(hbm, bq, bk, causal, scale):
    backward_storing_p(hbm, bq, bk, causal, scale)
    dev = _device_copy()
    dev.writes.pop("P", None)


def backward_torch(hbm, bq, bk, causal, scale):
    import torch

    torch.zeros(1)


BACKWARD = [
    honest(
        "08.5",
        "einsum, helper for rows",
        lambda: lab08.check_flash_backward(backward_written_apart),
    ),
    honest("08.5", "the course's kernel, copied", lambda: lab08.check_flash_backward(_bwd)),
    wrong(
        "08.5",
        "D not subtracted",
        lambda: lab08.check_flash_backward(backward_without_d),
        match="D_i",
    ),
    wrong(
        "08.5",
        "scale ignored",
        lambda: lab08.check_flash_backward(backward_ignoring_scale),
        match="scale",
    ),
    wrong(
        "08.5",
        "P stored to HBM",
        lambda: lab08.check_flash_backward(backward_storing_p),
        match="HBM traffic",
    ),
    cheat(
        "08.5",
        "the reference",
        lambda: lab08.check_flash_backward(flash.flash_attention_backward),
        match="flash_attention_backward",
        error=ReferenceCalledError,
    ),
    cheat(
        "08.5",
        "torch",
        lambda: lab08.check_flash_backward(backward_torch),
        error=ForbiddenCallError,
    ),
    cheat(
        "08.5",
        "the whole P kept in memory",
        lambda: lab08.check_flash_backward(backward_full_p_kept),
        match="allocated",
    ),
    cheat(
        "08.5",
        "counters rewritten via gc",
        lambda: lab08.check_flash_backward(backward_storing_p_counters_reset),
        match="HBM traffic",
    ),
    cheat(
        "08.5",
        "attrgetter to the arrays",
        lambda: lab08.check_flash_backward(
            lambda hbm, *a: operator.attrgetter("load.__self__._arrays")(hbm)
        ),
        match="_arrays",
        error=StudentError,
    ),
]

ATTEMPTS = [*FUSION, *SOFTMAX, *TRAFFIC, *FORWARD, *BACKWARD]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
