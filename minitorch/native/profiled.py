"""A GPT forward written op by op in torch, for torch's profiler: op counts, a bottleneck, a trace.

The model is a GPT-2-style decoder at the tiny GPT's sizes (:data:`TINY_SIZES`: vocab 16,
block 32, 2 layers, 4 heads, width 64) with a ``bias`` switch: token and position
embeddings, then per layer ``x += proj(attn(ln1(x)))`` and ``x += fc2(gelu(fc1(ln2(x))))``, a
final layer norm and an untied LM head. Each operator is called directly, so the CPU
profiler's *top-level* events (those with no parent event) are exactly these calls, with the
same names from torch 2.4 on (``aten::embedding``, ``aten::layer_norm``, ``aten::addmm``,
``aten::mm``, ``aten::bmm``, ``aten::softmax``, ``aten::gelu``; their children, such as
``aten::native_layer_norm`` or ``aten::_softmax``, vary between versions and are not counted):

* a linear on the (B T, C) activations is ``torch.addmm(b, x, W^T)`` with a bias and
  ``torch.mm(x, W^T)`` without, one call for the whole batch (the batch is folded into rows);
  four per layer (fused QKV, the attention output, the MLP's two) and the LM head (no bias);
* attention folds the heads into the batch of ``torch.bmm``: ``Q K^T`` and ``P V``, two calls
  per layer whatever the number of heads, one ``softmax`` between them.

So a forward of ``L`` layers calls embedding 2, layer_norm ``2 L + 1``, addmm ``4 L`` (bias) or
0, mm ``1`` or ``4 L + 1``, bmm ``2 L``, softmax ``L``, gelu ``L`` (:func:`predicted_op_counts`).
:func:`profile_counts` measures them (top-level events of ``torch.profiler.profile``);
``planted=True`` adds a bottleneck (the LM head computed one position at a time, ``B T``
small ``mm`` calls where one would do) that :func:`top_operator` finds: the top-level
operator called most often.

torch is imported inside the functions only.

Lab: 37_python_to_machine_code
Paper: Radford et al. 2019 (GPT-2); the PyTorch documentation, ``torch.profiler`` (Kineto).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = [
    "OPS",
    "TINY_SIZES",
    "chrome_trace",
    "forward",
    "predicted_op_counts",
    "profile",
    "profile_counts",
    "top_operator",
]

OPS = (
    "aten::embedding",
    "aten::layer_norm",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::softmax",
    "aten::gelu",
)
TINY_SIZES: dict[str, Any] = {
    "vocab_size": 16,
    "block_size": 32,
    "n_layer": 2,
    "n_head": 4,
    "d_model": 64,
    "batch": 2,
    "bias": True,
}


def _weights(cfg: Mapping[str, Any], seed: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    c, v, t = cfg["d_model"], cfg["vocab_size"], cfg["block_size"]

    def r(*shape: int) -> Any:
        return torch.randn(*shape, generator=g) * 0.02

    w: dict[str, Any] = {"wte": r(v, c), "wpe": r(t, c), "head": r(v, c)}
    for i in range(cfg["n_layer"]):
        for name, (o, k) in {
            "qkv": (3 * c, c),
            "proj": (c, c),
            "fc1": (4 * c, c),
            "fc2": (c, 4 * c),
        }.items():
            w[f"{i}.{name}"] = r(o, k)
            w[f"{i}.{name}.b"] = r(o) if cfg["bias"] else None
    w["idx"] = torch.randint(0, v, (cfg["batch"], t), generator=g)
    return w


def forward(cfg: Mapping[str, Any], w: Mapping[str, Any], planted: bool = False) -> Any:
    """Logits (B, T, V) of the model ``cfg`` with weights ``w`` (see the module docstring)."""
    import torch
    import torch.nn.functional as F

    b, t, c, h = cfg["batch"], cfg["block_size"], cfg["d_model"], cfg["n_head"]
    d = c // h

    def linear(x: Any, name: str) -> Any:
        bias = w[f"{name}.b"]
        return torch.mm(x, w[name].t()) if bias is None else torch.addmm(bias, x, w[name].t())

    def heads(x: Any) -> Any:  # (B T, C) -> (B H, T, d)
        return x.reshape(b, t, h, d).transpose(1, 2).reshape(b * h, t, d)

    causal = torch.ones(t, t, dtype=torch.bool).triu(1)
    x = (F.embedding(w["idx"], w["wte"]) + F.embedding(torch.arange(t), w["wpe"])).reshape(b * t, c)
    for i in range(cfg["n_layer"]):
        q, k, v = linear(F.layer_norm(x, (c,)), f"{i}.qkv").split(c, dim=1)
        att = torch.bmm(heads(q), heads(k).transpose(1, 2)) * d**-0.5
        att = torch.softmax(att.masked_fill(causal, float("-inf")), dim=-1)
        y = torch.bmm(att, heads(v)).reshape(b, h, t, d).transpose(1, 2).reshape(b * t, c)
        x = x + linear(y, f"{i}.proj")
        x = x + linear(F.gelu(linear(F.layer_norm(x, (c,)), f"{i}.fc1")), f"{i}.fc2")
    x = F.layer_norm(x, (c,))
    head = w["head"].t()
    if planted:  # the bottleneck: one small mm per position instead of one for all rows
        logits = torch.cat([torch.mm(row, head) for row in x.split(1)])
    else:
        logits = torch.mm(x, head)
    return logits.reshape(b, t, -1)


def profile(cfg: Mapping[str, Any], planted: bool = False, seed: int = 0) -> Any:
    """The ``torch.profiler.profile`` object of one forward (CPU, no grad)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    w = _weights(cfg, seed)
    with _quiet_stderr(), torch.no_grad(), torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        forward(cfg, w, planted)
    return prof


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null: Kineto logs each start and stop of the profiler
    from C++ (``USDT:<timestamp> ... profiler_start``), which no Python setting silences."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def profile_counts(cfg: Mapping[str, Any], planted: bool = False) -> dict[str, int]:
    """``{op: calls}`` of the top-level events of one profiled forward, for the ops in OPS."""
    counts = dict.fromkeys(OPS, 0)
    for e in profile(cfg, planted).events():
        if e.cpu_parent is None and e.name in counts:
            counts[e.name] += 1
    return counts


def predicted_op_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """The counts of :func:`profile_counts` from the configuration alone (closed form)."""
    n = cfg["n_layer"]
    bias = bool(cfg["bias"])
    return {
        "aten::embedding": 2,
        "aten::layer_norm": 2 * n + 1,
        "aten::addmm": 4 * n if bias else 0,
        "aten::mm": 1 if bias else 4 * n + 1,
        "aten::bmm": 2 * n,
        "aten::softmax": n,
        "aten::gelu": n,
    }


def top_operator(prof: Any) -> tuple[str, int, float]:
    """(name, calls, CPU us) of the top-level operator called most often, with its total time.

    On a model this small every call costs microseconds of dispatch, so the number of calls,
    not the arithmetic, is what a planted loop of small calls shows first."""
    calls: dict[str, list[float]] = {}
    for e in prof.events():
        if e.cpu_parent is None and e.name.startswith("aten::"):
            calls.setdefault(e.name, []).append(float(e.cpu_time_total))
    name, times = max(calls.items(), key=lambda kv: len(kv[1]))
    return name, len(times), sum(times)


def chrome_trace(prof: Any, path: str) -> str:
    """Write the profile as a Chrome trace (open it in chrome://tracing or Perfetto)."""
    prof.export_chrome_trace(path)
    return path
