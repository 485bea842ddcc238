"""Graders of lab 31: right answers pass; realistic wrong answers, budget breakers, torch
inside a kernel and reference calls fail with the hint of their mistake."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a2s.checks import lab31
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.harness import run_apart
from a2s.checks.lab31 import _truth
from minitorch.chip import fallback as ref_fallback
from minitorch.chip import kernels as ref_kernels
from minitorch.chip import onnx_io
from minitorch.chip.tensor import to_chip
from minitorch.compiler import convbn
from tests.helpers.graders import rejects

pytestmark = pytest.mark.lab31


# --------------------------------------------------------------------------- 31.1 answers
def mm(a, b):
    return a @ b


def addmm(c, a, b, beta=1, alpha=1):
    return (beta * c + alpha * (a @ b)).astype(a.dtype)


def softmax(x, dim, half_to_float=False):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def softmax_backward(g, y, dim, input_dtype=None):
    return y * (g - (g * y).sum(axis=dim, keepdims=True))


def layer_norm(x, shape, w, b, eps, bug=""):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    n = int(np.prod([x.shape[a] for a in axes]))
    var = ((x - mean) ** 2).sum(axis=axes, keepdims=True) / (n - 1 if bug == "unbiased" else n)
    rstd = (1 / (np.sqrt(var) + eps if bug == "eps outside" else np.sqrt(var + eps))).astype(
        x.dtype
    )
    y = (x - mean) * rstd
    y = y * w if w is not None else y
    y = y + b if b is not None else y
    return y, mean, rstd


def embedding(w, idx, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return w[idx]


KERNELS = [mm, addmm, softmax, softmax_backward, layer_norm, embedding]


def _with(**swap):
    names = ["mm", "addmm", "softmax", "softmax_backward", "layer_norm", "embedding"]
    return [swap.get(n, k) for n, k in zip(names, KERNELS, strict=True)]


def test_kernels_pass() -> None:
    lab31.check_kernels(*KERNELS)


def test_kernels_written_differently_pass() -> None:
    def softmax_loop(x, dim, half_to_float=False):
        z = np.moveaxis(x, dim, -1)
        out = np.empty_like(z)
        for i in np.ndindex(z.shape[:-1]):
            row = np.exp(z[i] - z[i].max())
            out[i] = row / row.sum()
        return np.moveaxis(out, -1, dim)

    def addmm_inplace(c, a, b, beta=1, alpha=1):
        out = np.matmul(a, b) * np.float32(alpha)
        out += np.float32(beta) * c
        return out

    lab31.check_kernels(*_with(softmax=softmax_loop, addmm=addmm_inplace))


def test_kernels_reject_wrong_answers() -> None:
    def naive_softmax(x, dim, half_to_float=False):
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(x)
            return e / e.sum(axis=dim, keepdims=True)

    def diagonal_backward(g, y, dim, input_dtype=None):
        return g * y * (1 - y)

    def addmm_ignores_scalars(c, a, b, beta=1, alpha=1):
        return c + a @ b

    def float64_mm(a, b):
        return a.astype(np.float64) @ b

    rejects(lab31.check_kernels, *_with(softmax=naive_softmax), match="max before exp")
    rejects(lab31.check_kernels, *_with(softmax_backward=diagonal_backward), match="diagonal")
    rejects(lab31.check_kernels, *_with(addmm=addmm_ignores_scalars), match="beta")
    rejects(lab31.check_kernels, *_with(mm=float64_mm), match="torch keeps float32")
    for bug in ("unbiased", "eps outside"):
        ln = lambda x, s, w, b, e, bug=bug: layer_norm(x, s, w, b, e, bug)  # noqa: E731
        rejects(lab31.check_kernels, *_with(layer_norm=ln), match="biased variance")


def test_layer_norm_must_return_the_saved_statistics() -> None:
    def y_only(x, shape, w, b, eps):
        return layer_norm(x, shape, w, b, eps)[0]

    def no_keepdims(x, shape, w, b, eps):
        y, mean, rstd = layer_norm(x, shape, w, b, eps)
        return y, mean.squeeze(-1), rstd.squeeze(-1)

    rejects(lab31.check_kernels, *_with(layer_norm=y_only), match="3 arrays")
    rejects(lab31.check_kernels, *_with(layer_norm=no_keepdims), match="shape")


def test_kernels_reject_a_softmax_that_breaks_on_a_causal_mask() -> None:
    def mask_as_zero(x, dim, half_to_float=False):
        x = np.where(np.isfinite(x), x, 0.0)  # the mask read as a logit of 0, not -inf
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)

    rejects(lab31.check_kernels, *_with(softmax=mask_as_zero), match="causal mask")


def test_kernels_may_not_call_torch() -> None:
    def torch_mm(a, b):
        return torch.mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()

    def torch_softmax(x, dim, half_to_float=False):
        return torch.softmax(torch.from_numpy(x), dim).numpy()

    with pytest.raises(ForbiddenCallError, match="torch"):
        lab31.check_kernels(*_with(mm=torch_mm))
    with pytest.raises(ForbiddenCallError, match="torch"):
        lab31.check_kernels(*_with(softmax=torch_softmax))


def test_kernels_reject_the_reference() -> None:
    with pytest.raises(ForbiddenCallError, match=r"minitorch\.chip\.kernels"):
        lab31.check_kernels(*_with(softmax=ref_kernels.OPS["aten::_softmax"]))

    def through_the_chip(a, b):
        to_chip(a)  # the reference upload: blocked
        return a @ b

    with pytest.raises(ReferenceCalledError):
        lab31.check_kernels(*_with(mm=through_the_chip))


def test_kernels_reject_another_labs_reference() -> None:
    from minitorch.model import speculative
    from minitorch.parallel import sequence

    def borrowed_softmax(x, dim, half_to_float=False):
        return np.moveaxis(speculative.softmax(np.moveaxis(x, dim, -1)), -1, dim)

    def borrowed_norm(x, shape, w, b, eps):
        y = sequence.layer_norm(x, w if w is not None else 1.0, b if b is not None else 0.0, eps)
        return (y, *layer_norm(x, shape, w, b, eps)[1:])

    with pytest.raises(ForbiddenCallError, match=r"minitorch\.model\.speculative"):
        lab31.check_kernels(*_with(softmax=borrowed_softmax))
    with pytest.raises(ForbiddenCallError, match=r"minitorch\.parallel\.sequence"):
        lab31.check_kernels(*_with(layer_norm=borrowed_norm))


# --------------------------------------------------------------------------- 31.2 answers
def cpu_fallback(op, args, link, bug=""):
    host = [torch.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args]
    if bug == "twice":
        host = [torch.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args]
    out = op(*host)
    if bug == "inputs back":
        for h in host:
            if isinstance(h, torch.Tensor):
                link.upload(h)
    if bug == "host result":
        return out
    if bug == "first only" and isinstance(out, tuple):
        return link.upload(out[0])
    if isinstance(out, tuple):
        return tuple(link.upload(o) for o in out)
    return link.upload(out)


def test_fallback_passes() -> None:
    lab31.check_fallback(cpu_fallback)


def test_fallback_written_differently_passes() -> None:
    def with_loop(op, args, link):
        host = []
        for a in args:
            host.append(torch.tensor(link.download(a)) if link.is_chip(a) else a)
        out = op(*host)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        handles = [link.upload(o.numpy()) for o in outs]
        return tuple(handles) if isinstance(out, tuple) else handles[0]

    lab31.check_fallback(with_loop)


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("twice", "download each once"),
        ("inputs back", "upload only the results"),
        ("host result", "must stay on the chip"),
        ("first only", "a tuple when the op returns a tuple"),
    ],
)
def test_fallback_rejects_wrong_copies(bug: str, match: str) -> None:
    rejects(lab31.check_fallback, lambda op, a, link: cpu_fallback(op, a, link, bug), match=match)


def test_fallback_rejects_a_wrong_result() -> None:
    def approximate(op, args, link):
        out = cpu_fallback(op, args, link)
        return out  # right handles; now a result computed wrongly:

    def zeros(op, args, link):
        host = [torch.from_numpy(link.download(a)) if link.is_chip(a) else a for a in args]
        out = op(*host)
        if isinstance(out, tuple):
            return tuple(link.upload(np.zeros_like(o.numpy())) for o in out)
        return link.upload(np.zeros_like(out.numpy()))

    lab31.check_fallback(approximate)
    rejects(lab31.check_fallback, zeros, match="differs from torch")


def test_fallback_budget_of_the_decode_step() -> None:
    """The decode step holds the grader's count: 4 fallbacks, 4,608 bytes at best."""
    rec = lab31.fallback._decode_step(cpu_fallback, np.random.default_rng(0)).record
    assert (rec.calls, rec.bytes) == (4, 4608) == lab31.fallback._BUDGET
    assert [op for op, *_ in rec.per_call].count("aten::view_as_complex") == 2


def test_fallback_over_the_budget_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab31.fallback, "_BUDGET", (4, 4607))
    rejects(lab31.check_fallback, cpu_fallback, match="the budget is 4 fallbacks and 4607")


def test_fallback_rejects_the_reference() -> None:
    def reference(op, args, link):
        ref_fallback.run_on_cpu(op, args, {}, link.is_chip, None, None, None)

    with pytest.raises(ReferenceCalledError):
        lab31.check_fallback(reference)


def test_link_counts_on_the_graders_side() -> None:
    link = _truth.Link()
    h = link.put(np.arange(6, dtype=np.float32))

    def child(h):
        proxy = _truth.ChipLink()
        assert proxy.__slots__ == () and not hasattr(proxy, "record")
        got = proxy.download(h)
        up = proxy.upload(np.zeros(3))
        try:
            proxy.download(np.zeros(3))
        except TypeError:
            return got, up._id
        return None

    got, uid = run_apart(child, h, serve=link.serve())
    assert np.array_equal(got, np.arange(6)) and link.record.down_bytes == 24
    assert (link.record.up_bytes, link.record.uploads) == (24, 1) and uid in link.buffers


# --------------------------------------------------------------------------- 31.3 answers
def fold_conv_bn(w, b, mean, var, gamma, beta, eps):
    s = gamma / np.sqrt(var + eps)
    return w * s[:, None, None, None], (b - mean) * s + beta


def test_fold_passes() -> None:
    lab31.check_fold_conv_bn(fold_conv_bn)

    def with_einsum(w, b, mean, var, gamma, beta, eps):
        s = gamma * (var + eps) ** -0.5
        return np.einsum("k,kcrs->kcrs", s, w), s * b - s * mean + beta

    lab31.check_fold_conv_bn(with_einsum)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda w, b, m, v, g, be, e: fold_conv_bn(w, b, m, v, g, be, 0.0), "eps goes inside"),
        (
            lambda w, b, m, v, g, be, e: (
                w * (g / (v + e))[:, None, None, None],
                (b - m) * g / (v + e) + be,
            ),
            "not by the variance",
        ),
        (
            lambda w, b, m, v, g, be, e: (
                fold_conv_bn(w, b, m, v, g, be, e)[0],
                b * g / np.sqrt(v + e) + be,
            ),
            "Subtract the running mean",
        ),
        (
            lambda w, b, m, v, g, be, e: (
                w * (g / np.sqrt(v + e))[None, :, None, None],
                fold_conv_bn(w, b, m, v, g, be, e)[1],
            ),
            "OUTPUT channel",
        ),
        (
            lambda w, b, m, v, g, be, e: (fold_conv_bn(w, b, m, v, g, be, e)[0], b - m + be),
            "Scale the bias too",
        ),
    ],
)
def test_fold_rejects_wrong_answers(wrong, match: str) -> None:
    rejects(lab31.check_fold_conv_bn, wrong, match=match)


def test_fold_rejects_a_network_that_drifts() -> None:
    def rounded(w, b, mean, var, gamma, beta, eps):
        w2, b2 = fold_conv_bn(w, b, mean, var, gamma, beta, eps)
        return w2.astype(np.float16).astype(np.float32), b2

    rejects(lab31.check_fold_conv_bn, rounded, match="closed form|small CNN")


def test_fold_may_not_call_torch_nor_the_reference() -> None:
    def torch_fold(w, b, mean, var, gamma, beta, eps):
        s = (torch.from_numpy(gamma) / torch.sqrt(torch.from_numpy(var) + eps)).numpy()
        return w * s[:, None, None, None], (b - mean) * s + beta

    with pytest.raises(ForbiddenCallError, match="torch"):
        lab31.check_fold_conv_bn(torch_fold)

    def via_reference(w, b, mean, var, gamma, beta, eps):
        convbn.batch_norm(np.zeros((1, len(b), 1, 1)), mean, var, gamma, beta, eps)
        return fold_conv_bn(w, b, mean, var, gamma, beta, eps)

    with pytest.raises(ReferenceCalledError):
        lab31.check_fold_conv_bn(via_reference)


def test_fold_truth_is_the_closed_form() -> None:
    g = np.random.default_rng(1)
    p = lab31.convbn._params(g, 3, 2)
    w2, b2 = _truth.fold(*p)
    x = g.standard_normal((1, 2, 5, 5)).astype(np.float32)
    assert np.allclose(_truth.conv_of(x, w2, b2, 1), _truth.conv_bn(x, p, 1), atol=1e-5)


# --------------------------------------------------------------------------- 31.4 answers
onnx = pytest.importorskip("onnx", reason='pip install -e ".[onnx]"')
pytest.importorskip("onnxruntime", reason='pip install -e ".[onnx]"')


def export_mlp(w1, b1, w2, b2, bug=""):
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"))
    ]
    nodes = [helper.make_node("Gemm", ["x", "W1", "B1"], ["h"], transB=0 if bug == "no T" else 1)]
    nodes.append(helper.make_node("Identity" if bug == "no relu" else "Relu", ["h"], ["r"]))
    out = "out" if bug == "output named out" else "y"
    nodes.append(helper.make_node("Gemm", ["r", "W2", "B2"], [out], transB=1))
    batch = 1 if bug == "fixed batch" else "batch"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, w1.shape[1]])
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [batch, w2.shape[0]])
    ins = [x]
    if bug == "weights as inputs":
        ins += [helper.make_tensor_value_info("W1", TensorProto.FLOAT, list(w1.shape))]
        inits = inits[1:]
    graph = helper.make_graph(nodes, "mlp", ins, [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_export_passes() -> None:
    lab31.check_export_mlp(export_mlp)

    def with_matmul(w1, b1, w2, b2):
        from onnx import TensorProto, helper, numpy_helper

        inits = [
            numpy_helper.from_array(np.ascontiguousarray(a), n)
            for a, n in ((w1.T, "A"), (b1, "c"), (w2.T, "B"), (b2, "d"))
        ]
        nodes = [
            helper.make_node("MatMul", ["x", "A"], ["xa"]),
            helper.make_node("Add", ["xa", "c"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "B"], ["rb"]),
            helper.make_node("Add", ["rb", "d"], ["y"]),
        ]
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", w1.shape[1]])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", w2.shape[0]])
        g = helper.make_graph(nodes, "m", [x], [y], initializer=inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])

    lab31.check_export_mlp(with_matmul)


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("no relu", "Apply Relu"),
        ("output named out", "one output, named y"),
        ("no T", "onnxruntime could not run it|onnx.checker"),
        ("fixed batch", "batch 5"),
        ("weights as inputs", "weights as initializers"),
    ],
)
def test_export_rejects_wrong_graphs(bug: str, match: str) -> None:
    rejects(lab31.check_export_mlp, lambda *w: export_mlp(*w, bug=bug), match=match)


def test_export_rejects_what_is_not_a_model() -> None:
    rejects(lab31.check_export_mlp, lambda *w: export_mlp(*w).graph, match="not a ModelProto")


def test_export_may_not_call_torch_nor_the_reference() -> None:
    def via_torch(w1, b1, w2, b2):
        torch.zeros(1)
        return export_mlp(w1, b1, w2, b2)

    with pytest.raises(ForbiddenCallError, match="torch"):
        lab31.check_export_mlp(via_torch)

    def via_reference(w1, b1, w2, b2):
        onnx_io.missing()
        return export_mlp(w1, b1, w2, b2)

    with pytest.raises(ReferenceCalledError):
        lab31.check_export_mlp(via_reference)


def test_export_says_how_to_install_onnx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab31.onnx_export, "onnx_missing", lambda: 'pip install -e ".[onnx]"')
    rejects(lab31.check_export_mlp, export_mlp, match=r"pip install -e")
    monkeypatch.undo()
    import builtins

    real = builtins.__import__

    def no_ort(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    assert "onnxruntime is not installed" in (lab31.onnx_export.onnx_missing() or "")


# --------------------------------------------------------------------------- musts
MUSTS = [
    ("31.1", "**You may not call torch** inside them", "test_kernels_may_not_call_torch"),
    (
        "31.1",
        "nor the reference op table `minitorch.chip.kernels`",
        "test_kernels_reject_the_reference",
    ),
    ("31.1", "or any other `minitorch` module", "test_kernels_reject_another_labs_reference"),
    ("31.1", "stable for logits near 1,000", "test_kernels_reject_wrong_answers"),
    ("31.1", "exact 0 where", "test_kernels_reject_a_softmax_that_breaks_on_a_causal_mask"),
    ("31.1", "returning `(y, mean, rstd)`", "test_layer_norm_must_return_the_saved_statistics"),
    ("31.1", "Results keep the input's dtype (float32)", "test_kernels_reject_wrong_answers"),
    ("31.2", "Download each chip operand **once**", "test_fallback_rejects_wrong_copies"),
    ("31.2", "upload **only the results**", "test_fallback_rejects_wrong_copies"),
    (
        "31.2",
        "a tuple of handles when the op returns a tuple",
        "test_fallback_rejects_wrong_copies",
    ),
    ("31.2", "every byte each way are counted on its side", "test_link_counts_on_the_graders_side"),
    ("31.2", "**4 fallbacks and 4,608 bytes**", "test_fallback_over_the_budget_fails"),
    (
        "31.2",
        "Each call must move exactly its operands down and its results up",
        "test_fallback_rejects_wrong_copies",
    ),
    ("31.3", "no torch, no `minitorch`", "test_fold_may_not_call_torch_nor_the_reference"),
    ("31.3", "compares it with the unfolded network", "test_fold_rejects_a_network_that_drifts"),
    (
        "31.3",
        "$s_k = \\gamma_k / \\sqrt{\\sigma_k^2 + \\epsilon}$",
        "test_fold_rejects_wrong_answers",
    ),
    ("31.4", "the weights as initializers", "test_export_rejects_wrong_graphs"),
    ("31.4", "returning an `onnx.ModelProto`", "test_export_rejects_what_is_not_a_model"),
    ("31.4", "one output `y`", "test_export_rejects_wrong_graphs"),
    ("31.4", "No torch", "test_export_may_not_call_torch_nor_the_reference"),
    ("31.4", "onnxruntime at batch 1 and 5", "test_export_rejects_wrong_graphs"),
    ("31.4", "Needs", "test_export_says_how_to_install_onnx"),
    ("31.5", "torch is forbidden inside", "test_31_5_torch_inside_and_the_reference_are_refused"),
    (
        "31.5",
        "checks that every node is an IR op or a\nkernel `kit.fuse` made",
        "test_31_5_a_graph_that_runs_anything_but_the_ir_is_refused",
    ),
    (
        "31.5",
        "launch no more kernels than the\nreference pipeline",
        "test_31_5_the_lowering_passes_and_its_mistakes_get_their_hints",
    ),
    (
        "31.6",
        "Listing\nmust import none",
        "test_31_6_discovery_passes_and_importing_too_much_fails",
    ),
    (
        "31.6",
        "An unknown name raises an error whose message lists every\ninstalled name",
        "test_31_6_discovery_passes_and_importing_too_much_fails",
    ),
]


# --------------------------------------------------------------------------- 31.5 answers
def _lowering(drop_t=False, plain=False, swap=False, fuse=True, opt=True, extra=None):
    def lower_aten(nodes, kit):
        g, env = kit.graph(), {}
        for n in nodes:
            a = [env[x.name] if isinstance(x, kit.Ref) else x for x in n.args]
            if n.op == "placeholder":
                env[n.name] = g.placeholder(n.name, n.shape, n.dtype)
            elif n.op == "constant":
                env[n.name] = g.constant(n.value)
            elif n.op == "output":
                g.outputs = tuple(a[::-1] if swap else a)
            elif n.target == "aten::addmm":
                mm = g.op("matmul", [a[1], a[2]])
                beta, alpha = (
                    (1, 1) if plain else (n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1))
                )
                if alpha != 1:
                    mm = g.op("mul", [mm, g.constant(np.float32(alpha))])
                c = a[0] if beta == 1 else g.op("mul", [a[0], g.constant(np.float32(beta))])
                env[n.name] = g.op("add", [mm, c])
            elif n.target == "aten::mm":
                env[n.name] = g.op("matmul", a[:2])
            elif n.target in ("aten::t", "aten::transpose.int"):
                d, nd = ((a[1], a[2]) if len(a) > 2 else (0, 1)), len(n.shape)
                env[n.name] = (
                    a[0] if drop_t else g.op("transpose", [a[0]], dim0=d[0] % nd, dim1=d[1] % nd)
                )
            elif n.target in ("aten::view", "aten::_unsafe_view"):
                env[n.name] = g.op("reshape", [a[0]], shape=n.shape)
            elif n.target in ("aten::add.Tensor", "aten::mul.Tensor"):
                x, y = [v if isinstance(v, str) else g.constant(np.float32(v)) for v in a[:2]]
                env[n.name] = g.op(n.target[6:9], [x, y])
            elif n.target in ("aten::relu", "aten::tanh", "aten::sigmoid"):
                env[n.name] = g.op(n.target[6:], [a[0]])
            else:
                raise NotImplementedError(n.target)
        g = kit.optimize(g) if opt else g
        g = kit.fuse(g) if fuse else g
        return extra(g) if extra else g

    return lower_aten


def test_31_5_the_lowering_passes_and_its_mistakes_get_their_hints():
    lab31.check_lower_aten(_lowering())
    rejects(lab31.check_lower_aten, _lowering(drop_t=True), match="transpose was dropped")
    rejects(lab31.check_lower_aten, _lowering(plain=True), match="beta and alpha were ignored")
    rejects(lab31.check_lower_aten, _lowering(swap=True), match="wrong order")
    rejects(lab31.check_lower_aten, _lowering(fuse=False), match="No kernel was fused")
    rejects(lab31.check_lower_aten, _lowering(opt=False), match="kit.optimize before")


def test_31_5_a_graph_that_runs_anything_but_the_ir_is_refused():
    from minitorch.compiler.ir import Node

    def eager_op(g):  # an op the grader's interpreter would hand to torch
        g.nodes.append(Node("e", "torch_eager", (g.outputs[0],), (), g.node(g.outputs[0]).shape))
        g.outputs = ("e", *g.outputs[1:])
        return g

    def evil_source(g):  # a fused kernel whose source is not numpy ufuncs
        for i, n in enumerate(g.nodes):
            if n.op == "fused":
                attrs = tuple(
                    (k, "def kernel(a0):\n    return __import__('os')") if k == "source" else (k, v)
                    for k, v in n.attrs
                )
                g.nodes[i] = Node(n.name, "fused", n.inputs, attrs, n.shape, n.dtype)
        return g

    rejects(lab31.check_lower_aten, _lowering(extra=eager_op), match="course IR's ops")
    rejects(lab31.check_lower_aten, _lowering(extra=evil_source), match="not one kit.fuse made")
    rejects(lab31.check_lower_aten, _lowering(extra=lambda g: "graph"), match="not the IR graph")


def test_31_5_torch_inside_and_the_reference_are_refused():
    def torch_folding(nodes, kit):
        torch.ones(1) + 1
        return _lowering()(nodes, kit)

    def reference(nodes, kit):
        from minitorch.chip.lower import lower

        return lower(nodes, {})

    with pytest.raises(ForbiddenCallError):
        lab31.check_lower_aten(torch_folding)
    with pytest.raises(ReferenceCalledError):
        lab31.check_lower_aten(reference)


# --------------------------------------------------------------------------- 31.6 answers
def available(group):
    from importlib import metadata

    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def load(name, group):
    found = available(group)
    if name not in found:
        raise LookupError(f"no platform {name!r}; installed: {sorted(found)}")
    return found[name].load()()


def test_31_6_discovery_passes_and_importing_too_much_fails():
    from importlib import metadata

    def imports_all(group):
        return {
            ep.name: ep.load()
            for ep in metadata.entry_points(group=group)
            if not ep.name.startswith("broken")
        }

    def loads_all(name, group):
        objs = {}
        for n, ep in available(group).items():
            try:
                objs[n] = ep.load()
            except RuntimeError:
                pass
        return objs[name]()

    def bare_key_error(name, group):
        return available(group)[name].load()()

    def the_class(name, group):
        return available(group)[name].load()

    lab31.check_platforms(available, load)
    rejects(lab31.check_platforms, imports_all, load, match="listing imported")
    rejects(lab31.check_platforms, available, loads_all, match="also imported")
    rejects(lab31.check_platforms, available, bare_key_error, match="names every installed")
    rejects(lab31.check_platforms, available, the_class, match="call it")


def test_31_6_the_reference_plugin_is_blocked():
    from minitorch.chip import plugin

    with pytest.raises(ReferenceCalledError):
        lab31.check_platforms(plugin.available, load)
