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
  and its buffers read through the proxy's ``__closure__`` or ``gc``, a look-alike ``ModelProto``.

Found and fixed: 31.1 computed each case's truth before calling the kernel, so a kernel that
walked ``sys._getframe`` read ``want`` and passed (the truth is now computed after the call);
a softmax that turned the ``-inf`` mask into a large negative number plus a 1e-6 floor passed
within tolerance (masked entries must now be exactly 0, as the prose says). 31.2's proxy held
closures over the grader's ``Link``: a fallback that read the buffers and bumped the record by
hand through ``__closure__`` passed (the fallback now runs in a forked child whose link only
sends requests; buffers and record stay in the grader's process). 31.4 accepted any object
whose class was named ``ModelProto`` and crashed on it (the type must be onnx's own).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest
import torch

from a2s.checks import lab31
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.errors import StudentError
from tests.checks.test_lab31 import (
    KERNELS,
    _lowering,
    available,
    cpu_fallback,
    export_mlp,
    fold_conv_bn,
    load,
)
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
    with np.errstate(over="ignore", invalid="ignore"):
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
    return np.zeros((a.shape[0], b.shape[1]), np.float32)


KERNEL_ATTEMPTS = [
    honest("31.1", "einsum and take, a class", kernels(mm=mm_einsum, embedding=Embedding())),
    honest("31.1", "loops and recursion over rows", kernels(mm=mm_loops, softmax=softmax_rows)),
    honest("31.1", "functools.wraps on every kernel", lambda: K(*map(wrapped, KERNELS))),
    wrong("31.1", "softmax without the max", kernels(softmax=softmax_naive), match="max"),
    wrong("31.1", "mask made -1e9 plus a floor", kernels(softmax=softmax_lost_mask), "-inf"),
    wrong(
        "31.1",
        "backward: only the diagonal",
        kernels(softmax_backward=softmax_bwd_diag),
        match="diagonal",
    ),
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
    cheat("31.1", "the grader's comparison patched", kernels(mm=mm_patching)),
]


# --------------------------------------------------------------------------- 31.2
class Fallback:
    def __call__(self, op, args, link):
        host = []
        for a in args:
            host.append(torch.as_tensor(link.download(a)) if link.is_chip(a) else a)
        out = op(*host)
        return tuple(map(link.upload, out)) if isinstance(out, tuple) else link.upload(out)


def fallback_numpy_upload(op, args, link):
    import torch as t

    out = op(*[t.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args])
    outs = out if isinstance(out, tuple) else (out,)
    ups = [link.upload(o.detach().numpy().copy()) for o in outs]
    return tuple(ups) if isinstance(out, tuple) else ups[0]


def fallback_twice(op, args, link):
    for a in args:
        if link.is_chip(a):
            link.download(a)
    return cpu_fallback(op, args, link)


def fallback_inputs_back(op, args, link):
    return cpu_fallback(op, args, link, bug="inputs back")


def fallback_one_handle(op, args, link):
    out = op(*[torch.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args])
    return link.upload(out[0] if isinstance(out, tuple) else out)


def fallback_host(op, args, link):
    return op(*[torch.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args])


def fallback_reference(op, args, link):
    from minitorch.chip.fallback import run_on_cpu

    return run_on_cpu(op, args, link)


def fallback_record_bumped(op, args, link):
    grader = _link_of(link)  # the grader's Link, through the proxy's closure
    host = [torch.from_numpy(grader.buffers[a._id].copy()) if link.is_chip(a) else a for a in args]
    for a in args:
        if link.is_chip(a):
            grader.record.down_bytes += a.dtype.itemsize * int(np.prod(a.shape))
            grader.record.downloads += 1
    out = op(*host)
    ups = [link.upload(o) for o in (out if isinstance(out, tuple) else (out,))]
    return tuple(ups) if isinstance(out, tuple) else ups[0]


def fallback_gc_record(op, args, link):
    import gc

    from a2s.checks.lab31._truth import Link

    links = [o for o in gc.get_objects() if type(o) is Link]  # the child's copies only
    for grader in links:
        grader.record.down_bytes += 10**6
    ids = [a._id for a in args if link.is_chip(a)]  # the copy made with this call's handles
    grader = next(g for g in reversed(links) if all(i in g.buffers for i in ids))
    host = [torch.from_numpy(grader.buffers[a._id].copy()) if link.is_chip(a) else a for a in args]
    out = op(*host)
    ups = [link.upload(o) for o in (out if isinstance(out, tuple) else (out,))]
    return tuple(ups) if isinstance(out, tuple) else ups[0]


def fallback_read_by_get(op, args, link):
    grader = _link_of(link)
    out = op(*[torch.from_numpy(grader.get(a).copy()) if link.is_chip(a) else a for a in args])
    return cpu_fallback(op, args, link) if out is not None else None


def fallback_zero_record(op, args, link):
    out = cpu_fallback(op, args, link)
    _link_of(link).record.up_bytes = 0
    return out


def fallback_wrong_dtype(op, args, link):
    out = op(*[torch.from_numpy(link.download(a)).double() if link.is_chip(a) else a for a in args])
    return tuple(map(link.upload, out)) if isinstance(out, tuple) else link.upload(out)


def fallback_patch_budget(op, args, link):
    from a2s.checks.lab31 import fallback as grader

    grader._BUDGET = (10**6, 10**9)
    return fallback_twice(op, args, link)


FALLBACK_ATTEMPTS = [
    honest("31.2", "a class, torch.as_tensor", lambda: FB(Fallback())),
    honest("31.2", "numpy copies uploaded, import inside", lambda: FB(fallback_numpy_upload)),
    honest("31.2", "functools.wraps", lambda: FB(wrapped(cpu_fallback))),
    wrong("31.2", "operands downloaded twice", lambda: FB(fallback_twice), match="once"),
    wrong("31.2", "inputs uploaded back", lambda: FB(fallback_inputs_back), match="still on"),
    wrong("31.2", "a tuple as one handle", lambda: FB(fallback_one_handle), match="tuple"),
    wrong("31.2", "the host tensor returned", lambda: FB(fallback_host), match="stay on the chip"),
    wrong("31.2", "computed in float64", lambda: FB(fallback_wrong_dtype), match="differs"),
    cheat("31.2", "the reference run_on_cpu", lambda: FB(fallback_reference), error=REF),
    cheat(
        "31.2", "Link.get through the closure", lambda: FB(fallback_read_by_get), error=StudentError
    ),
    cheat("31.2", "the record zeroed", lambda: FB(fallback_zero_record), error=StudentError),
    cheat("31.2", "the budget patched", lambda: FB(fallback_patch_budget)),
    cheat("31.2", "want read from the frame", lambda: FB(from_frame)),
    cheat("31.2", "the Link found by gc, read", lambda: FB(fallback_gc_record), match="downloads"),
    cheat(
        "31.2",
        "buffers read, record bumped",
        lambda: FB(fallback_record_bumped),
        error=StudentError,
    ),
]


# --------------------------------------------------------------------------- 31.3
def fold_f64(w, b, mean, var, gamma, beta, eps):
    s = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    w2 = (w * s.reshape(-1, 1, 1, 1)).astype(w.dtype)
    return w2, ((b - mean) * s + beta).astype(w.dtype)


class Folder:
    def __call__(self, w, b, mean, var, gamma, beta, eps):
        import math

        s = [g / math.sqrt(v + eps) for g, v in zip(gamma.tolist(), var.tolist(), strict=True)]
        w2 = np.stack([w[k] * s[k] for k in range(len(s))])
        return w2, np.array([(b[k] - mean[k]) * s[k] + beta[k] for k in range(len(s))])


def fold_eps_outside(w, b, mean, var, gamma, beta, eps):
    s = gamma / (np.sqrt(var) + eps)
    return w * s[:, None, None, None], (b - mean) * s + beta


def fold_per_input(w, b, mean, var, gamma, beta, eps):
    s = gamma / np.sqrt(var + eps)
    return w * s[None, :, None, None] if w.shape[0] == w.shape[1] else w, (b - mean) * s + beta


def fold_mean_kept(w, b, mean, var, gamma, beta, eps):
    s = gamma / np.sqrt(var + eps)
    return w * s[:, None, None, None], b * s + beta


def fold_torch(w, b, mean, var, gamma, beta, eps):
    s = torch.from_numpy(gamma) / torch.sqrt(torch.from_numpy(var) + eps)
    return w * s.numpy()[:, None, None, None], (b - mean) * s.numpy() + beta


def fold_reference(w, b, mean, var, gamma, beta, eps):
    from minitorch.compiler import convbn

    return convbn.fold_conv_bn(convbn.batch_norm(w, b, mean, var, gamma, beta, eps))


def fold_truth(w, b, mean, var, gamma, beta, eps):
    from a2s.checks.lab31._truth import fold

    return fold(w, b, mean, var, gamma, beta, eps)


def fold_equal(w, b, mean, var, gamma, beta, eps):
    return always_equal(np.zeros_like(w)), always_equal(np.zeros_like(b))


FOLD_ATTEMPTS = [
    honest("31.3", "float64 then cast, reshape", lambda: FO(fold_f64)),
    honest("31.3", "a class, math per channel", lambda: FO(Folder())),
    honest("31.3", "functools.wraps", lambda: FO(wrapped(fold_conv_bn))),
    wrong("31.3", "eps outside the root", lambda: FO(fold_eps_outside), match="eps"),
    wrong("31.3", "per input channel", lambda: FO(fold_per_input), match="OUTPUT channel"),
    wrong("31.3", "the mean left in the bias", lambda: FO(fold_mean_kept), match="mean"),
    cheat("31.3", "torch inside", lambda: FO(fold_torch), error=FORBID),
    cheat("31.3", "the reference fold", lambda: FO(fold_reference), error=REF),
    cheat("31.3", "the grader's _truth", lambda: FO(fold_truth), error=REF),
    cheat("31.3", "== always yes", lambda: FO(fold_equal)),
    cheat("31.3", "want read from the frame", lambda: FO(from_frame)),
]


# --------------------------------------------------------------------------- 31.4
def export_pretransposed(w1, b1, w2, b2):
    import onnx.helper as h
    from onnx import TensorProto, numpy_helper

    t = [numpy_helper.from_array(np.ascontiguousarray(a), n) for a, n in ((w1.T, "a"), (w2.T, "b"))]
    t += [numpy_helper.from_array(b1, "c"), numpy_helper.from_array(b2, "d")]
    nodes = [
        h.make_node("Gemm", ["x", "a", "c"], ["h"]),
        h.make_node("Relu", ["h"], ["r"]),
        h.make_node("Gemm", ["r", "b", "d"], ["y"]),
    ]
    x = h.make_tensor_value_info("x", TensorProto.FLOAT, ["n", w1.shape[1]])
    y = h.make_tensor_value_info("y", TensorProto.FLOAT, ["n", w2.shape[0]])
    g = h.make_graph(nodes, "g", [x], [y], initializer=t)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def export_torch(w1, b1, w2, b2):
    import io

    import onnx

    net = torch.nn.Sequential(torch.nn.Linear(*w1.shape[::-1]), torch.nn.ReLU())
    buf = io.BytesIO()
    torch.onnx.export(net, torch.zeros(1, w1.shape[1]), buf)
    return onnx.load_from_string(buf.getvalue())


def export_reference(w1, b1, w2, b2):
    from minitorch.chip import onnx_io

    return onnx_io.to_onnx(onnx_io.from_onnx(None))


class ModelProto:  # a look-alike, named as the grader expects
    graph = None


def export_fake(w1, b1, w2, b2):
    return ModelProto()


EXPORT_ATTEMPTS = [
    honest("31.4", "Gemm on pre-transposed weights", lambda: EX(export_pretransposed)),
    honest("31.4", "functools.wraps", lambda: EX(wrapped(export_mlp))),
    wrong("31.4", "no Relu", lambda: EX(lambda *w: export_mlp(*w, bug="no relu")), "Relu"),
    wrong(
        "31.4",
        "a fixed batch",
        lambda: EX(lambda *w: export_mlp(*w, bug="fixed batch")),
        match="batch 5",
    ),
    wrong(
        "31.4",
        "weights as inputs",
        lambda: EX(lambda *w: export_mlp(*w, bug="weights as inputs")),
        match="initializers",
    ),
    cheat("31.4", "torch.onnx.export", lambda: EX(export_torch), error=FORBID),
    cheat("31.4", "the reference exporter", lambda: EX(export_reference), error=REF),
    cheat("31.4", "a look-alike ModelProto", lambda: EX(export_fake), match="not a ModelProto"),
    cheat("31.4", "want read from the frame", lambda: EX(from_frame)),
]

# --------------------------------------------------------------------------- 31.5
LO, PL = lab31.check_lower_aten, lab31.check_platforms


class Lowerer:
    def __call__(self, nodes, kit):
        return _lowering()(list(nodes), kit)


def lower_torch(nodes, kit):
    torch.zeros(1).sum()
    return _lowering()(nodes, kit)


def lower_reference(nodes, kit):
    from minitorch.chip import compile_backend

    return compile_backend.optimize(kit.graph())[1]


def lower_truth(nodes, kit):
    from a2s.checks.lab31.lowering import aten_eval

    aten_eval(nodes, np.zeros(1))
    return _lowering()(nodes, kit)


def lower_eager_op(nodes, kit):
    from minitorch.compiler.ir import Node

    g = _lowering()(nodes, kit)
    g.nodes.append(Node("e", "torch_eager", (g.outputs[0],), (), g.node(g.outputs[0]).shape))
    g.outputs = ("e", *g.outputs[1:])
    return g


LOWER_ATTEMPTS = [
    honest("31.5", "a class, the nodes copied", lambda: LO(Lowerer())),
    honest("31.5", "functools.wraps", lambda: LO(wrapped(_lowering()))),
    wrong("31.5", "a transpose dropped", lambda: LO(_lowering(drop_t=True)), "transpose was"),
    wrong("31.5", "addmm's beta/alpha ignored", lambda: LO(_lowering(plain=True)), "beta and"),
    wrong("31.5", "outputs swapped", lambda: LO(_lowering(swap=True)), match="wrong order"),
    wrong("31.5", "fusion not run", lambda: LO(_lowering(fuse=False)), match="No kernel was"),
    cheat("31.5", "torch inside", lambda: LO(lower_torch), error=FORBID),
    cheat("31.5", "the reference pipeline", lambda: LO(lower_reference), error=REF),
    cheat("31.5", "the grader's numpy run", lambda: LO(lower_truth), error=REF),
    cheat("31.5", "an op that runs eager torch", lambda: LO(lower_eager_op), match="IR's ops"),
]


# --------------------------------------------------------------------------- 31.6
def available_select(group):
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points().select(group=group)}


def load_imports_every_module(name, group):
    import importlib

    for ep in available(group).values():
        try:
            importlib.import_module(ep.module)
        except RuntimeError:
            pass
    return load(name, group)


def load_fake(name, group):
    class Fake:
        token = "0" * 16

    Fake.name = name
    if name not in available(group):
        raise LookupError(str(sorted(available(group))))
    return Fake()


def load_decoy(name, group):
    from importlib import metadata

    decoy = group.replace(".platforms", ".decoy")
    eps = {ep.name: ep for ep in metadata.entry_points(group=decoy)}
    if name not in eps:
        raise LookupError(str(sorted(eps)))
    return eps[name].load()()


def load_reference(name, group):
    from minitorch.chip import plugin

    return plugin.load(name, group)


PLATFORM_ATTEMPTS = [
    honest("31.6", "entry_points().select", lambda: PL(available_select, load)),
    honest("31.6", "functools.wraps", lambda: PL(wrapped(available), wrapped(load))),
    wrong(
        "31.6",
        "every platform imported to list",
        lambda: PL(
            lambda g: {
                ep.name: ep.load() for ep in available(g).values() if "broken" not in ep.name
            },
            load,
        ),
        match="listing imported",
    ),
    wrong(
        "31.6",
        "every module imported to load",
        lambda: PL(available, load_imports_every_module),
        match="also imported",
    ),
    wrong(
        "31.6",
        "the class, not an instance",
        lambda: PL(
            available, lambda n, g: available(g)[n].load() if n in available(g) else load(n, g)
        ),
        match="call it",
    ),
    cheat("31.6", "a look-alike platform", lambda: PL(available, load_fake), match="not an inst"),
    cheat("31.6", "the decoy group's entry", lambda: PL(available, load_decoy), match="decoy"),
    cheat("31.6", "the reference plugin", lambda: PL(available, load_reference), error=REF),
    cheat("31.6", "want read from the frame", lambda: PL(available, from_frame)),
]

ATTEMPTS = (
    KERNEL_ATTEMPTS
    + FALLBACK_ATTEMPTS
    + FOLD_ATTEMPTS
    + EXPORT_ATTEMPTS
    + LOWER_ATTEMPTS
    + PLATFORM_ATTEMPTS
)


@pytest.mark.parametrize(
    "attempt", ATTEMPTS, ids=lambda a: attempt_id(getattr(a, "values", [a])[0])
)
def test_attempt(attempt) -> None:
    judge(attempt)
