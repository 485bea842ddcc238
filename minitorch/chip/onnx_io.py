"""The course IR to ONNX and back; the exported model checked and run in onnxruntime.

    model = to_onnx(graph)                   # an onnx.ModelProto (opset 18)
    onnx.checker.check_model(model, full_check=True)
    outs = run_onnxruntime(model, x)         # CPUExecutionProvider
    back = from_onnx(model)                  # same_structure(back, graph) is True

ONNX is a graph of standard operators (``MatMul``, ``Add``, ``ReduceMean``, ``Conv``...) with
the weights as initializers, so one exported file runs in any runtime that implements the
operator set (ONNX Runtime picks an execution provider per node, as a framework backend
picks a device). Each IR op maps to one ONNX node; attributes that ONNX takes as inputs
(``Reshape``'s shape, the reduction axes of opset 18, ``Expand``'s shape) become int64
initializers named after the node, and import reads them back into attributes. Fused nodes
have no ONNX form: export the graph before fusion (the runtime fuses on its own).

Needs the optional ``onnx`` extra (``pip install -e .[onnx]``: onnx and onnxruntime).

Lab: 31_pytorch_backend
Paper: the ONNX specification (onnx.ai, Operators, opset 18)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.chip import lower as _lower
from minitorch.compiler.ir import Graph

__all__ = ["OPSET", "from_onnx", "missing", "run_onnxruntime", "to_onnx"]

OPSET = 18
_SIMPLE = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "relu": "Relu",
    "matmul": "MatMul",
    "erf": "Erf",
}
_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax"}
_ = _lower  # registers erf and expand with the IR


def missing() -> str | None:
    """What to install when onnx or onnxruntime is absent (``None`` when both import)."""
    for name in ("onnx", "onnxruntime"):
        try:
            __import__(name)
        except ImportError:
            return f"{name} is not installed: pip install -e '.[onnx]' (onnx and onnxruntime)"
    return None


def to_onnx(graph: Graph, name: str = "chip_graph") -> Any:
    """``graph`` (no fused nodes) as an ONNX model: inputs, initializers, one node per op."""
    from onnx import helper, numpy_helper

    def ints(key: str, values: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(values, np.int64), key))
        return key

    def vi(n: Any) -> Any:
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(n.dtype))
        return helper.make_tensor_value_info(n.name, elem, list(n.shape))

    inputs, inits, nodes = [], [], []
    used = {i for n in graph.nodes for i in n.inputs} | set(graph.outputs)
    for n in graph.nodes:
        if n.op == "constant" and n.name not in used:
            continue  # an unused weight (a BatchNorm's step counter): no initializer
        if n.op == "placeholder":
            inputs.append(vi(n))
        elif n.op == "constant":
            inits.append(numpy_helper.from_array(np.asarray(n.value), n.name))
        elif n.op in _SIMPLE:
            nodes.append(helper.make_node(_SIMPLE[n.op], list(n.inputs), [n.name], name=n.name))
        elif n.op in _REDUCE:
            axes = ints(f"{n.name}__axes", n.attr("axes"))
            keep = int(bool(n.attr("keepdims")))
            nodes.append(
                helper.make_node(_REDUCE[n.op], [n.inputs[0], axes], [n.name], keepdims=keep)
            )
        elif n.op in ("reshape", "expand"):
            shape = ints(f"{n.name}__shape", n.attr("shape"))
            op = "Reshape" if n.op == "reshape" else "Expand"
            nodes.append(helper.make_node(op, [n.inputs[0], shape], [n.name]))
        elif n.op in ("transpose", "permute"):
            perm = list(range(len(n.shape)))
            if n.op == "transpose":
                i, j = n.attr("dim0"), n.attr("dim1")
                perm[i], perm[j] = perm[j], perm[i]
            else:
                perm = list(n.attr("dims"))
            node = helper.make_node("Transpose", [n.inputs[0]], [n.name], perm=perm)
            node.doc_string = n.op  # transpose or permute, read back on import
            nodes.append(node)
        elif n.op == "conv2d":
            (sh, sw), (ph, pw) = n.attr("stride"), n.attr("padding")
            nodes.append(
                helper.make_node(
                    "Conv", list(n.inputs), [n.name], strides=[sh, sw], pads=[ph, pw, ph, pw]
                )
            )
        elif n.op == "embedding":  # ids arrive in the weight's dtype (see chip.lower)
            ids = f"{n.name}__ids"
            nodes.append(helper.make_node("Cast", [n.inputs[1]], [ids], to=7))  # INT64
            nodes.append(helper.make_node("Gather", [n.inputs[0], ids], [n.name], axis=0))
        elif n.op == "batch_norm":
            x, mean, var, gamma, beta = n.inputs
            nodes.append(
                helper.make_node(
                    "BatchNormalization",
                    [x, gamma, beta, mean, var],
                    [n.name],
                    epsilon=float(n.attr("eps")),
                )
            )
        else:
            raise ValueError(f"no ONNX form for IR op {n.op!r} (export before fusion)")
    outputs = [vi(graph.node(o)) for o in graph.outputs]
    body = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(body, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # opset 18 needs IR 8; older runtimes reject newer IR versions
    return model


def run_onnxruntime(model: Any, *inputs: np.ndarray) -> list[np.ndarray]:
    """Run ``model`` in onnxruntime on the CPU execution provider; one array per output."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return list(sess.run(None, dict(zip(names, inputs, strict=True))))


def from_onnx(model: Any) -> Graph:
    """An ONNX model (as :func:`to_onnx` writes them) read back into the course IR."""
    from onnx import numpy_helper
    from onnx.helper import tensor_dtype_to_np_dtype

    body = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in body.initializer}
    side = {i for n in body.node for i in n.input[1:] if "__" in i}  # shapes, axes
    g = Graph()
    for vi in body.input:
        if vi.name in consts:
            continue
        shape = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
        g.placeholder(vi.name, shape, str(tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)))
    for t in body.initializer:
        if t.name not in side:
            g.constant(consts[t.name], name=t.name)
    inverse = {v: k for k, v in _SIMPLE.items()}
    cast: dict[str, str] = {}  # the int64 ids of an embedding -> the ids input
    for n in body.node:
        attrs = {a.name: a for a in n.attribute}
        out, ins = n.output[0], [cast.get(i, i) for i in n.input]
        if n.op_type == "Cast" and out.endswith("__ids"):
            cast[out] = ins[0]
        elif n.op_type == "Gather":
            g.op("embedding", ins, name=out)
        elif n.op_type in inverse:
            g.op(inverse[n.op_type], ins, name=out)
        elif n.op_type in _REDUCE.values():
            op = next(k for k, v in _REDUCE.items() if v == n.op_type)
            keep = bool(attrs["keepdims"].i) if "keepdims" in attrs else True
            axes = tuple(int(a) for a in consts[ins[1]])
            g.op(op, [ins[0]], name=out, axes=axes, keepdims=keep)
        elif n.op_type in ("Reshape", "Expand"):
            op = "reshape" if n.op_type == "Reshape" else "expand"
            g.op(op, [ins[0]], name=out, shape=tuple(int(s) for s in consts[ins[1]]))
        elif n.op_type == "Transpose":
            perm = [int(p) for p in attrs["perm"].ints]
            moved = [i for i, p in enumerate(perm) if p != i]
            if n.doc_string == "transpose":
                g.op("transpose", ins, name=out, dim0=moved[0], dim1=moved[1])
            else:
                g.op("permute", ins, name=out, dims=tuple(perm))
        elif n.op_type == "Conv":
            s, p = list(attrs["strides"].ints), list(attrs["pads"].ints)
            g.op("conv2d", ins, name=out, stride=tuple(s), padding=(p[0], p[1]))
        elif n.op_type == "BatchNormalization":
            x, gamma, beta, mean, var = ins
            g.op(
                "batch_norm",
                [x, mean, var, gamma, beta],
                name=out,
                eps=float(f"{attrs['epsilon'].f:.7g}"),
            )
        else:
            raise ValueError(f"no IR op for ONNX {n.op_type}")
    g.outputs = tuple(o.name for o in body.output)
    return g
