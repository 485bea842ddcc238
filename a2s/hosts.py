"""``a2s ranks``: run a rank program under ``torchrun``, on this machine or across several.

The rank programs of labs 21, 23-26 and 32 are functions ``fn(comm, *args)``; a check runs
them on local processes (:func:`minitorch.comm.torchdist.launch`). ``a2s ranks`` runs the same
function under PyTorch's launcher, so it can span machines: on each machine the same command
with its own ``--node-rank``, all pointing at node 0's address (``--master-addr``). Node 0's
``--out`` folder then holds its ranks' results, which are printed when every rank of the job
wrote one there (a shared folder, or one machine). docs/distributed.md has the commands for
two machines and for a Slurm allocation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

__all__ = ["add_ranks_parser", "cmd_ranks"]


def add_ranks_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("ranks", help="run a rank program fn(comm, *args) under torchrun")
    s.add_argument("fn", metavar="MODULE:FUNCTION", help="importable on every machine")
    s.add_argument("args", nargs="*", metavar="ARG", help="JSON values (lists become arrays)")
    s.add_argument("--nproc-per-node", type=int, default=2, metavar="N", help="ranks here (2)")
    s.add_argument("--nnodes", type=int, default=1, metavar="M", help="machines in the job (1)")
    s.add_argument("--node-rank", type=int, default=0, metavar="K", help="this machine (0)")
    s.add_argument("--master-addr", default="127.0.0.1", metavar="ADDR", help="node 0's address")
    s.add_argument("--master-port", type=int, default=29511, metavar="PORT")
    s.add_argument("--out", default="ranks-out", metavar="DIR", help="rank-<RANK>.json here")
    s.add_argument("--timeout", type=float, default=300.0, metavar="S", help="the job (300)")
    s.add_argument("--dry-run", action="store_true", help="print the torchrun command only")


def cmd_ranks(args: argparse.Namespace) -> int:
    from a2s.commands import UsageError
    from minitorch.comm.torchrun import command, read_results

    try:
        values = [json.loads(a) for a in args.args]
        argv = command(
            args.fn,
            values,
            nproc_per_node=args.nproc_per_node,
            nnodes=args.nnodes,
            node_rank=args.node_rank,
            master_addr=args.master_addr,
            master_port=args.master_port,
            out=args.out,
        )
    except (ValueError, json.JSONDecodeError) as exc:
        raise UsageError(str(exc)) from None
    print(" ".join(argv), flush=True)
    if args.dry_run:
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("rank-*.json"):
        old.unlink()
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])
    )
    try:
        done = subprocess.run(argv, env=env, timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        print(
            f"a2s ranks: the job did not finish in {args.timeout:g} s (a rank waiting for a "
            "machine that never joined? check --nnodes and --master-addr)"
        )
        return 1
    if done.returncode != 0:
        print(f"a2s ranks: torchrun exited with {done.returncode} (its log is above)")
        return 1
    world = args.nnodes * args.nproc_per_node
    try:
        results = read_results(out, world)
    except FileNotFoundError:
        mine = sorted(p.name for p in out.glob("rank-*.json"))
        print(f"a2s ranks: this machine's ranks finished: {', '.join(mine)} in {out}/")
        return 0
    for rank, value in enumerate(results):
        print(f"rank {rank}: {json.dumps(value)[:200]}")
    return 0
