"""Rank programs under ``torchrun``: the same ``fn(comm, *args)`` on one host or on many.

:func:`~minitorch.comm.torchdist.launch` spawns local ranks itself. Across machines the
launcher is PyTorch's own, ``torchrun`` (``python -m torch.distributed.run``): one agent per
machine starts ``--nproc-per-node`` workers, the agents meet at a rendezvous, and every
worker gets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` in
its environment. This module is what each worker runs::

    python -m torch.distributed.run --nnodes=2 --nproc-per-node=1 --node-rank=0 \\
        --master-addr=10.0.0.1 --master-port=29511 \\
        -m minitorch.comm.torchrun minitorch.comm.allreduce:ring_all_reduce \\
        --args '[[1.0, 2.0, 3.0]]' --out results/

It joins the gloo group from the environment (``init_method="env://"``), builds the same
:class:`~minitorch.comm.torchdist.TorchDistComm` that :func:`launch` gives a rank, calls
``fn(comm, *args)`` (lists in ``--args`` become float64 arrays, as a check would pass them)
and writes ``rank-<RANK>.json`` into ``--out``. ``fn`` is ``"module:function"``, importable on
every machine (the course, or a file of the learner's on the ``PYTHONPATH`` of each).
:func:`command` builds the argument list; ``a2s ranks`` runs it (docs/distributed.md).

Lab: 21_ring_allreduce (and the rank programs of labs 23-26 and 32). Paper: PyTorch
documentation, "torchrun (Elastic Launch)" and ``torch.distributed`` (env:// initialisation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["command", "main", "plain_json", "read_results"]


def command(
    fn: str,
    args: Sequence[Any] = (),
    *,
    nproc_per_node: int = 2,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int = 29511,
    out: str | Path = "ranks-out",
    python: str = sys.executable,
) -> list[str]:
    """The ``torchrun`` command of one machine (static rendezvous: node 0 hosts the store)."""
    if ":" not in fn:
        raise ValueError(f"fn must be 'module:function', got {fn!r}")
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"node_rank must be in [0, {nnodes}), got {node_rank}")
    return [
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--nproc-per-node={nproc_per_node}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={master_port}",
        "-m",
        "minitorch.comm.torchrun",
        fn,
        "--args",
        json.dumps(list(args)),
        "--out",
        str(out),
    ]


def plain_json(value: Any) -> Any:
    """A rank's result as JSON: arrays and numpy scalars become lists and numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    return value


def read_results(out: str | Path, world_size: int) -> list[Any]:
    """The results of every rank, in rank order (a missing one raises with its name)."""
    folder, results = Path(out), []
    for rank in range(world_size):
        path = folder / f"rank-{rank}.json"
        if not path.exists():
            raise FileNotFoundError(f"rank {rank} wrote no result ({path})")
        results.append(json.loads(path.read_text())["result"])
    return results


def _arg(value: Any) -> Any:
    return np.asarray(value, dtype=np.float64) if isinstance(value, list) else value


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minitorch.comm.torchrun")
    p.add_argument("fn", help="module:function, called as fn(comm, *args)")
    p.add_argument("--args", default="[]", help="a JSON list of arguments")
    p.add_argument("--out", default="ranks-out", help="folder for rank-<RANK>.json")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per collective")
    opts = p.parse_args(argv)
    missing = [
        k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ
    ]
    if missing:
        print(f"not started by torchrun: {', '.join(missing)} not set", file=sys.stderr)
        return 2
    import torch
    import torch.distributed as dist

    from minitorch.comm.torchdist import TorchDistComm, _resolve

    torch.set_num_threads(1)
    wait = timedelta(seconds=opts.timeout)
    dist.init_process_group("gloo", init_method="env://", timeout=wait)
    try:
        comm = TorchDistComm()
        result = _resolve(opts.fn)(comm, *[_arg(a) for a in json.loads(opts.args)])
        comm.flush()
        rank = dist.get_rank()
        out = Path(opts.out)
        out.mkdir(parents=True, exist_ok=True)
        record = {"rank": rank, "world_size": dist.get_world_size(), "host": os.uname().nodename}
        record["result"] = plain_json(result)
        (out / f"rank-{rank}.json").write_text(json.dumps(record))
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
