"""Grader of exercise 13.4: an interpreter whose outputs equal eager execution bit for bit.

Ground truth is eager execution on ``minitorch.autograd.Tensor`` (the function the graph was
captured from), compared bit for bit, dtype included. The student's interpreter may not call
the autograd package (the eager ops themselves) nor torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.lab13._truth import assert_same_bits, call
from minitorch.autograd import Tensor
from minitorch.compiler import capture, models

__all__ = ["check_run"]

_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda x: -x,
    "exp": lambda x: (x * 0.1).exp(),
    "log": lambda x: (x * x + 1.0).log(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "sum": lambda x: x.sum(axis=1),
    "mean": lambda x: x.mean(axis=-1, keepdims=True),
    "max": lambda x: x.max(axis=0),
    "pow": lambda x: (x * x + 1.0) ** 0.5,
    "reshape": lambda x: x.reshape(2, -1) * 2.0,
    "transpose+permute": lambda x: x.reshape(2, 2, -1).transpose(0, 2).permute(1, 0, 2) - 1.0,
    "1.0 / x": lambda x: 1.0 / (x + 10.0),
}
_HINTS = {
    "sigmoid": "Eager sigmoid is 0.5 * (1 + tanh(0.5 x)) (stable for large |x|), "
    "not 1/(1+exp(-x)).",
    "relu": "Eager relu is np.maximum(x, 0): x * (x > 0) gives -0.0 for negative x.",
    "mean": "Eager mean is sum / count, cast back to the input's dtype.",
}
_DTYPE = (
    "The output dtype differs from eager's: a constant must be used as stored (a 0-d float32 "
    "array), never turned into a float64 array or a Python float computed in float64."
)


_SAME_CALLS = (
    "Each kernel must make the same numpy call as the eager op, on the same operands in the "
    "same order (a @ b for matmul, a / b for div: not a * (1 / b), not np.einsum)."
)


def _case(
    student: Callable[..., Any], label: str, fn: Callable[..., Any], x: np.ndarray, hint: str
) -> int:
    graph = capture.trace(fn, [x])
    want = fn(Tensor(x)).data
    got = plain(call(student, label, graph, x.copy()), what="the outputs", case=label)
    assert_true(
        isinstance(got, list) and len(got) == 1,
        f"[{label}] return a list with one array per output",
    )
    out = np.asarray(got[0])
    assert_true(
        out.shape == want.shape,
        f"[{label}] shape {out.shape}, eager gives {want.shape}. {hint or _SAME_CALLS}",
    )
    assert_true(
        out.dtype == want.dtype,
        f"[{label}] dtype {out.dtype}, eager gives {want.dtype}. "
        + (hint if "dtype" in hint else _DTYPE),
    )
    assert_same_bits(out, want, case=label, what="outputs", hint=hint or _SAME_CALLS)
    return int(want.size)


@grader(
    "13.4",
    blocks=(
        "minitorch.compiler.interp:run",
        "minitorch.compiler.interp:evaluate",
        "minitorch.compiler.fusion:kernel_source",
        "minitorch.compiler.fusion:compile_kernel",
    ),
    forbid=("torch", "minitorch.autograd"),
    hand="object",
)
def check_run(run: Callable[..., Any]) -> str:
    """Exercise 13.4: ``run(graph, *inputs) -> list of arrays``, bit-exact with eager."""
    gen, values = rng(1304), 0
    for op, fn in _UNARY.items():
        x = (gen.standard_normal((4, 6)) * 3).astype(np.float32)
        values += _case(run, f"{op}", fn, x, _HINTS.get(op, ""))
    x = gen.standard_normal((5, 8)).astype(np.float32)
    values += _case(run, "MLP 8-16-4", models.mlp([8, 16, 4])[0], x, "")
    x = gen.standard_normal((5, 16)).astype(np.float32)
    values += _case(run, "attention block", models.attention_block(16, 2)[0], x, "")
    values += _case(run, "GELU + LayerNorm", models.gelu_layernorm(16)[0], x, "")
    new = fresh_rng("13.4")
    for i in range(2):
        sizes = [int(s) for s in new.integers(1, 9, int(new.integers(2, 5)))]
        act = str(new.choice(["relu", "tanh", "sigmoid"]))
        x = new.standard_normal((3, sizes[0])).astype(np.float32)
        values += _case(
            run, fresh(f"random MLP {sizes} ({act})"), models.mlp(sizes, i, act)[0], x, ""
        )
    return f"{len(_UNARY) + 5} graphs (2 fresh) run bit-exact with eager, {values:,} output values"
