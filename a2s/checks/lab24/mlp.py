"""Grader of exercise 24.1: the column- then row-parallel MLP, forward and backward.

The learner's ``tp_mlp_forward(comm, x, w1, b1, w2, b2)`` and ``tp_mlp_backward(comm, x, w1,
b1, w2, dy)`` run on every rank of a SimWorld (t = 1, 2, 4) with rank r's column slice of W1
and b1 and row slice of W2. Ground truth: the unsharded MLP in plain numpy (forward) and torch
autograd on it in float64 (backward), both computed outside the learner's call. Budget: each
direction moves exactly one all-reduce of ``(s, b, h)`` (``2 (t-1)`` times its bytes in all,
naive or ring). The simulated ranks run each in its own forked process (the world's counters
stay in the grader's process). Then one batch on 2 real gloo processes (one launch), same
comparisons: there the learner's functions travel as source (with the modules, importable
functions and constants they name) and run in a sealed child of each rank
(``ranks.on_gloo_rank``: torch is a forbidden call, the bytes are the rank's own count;
``workers.tp_mlp_gloo``).
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader
from a2s.checks.errors import CheckFailure
from a2s.checks.lab24._truth import (
    BLOCKS,
    all_reduce_bytes,
    budget,
    expect,
    mlp_case,
    mlp_shards,
    plain_mlp,
    run_ranks,
)
from a2s.checks.truths import gelu_tanh

__all__ = ["check_tp_mlp", "torch_mlp_grads"]

_TEACHING = [(1, 2, 1, 4, 2401), (2, 3, 2, 4, 2402), (4, 2, 2, 8, 2403), (2, 1, 1, 2, 2404)]
_NO_REDUCE = (
    "This is rank r's PARTIAL sum: a row-parallel layer without the all-reduce. Each rank "
    "multiplies its slice of the hidden features by its rows of W2; the output is the sum "
    "over ranks: all-reduce it (the g operator)."
)
_BIAS = (
    "b2 was added on every rank before the all-reduce, so it is counted t times: add the "
    "replicated bias once, after the sum."
)
_DX_PARTIAL = (
    "dx is rank r's PARTIAL gradient (from its columns of W1 only): x feeds every rank's "
    "slice, so its gradient is the sum over ranks -- the all-reduce of f's backward."
)
_FWD_BYTES = (
    "The forward needs ONE all-reduce, of the (s, b, h) output of the row-parallel layer; the "
    "column-parallel layer needs none (each rank already holds x and its columns)."
)
_BWD_BYTES = (
    "The backward needs ONE all-reduce, of dx (f's backward); the weight gradients are shards "
    "that stay where they are, dy is already on every rank (g's backward is the identity)."
)


def torch_mlp_grads(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Gradients of the unsharded MLP by torch autograd (float64), keyed like the case."""
    import torch

    ts = {n: torch.tensor(c[n], requires_grad=True) for n in ("x", "w1", "b1", "w2", "b2")}
    z = ts["x"] @ ts["w1"] + ts["b1"]
    y = torch.nn.functional.gelu(z, approximate="tanh") @ ts["w2"] + ts["b2"]
    y.backward(torch.tensor(c["dy"]))
    return {n: v.grad.numpy() for n, v in ts.items()}


def _fresh_case(gen: np.random.Generator) -> tuple[int, int, int, int, int]:
    t = int(gen.choice([2, 4]))
    return t, int(gen.integers(1, 5)), int(gen.integers(1, 3)), 2 * t, int(gen.integers(1, 2**31))


def _forward(fwd: Any, t: int, c: dict[str, np.ndarray], label: str) -> None:
    args = [(c["x"], *mlp_shards(c, t, r), c["b2"]) for r in range(t)]
    outs, world = run_ranks(fwd, "24.1", t, args, label, "tp_mlp_forward's result")
    want = plain_mlp(c)
    for r, got in enumerate(outs):
        w1, b1, w2 = mlp_shards(c, t, r)
        partial = gelu_tanh(c["x"] @ w1 + b1) @ w2
        hints = (
            [
                (partial + c["b2"], _NO_REDUCE),
                (partial, _NO_REDUCE),
                (want + (t - 1) * c["b2"], _BIAS),
            ]
            if t > 1
            else []
        )
        expect(
            label,
            r,
            got,
            want,
            hints,
            "y",
            "Column-parallel W1 (+ b1, gelu), then row-parallel W2, one all-reduce, then + b2.",
        )
    budget(label, world, all_reduce_bytes(t, c["x"].nbytes), _FWD_BYTES)


def _backward(bwd: Any, t: int, c: dict[str, np.ndarray], label: str) -> None:
    args = [(c["x"], *mlp_shards(c, t, r), c["dy"]) for r in range(t)]
    outs, world = run_ranks(bwd, "24.1", t, args, label, "tp_mlp_backward's result")
    g = torch_mlp_grads(c)
    for r, got in enumerate(outs):
        if not isinstance(got, tuple | list) or len(got) != 5:
            raise CheckFailure(f"[{label}] rank {r}: return (dx, dw1, db1, dw2, db2).")
        w1, b1, w2 = mlp_shards(c, t, r)
        z = c["x"] @ w1 + b1
        partial_dx = None
        if t > 1:
            u = np.tanh(0.7978845608028654 * (z + 0.044715 * z**3))
            dgelu = 0.5 * (1 + u) + 0.5 * z * (1 - u**2) * 0.7978845608028654 * (
                1 + 0.134145 * z**2
            )
            partial_dx = ((c["dy"] @ w2.T) * dgelu) @ w1.T
        expect(
            label,
            r,
            got[0],
            g["x"],
            [(partial_dx, _DX_PARTIAL)],
            "dx",
            "dx = (dy W2_r^T * gelu'(z_r)) W1_r^T, summed over ranks.",
        )
        want = {
            "dw1": np.split(g["w1"], t, axis=1)[r],
            "db1": np.split(g["b1"], t)[r],
            "dw2": np.split(g["w2"], t)[r],
            "db2": g["b2"],
        }
        for got_k, (name, w) in zip(got[1:], want.items(), strict=True):
            expect(
                label,
                r,
                got_k,
                w,
                [],
                name,
                f"{name} is this rank's shard of the full "
                "gradient (db2 whole: the bias is replicated).",
            )
    budget(label, world, all_reduce_bytes(t, c["x"].nbytes), _BWD_BYTES)


def _names(code: Any) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            out |= _names(const)
    return out


_PLAIN = (int, float, complex, bool, str, bytes, type(None), np.generic)


def _importable(obj: Any) -> str | None:
    """``"module:qualname"`` that imports back to ``obj`` in a fresh process, or None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:  # not importable: a notebook's own object
        return None
    return f"{module}:{qualname}" if found is obj else None


def _extra(value: Any) -> tuple[str, Any] | None:
    """How a global the learner's code names travels to a rank: a module by name, an
    importable function or class by ``module:qualname``, a constant by value."""
    if inspect.ismodule(value):
        return "module", value.__name__
    if isinstance(value, _PLAIN) or (
        isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)
    ):
        return "value", value
    if isinstance(value, np.ndarray) and value.nbytes <= 1 << 20:
        return "value", np.array(value)
    where = _importable(value) if callable(value) else None
    return ("attr", where) if where else None


def _sources(fn: Any) -> tuple[list[tuple[str, str]], dict[str, tuple[str, Any]]]:
    """The source of ``fn`` and of the helper functions it calls from its own module/cells,
    and how the other globals they name travel (modules, importable functions, constants)."""
    out: list[tuple[str, str]] = []
    extras: dict[str, tuple[str, Any]] = {}
    todo, seen = [fn], set()
    while todo:
        f = todo.pop()
        if f.__code__ in seen:
            continue
        seen.add(f.__code__)
        try:
            out.insert(0, (textwrap.dedent(inspect.getsource(f)), f.__name__))
        except (OSError, TypeError) as exc:
            raise CheckFailure(
                f"Exercise 24.1: cannot read the source of {f.__name__} ({exc}); "
                "define it with def in a cell."
            ) from None
        for name in _names(f.__code__):
            if name not in f.__globals__:
                continue
            g = f.__globals__[name]
            if inspect.isfunction(g) and g.__module__ == fn.__module__:
                todo.append(g)
            elif (how := _extra(g)) is not None:
                extras.setdefault(name, how)
    return out, extras


_GLOO = (
    "[2 gloo processes] Your functions passed on the simulated world, but {why}. On a rank "
    "they are defined from their source text in a fresh process (np, the course's "
    "collectives, gelu, gelu_grad and the helpers, modules and constants they name are "
    "there), get a communicator with rank, world_size, send, recv, isend, irecv and barrier "
    "only, and may not call torch."
)


def _gloo(fwd: Any, bwd: Any, specs: list[tuple[int, int, int, int, int]]) -> int:
    from a2s.checks.ranks import launch_learner

    sources: list[tuple[str, str]] = []
    extras: dict[str, tuple[str, Any]] = {}
    for f in (fwd, bwd):
        found, more = _sources(inspect.unwrap(getattr(f, "fn", f)))
        sources += [item for item in found if item not in sources]
        extras = {**more, **extras}
    names = [inspect.unwrap(getattr(f, "fn", f)).__name__ for f in (fwd, bwd)]
    runs = launch_learner(
        "a2s.checks.lab24.workers:tp_mlp_gloo",
        2,
        sources,
        names,
        specs,
        extras,
        advice=_GLOO,
        timeout=120,
    )
    for k, (_, s, b, h, seed) in enumerate(specs):
        c, label = mlp_case(seed, s, b, h), f"2 gloo processes, s={s} b={b} h={h}"
        want, g = plain_mlp(c), torch_mlp_grads(c)
        for r in range(2):
            rec = runs[r][k]
            expect(label, r, rec["y"], want, [], "y", "Equal on SimWorld but not on gloo?")
            expect(label, r, rec["dx"], g["x"], [], "dx", "Equal on SimWorld but not on gloo?")
            expect(label, r, rec["dw1"], np.split(g["w1"], 2, axis=1)[r], [], "dw1", "")
        if [runs[r][k]["bytes"] for r in range(2)] != [2 * c["x"].nbytes] * 2:
            raise CheckFailure(
                f"[{label}] bytes sent {[runs[r][k]['bytes'] for r in range(2)]}:"
                f" expected one all-reduce each way."
            )
    return len(specs)


@grader("24.1", blocks=BLOCKS, hand="ranks")
def check_tp_mlp(
    tp_mlp_forward: Callable[..., Any], tp_mlp_backward: Callable[..., Any], real: bool = True
) -> str:
    """Exercise 24.1: TP MLP equal to the unsharded one both ways, one all-reduce each way."""
    gen = fresh_rng("24.1")
    specs = list(_TEACHING) + [_fresh_case(gen) for _ in range(2)]
    for i, (t, s, b, h, seed) in enumerate(specs):
        label = f"t={t}, s={s}, b={b}, h={h}"
        label = fresh(label) if i >= len(_TEACHING) else label
        c = mlp_case(seed, s, b, h)
        _forward(tp_mlp_forward, t, c, label)
        _backward(tp_mlp_backward, t, c, label)
    gloo = _gloo(tp_mlp_forward, tp_mlp_backward, [specs[1], specs[-1]]) if real else 0
    where = f" and {gloo} on 2 real gloo processes" if real else ""
    return (
        f"{len(specs)} MLPs on t = 1..4 simulated ranks (2 fresh){where} equal the unsharded "
        "layer forward and backward; 1 all-reduce of (s, b, h) each way"
    )
