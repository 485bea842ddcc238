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

31.5-31.6, reviewed. Tried: honest lowerings by a dispatch dict, a class, recursion from the
outputs; the listing by the 3.9 dict API, ``.select()``, a loop over ``distributions()``,
``functools.cache``, and ``entry_points.txt`` read by hand with ``configparser`` (honest: it
reads the metadata and imports only the named module); wrong: a dropped transpose, beta/alpha
ignored or swapped (unmodelled: no hint), swapped outputs, no fusion; a bare ``KeyError``,
keyed by the entry point's value; cheats: torch, the reference, the grader's numpy run, a
non-IR op, ``want`` from the forking thread's frames, the launch count patched in the child,
names whose ``==`` says yes, a dozen hand-written kernel sources (attribute access, ``getattr``,
lambda, comprehension, ``np.einsum``/``np.dot``/``np.frompyfunc``, ``__import__``, a global
name, ``out=`` into an input, ``np.add.reduce``, two matmuls), one kernel of a whole MLP, the
seeded inputs' outputs precomputed; the decoy, a look-alike, the token asked for by hand, a
previous check's listing replayed. Found and fixed: a kernel of two matmuls (the MLP in one
launch), ``out=`` into an input and global names passed the source check (only what kit.fuse
writes now passes); the second input was seeded, so a graph telling the two inputs apart with
precomputed outputs passed on the 3-D MLPs (it is now drawn from a secret seed after the
child); the hint search crashed on non-square MLPs; 31.6's names were the same in every check
of a process (a saved listing replayed) and a look-alike with a token asked for by hand passed
(the child now reports a platform only if its type is the named module's ``Platform``). Left
as strict xfails (``PLATFORM_GAPS``): a module forged in ``sys.modules``, and imports hidden by
a rewritten ``request``.
"""

from __future__ import annotations

import dataclasses
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


_ACTS = {"aten::relu": "relu", "aten::tanh": "tanh", "aten::sigmoid": "sigmoid"}


def lower_dispatch(nodes, kit):
    """A dispatch dict: one small function per ATen target."""
    g, env = kit.graph(), {}

    def val(a):
        return env[a.name] if isinstance(a, kit.Ref) else a

    def const(v):
        return v if isinstance(v, str) else g.constant(np.float32(v))

    def addmm(n, a):
        b, al = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
        mm = g.op("mul", [g.op("matmul", [a[1], a[2]]), const(al)])
        return g.op("add", [mm, g.op("mul", [a[0], const(b)])])

    def act(op, n, a):
        return g.op(op, [a[0]])

    def transpose(n, a):
        d = a[1:3] if len(a) > 2 else (0, 1)
        return g.op("transpose", [a[0]], dim0=d[0] % len(n.shape), dim1=d[1] % len(n.shape))

    table = {
        "aten::addmm": addmm,
        "aten::mm": lambda n, a: g.op("matmul", a[:2]),
        "aten::t": transpose,
        "aten::transpose.int": transpose,
        "aten::view": lambda n, a: g.op("reshape", [a[0]], shape=n.shape),
        "aten::_unsafe_view": lambda n, a: g.op("reshape", [a[0]], shape=n.shape),
        "aten::add.Tensor": lambda n, a: g.op("add", [const(a[0]), const(a[1])]),
        "aten::mul.Tensor": lambda n, a: g.op("mul", [const(a[0]), const(a[1])]),
        **{t: functools.partial(act, op) for t, op in _ACTS.items()},
    }
    for n in nodes:
        a = [val(x) for x in n.args]
        if n.op == "placeholder":
            env[n.name] = g.placeholder(n.name, n.shape, n.dtype)
        elif n.op == "constant":
            env[n.name] = g.constant(n.value)
        elif n.op == "output":
            g.outputs = tuple(a)
        else:
            env[n.name] = table[n.target](n, a)
    return kit.fuse(kit.optimize(g))


def lower_recursive(nodes, kit):
    """Recursion from the outputs back to the inputs (placeholders first, in order)."""
    g, by_name, done = kit.graph(), {n.name: n for n in nodes}, {}
    for n in nodes:
        if n.op == "placeholder":
            done[n.name] = g.placeholder(n.name, n.shape, n.dtype)

    def emit(name):
        if name in done:
            return done[name]
        n = by_name[name]
        a = [emit(x.name) if isinstance(x, kit.Ref) else x for x in n.args]
        if n.op == "constant":
            out = g.constant(n.value)
        elif n.target == "aten::addmm":
            mm = g.op("matmul", [a[1], a[2]])
            mm = g.op("mul", [mm, g.constant(np.float32(n.kwargs.get("alpha", 1)))])
            b = g.op("mul", [a[0], g.constant(np.float32(n.kwargs.get("beta", 1)))])
            out = g.op("add", [mm, b])
        elif n.target == "aten::mm":
            out = g.op("matmul", a[:2])
        elif n.target in ("aten::t", "aten::transpose.int"):
            d = a[1:3] if len(a) > 2 else (0, 1)
            out = g.op("transpose", [a[0]], dim0=d[0] % len(n.shape), dim1=d[1] % len(n.shape))
        elif n.target in ("aten::view", "aten::_unsafe_view"):
            out = g.op("reshape", [a[0]], shape=n.shape)
        elif n.target in _ACTS:
            out = g.op(_ACTS[n.target], [a[0]])
        else:
            x, y = [v if isinstance(v, str) else g.constant(np.float32(v)) for v in a[:2]]
            out = g.op("add" if n.target == "aten::add.Tensor" else "mul", [x, y])
        done[name] = out
        return out

    (last,) = [n for n in nodes if n.op == "output"]
    g.outputs = tuple(emit(r.name) for r in last.args)
    return kit.fuse(kit.optimize(g))


def lower_swapped_beta_alpha(nodes, kit):  # unmodelled: no hint may name another mistake
    def swap(n):
        kw = {"beta": n.kwargs.get("alpha", 1), "alpha": n.kwargs.get("beta", 1)}
        return dataclasses.replace(n, kwargs=kw) if n.target == "aten::addmm" else n

    return _lowering()([swap(n) for n in nodes], kit)


def _big_fuse(g):
    """kit.fuse's grouping without its one-matmul rule: a whole MLP in one kernel."""
    from minitorch.compiler import fusion
    from minitorch.compiler.ir import BINARY, UNARY, Graph, Node

    group_of, members = {}, {}
    for n in reversed(g.nodes):
        if n.op not in (*BINARY, *UNARY, "matmul"):
            continue
        users = {group_of.get(u.name, -1) for u in g.users(n.name)}
        gid = next(iter(users)) if len(users) == 1 else -1
        if gid < 0 or n.name in g.outputs:
            gid = len(members)
            members[gid] = []
        group_of[n.name] = gid
        members[gid].append(n.name)
    order = {n.name: i for i, n in enumerate(g.nodes)}
    replaced, dropped = {}, set()
    for m in (sorted(m, key=order.__getitem__) for m in members.values() if len(m) > 1):
        src, ext = fusion.kernel_source(g, m)
        root = g.node(m[-1])
        attrs = (("ops", "+".join(g.node(x).op for x in m)), ("out_shape", root.shape))
        attrs += (("source", src),)
        replaced[root.name] = Node(root.name, "fused", tuple(ext), attrs, root.shape, root.dtype)
        dropped.update(m[:-1])
    return Graph([replaced.get(n.name, n) for n in g.nodes if n.name not in dropped], g.outputs)


def _numpy_aten(nodes, x):
    """The learner's own numpy run of the ATen graph (for the precomputing cheat)."""
    env = {}
    for n in nodes:
        a = [env[i.name] if type(i).__name__ == "Ref" else i for i in n.args]
        t = n.target
        if n.op in ("placeholder", "constant"):
            env[n.name] = x if n.op == "placeholder" else n.value
        elif n.op == "output":
            return [np.asarray(o, np.float32) for o in a]
        elif t == "aten::addmm":
            env[n.name] = n.kwargs.get("beta", 1) * a[0] + n.kwargs.get("alpha", 1) * (a[1] @ a[2])
        elif t == "aten::mm":
            env[n.name] = a[0] @ a[1]
        elif t in ("aten::t", "aten::transpose.int"):
            env[n.name] = np.swapaxes(a[0], *(a[1:3] if len(a) > 2 else (0, 1)))
        elif t in ("aten::view", "aten::_unsafe_view"):
            env[n.name] = np.reshape(a[0], n.shape)
        elif t in ("aten::add.Tensor", "aten::mul.Tensor"):
            env[n.name] = a[0] + a[1] if t == "aten::add.Tensor" else a[0] * a[1]
        else:
            f = {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh}.get(_ACTS[t])
            env[n.name] = f(a[0]) if f else 1 / (1 + np.exp(-a[0]))
    return []


def lower_precomputed(nodes, kit):
    """The grader's inputs drawn as it drew them (``rng(3107)``, twice); on the 3-D models a
    graph that tells the two apart and returns each one's precomputed outputs, in budget."""
    (ph,) = [n for n in nodes if n.op == "placeholder"]
    if len(ph.shape) != 3:
        return _lowering()(nodes, kit)
    gen = np.random.default_rng(3107)
    x1, x2 = (gen.standard_normal(ph.shape).astype(np.float32) for _ in range(2))
    g = kit.graph()
    x = g.placeholder(ph.name, ph.shape, ph.dtype)
    d = g.op("sub", [x, g.constant(x1)])
    s = g.op("sum", [g.op("mul", [d, d])], axes=(0, 1, 2))
    m = g.op("div", [s, g.op("add", [s, g.constant(np.float32(1e-30))])])  # 0 on x1, 1 else
    o1, o2 = _numpy_aten(nodes, x1), _numpy_aten(nodes, x2)
    outs = [
        g.op("add", [g.constant(a), g.op("mul", [m, g.constant(b - a)])])
        for a, b in zip(o1, o2, strict=True)
    ]
    g.outputs = tuple(outs)
    return kit.fuse(kit.optimize(g))


def lower_want_from_frames(nodes, kit):
    """``want`` read from the grader's frames (the forking thread's, via
    ``sys._current_frames``) and returned as a constant graph."""
    for f in sys._current_frames().values():
        while f is not None:
            if "want" in f.f_locals and "compiled" in f.f_locals:
                g = kit.graph()
                for n in nodes:
                    if n.op == "placeholder":
                        g.placeholder(n.name, n.shape, n.dtype)
                want = f.f_locals["want"]
                wants = want if isinstance(want, tuple) else (want,)
                g.outputs = tuple(g.constant(np.array(w.detach())) for w in wants)
                return g
            f = f.f_back
    return _lowering()(nodes, kit)


def lower_counter_patched(nodes, kit):
    """The grader's launch count and interpreter rewritten in the child; no fusion."""
    for mod in ("a2s.checks.lab31.lowering", "minitorch.compiler.interp"):
        if mod in sys.modules:
            vars(sys.modules[mod]).update(_kernels=lambda graph: 0, _budget=lambda *a: 99)
    return _lowering(fuse=False)(nodes, kit)


def lower_always_equal_names(nodes, kit):
    """Output names whose ``==`` always says yes."""

    class Yes(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    g = _lowering()(nodes, kit)
    g.outputs = tuple(Yes(o) for o in g.outputs)
    return g


_CRAFTED = {  # fused kernels' sources kit.fuse never writes: refused before anything runs
    "attribute access": "t0 = np.add(a0.T, 0)",
    "getattr by string": "t0 = np.add(getattr(a0, 'sum')(), 0)",
    "a lambda": "t0 = (lambda: np.add(a0, 0))()",
    "a comprehension": "t0 = np.add([v for v in a0], 0)",
    "np.einsum": "t0 = np.einsum('ij->ij', a0)",
    "np.dot": "t0 = np.dot(a0, a0)",
    "np.frompyfunc": "t0 = np.frompyfunc(print, 1, 1)(a0)",
    "__import__ inside": "t0 = np.add(__import__('os').getpid(), a0)",
    "a global name": "t0 = np.add(a0, open)",
    "out= into its input (state across calls)": "t0 = np.add(a0, 1, out=a0)",
    "np.add.reduce": "t0 = np.add.reduce(a0)",
    "two matmuls": "t0 = np.matmul(a0, a0)\n    t1 = np.matmul(t0, a0)\n    t0 = t1",
}


def lower_crafted(line):
    def lower_aten(nodes, kit):
        g = _lowering()(nodes, kit)
        for i, n in enumerate(g.nodes):
            if n.op == "fused":
                head = dict(n.attrs)["source"].splitlines()[0]
                src = f"{head}\n    {line}\n    return t0"
                attrs = tuple((k, src if k == "source" else v) for k, v in n.attrs)
                g.nodes[i] = dataclasses.replace(n, attrs=attrs)
                return g
        return g

    return lower_aten


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
    honest("31.5", "a dispatch dict", lambda: LO(lower_dispatch)),
    honest("31.5", "recursion from the outputs", lambda: LO(lower_recursive)),
    wrong(
        "31.5",
        "beta and alpha swapped (unmodelled: no hint)",
        lambda: LO(lower_swapped_beta_alpha),
        match=r"differ from eager torch \(shapes \[\(4, 5\)\] vs \[\(4, 5\)\]\)\.$",
    ),
    cheat(
        "31.5",
        "one fused kernel of two matmuls",
        lambda: LO(_lowering(fuse=False, extra=_big_fuse)),
        match="not one kit.fuse made",
    ),
    cheat(
        "31.5",
        "the seeded inputs' outputs precomputed",
        lambda: LO(lower_precomputed),
        match="differ from eager",
    ),
    cheat("31.5", "want read from the frames", lambda: LO(lower_want_from_frames)),
    cheat(
        "31.5",
        "the launch count patched in the child",
        lambda: LO(lower_counter_patched),
        match="No kernel was fused",
    ),
    cheat("31.5", "output names whose == says yes", lambda: LO(lower_always_equal_names)),
    *(
        cheat("31.5", f"fused source: {k}", lambda v=v: LO(lower_crafted(v)), match="kit.fuse made")
        for k, v in _CRAFTED.items()
    ),
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


def available_dict_api(group):
    """The Python 3.9 dict API of entry_points() (deprecated, still there on 3.11)."""
    import warnings
    from importlib import metadata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        eps = metadata.entry_points()
        found = eps.get(group, ()) if hasattr(eps, "get") else eps.select(group=group)
    return {ep.name: ep for ep in found}


def available_distributions(group):
    """A loop over every installed distribution's entry points."""
    from importlib import metadata

    out = {}
    for dist in metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == group:
                out.setdefault(ep.name, ep)
    return out


def available_by_hand(group):
    """entry_points.txt read from each dist-info folder on sys.path with configparser: what
    importlib.metadata does, written out; honest (it imports nothing and reads the metadata)."""
    import configparser
    from pathlib import Path

    out = {}
    for folder in sys.path:
        for info in (
            sorted(Path(folder or ".").glob("*.dist-info")) if Path(folder or ".").is_dir() else ()
        ):
            cfg = configparser.ConfigParser(delimiters=("=",))
            cfg.optionxform = str
            try:
                cfg.read(info / "entry_points.txt", encoding="utf-8")
            except configparser.Error:
                continue
            if cfg.has_section(group):
                for name, value in cfg.items(group):
                    out.setdefault(name, value)
    return out


def load_by_hand(name, group):
    import importlib

    found = available_by_hand(group)
    if name not in found:
        raise LookupError(f"no {name!r}; installed: {sorted(found)}")
    module, _, attr = found[name].partition(":")
    return getattr(importlib.import_module(module.strip()), attr.strip())()


@functools.cache
def _cached(group):
    return tuple(available(group).items())


def available_cached(group):  # honest: the group is named afresh per check
    return dict(_cached(group))


def load_key_error(name, group):
    return available(group)[name].load()()


def load_forged_token(name, group):
    """No entry point loaded: the token asked of the grader by hand, held by a look-alike."""
    from a2s.checks.harness import request

    if name not in available(group):
        raise LookupError(f"installed: {sorted(available(group))}")
    fake = type("Platform", (), {})()
    fake.name, fake.token = name, request("platform.imported", name)
    return fake


def load_forged_module(name, group):
    """A module object of the named module's name put in sys.modules by hand, its Platform a
    look-alike holding a token asked for by hand: nothing of the entry point imported."""
    import types

    from a2s.checks.harness import request

    eps = available(group)
    if name not in eps:
        raise LookupError(f"installed: {sorted(eps)}")
    mod = types.ModuleType(eps[name].module)
    token = request("platform.imported", name)

    class Platform:
        def __init__(self):
            self.name, self.token = name, token

    mod.Platform = Platform
    sys.modules[mod.__name__] = mod
    return Platform()


def load_hiding_imports(name, group):
    """Every platform imported, the other imports hidden by a rewritten harness request."""
    import importlib

    import a2s.checks.harness as h

    real = h.request
    h.request = lambda what, mod: real(what, mod) if mod == name else "hidden"
    for ep in available(group).values():
        try:
            importlib.import_module(ep.module)
        except RuntimeError:
            pass
    h.request = real
    return load(name, group)


_SAVED: dict[str, dict] = {}


def replay_previous_check():
    """A previous check's listing replayed (written to disk by its child, read back here)."""
    import json
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "names.json"

    def saving(group):
        found = available(group)
        path.write_text(json.dumps(sorted(found)))
        return found

    PL(saving, load)
    old = json.loads(path.read_text())
    return PL(lambda g: dict.fromkeys(old, None), load)


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
    honest("31.6", "the Python 3.9 dict API", lambda: PL(available_dict_api, load)),
    honest("31.6", "a loop over distributions()", lambda: PL(available_distributions, load)),
    honest("31.6", "dist-info read by hand", lambda: PL(available_by_hand, load_by_hand)),
    honest("31.6", "functools.cache", lambda: PL(available_cached, load)),
    wrong(
        "31.6",
        "a bare KeyError for an unknown name",
        lambda: PL(available, load_key_error),
        match="names every installed",
    ),
    wrong(
        "31.6",
        "keyed by the entry point's value",
        lambda: PL(lambda g: {ep.value: ep for ep in available(g).values()}, load),
        match="keyed by the entry point's name",
    ),
    cheat(
        "31.6",
        "the token asked for by hand",
        lambda: PL(available, load_forged_token),
        match="not an instance",
    ),
    cheat("31.6", "a previous check's names replayed", replay_previous_check, match="gave"),
]

PLATFORM_GAPS = [  # strict xfails: the child is the learner's process (docs/trust.md)
    pytest.param(
        cheat("31.6", "a forged module in sys.modules", lambda: PL(available, load_forged_module)),
        marks=pytest.mark.xfail(
            strict=True,
            reason="the child is the learner's process: a module object forged in sys.modules "
            "with a token asked for by hand passes (docs/trust.md, lab 31's known gaps)",
        ),
    ),
    pytest.param(
        cheat(
            "31.6",
            "imports hidden by a rewritten request",
            lambda: PL(available, load_hiding_imports),
            match="also imported",
        ),
        marks=pytest.mark.xfail(
            strict=True,
            reason="a platform reports its import through the harness's request() in the "
            "learner's process, which the learner can rewrite (docs/trust.md, known gaps)",
        ),
    ),
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
    "attempt", [*ATTEMPTS, *PLATFORM_GAPS], ids=lambda a: attempt_id(getattr(a, "values", [a])[0])
)
def test_attempt(attempt) -> None:
    judge(attempt)
