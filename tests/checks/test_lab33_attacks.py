"""Lab 33 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Tried:

* honest: the 2:4 compression as a lexsort with imports inside, as a class over lists of
  groups, row by row recursively under ``functools.wraps``; the sparse kernel in blocks of 8
  with the operands swapped, one ``mul`` per kept slot in a class, with ``x`` loaded by an
  explicit range and cast to float64; the head savings as closed forms over a dataclass, a
  recursion over the removed heads, numpy integers; the distillation loss row by row with
  ``math``, with log-sum-exp, as a class; fake quantization element by element with
  Python's ``round``, with ``np.rint`` and ``np.where``, as a class;
* wrong: smallest / signed / ties-high masks, reversed packing, values in magnitude order,
  an int64 meta; the dense count, reversed indices, x per block, 32-row blocks, the short last
  block never loaded, a slot's column taken as 2 s + index, y stored transposed; a K/V head
  per query head, no K/V saving, 4 d T^2, o_proj forgotten, interleaved groups, causal
  T (T - 1), float counts; no T^2, the hard term at T, the teacher at T = 1, ignored rows
  scored, the mean over every row, the soft gradient without the chain rule's 1 / T, KL
  reversed; the raw-x mask, a zero gradient, no clip, the range not widened, 2^b levels,
  the zero point not rounded, floor instead of round;
* cheats: the references (``sparse24``, ``pruning_structured``, ``distill``, ``qat``, lab
  11's ``quant``, ``minitorch.autograd.cross_entropy``), the grader's ``_truth``, torch, the
  public cases replayed (fresh cases catch them), values whose ``==`` says yes, y computed
  with numpy and ``mul`` fed made-up products matching the count and the sum (found: it
  passed 33.2; now the multiset of operand pairs must be the kernel's), the true products
  pushed through ``mul(p, 1)``, the counters and the grader's budget rewritten in the
  child, the dense weight read through the child's copy of the HBM (``gc``), the grader's
  frame read with ``sys._getframe`` (the child runs on a fresh thread: nothing to read).

A walk of ``sys._current_frames()`` in the forked child reaches the table's ``want`` (the
parent's stack, copied): the sealed kernel vetoes it (docs/trust.md), kept here as
``xfail(strict=True)`` for the four tables.
"""

from __future__ import annotations

import gc
import math
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from a2s.checks import lab33
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab33 import compress, distill, fakequant, heads
from tests.checks import test_lab33 as ref
from tests.helpers.attacks import attempt_id, cheat, honest, judge, replay_public, wrapped, wrong
from tests.helpers.graders import always_equal

REF = ReferenceCalledError
C1, C2, C3, C4, C5 = (
    lab33.check_compress_24,
    lab33.check_sparse24_matmul,
    lab33.check_head_savings,
    lab33.check_distill_loss,
    lab33.check_fake_quant,
)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


def run(check, fn):
    return lambda: check(fn)


def current_frames(fallback):
    """The table's expected value, read from the parent's stack copied into the child."""

    def answer(*args):
        for f in sys._current_frames().values():
            while f is not None:
                if "want" in f.f_locals and "case" in f.f_locals:
                    return f.f_locals["want"]
                f = f.f_back
        return fallback(*args)

    return answer


def own_frame(fallback):
    """The expected value from the caller's frames (the learner's thread has none of them)."""

    def answer(*args):
        f = sys._getframe(1)
        while f is not None:
            if "want" in f.f_locals:
                return f.f_locals["want"]
            f = f.f_back
        return fallback(*args)

    return answer


# --------------------------------------------------------------------------- 33.1
def compress_lexsort(w):
    import numpy

    out, cols = w.shape
    g = w.reshape(out, cols // 4, 4)
    j = numpy.broadcast_to(numpy.arange(4), g.shape)
    order = numpy.lexsort((j, -numpy.abs(g)), axis=-1)
    pos = numpy.sort(order[..., :2], axis=-1)
    vals = numpy.take_along_axis(g, pos, axis=-1).reshape(out, -1)
    p = pos.reshape(out, -1, 4).astype(numpy.uint8)
    meta = sum(p[..., k] << (2 * k) for k in range(4)).astype(numpy.uint8)
    return vals, meta


class Compressor:
    """A class over lists: each group's two best (-|w|, index) pairs."""

    def keep(self, group):
        return sorted(sorted(range(4), key=lambda j: (-abs(float(group[j])), j))[:2])

    def __call__(self, w):
        values, meta = [], []
        for row in w.tolist():
            idx = [p for k in range(0, len(row), 4) for p in self.keep(row[k : k + 4])]
            values.append([row[4 * (s // 2) + p] for s, p in enumerate(idx)])
            meta.append(
                [sum(idx[4 * b + j] << 2 * j for j in range(4)) for b in range(len(row) // 8)]
            )
        return np.array(values, dtype=w.dtype), np.array(meta, dtype=np.uint8)


@wrapped
def compress_recursive(w):
    if w.shape[0] == 0:
        return np.zeros((0, w.shape[1] // 2), w.dtype), np.zeros((0, w.shape[1] // 8), np.uint8)
    v0, m0 = ref.compress_24_loop(w[:1])
    v, m = compress_recursive(w[1:])
    return np.concatenate([v0, v]), np.concatenate([m0, m])


def compress_magnitude_order(w):
    """The two kept values, the larger first (their positions in that order too)."""
    out = w.shape[0]
    g = w.reshape(out, -1, 4)
    pos = np.argsort(-np.abs(g), axis=-1, kind="stable")[..., :2]
    vals = np.take_along_axis(g, pos, axis=-1).reshape(out, -1)
    p = pos.reshape(out, -1, 4).astype(np.uint8)
    return vals, (p[..., 0] | p[..., 1] << 2 | p[..., 2] << 4 | p[..., 3] << 6).astype(np.uint8)


def compress_smallest(w):
    out = w.shape[0]
    g = w.reshape(out, -1, 4)
    pos = np.sort(np.argsort(np.abs(g), axis=-1, kind="stable")[..., :2], axis=-1)
    vals = np.take_along_axis(g, pos, axis=-1).reshape(out, -1)
    p = pos.reshape(out, -1, 4).astype(np.uint8)
    return vals, (p[..., 0] | p[..., 1] << 2 | p[..., 2] << 4 | p[..., 3] << 6).astype(np.uint8)


def compress_reversed_bits(w):
    v, m = ref.compress_24(w)
    parts = [(m >> (2 * j)) & 3 for j in range(4)]
    return v, (parts[0] << 6 | parts[1] << 4 | parts[2] << 2 | parts[3]).astype(np.uint8)


def compress_int64_meta(w):
    v, m = ref.compress_24(w)
    return v, m.astype(np.int64)


def compress_via_reference(w):
    from minitorch.model.sparse24 import compress_24

    sp = compress_24(w)
    return sp.values, sp.meta


def compress_via_truth(w):
    from a2s.checks.lab33._truth import compress_loop

    return compress_loop(w)


def compress_torch(w):
    import torch

    t = torch.from_numpy(np.ascontiguousarray(w)).reshape(w.shape[0], -1, 4)
    pos = torch.sort(torch.topk(t.abs(), 2, dim=-1).indices, dim=-1).values
    return ref.compress_24(w)[0], pos.numpy()


def compress_patches_truth(w):
    """Rewrites the grader's truth in its own process, then answers wrong."""
    object.__setattr__(compress.COMPRESS, "truth", lambda w: (np.zeros(1), np.zeros(1)))
    from a2s.checks.lab33 import _truth

    _truth.compress_loop = compress.COMPRESS.truth
    return np.zeros(1), np.zeros(1)


def compress_always_equal(w):
    v, m = ref.compress_24(w)
    return always_equal(v * 0), always_equal(m * 0)


ATTEMPTS = [
    honest("33.1", "a lexsort, imports inside", run(C1, compress_lexsort)),
    honest("33.1", "a class over lists of groups", run(C1, Compressor())),
    honest("33.1", "row by row, recursively, under functools.wraps", run(C1, compress_recursive)),
    wrong("33.1", "the smallest two", run(C1, compress_smallest), match="SMALLEST"),
    wrong(
        "33.1",
        "ties to the higher index",
        run(C1, lambda w: ref.compress_24(w, "ties high")),
        match="LOWER index",
    ),
    wrong(
        "33.1",
        "signed values ranked",
        run(C1, lambda w: ref.compress_24(w, "signed")),
        match="magnitude \\|w\\|",
    ),
    wrong("33.1", "packing reversed", run(C1, compress_reversed_bits), match="reversed"),
    wrong("33.1", "values in magnitude order", run(C1, compress_magnitude_order), "position order"),
    wrong("33.1", "an int64 meta", run(C1, compress_int64_meta), match="uint8"),
    cheat("33.1", "sparse24.compress_24", run(C1, compress_via_reference), "reference", REF),
    cheat("33.1", "the grader's truth", run(C1, compress_via_truth), "reference|grader", REF),
    cheat("33.1", "torch's topk", run(C1, compress_torch), "torch", ForbiddenCallError),
    cheat(
        "33.1",
        "the public cases replayed",
        run(C1, replay_public(compress.COMPRESS, compress_smallest)),
    ),
    cheat(
        "33.1", "arrays whose == says yes", run(C1, compress_always_equal), match="plain|subclass"
    ),
    cheat("33.1", "the truth rewritten in the child", run(C1, compress_patches_truth)),
    cheat("33.1", "reads the caller's frames", run(C1, own_frame(compress_smallest)), "SMALLEST"),
]
FRAMES = [cheat("33.1", "walks sys._current_frames", run(C1, current_frames(compress_smallest)))]


# --------------------------------------------------------------------------- 33.2
def _idx(m):
    return np.stack([(m >> (2 * j)) & 3 for j in range(4)], axis=-1).reshape(m.shape[0], -1)


def spmm_swapped(hbm, mul, n, out, cols):
    """Blocks of 8 rows, the operands swapped, an einsum of ones for the sum."""
    x = hbm.load("x", 0, n).astype(np.float64)
    base = 4 * (np.arange(cols // 2) // 2)
    for r0 in range(0, out, 8):
        v, m = hbm.load("values", r0, r0 + 8), hbm.load("meta", r0, r0 + 8)
        prod = mul(v[None], x[:, base + _idx(m)])
        hbm.store(r0, np.einsum("nok->no", prod))


class SlotKernel:
    """One mul per kept slot of a 16-row block, in a class."""

    def __call__(self, hbm, mul, n, out, cols):
        x = hbm.load("x")
        for r0 in range(0, out, 16):
            v, m = (
                hbm.load("values", r0, min(r0 + 16, out)),
                hbm.load("meta", r0, min(r0 + 16, out)),
            )
            idx, y = _idx(m), np.zeros((n, len(v)))
            for s in range(cols // 2):
                y += mul(x[:, 4 * (s // 2) + idx[:, s]], v[:, s])
            hbm.store(r0, y)


def spmm_bug(bug):
    def kernel(hbm, mul, n, out, cols):
        x = hbm.load("x")
        slot = np.arange(cols // 2)
        base = 0 * slot if bug == "no offset" else 4 * (slot // 2)
        last = out - out % 16 if bug == "no tail" else out
        for r0 in range(0, last, 16):
            v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
            y = mul(x[:, base + _idx(m)], v[None]).sum(-1)
            hbm.store(r0, y.T if bug == "transposed" else y)

    return kernel


def spmm_numpy(hbm, x, n, out, cols):
    """y of every block computed with numpy; returns the blocks' y and their total."""
    blocks, total = [], 0.0
    for r0 in range(0, out, 16):
        v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
        y = (x[:, 4 * (np.arange(cols // 2) // 2) + _idx(m)] * v[None]).sum(-1)
        blocks.append((r0, y, x[:, 4 * (np.arange(cols // 2) // 2) + _idx(m)] * v[None]))
        total += float(y.astype(np.float64).sum())
    return blocks, total


def spmm_made_up(hbm, mul, n, out, cols):
    """y with numpy; mul fed zeros and the total, so count and sum both match."""
    blocks, total = spmm_numpy(hbm, hbm.load("x"), n, out, cols)
    for r0, y, _ in blocks:
        hbm.store(r0, y)
    mul(np.zeros(n * out * cols // 2 - 1), 0.0)
    mul(np.array([total]), 1.0)


def spmm_products_times_one(hbm, mul, n, out, cols):
    """The true products computed with numpy, then pushed through mul(p, 1)."""
    for r0, _, prod in spmm_numpy(hbm, hbm.load("x"), n, out, cols)[0]:
        hbm.store(r0, mul(prod, 1.0).sum(-1))


def spmm_reference(hbm, mul, n, out, cols):
    from minitorch.model import sparse24

    x = hbm.load("x")
    for r0 in range(0, out, 16):
        v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
        w = sparse24.decompress_24(sparse24.Sparse24(v, m, cols))
        hbm.store(r0, mul(x[:, None, :], w[None]).sum(-1))


def spmm_truth(hbm, mul, n, out, cols):
    from a2s.checks.lab33._truth import sparse_product_loop

    x = hbm.load("x")
    v, m = hbm.load("values", 0, 16), hbm.load("meta", 0, 16)
    hbm.store(0, sparse_product_loop(x, v, m))


def spmm_torch(hbm, mul, n, out, cols):
    import torch

    x = torch.from_numpy(hbm.load("x"))
    for r0 in range(0, out, 16):
        v, m = hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
        col = torch.from_numpy(4 * (np.arange(cols // 2) // 2) + _idx(m))
        hbm.store(r0, (x[:, col] * torch.from_numpy(v)[None]).sum(-1).numpy())


def spmm_patches_budget(hbm, mul, n, out, cols):
    """Doubles the grader's budget in its own process, then multiplies the dense way."""
    from a2s.checks.lab33 import _truth, spmm

    spmm.sparse_budget = lambda *a: {k: 2 * v for k, v in _truth.sparse_budget(*a).items()}
    ref.sparse24_matmul(hbm, mul, n, out, cols, bug="dense")


def spmm_gc_dense(hbm, mul, n, out, cols):
    """Finds the child's copy of the HBM through gc and reads the dense w uncounted."""
    from a2s.checks.lab33.spmm import _Memory

    mem = next(o for o in gc.get_objects() if type(o) is _Memory)
    x, w = hbm.load("x"), mem.arrays["w"]
    mem.multiplies = 0
    for r0 in range(0, out, 16):
        hbm.load("values", r0, r0 + 16), hbm.load("meta", r0, r0 + 16)
        hbm.store(r0, x @ w[r0 : r0 + 16].T)


ATTEMPTS += [
    honest("33.2", "blocks of 8, operands swapped, an einsum", run(C2, spmm_swapped)),
    honest("33.2", "one mul per slot, in a class", run(C2, SlotKernel())),
    honest("33.2", "the solution under functools.wraps", run(C2, wrapped(ref.sparse24_matmul))),
    wrong(
        "33.2",
        "the dense product",
        run(C2, lambda *a: ref.sparse24_matmul(*a, bug="dense")),
        "dense count",
    ),
    wrong(
        "33.2",
        "indices unpacked reversed",
        run(C2, lambda *a: ref.sparse24_matmul(*a, bug="reversed bits")),
        "unpack the 2-bit",
    ),
    wrong(
        "33.2",
        "x loaded per block",
        run(C2, lambda *a: ref.sparse24_matmul(*a, bug="x per block")),
        "once",
    ),
    wrong(
        "33.2",
        "32-row blocks",
        run(C2, lambda *a: ref.sparse24_matmul(*a, bug="big block")),
        "16 weight rows",
    ),
    wrong("33.2", "the short last block never loaded", run(C2, spmm_bug("no tail")), "only"),
    wrong(
        "33.2",
        "the group offset forgotten",
        run(C2, spmm_bug("no offset")),
        "column 4 \\(s // 2\\) \\+ index",
    ),
    wrong("33.2", "y stored transposed", run(C2, spmm_bug("transposed")), "block is \\(n, k\\)"),
    cheat("33.2", "sparse24's decompress", run(C2, spmm_reference), "reference", REF),
    cheat("33.2", "the grader's truth", run(C2, spmm_truth), "reference|grader", REF),
    cheat("33.2", "torch", run(C2, spmm_torch), "torch", ForbiddenCallError),
    cheat("33.2", "y with numpy, no mul", run(C2, ref.local_product), "goes through mul"),
    cheat("33.2", "y with numpy, made-up products", run(C2, spmm_made_up), "other products"),
    cheat(
        "33.2",
        "numpy products through mul(p, 1)",
        run(C2, spmm_products_times_one),
        "other products",
    ),
    cheat("33.2", "the budget doubled in the child", run(C2, spmm_patches_budget), "dense count"),
    cheat("33.2", "the dense w read through gc", run(C2, spmm_gc_dense), "goes through mul"),
]


# --------------------------------------------------------------------------- 33.3
@dataclass(frozen=True)
class Layer:
    c: int
    h: int
    kv: int

    @property
    def d(self):
        return self.c // self.h

    def groups_gone(self, removed):
        rep = self.h // self.kv
        return sum(set(range(g * rep, g * rep + rep)) <= set(removed) for g in range(self.kv))


def heads_dataclass(c, h, kv, removed, t, s):
    layer, nq = Layer(c, h, kv), len(set(removed))
    mats = nq + layer.groups_gone(removed)
    return (
        4 * c * layer.d * mats,
        2 * c * layer.d * mats * s,
        2 * layer.d * layer.groups_gone(removed) * s,
        2 * layer.d * t * (t + 1) * nq,
    )


def heads_recursive(c, h, kv, removed, t, s):
    """Recursion over the removed heads: each adds its own rows, the last of a group its K/V."""
    removed = sorted(set(removed))
    d, rep = c // h, h // kv

    def go(left, gone):
        if not left:
            return (0, 0, 0, 0)
        head, rest = left[0], left[1:]
        gone = gone | {head}
        group = set(range(head // rep * rep, head // rep * rep + rep))
        kv_now = group <= gone and not group <= (gone - {head})
        here = (
            4 * c * d * (1 + kv_now),
            2 * c * d * s * (1 + kv_now),
            2 * d * s * kv_now,
            2 * d * t * (t + 1),
        )
        return tuple(a + b for a, b in zip(here, go(rest, gone), strict=True))

    return go(removed, frozenset())


def heads_numpy(c, h, kv, removed, t, s):
    d = np.int64(c // h)
    mask = np.zeros(h, bool)
    mask[list(removed)] = True
    groups = np.int64(mask.reshape(kv, h // kv).all(axis=1).sum())
    nq = np.int64(mask.sum())
    return (
        4 * c * d * (nq + groups),
        2 * c * d * (nq + groups) * s,
        2 * d * groups * s,
        2 * d * t * (t + 1) * nq,
    )


def heads_bug(bug):
    def answer(c, h, kv, removed, t, s):
        d, rep, gone = c // h, h // kv, set(removed)
        member = (
            (lambda g: range(g, h, kv))
            if bug == "interleaved"
            else (lambda g: range(g * rep, g * rep + rep))
        )
        groups = sum(all(q in gone for q in member(g)) for g in range(kv))
        q_mats = len(gone) * (1 if bug == "no o" else 2)
        core = 2 * d * t * (t - 1) if bug == "t-1" else 2 * d * t * (t + 1)
        return (
            2 * c * d * (q_mats + 2 * groups),
            c * d * (q_mats + 2 * groups) * s,
            2 * d * groups * s,
            core * len(gone),
        )

    return answer


def heads_via_reference(c, h, kv, removed, t, s):
    from minitorch.model.config import GPTConfig
    from minitorch.model.pruning_structured import head_savings

    cfg = GPTConfig(vocab_size=16, block_size=32, n_layer=1, n_head=h, n_kv_head=kv, d_model=c)
    r = head_savings(cfg, {0: list(removed)}, t, s)
    return r.linear_flops, r.weight_bytes, r.kv_bytes, r.attention_flops


def heads_via_truth(*args):
    from a2s.checks.lab33._truth import head_savings_loop

    return head_savings_loop(*args)


def heads_torch(c, h, kv, removed, t, s):
    import torch

    n = int(torch.tensor(list(set(removed))).numel())
    return (*ref.head_savings(c, h, kv, removed, t, s)[:3], 2 * (c // h) * t * (t + 1) * n)


def heads_always_equal(*args):
    return tuple(always_equal(v + 1) for v in ref.head_savings(*args))


ATTEMPTS += [
    honest("33.3", "a frozen dataclass of the layer", run(C3, heads_dataclass)),
    honest("33.3", "recursion over the removed heads", run(C3, heads_recursive)),
    honest("33.3", "numpy integers and a group mask", run(C3, heads_numpy)),
    wrong(
        "33.3",
        "a K/V head per query head",
        run(C3, lambda *a: ref.head_savings(*a, bug="kv per head")),
        "EVERY query head",
    ),
    wrong(
        "33.3",
        "no K/V saving",
        run(C3, lambda *a: ref.head_savings(*a, bug="no kv")),
        "its K/V head goes too",
    ),
    wrong(
        "33.3", "4 d T^2", run(C3, lambda *a: ref.head_savings(*a, bug="square")), "not 4 d T\\^2"
    ),
    wrong("33.3", "o_proj forgotten", run(C3, heads_bug("no o")), "d columns of o_proj"),
    wrong(
        "33.3", "interleaved groups (h % n_kv)", run(C3, heads_bug("interleaved")), "CONSECUTIVE"
    ),
    wrong("33.3", "causal T (T - 1)", run(C3, heads_bug("t-1")), "T \\(T \\+ 1\\)"),
    wrong(
        "33.3", "float counts", run(C3, lambda *a: tuple(map(float, ref.head_savings(*a)))), "//"
    ),
    cheat(
        "33.3", "pruning_structured.head_savings", run(C3, heads_via_reference), "reference", REF
    ),
    cheat("33.3", "the grader's truth", run(C3, heads_via_truth), "reference|grader", REF),
    cheat("33.3", "torch", run(C3, heads_torch), "torch", ForbiddenCallError),
    cheat(
        "33.3", "the public cases replayed", run(C3, replay_public(heads.HEADS, heads_bug("no o")))
    ),
    cheat("33.3", "ints whose == says yes", run(C3, heads_always_equal), match="plain|subclass"),
    cheat("33.3", "reads the caller's frames", run(C3, own_frame(heads_bug("no o"))), "o_proj"),
]
FRAMES.append(
    cheat("33.3", "walks sys._current_frames", run(C3, current_frames(heads_bug("no o"))))
)


# --------------------------------------------------------------------------- 33.4
def distill_rows(zs, zt, targets, t, alpha):
    """Row by row with math, lists throughout."""
    rows = [i for i, y in enumerate(targets.tolist()) if y != -1]
    grad = [[0.0] * zs.shape[1] for _ in range(zs.shape[0])]

    def soft(z, temp):
        m = max(z) / temp
        e = [math.exp(v / temp - m) for v in z]
        return [v / sum(e) for v in e]

    total = 0.0
    for i in rows:
        s_t, t_t, s_1 = soft(zs[i].tolist(), t), soft(zt[i].tolist(), t), soft(zs[i].tolist(), 1.0)
        kl = sum(p * math.log(p / q) for p, q in zip(t_t, s_t, strict=True))
        total += alpha * t * t * kl - (1 - alpha) * math.log(s_1[int(targets[i])])
        for j in range(zs.shape[1]):
            hard = s_1[j] - (j == int(targets[i]))
            grad[i][j] = (alpha * t * (s_t[j] - t_t[j]) + (1 - alpha) * hard) / len(rows)
    return total / len(rows), grad


class Distiller:
    """Log-sum-exp in a class; the loss as cross entropies minus the teacher's entropy."""

    def log_softmax(self, z):
        return z - np.logaddexp.reduce(z, axis=-1, keepdims=True)

    def __call__(self, zs, zt, targets, t, alpha):
        keep = targets != -1
        r = int(keep.sum())
        ls, lt, l1 = self.log_softmax(zs / t), self.log_softmax(zt / t), self.log_softmax(zs)
        onehot = np.eye(zs.shape[1])[np.where(keep, targets, 0)]
        soft = (np.exp(lt) * (lt - ls)).sum(-1)
        hard = -(onehot * l1).sum(-1)
        loss = float(((alpha * t * t * soft + (1 - alpha) * hard) * keep).sum() / r)
        grad = alpha * t * (np.exp(ls) - np.exp(lt)) + (1 - alpha) * (np.exp(l1) - onehot)
        return loss, grad * keep[:, None] / r


def distill_bug(bug):
    def answer(zs, zt, targets, t, alpha):
        keep = targets != -1
        r = len(targets) if bug == "over N" else int(keep.sum())
        ps, pt, p1 = ref._softmax(zs / t), ref._softmax(zt / t), ref._softmax(zs)
        if bug == "kl reversed":
            soft = (ps * (np.log(ps) - np.log(pt))).sum(-1)
        else:
            soft = (pt * (np.log(pt) - np.log(ps))).sum(-1)
        y = np.where(keep, targets, 0)
        hard = -np.log(p1[np.arange(len(y)), y])
        loss = float(((alpha * t * t * soft + (1 - alpha) * hard) * keep).sum() / r)
        chain = t * t if bug == "no 1/T" else t
        grad = alpha * chain * (ps - pt) + (1 - alpha) * (p1 - np.eye(zs.shape[1])[y])
        return loss, grad * keep[:, None] / r

    return answer


def distill_hard_at_t(zs, zt, targets, t, alpha):
    """The hard term at temperature T as well."""
    keep = targets != -1
    r = int(keep.sum())
    ps, pt = ref._softmax(zs / t), ref._softmax(zt / t)
    y = np.where(keep, targets, 0)
    soft = (pt * (np.log(pt) - np.log(ps))).sum(-1)
    hard = -np.log(ps[np.arange(len(y)), y])
    loss = float(((alpha * t * t * soft + (1 - alpha) * hard) * keep).sum() / r)
    grad = alpha * t * (ps - pt) + (1 - alpha) * (ps - np.eye(zs.shape[1])[y]) / t
    return loss, grad * keep[:, None] / r


def distill_via_reference(zs, zt, targets, t, alpha):
    from minitorch.autograd import Tensor as T
    from minitorch.model.distill import distill_loss

    z = T(zs.copy(), requires_grad=True)
    loss = distill_loss(z, zt, targets, t, alpha)
    loss.backward()
    return loss.item(), z.grad


def distill_cross_entropy(zs, zt, targets, t, alpha):
    """The hard term with minitorch.autograd.cross_entropy (blocked: the reference's CE)."""
    from minitorch.autograd import Tensor as T
    from minitorch.autograd import cross_entropy

    keep = np.flatnonzero(targets != -1)
    cross_entropy(T(zs[keep]), targets[keep])
    return ref.distill_loss(zs, zt, targets, t, alpha)


def distill_via_truth(zs, zt, targets, t, alpha):
    from a2s.checks.lab33._truth import distill_loop

    return distill_loop(zs, zt, targets, t, alpha, -1)


def distill_torch(zs, zt, targets, t, alpha):
    import torch
    import torch.nn.functional as F

    keep = torch.from_numpy(targets != -1)
    z = torch.tensor(zs, requires_grad=True)
    soft = F.kl_div(
        F.log_softmax(z / t, -1), F.softmax(torch.from_numpy(zt) / t, -1), reduction="none"
    ).sum(-1)
    hard = F.cross_entropy(
        z, torch.from_numpy(np.where(targets == -1, 0, targets)), reduction="none"
    )
    loss = ((alpha * t * t * soft + (1 - alpha) * hard) * keep).sum() / keep.sum()
    loss.backward()
    return float(loss), z.grad.numpy()


def distill_always_equal(*args):
    loss, grad = ref.distill_loss(*args)
    return always_equal(loss + 1.0), always_equal(grad + 1.0)


ATTEMPTS += [
    honest("33.4", "row by row with math, lists", run(C4, distill_rows)),
    honest("33.4", "log-sum-exp in a class", run(C4, Distiller())),
    honest(
        "33.4",
        "minitorch autograd under functools.wraps",
        run(C4, wrapped(ref.distill_loss_autograd)),
    ),
    wrong(
        "33.4",
        "no T^2",
        run(C4, lambda *a: ref.distill_loss(*a, bug="no T2")),
        "Multiply the soft term by T\\^2",
    ),
    wrong("33.4", "the hard term at T", run(C4, distill_hard_at_t), "ordinary cross entropy"),
    wrong(
        "33.4",
        "the teacher at T = 1",
        run(C4, lambda *a: ref.distill_loss(*a, bug="teacher raw")),
        "Soften the teacher",
    ),
    wrong(
        "33.4",
        "ignored rows scored",
        run(C4, lambda *a: ref.distill_loss(*a, bug="all rows")),
        "IGNORE",
    ),
    wrong("33.4", "the mean over every row", run(C4, distill_bug("over N")), "R scored rows"),
    wrong("33.4", "the soft gradient without 1/T", run(C4, distill_bug("no 1/T")), "chain rule"),
    wrong("33.4", "KL reversed", run(C4, distill_bug("kl reversed")), "runs from the teacher"),
    cheat("33.4", "distill.distill_loss", run(C4, distill_via_reference), "reference", REF),
    cheat("33.4", "autograd's cross_entropy", run(C4, distill_cross_entropy), "reference", REF),
    cheat("33.4", "the grader's truth", run(C4, distill_via_truth), "reference|grader", REF),
    cheat("33.4", "torch", run(C4, distill_torch), "torch", ForbiddenCallError),
    cheat(
        "33.4",
        "the public cases replayed",
        run(C4, replay_public(distill.DISTILL, distill_bug("over N"))),
    ),
    cheat(
        "33.4",
        "floats and arrays whose == says yes",
        run(C4, distill_always_equal),
        "plain|subclass|wrong",
    ),
    cheat("33.4", "reads the caller's frames", run(C4, own_frame(distill_bug("no 1/T"))), "wrong"),
]
FRAMES.append(
    cheat("33.4", "walks sys._current_frames", run(C4, current_frames(distill_bug("no 1/T"))))
)


# --------------------------------------------------------------------------- 33.5
def fq_python_round(x, lo, hi, bits, g):
    """Element by element with Python's round (also half to even), lists out."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    top = 2**bits - 1
    s = (hi - lo) / top
    z = round(-lo / s)
    xs, gs = x.ravel().tolist(), g.ravel().tolist()
    r = [round(v / s + z) for v in xs]
    out = [(min(max(q, 0), top) - z) * s for q in r]
    grad = [gv if 0 <= q <= top else 0.0 for q, gv in zip(r, gs, strict=True)]
    return np.reshape(out, x.shape), np.reshape(grad, x.shape)


class FakeQuantizer:
    """np.rint and np.where, the grid in a class."""

    def grid(self, lo, hi, bits):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        s = (hi - lo) / (2**bits - 1)
        return s, float(np.rint(-lo / s)), 2**bits - 1

    def __call__(self, x, lo, hi, bits, g):
        s, z, top = self.grid(lo, hi, bits)
        r = np.rint(x / s + z)
        return s * (np.clip(r, 0, top) - z), np.where((r < 0) | (r > top), 0.0, g)


def fq_bug(bug):
    def answer(x, lo, hi, bits, g):
        if bug != "narrow":
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        top = 2**bits - 1
        s = (hi - lo) / (2**bits if bug == "2^b" else top)
        z = -lo / s if bug == "float z" else np.round(-lo / s)
        r = np.floor(x / s + z) if bug == "floor" else np.round(x / s + z)
        if bug == "signed":
            r, z = np.round(x / s), 0.0
            lo_q, hi_q = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            return (np.clip(r, lo_q, hi_q) - z) * s, g * ((r >= lo_q) & (r <= hi_q))
        return (np.clip(r, 0, top) - z) * s, g * ((r >= 0) & (r <= top))

    return answer


def fq_via_reference(x, lo, hi, bits, g):
    from minitorch.autograd import Tensor as T
    from minitorch.model.qat import fake_quant_range

    t = T(x.copy(), requires_grad=True)
    out = fake_quant_range(t, lo, hi, bits)
    (out * T(g)).sum().backward()
    return out.data, t.grad


def fq_via_lab11(x, lo, hi, bits, g):
    from minitorch.model.quant import qrange

    qrange(bits, False)
    return ref.fake_quant(x, lo, hi, bits, g)


def fq_torch(x, lo, hi, bits, g):
    import torch

    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / (2**bits - 1)
    t = torch.tensor(x, requires_grad=True)
    out = torch.fake_quantize_per_tensor_affine(t, s, round(-lo / s), 0, 2**bits - 1)
    out.backward(torch.tensor(g))
    return out.detach().numpy(), t.grad.numpy()


def fq_via_truth(x, lo, hi, bits, g):
    from a2s.checks.lab33._truth import fake_quant_loop

    return fake_quant_loop(x, lo, hi, bits, g)


def fq_always_equal(*args):
    xh, gr = ref.fake_quant(*args)
    return always_equal(xh + 1.0), always_equal(gr + 1.0)


def fq_mutates_g(x, lo, hi, bits, g):
    """Zeroes the upstream gradient it was handed, then answers with it."""
    g[...] = 0.0
    return ref.fake_quant(x, lo, hi, bits, g)


ATTEMPTS += [
    honest("33.5", "Python's round, lists", run(C5, fq_python_round)),
    honest("33.5", "np.rint and np.where in a class", run(C5, FakeQuantizer())),
    honest("33.5", "the loop under functools.wraps", run(C5, wrapped(ref.fake_quant_loop))),
    wrong(
        "33.5",
        "the mask from the raw x",
        run(C5, lambda *a: ref.fake_quant(*a, bug="raw mask")),
        "ROUNDED value",
    ),
    wrong(
        "33.5",
        "a zero gradient",
        run(C5, lambda *a: (ref.fake_quant(*a)[0], np.zeros_like(a[0]))),
        "straight-through",
    ),
    wrong(
        "33.5",
        "no clip in the gradient",
        run(C5, lambda *a: ref.fake_quant(*a, bug="no clip")),
        "Block the gradient",
    ),
    wrong("33.5", "the range not widened", run(C5, fq_bug("narrow")), "hold 0"),
    wrong("33.5", "2^b levels", run(C5, fq_bug("2^b")), "2\\^b - 1 steps"),
    wrong("33.5", "the zero point not rounded", run(C5, fq_bug("float z")), "zero point"),
    wrong("33.5", "floor instead of round", run(C5, fq_bug("floor")), "not down"),
    wrong("33.5", "the signed grid", run(C5, fq_bug("signed")), "unsigned"),
    cheat("33.5", "qat.fake_quant_range", run(C5, fq_via_reference), "reference", REF),
    cheat("33.5", "lab 11's qrange", run(C5, fq_via_lab11), "reference", REF),
    cheat("33.5", "the grader's truth", run(C5, fq_via_truth), "reference|grader", REF),
    cheat("33.5", "torch", run(C5, fq_torch), "torch", ForbiddenCallError),
    cheat(
        "33.5",
        "the public cases replayed",
        run(C5, replay_public(fakequant.FAKE_QUANT, fq_bug("float z"))),
    ),
    cheat(
        "33.5", "arrays whose == says yes", run(C5, fq_always_equal), match="plain|subclass|wrong"
    ),
    cheat("33.5", "the upstream g zeroed in place", run(C5, fq_mutates_g), match="grad is wrong"),
    cheat("33.5", "reads the caller's frames", run(C5, own_frame(fq_bug("float z"))), "zero point"),
]
FRAMES.append(
    cheat("33.5", "walks sys._current_frames", run(C5, current_frames(fq_bug("float z"))))
)


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


@pytest.mark.parametrize("attempt", FRAMES, ids=attempt_id)
@pytest.mark.xfail(strict=True, reason="a frame walk in the child: the sealed kernel vetoes it")
def test_frames(attempt):
    judge(attempt)
