"""Rank programs of lab 24's real-process check (importable, so spawned gloo ranks run them).

:func:`tp_mlp_gloo` defines the learner's forward and backward from their source text, in a
namespace that has numpy, the course collectives and ``gelu``/``gelu_grad``, and runs every
case of one launch on this rank's shards, counting the bytes it sends.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.checks.lab24._world import BLOCKS, mlp_case, mlp_shards
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


def tp_mlp_gloo(comm: Any, sources: list[tuple[str, str]], names: list[str],
                specs: list[tuple]) -> list[dict]:  # fmt: skip
    """Define every source (the learner's functions and their helpers), then run the learner's
    ``names = (forward, backward)`` on each ``(t, s, b, h, seed)`` case."""
    from minitorch.checks.core import guarded

    ns = namespace()
    for source, name in sources:
        exec(compile(source, f"<{name} on rank {comm.rank}>", "exec"), ns)
    fwd, bwd = (guarded(ns[name], "24.1", BLOCKS, forbid=()) for name in names)
    out = []
    for _, s, b, h, seed in specs:
        c = mlp_case(seed, s, b, h)
        w1, b1, w2 = mlp_shards(c, comm.world_size, comm.rank)
        rec: dict[str, Any] = {"error": ""}
        comm.barrier()
        before = comm.bytes_sent
        try:
            rec["y"] = np.asarray(fwd(comm, c["x"], w1, b1, w2, c["b2"]))
            dx, dw1, *_ = bwd(comm, c["x"], w1, b1, w2, c["dy"])
            rec["dx"], rec["dw1"] = np.asarray(dx), np.asarray(dw1)
            comm.flush()
        except Exception as exc:  # reported by the grader in the parent
            rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["bytes"] = comm.bytes_sent - before
        out.append(rec)
        if rec["error"]:
            break
    return out
