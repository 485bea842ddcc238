"""Lab 24 experiments: a TP MLP step on 2 gloo processes vs the unsharded step, and SP vs TP.

1. Forward + backward of a float64 MLP (s = 128, b = 4, h = 256, 4h = 1024), as 2 tensor-
   parallel gloo ranks (each half of W1's columns and W2's rows, one all-reduce each way) and
   as the unsharded layer computed whole on each rank. Both sides run in the same spawn and
   alternate (one thread per rank), so they share the machine's load equally. On 2 shared
   cores the all-reduces of 1 MiB cost real time: report honestly what the halved matmuls buy.
2. Exact in simulation: the bytes a t = 4 layer sends and keeps under SP vs TP, and the
   modelled alpha-beta time of its forward collectives (SimWorld, 10 GB/s, alpha 5 us).

Lab: 24_tensor_sequence_parallel
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from a2s.bench import Figure, register

__all__ = ["sp_vs_tp_simulated", "tp_mlp_two_processes"]

_S, _B, _H = 128, 4, 256


def _tp_rank(comm: Any, repeats: int) -> dict[str, float]:
    from minitorch.parallel import tensor as tp

    gen = np.random.default_rng(0)
    x, dy = gen.standard_normal((_S, _B, _H)), gen.standard_normal((_S, _B, _H))
    w1, b1 = gen.standard_normal((_H, 4 * _H)) / 16, np.zeros(4 * _H)
    w2, b2 = gen.standard_normal((4 * _H, _H)) / 32, np.zeros(_H)
    t, r = comm.world_size, comm.rank
    shards = (tp.shard(w1, t, r, 1), tp.shard(b1, t, r, 0), tp.shard(w2, t, r, 0))

    class One:  # the unsharded layer: a world of one rank, no messages
        rank, world_size = 0, 1

    def sharded() -> None:
        tp.tp_mlp_forward(comm, x, *shards, b2)
        tp.tp_mlp_backward(comm, x, *shards, dy)
        comm.barrier()

    def whole() -> None:
        tp.tp_mlp_forward(One(), x, w1, b1, w2, b2)  # type: ignore[arg-type]
        tp.tp_mlp_backward(One(), x, w1, b1, w2, dy)  # type: ignore[arg-type]
        comm.barrier()

    times: dict[str, list[float]] = {"tp": [], "whole": []}
    for k in range(repeats + 1):
        for name, fn in (("tp", sharded), ("whole", whole)):
            comm.barrier()
            t0 = time.perf_counter()
            fn()
            if k:
                times[name].append(time.perf_counter() - t0)
    return {n: float(np.median(v)) for n, v in times.items()}


@register
def tp_mlp_two_processes() -> list[Figure]:
    from minitorch.comm.torchdist import launch

    res = launch("a2s.bench.lab24:_tp_rank", 2, 9)[0]
    return [
        Figure(
            "TP MLP fwd+bwd, 2 gloo ranks (half each) / whole layer",
            res["tp"] / res["whole"],
            "x",
            "< 1: halved matmuls pay for 2 all-reduces of 1 MiB; 2 shared cores",
        ),
        Figure(
            "whole MLP fwd+bwd (s=128, b=4, h=256, float64)", res["whole"] * 1e3, "ms", "context"
        ),
    ]


@register
def sp_vs_tp_simulated() -> list[Figure]:
    from minitorch.comm.simworld import SimWorld
    from minitorch.parallel import sequence as sq

    s, b, h, a, t = 64, 2, 64, 8, 4
    params, masks = sq.init_layer(h), sq.dropout_masks(s, b, h, a, 0.1)
    x = np.random.default_rng(0).standard_normal((s, b, h))
    out = {}
    for mode in ("tp", "sp"):

        def rank(comm: Any, mode: str = mode) -> int:
            r = comm.rank
            rows = np.split(x, t)[r] if mode == "sp" else x
            p, m = sq.shard_layer(params, t, r), sq.rank_masks(masks, t, r, mode)
            return sq.activation_bytes(sq.layer_forward(comm, rows, p, m, a // t, 0.1, mode)[1])

        world = SimWorld(t, alpha=5e-6, beta=1e-10)
        kept = world.run(rank)[0]
        out[mode] = (kept, sum(world.bytes_sent), world.time)
    return [
        Figure(
            "SP / TP: activation bytes kept per rank (t=4)",
            out["sp"][0] / out["tp"][0],
            "x",
            "exact; formula (34/t + 5as/ht) / (10 + 24/t + 5as/ht)",
        ),
        Figure(
            "SP / TP: bytes sent by the forward (t=4)",
            out["sp"][1] / out["tp"][1],
            "x",
            "exact: all-reduce = reduce-scatter + all-gather",
        ),
        Figure(
            "SP / TP: modelled forward communication time (t=4)",
            out["sp"][2] / out["tp"][2],
            "x",
            "alpha-beta SimWorld, lab 20's direct collectives (not the ring)",
        ),
    ]
