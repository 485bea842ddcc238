"""Grader of exercise 31.4: export a two-layer MLP to ONNX, checked and run by onnxruntime.

``export_mlp(w1, b1, w2, b2) -> onnx.ModelProto`` builds, with ``onnx.helper``, the graph of
``y = relu(x W1^T + b1) W2^T + b2`` (weights ``(out, in)`` as in ``torch.nn.Linear``): one
float32 input named ``x`` of shape ``(batch, in)`` with a symbolic batch dimension, one output
``y``, the weights as initializers. The grader runs ``onnx.checker.check_model(full_check=True)``
and an ``onnxruntime`` CPU session at batch 1 and batch 5, feeding ``x`` only, and compares
with the MLP in numpy (``_truth.mlp``). Torch is forbidden inside (``torch.onnx.export``
would do the exercise); the reference exporter is blocked. Without onnx or onnxruntime the
check fails saying how to install them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.lab31._truth import mlp

__all__ = ["check_export_mlp", "onnx_missing"]

_F = np.float32


def onnx_missing() -> str | None:
    """What to install when onnx or onnxruntime is absent (None when both import)."""
    for name in ("onnx", "onnxruntime"):
        try:
            __import__(name)
        except ImportError:
            return (
                f"{name} is not installed; exercise 31.4 needs onnx and onnxruntime: "
                'pip install -e ".[onnx]" (from the course\'s folder), then restart the kernel.'
            )
    return None


def _weights(g: np.random.Generator, d_in: int, d_h: int, d_out: int) -> tuple[np.ndarray, ...]:
    return (
        g.standard_normal((d_h, d_in)).astype(_F),
        g.standard_normal(d_h).astype(_F),
        g.standard_normal((d_out, d_h)).astype(_F),
        g.standard_normal(d_out).astype(_F),
    )


def _run(model: Any, label: str, x: np.ndarray) -> np.ndarray:
    import onnx
    import onnxruntime as ort

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # the checker's own error names the node and the rule
        raise CheckFailure(f"[{label}] onnx.checker rejects the model: {exc}") from None
    names = [i.name for i in model.graph.input]
    init = {i.name for i in model.graph.initializer}
    if [n for n in names if n not in init] != ["x"]:
        raise CheckFailure(
            f"[{label}] the graph's inputs are {names}: declare only x as an input and the "
            "weights as initializers (helper.make_graph(..., initializer=[...]))."
        )
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        outs = sess.run(None, {"x": x})
    except Exception as exc:
        raise CheckFailure(
            f"[{label}] onnxruntime could not run it at batch {len(x)}: {type(exc).__name__}: "
            f"{str(exc)[:300]} (is the batch dimension symbolic, e.g. 'batch'? are W "
            "transposed: x @ W^T?)"
        ) from None
    if [o.name for o in model.graph.output] != ["y"] or len(outs) != 1:
        raise CheckFailure(f"[{label}] the graph must have one output, named y.")
    return np.asarray(outs[0])


@grader(
    "31.4",
    blocks=("minitorch.chip.onnx_io", "minitorch.chip.compile_backend"),
    forbid=("torch", "minitorch"),
    hand="object",
)
def check_export_mlp(export_mlp: Callable[..., Any]) -> str:
    """Exercise 31.4: export_mlp(w1, b1, w2, b2) -> an onnx.ModelProto run by onnxruntime."""
    need = onnx_missing()
    if need:
        raise CheckFailure(need)
    import onnx

    worst, runs, nodes = 0.0, 0, 0
    for gen, label in ((rng(3107), "seeded"), (fresh_rng("31.4"), "fresh")):
        d_in, d_h, d_out = (int(v) for v in gen.integers(2, 9, size=3))
        d_h = d_h + 1 if d_h == d_in else d_h  # W1 not transposed then fails
        w = _weights(gen, d_in, d_h, d_out)
        case = f"{label} MLP {d_in}->{d_h}->{d_out}"
        model = export_mlp(*[a.copy() for a in w])
        if type(model) is not onnx.ModelProto:  # the type itself, not a look-alike's name
            raise CheckFailure(
                f"[{case}] export_mlp returned {type(model).__name__}, not a ModelProto."
            )
        nodes = len(model.graph.node)
        for batch in (1, 5):
            x = gen.standard_normal((batch, d_in)).astype(_F)
            got, want = _run(model, f"{case}, batch {batch}", x), mlp(x, *w)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                relu = np.allclose(got, x @ w[0].T @ w[2].T + w[1] @ w[2].T + w[3], atol=1e-4)
                why = " Apply Relu between the two layers." if relu else ""
                raise CheckFailure(
                    f"[{case}, batch {batch}] onnxruntime's y (shape {got.shape}) differs "
                    f"from the MLP's (shape {want.shape}).{why}"
                )
            worst, runs = max(worst, float(np.abs(got - want).max())), runs + 1
    return (
        f"checked by onnx.checker, {runs} onnxruntime runs equal numpy "
        f"(max diff {worst:.1e}), {nodes} nodes"
    )
