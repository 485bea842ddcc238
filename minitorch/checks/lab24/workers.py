"""Rank programs of lab 24's real-process check (importable, so spawned gloo ranks run them).

:func:`tp_mlp_gloo` defines the learner's forward and backward from their source text, in a
namespace that has numpy, the course collectives and ``gelu``/``gelu_grad`` (plus the modules,
importable functions and constants the learner's functions name, see ``mlp._sources``), and
runs every case of one launch on this rank's shards, counting the bytes it sends. As in lab
21, the learner's functions get a :class:`~minitorch.checks.lab21.workers.RankView` (``rank``,
``world_size``, ``send``, ``recv``, ``isend``, ``irecv``, ``barrier``: no torch handle, no
``torch_all_reduce``), and while they run every ``torch.distributed`` collective raises
(in ``torch.distributed``, ``distributed_c10d``, the process group's methods, the functional
collectives and ``torch.ops.c10d``; the ranks are not sealed, so this bars the plain routes,
not every conceivable one).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from minitorch.checks.lab21.workers import COLLECTIVES, CollectiveCalled, RankView, no_collectives
from minitorch.checks.lab24._world import BLOCKS, mlp_case, mlp_shards
from minitorch.comm import collectives
from minitorch.parallel.tensor import gelu, gelu_grad

__all__ = ["namespace", "sealed", "tp_mlp_gloo"]


def namespace() -> dict[str, Any]:
    """What the notebook's setup cell gives the learner's functions."""
    ns: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    for n in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"):
        ns[n] = getattr(collectives, n)
    ns["gelu"], ns["gelu_grad"] = gelu, gelu_grad
    return ns


_PG_METHODS = (
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "all_gather_single", "all_gather_single_coalesced",
    "alltoall", "alltoall_base", "all_to_all_single", "broadcast", "gather", "reduce",
    "reduce_scatter", "reduce_scatter_single", "reduce_scatter_single_coalesced",
    "reduce_scatter_tensor_coalesced", "scatter",
)  # fmt: skip
_FUNCTIONAL = (
    "all_reduce", "all_reduce_coalesced", "all_gather_tensor", "all_gather_into_tensor",
    "all_gather_into_tensor_coalesced", "reduce_scatter_tensor", "reduce_scatter_tensor_coalesced",
    "all_to_all_single", "broadcast",
)  # fmt: skip
_OPS = {
    "c10d": ("allreduce_", "allreduce_coalesced_", "allgather_", "allgather_coalesced_",
             "allgather_into_tensor_coalesced_", "_allgather_base_", "reduce_scatter_",
             "_reduce_scatter_base_", "reduce_scatter_tensor_coalesced_", "reduce_",
             "broadcast_", "gather_", "scatter_", "alltoall_", "alltoall_base_"),
    "_c10d_functional": (*_FUNCTIONAL, "all_reduce_", "all_reduce_coalesced_", "broadcast_",
                         "all_gather_into_tensor_out", "reduce_scatter_tensor_out"),
    "_c10d_functional_autograd": ("all_to_all_single", "all_gather_into_tensor",
                                  "reduce_scatter_tensor"),
}  # fmt: skip
_MISSING = object()


def _refuse(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise CollectiveCalled(
            f"torch.distributed's {name} was called: use the course's collectives "
            "(all_reduce, ...), built from send/recv"
        )

    return call


@contextmanager
def _no_torch_collectives() -> Iterator[None]:
    """Refuse the collectives that ``no_collectives`` (which patches the ``torch.distributed``
    package only) leaves reachable: ``distributed_c10d``'s functions, the process group's
    methods, the functional collectives and their ``torch.ops`` entries."""
    import torch
    import torch.distributed._functional_collectives as fc
    import torch.distributed.distributed_c10d as c10d
    from torch._C import _distributed_c10d as pg

    targets: list[tuple[Any, str]] = [(c10d, n) for n in COLLECTIVES]
    targets += [(cls, n) for cls in (pg.ProcessGroup, pg.Backend) for n in _PG_METHODS]
    targets += [(fc, n) for n in _FUNCTIONAL]
    for space, names in _OPS.items():
        ops = getattr(torch.ops, space)
        targets += [(ops, n) for n in names if hasattr(ops, n)]
    saved: list[tuple[Any, str, Any]] = []
    try:
        for obj, n in targets:
            if n in vars(obj) or hasattr(obj, n):
                saved.append((obj, n, vars(obj).get(n, _MISSING)))
                setattr(obj, n, _refuse(n))
        yield
    finally:
        for obj, n, old in reversed(saved):
            if old is _MISSING:
                delattr(obj, n)
            else:
                setattr(obj, n, old)


_SEAL = threading.Lock()
_sealing: list[ExitStack] = []  # one stack while any rank of this process is sealed
_depth = [0]


@contextmanager
def sealed() -> Iterator[None]:
    """While the learner's code runs: every torch.distributed collective raises. Reentrant
    across threads (ranks of a SimWorld share one process): the first in patches, the last
    out restores."""
    with _SEAL:
        if _depth[0] == 0:
            stack = ExitStack()
            stack.enter_context(no_collectives())
            stack.enter_context(_no_torch_collectives())
            _sealing.append(stack)
        _depth[0] += 1
    try:
        yield
    finally:
        with _SEAL:
            _depth[0] -= 1
            if _depth[0] == 0:
                _sealing.pop().close()


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


def tp_mlp_gloo(comm: Any, sources: list[tuple[str, str]], names: list[str],
                specs: list[tuple], extras: dict[str, tuple[str, Any]] | None = None,
                ) -> list[dict]:  # fmt: skip
    """Define every source (the learner's functions and their helpers), then run the learner's
    ``names = (forward, backward)`` on each ``(t, s, b, h, seed)`` case, on a
    :class:`RankView` of ``comm`` with the torch collectives refused."""
    from minitorch.checks.core import guarded

    ns = namespace()
    for name, (kind, value) in (extras or {}).items():
        ns[name] = _extra(kind, value)
    view = RankView(comm)
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
            with sealed():
                rec["y"] = np.asarray(fwd(view, c["x"], w1, b1, w2, c["b2"]))
                dx, dw1, *_ = bwd(view, c["x"], w1, b1, w2, c["dy"])
            rec["dx"], rec["dw1"] = np.asarray(dx), np.asarray(dw1)
            comm.flush()
        except Exception as exc:  # reported by the grader in the parent
            rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["bytes"] = comm.bytes_sent - before
        out.append(rec)
        if rec["error"]:
            break
    return out
