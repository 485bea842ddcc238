"""Grader of exercise 31.2: the CPU fallback, its copies counted by the grader.

The learner writes ``cpu_fallback(op, args, link)``: ``op`` is an ATen overload the chip has
no kernel for (``torch.ops.aten.cumsum.default``...), ``args`` its positional arguments, chip
tensors among them as opaque :class:`~a2s.checks.lab31._truth.Handle` objects, and ``link``
the host link: ``download(handle)`` (a numpy copy), ``upload(array)`` (a new handle),
``is_chip(x)``. It must copy the chip operands down, run ``op`` with torch's CPU kernel,
copy the results up and return their handles (a tuple for a tuple-returning op). The
fallback runs in a forked child (``harness.run_apart``) whose link only sends requests; the
grader's :class:`~a2s.checks.lab31._truth.Link` serves them, and holds the chip's buffers
and every byte each way in the grader's process, never the learner's. Each call must move
exactly the operands down and the results up, once each; the RoPE decode step of the tiny
GPT's torch twin (the four complex-view calls that fall back, measured on the reference)
must fit in 4 fallbacks and 4,608 bytes. Torch is allowed here: computing on the host is
what a fallback does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, case_label, fresh_rng, grader, plain, rng
from a2s.checks.harness import run_apart
from a2s.checks.lab31._truth import ChipLink, Handle, Link

__all__ = ["check_fallback"]

_BUDGET = (4, 4608)  # the RoPE decode step: fallbacks, bytes (reference, torch 2.x, float64)


def _host(link: Link, args: tuple[Any, ...]) -> list[Any]:
    return [torch.from_numpy(link.get(a).copy()) if isinstance(a, Handle) else a for a in args]


def _one(
    student: Callable[..., Any], link: Link, label: str, op: Any, args: tuple[Any, ...]
) -> Any:
    want = op(*_host(link, args))
    wants = want if isinstance(want, tuple) else (want,)
    rec = link.record
    before = (rec.down_bytes, rec.up_bytes, rec.downloads, rec.uploads)
    with case_label(label):
        kind, ids = run_apart(_in_child, student, op, args, serve=link.serve())
    rec.calls += 1
    got: Any = tuple(link.handles.get(i) for i in ids) if kind == "tuple" else link.handles.get(ids)
    gots: tuple[Any, ...] = got if isinstance(want, tuple) and kind == "tuple" else (got,)
    if len(gots) != len(wants) or not all(isinstance(g, Handle) for g in gots):
        if kind in ("Handle", "tuple"):
            kind = "1 handle" if kind == "Handle" else f"{len(ids)} handle(s)"
        raise CheckFailure(
            f"[{label}] cpu_fallback returned {kind}; the result must stay on the chip: upload "
            f"each result and return its handle ({len(wants)} handle(s), a tuple when the op "
            "returns a tuple)."
        )
    for g, w in zip(gots, wants, strict=True):
        have = plain(link.get(g).copy(), case=label)
        ok = have.shape == tuple(w.shape) and np.array_equal(have, w.numpy(), equal_nan=True)
        if not ok:
            raise CheckFailure(f"[{label}] the uploaded result differs from torch's CPU kernel.")
    chip_in = [a for a in args if isinstance(a, Handle)]
    need_down = sum(a.dtype.itemsize * int(np.prod(a.shape)) for a in chip_in)
    need_up = sum(w.numel() * w.element_size() for w in wants)
    down, up, nd, nu = (
        rec.down_bytes - before[0],
        rec.up_bytes - before[1],
        rec.downloads - before[2],
        rec.uploads - before[3],
    )
    if down != need_down or nd != len(chip_in):
        raise CheckFailure(
            f"[{label}] {nd} downloads, {down} bytes chip -> host; the {len(chip_in)} chip "
            f"operand(s) hold {need_down}: download each once (and nothing else)."
        )
    if up != need_up or nu != len(wants):
        raise CheckFailure(
            f"[{label}] {nu} uploads, {up} bytes host -> chip; the result(s) hold {need_up}: "
            "upload only the results (the inputs are still on the chip), once each."
        )
    rec.per_call.append((op.name(), down, up))
    return got


def _in_child(student: Callable[..., Any], op: Any, args: tuple[Any, ...]) -> tuple[str, Any]:
    """In the learner's child: its answer as ids of uploaded handles (or its type's name)."""
    got = call(student, op, args, ChipLink())
    if type(got) is Handle:
        return "Handle", got._id
    if type(got) in (tuple, list) and all(type(g) is Handle for g in got):
        return "tuple", [g._id for g in got]
    return type(got).__name__, None


def _cases(g: np.random.Generator, link: Link, label: str) -> list[tuple[str, Any, tuple]]:
    aten = torch.ops.aten
    n = int(g.integers(3, 9))
    x = link.put(g.standard_normal(n).astype(np.float32))
    m = link.put(g.standard_normal((2, n)).astype(np.float32))
    r, th = link.put(np.abs(g.standard_normal(n))), link.put(g.standard_normal(n))
    cond = link.put(g.random((2, n)) > 0.5)
    return [
        (f"{label} cumsum({n},)", aten.cumsum.default, (x, 0)),
        (f"{label} topk k=2 (two results)", aten.topk.default, (m, 2)),
        (f"{label} polar (two chip operands)", aten.polar.default, (r, th)),
        (
            f"{label} where (a bool operand)",
            aten.where.self,
            (cond, m, link.put(np.zeros((2, n), np.float32))),
        ),
    ]


def _decode_step(student: Callable[..., Any], g: np.random.Generator) -> Link:
    """The RoPE decode step's four fallbacks, chained: each result feeds the next call."""
    link, aten = Link(), torch.ops.aten
    for who, heads in (("q", 2), ("k", 1)):
        h = link.put(g.standard_normal((1, heads, 6, 4, 2)))
        c = _one(
            student,
            link,
            f"decode step, view_as_complex({who})",
            aten.view_as_complex.default,
            (h,),
        )
        _one(student, link, f"decode step, view_as_real({who})", aten.view_as_real.default, (c,))
    return link


@grader(
    "31.2",
    blocks=("minitorch.chip.tensor", "minitorch.chip.fallback:run_on_cpu"),
    forbid=("minitorch",),  # torch allowed: the fallback runs on the host
    hand="budget",
)
def check_fallback(cpu_fallback: Callable[..., Any]) -> str:
    """Exercise 31.2: cpu_fallback(op, args, link) -> the result handle(s), copies counted."""
    link = Link()
    cases = _cases(rng(3103), link, "seeded") + _cases(fresh_rng("31.2"), link, "fresh")
    for label, op, args in cases:
        _one(cpu_fallback, link, label, op, args)
    step = _decode_step(cpu_fallback, rng(3104)).record
    calls, moved = step.calls, step.bytes
    if calls > _BUDGET[0] or moved > _BUDGET[1]:
        raise CheckFailure(
            f"the RoPE decode step made {calls} fallbacks moving {moved} bytes; the budget is "
            f"{_BUDGET[0]} fallbacks and {_BUDGET[1]} bytes."
        )
    return (
        f"{len(cases)} ops fell back correctly ({link.record.bytes} bytes counted by the grader's "
        f"link); the RoPE decode step: {calls} fallbacks, {moved} bytes (budget {_BUDGET[1]})"
    )
