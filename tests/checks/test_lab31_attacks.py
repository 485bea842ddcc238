"""Lab 31 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Tried:

* honest: the kernels as loops, ``einsum``, a class, recursion over rows, imports inside, a
  decorator with ``functools.wraps``; the fallback with the dtype from the handle, a class, a
  list comprehension, ``torch.as_tensor``; the fold in float64 then cast, with
  ``np.newaxis`` and ``reshape``; the export with ``MatMul``/``Add`` nodes, ``Gemm`` with
  pre-transposed weights;
* wrong: softmax without the max shift, ``-inf`` not kept 0, only the Jacobian's diagonal,
  unbiased variance, eps outside the root, float64 results, beta/alpha ignored; the operands
  downloaded twice, the inputs uploaded back, a tuple result as one handle, a host array
  returned; eps outside, var not rooted, mean left in, per-input scale, bias not scaled;
  no Relu, W1 not transposed, a fixed batch, the weights as inputs;
* cheats: ``minitorch.chip`` (kernels, fallback, onnx_io) and ``minitorch.compiler.convbn``,
  the grader's ``_truth``, torch through ``sys.modules``, ``torch.ops``, a tensor method and
  ``torch.onnx``, the named cases replayed, answers whose ``==`` says yes, the expected value
  read from the grader's frame, the grader module monkeypatched, the link's record rewritten
  and its buffers read through the proxy's ``__closure__``.

Found and fixed: 31.1 computed each case's truth before calling the kernel, so a kernel that
walked ``sys._getframe`` read ``want`` and passed (the truth is now computed after the call).
Kept ``xfail(strict=True)``: in 31.2 the proxy's closures lead to the grader's ``Link``; a
fallback that reads the buffers and bumps the record by hand passes in-process (the sealed
kernel vetoes the closure walk); 31.3's table computes ``want`` before the call (frame walk).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest
import torch

from a2s.checks import lab31
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.checks.test_lab31 import KERNELS, cpu_fallback, export_mlp, fold_conv_bn
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab31
REF, FORBID = ReferenceCalledError, ForbiddenCallError
K, FB, FO, EX = (
    lab31.check_kernels,
    lab31.check_fallback,
    lab31.check_fold_conv_bn,
    lab31.check_export_mlp,
)
_NAMES = ["mm", "addmm", "softmax", "softmax_backward", "layer_norm", "embedding"]


def kernels(**swap):
    ks = [swap.get(n, k) for n, k in zip(_NAMES, KERNELS, strict=True)]
    return lambda: K(*ks)


def wrapped(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


def from_frame(*_args, **_kwargs):
    f = sys._getframe(1)
    while f is not None and "want" not in f.f_locals:
        f = f.f_back
    return f.f_locals["want"] if f is not None else None


def _link_of(link):
    return type(link).download.__closure__[0].cell_contents.__self__


# --------------------------------------------------------------------------- 31.1
def mm_einsum(a, b):
    return np.einsum("ik,kj->ij", a, b)


def mm_loops(a, b):
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = np.dot(a[i], b[:, j])
    return out


def softmax_rows(x, dim, half_to_float=False):
    import numpy

    def one(v):  # recursion down to the rows
        if v.ndim == 1:
            e = numpy.exp(v - v.max())
            return e / e.sum()
        return numpy.stack([one(r) for r in v])

    return numpy.moveaxis(one(numpy.moveaxis(x, dim, -1)), -1, dim)


class Embedding:
    def __call__(self, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        return np.take(weight, np.asarray(indices), axis=0)


def softmax_naive(x, dim, half_to_float=False):
    e = np.exp(x)
    return e / e.sum(axis=dim, keepdims=True)


def softmax_bwd_diag(g, y, dim, input_dtype=None):
    return g * y * (1 - y)


def layer_norm_unbiased(x, shape, w, b, eps):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = (1 / np.sqrt(x.var(axis=axes, keepdims=True, ddof=1) + eps)).astype(x.dtype)
    y = (x - mean) * rstd
    return (y * w if w is not None else y) + (b if b is not None else 0), mean, rstd


def addmm_no_scale(c, a, b, beta=1, alpha=1):
    return c + a @ b


def mm_f64(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def mm_sys_torch(a, b):
    t = sys.modules["torch"]
    return t.mm(t.from_numpy(a), t.from_numpy(b)).numpy()


def mm_aten(a, b):
    return torch.ops.aten.mm.default(torch.from_numpy(a), torch.from_numpy(b)).numpy()


def mm_method(a, b):
    return torch.from_numpy(a).matmul(torch.from_numpy(b)).numpy()


def mm_truth(a, b):
    from a2s.checks.lab31._truth import torch_kernel

    return torch_kernel("mm", a, b)


def mm_reference(a, b):
    from minitorch.chip import kernels as ref

    return ref.OPS["aten::mm"](a, b) if hasattr(ref, "OPS") else ref.mm(a, b)


def mm_named_only(a, b):
    if a.shape == (1, 1):
        return np.array([[-6.0]], np.float32)
    return np.zeros((a.shape[0], b.shape[1]), np.float32)


def mm_always_equal(a, b):
    return always_equal(np.zeros((a.shape[0], b.shape[1]), np.float32))


def softmax_lost_mask(x, dim, half_to_float=False):
    z = np.where(np.isinf(x), -1e9, x)  # a mask turned into a large negative number
    e = np.exp(z - z.max(axis=dim, keepdims=True)) + 1e-6
    return (e / e.sum(axis=dim, keepdims=True)).astype(x.dtype)


def mm_patching(a, b):
    from a2s.checks.lab31 import kernels as grader

    grader._compare = lambda *args, **kwargs: None
    return a @ b


KERNEL_ATTEMPTS = [
    honest("31.1", "einsum and take, a class", kernels(mm=mm_einsum, embedding=Embedding())),
    honest("31.1", "loops and recursion over rows", kernels(mm=mm_loops, softmax=softmax_rows)),
    honest("31.1", "functools.wraps on every kernel", lambda: K(*map(wrapped, KERNELS))),
    wrong("31.1", "softmax without the max", kernels(softmax=softmax_naive), match="max"),
    wrong("31.1", "mask made -1e9 plus a floor", kernels(softmax=softmax_lost_mask), "-inf"),
    wrong("31.1", "backward: only the diagonal", kernels(softmax_backward=softmax_bwd_diag),
          match="diagonal"),
    wrong("31.1", "unbiased variance", kernels(layer_norm=layer_norm_unbiased), "biased"),
    wrong("31.1", "beta and alpha ignored", kernels(addmm=addmm_no_scale), match="beta"),
    wrong("31.1", "float64 results", kernels(mm=mm_f64), match="float32"),
    cheat("31.1", "torch through sys.modules", kernels(mm=mm_sys_torch), error=FORBID),
    cheat("31.1", "torch.ops.aten", kernels(mm=mm_aten), error=FORBID),
    cheat("31.1", "a tensor method", kernels(mm=mm_method), error=FORBID),
    cheat("31.1", "the grader's _truth", kernels(mm=mm_truth), error=REF),
    cheat("31.1", "the reference op table", kernels(mm=mm_reference)),
    cheat("31.1", "the named case replayed", kernels(mm=mm_named_only), match="differs"),
    cheat("31.1", "== always yes", kernels(mm=mm_always_equal), match="subclass"),
    cheat("31.1", "want read from the frame", kernels(mm=from_frame)),
    cheat("31.1", "the grader's comparison patched", kernels(mm=mm_patching, softmax=softmax_naive)),
]
