"""Lab 22 experiments: a loopback TCP socket and gloo, fitted with the alpha-beta model.

1. Ping-pong over the length-prefixed socket transport (a spawned echo process, 127.0.0.1):
   the fitted latency alpha and bandwidth 1/beta.
2. The same sizes through torch.distributed's gloo backend, two local processes spawned once
   (rank 0 sends, rank 1 echoes back), fitted the same way, and the ratios gloo / socket.

Both sides are measured in separate batches of the same process run (a transport needs its
peer process up, so per-repeat alternation would time process start-ups, not messages).

Lab: 22_rdma_and_transport
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from a2s.bench import Figure, register
from minitorch.comm.fit import fit_regimes
from minitorch.comm.transport import HOST, ping_pong

__all__ = ["gloo_ping_pong", "socket_vs_gloo"]

SIZES = [2**k for k in range(0, 23, 2)]  # 1 B .. 4 MiB


def _gloo_rank(rank: int, port: int, sizes: Sequence[int], reps: int, out: Any) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{HOST}:{port}", rank=rank, world_size=2)
    try:
        times = []
        for n in sizes:
            buf = torch.zeros(max(int(n), 1), dtype=torch.uint8)
            trips = []
            for r in range(reps + 3):
                dist.barrier()
                t0 = time.perf_counter()
                if rank == 0:
                    dist.send(buf, 1)
                    dist.recv(buf, 1)
                else:
                    dist.recv(buf, 0)
                    dist.send(buf, 0)
                if r >= 3:
                    trips.append(time.perf_counter() - t0)
            times.append(float(np.median(trips)) / 2)
        if rank == 0:
            out.put(times)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def gloo_ping_pong(sizes: Sequence[int], reps: int = 20) -> np.ndarray:
    """Median one-way time per size through gloo send/recv between two spawned processes."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_gloo_rank, args=(r, port, list(sizes), reps, out)) for r in (0, 1)]
    for p in procs:
        p.start()
    try:
        return np.asarray(out.get(timeout=120.0))
    finally:
        for p in procs:
            p.join(timeout=30.0)
            if p.is_alive():
                p.terminate()
                p.join()


@register
def socket_vs_gloo() -> list[Figure]:
    sock = ping_pong(SIZES, reps=20)
    gloo = gloo_ping_pong(SIZES, reps=20)
    n = np.asarray(SIZES, dtype=np.float64)
    (sa_small, sb), (ga_small, gb) = fit_regimes(n, sock), fit_regimes(n, gloo)
    return [
        Figure("TCP socket latency alpha (sizes <= 4 KiB)", sa_small * 1e6, "us", "loopback"),
        Figure("TCP socket bandwidth 1/beta", 1 / sb / 1e9, "GB/s", "loopback, 1 B..4 MiB"),
        Figure("gloo latency alpha (sizes <= 4 KiB)", ga_small * 1e6, "us", "loopback"),
        Figure("gloo bandwidth 1/beta", 1 / gb / 1e9, "GB/s", "loopback, 1 B..4 MiB"),
        Figure("gloo / socket latency", ga_small / sa_small, "x", "socket = 1.0"),
        Figure("gloo / socket time per byte", gb / sb, "x", "socket = 1.0"),
    ]
