"""Rank programs of lab 24's real-process check (importable, so spawned gloo ranks run them).

:func:`tp_mlp_gloo` runs on each gloo rank (the grader's process): for every case it cuts the
rank's shards and runs the learner's forward and backward, each in a sealed forked child of
the rank (:func:`a2s.checks.ranks.on_gloo_rank`, lab 21's seal: torch is a forbidden
call there, frames, gc, sockets and files are refused) with a proxy communicator whose
messages this rank counts. The learner's functions are defined in that child from their
source text, in a namespace that has numpy, the course collectives and ``gelu``/``gelu_grad``
(plus the modules, importable functions and constants they name, see ``mlp._sources``).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.lab24._truth import BLOCKS, mlp_case, mlp_shards
from a2s.checks.ranks import LEARNER, on_gloo_rank
from minitorch.comm import collectives
from minitorch.parallel.tensor import gelu, gelu_grad

__all__ = ["namespace", "tp_mlp_gloo"]


def namespace() -> dict[str, Any]:
    """What the notebook's setup cell gives the learner's functions."""
    ns: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    for n in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"):
        ns[n] = getattr(collectives, n)
    ns["gelu"], ns["gelu_grad"] = gelu, gelu_grad
    return ns


def _extra(kind: str, value: Any) -> Any:
    if kind == "module":
        return importlib.import_module(value)
    if kind == "attr":
        module, _, qualname = value.partition(":")
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj
    return value


def _maker(source: str, name: str, extras: dict[str, Any]) -> Callable[[], Callable[..., Any]]:
    """Like :func:`~a2s.checks.ranks.learner_source`, with the setup cell's names: the
    source is compiled here as the learner's and run only in the sealed child."""
    code = compile(source, f"{LEARNER}{name}>", "exec")

    def make() -> Callable[..., Any]:
        module = types.ModuleType("__a2s_rank__")
        module.__dict__.update(namespace())
        module.__dict__.update(extras)
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)
        return module.__dict__[name]  # type: ignore[no-any-return]

    return make


def tp_mlp_gloo(
    comm: Any,
    sources: list[tuple[str, str]],
    names: list[str],
    specs: list[tuple],
    extras: dict[str, tuple[str, Any]] | None = None,
) -> list[dict]:
    """Run the learner's ``names = (forward, backward)`` (defined from ``sources``: their
    functions and helpers) on each ``(t, s, b, h, seed)`` case, each call in a sealed child of
    this rank; the bytes are counted here. A learner's error fails the rank with its own class
    and message (``launch_learner`` relays it)."""
    found = {name: _extra(kind, value) for name, (kind, value) in (extras or {}).items()}
    source = "\n\n".join(src for src, _ in sources)
    fwd, bwd = (_maker(source, name, found) for name in names)
    out = []
    for _, s, b, h, seed in specs:
        c = mlp_case(seed, s, b, h)
        w1, b1, w2 = mlp_shards(c, comm.world_size, comm.rank)
        comm.barrier()
        y, log_f = on_gloo_rank(
            comm, fwd, c["x"], w1, b1, w2, c["b2"], exercise="24.1", blocks=BLOCKS
        )
        grads, log_b = on_gloo_rank(
            comm, bwd, c["x"], w1, b1, w2, c["dy"], exercise="24.1", blocks=BLOCKS
        )
        comm.flush()
        dx, dw1 = (grads[0], grads[1]) if isinstance(grads, (tuple, list)) else (grads, None)
        out.append(
            {
                "error": "",
                "y": np.asarray(y),
                "dx": np.asarray(dx),
                "dw1": np.asarray(dw1),
                "bytes": log_f["bytes"] + log_b["bytes"],
            }
        )
    return out
