"""Lab 21 tried as a class would: correct answers written differently, typical mistakes, cheats.

21.1-21.4 on the simulated world, each rank in its own forked process (the world's bytes,
messages, links, inter-node bytes and clock are the router's, in the grader's process);
21.5 in-process too: the gloo launch is replaced by its worker loop on SimWorld ranks, each
learner call in a sealed child as on gloo (:func:`a2s.checks.ranks.on_gloo_rank`).
"""

from __future__ import annotations

import gc
import math
from unittest import mock

import numpy as np
import pytest
import torch

from a2s.checks import lab21
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError, StudentError
from minitorch.comm import allreduce as A
from minitorch.comm import cost, torchdist
from minitorch.comm.hierarchical import Group
from tests.checks.test_lab21 import (
    _sim_launch,
    calls_dist,
    crossover,
    gloo_ring,
    gloo_whole,
    gloo_widened,
    halving_doubling,
    hierarchical,
    hierarchical_leaders,
    ring,
    ring_whole_buffers,
    ring_wrong_neighbour,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong

REF = ReferenceCalledError


def _zero_counters():
    for obj in gc.get_objects():
        if type(obj).__name__ == "SimWorld":
            obj.bytes_sent[:] = [0] * len(obj.bytes_sent)
            obj.msgs_sent[:] = [0] * len(obj.msgs_sent)
            obj.link_bytes.clear()


# --------------------------------------------------------------------------- 21.1 ring
def ring_split(comm, x):  # np.array_split views, isend/irecv pairs
    p, r = comm.world_size, comm.rank
    buf = x.copy()
    parts = np.array_split(buf, p)  # views into buf
    for s in range(p - 1):
        h = comm.irecv((r - 1) % p)
        comm.isend(parts[(r - s) % p], (r + 1) % p).wait()
        parts[(r - s - 1) % p] += h.wait()
    for s in range(p - 1):
        h = comm.irecv((r - 1) % p)
        comm.isend(parts[(r + 1 - s) % p], (r + 1) % p).wait()
        parts[(r - s) % p][:] = h.wait()
    return buf


class Ring:  # a class; chunk bounds from itertools.accumulate
    def bounds(self, n, p):
        import itertools

        sizes = [n // p + (j < n % p) for j in range(p)]
        return [0, *itertools.accumulate(sizes)]

    def __call__(self, comm, x):
        p, r = comm.world_size, comm.rank
        buf, b = list(x), self.bounds(len(x), comm.world_size)
        buf = np.array(buf, dtype=x.dtype)
        for phase in (0, 1):
            for s in range(p - 1):
                j = (r - s) % p if phase == 0 else (r + 1 - s) % p
                k = (j - 1) % p
                comm.send(buf[b[j] : b[j + 1]], (r + 1) % p)
                got = comm.recv((r - 1) % p)
                if phase == 0:
                    buf[b[k] : b[k + 1]] += got
                else:
                    buf[b[k] : b[k + 1]] = got
        return buf


def ring_floats(comm, x):  # float64 buffer: right values, ints come back as floats
    return ring(comm, x.astype(np.float64))


def ring_zeroed(comm, x):
    out = ring_whole_buffers(comm, x)
    _zero_counters()
    return out


def ring_world_attr(comm, x):
    comm._world.bytes_sent[comm.rank] = 0
    return ring(comm, x)


def ring_reads_peers(comm, x):  # sums every rank's input read from the fork's copy, no messages
    for obj in gc.get_objects():
        if isinstance(obj, list) and len(obj) == comm.world_size and obj and type(obj[0]) is tuple:
            try:
                if np.array_equal(obj[comm.rank][0], x):
                    return sum(t[0] for t in obj)
            except (IndexError, TypeError, ValueError):
                continue
    return x


# --------------------------------------------------------------------------- 21.2 HD
def hd_stack(comm, x):  # chunk starts by hand, a stack of the steps taken
    p, r, n = comm.world_size, comm.rank, len(x)
    st = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    buf, lo, hi, stack, d = x.copy(), 0, p, [], p // 2
    while d:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if r & d else ((lo, mid), (mid, hi))
        comm.send(buf[st[give[0]] : st[give[1]]], r ^ d)
        buf[st[keep[0]] : st[keep[1]]] += comm.recv(r ^ d)
        stack.append((d, give))
        (lo, hi), d = keep, d // 2
    while stack:
        d, give = stack.pop()
        comm.send(buf[st[lo] : st[hi]], r ^ d)
        buf[st[give[0]] : st[give[1]]] = comm.recv(r ^ d)
        lo, hi = min(lo, give[0]), max(hi, give[1])
    return buf


def hd_whole(comm, x):  # exchanges whole buffers: log2 p messages each way, too many bytes
    p, r = comm.world_size, comm.rank
    buf = x.copy()
    d = 1
    while d < p:
        comm.send(buf, r ^ d)
        buf = buf + comm.recv(r ^ d)
        comm.send(buf[:0], r ^ d)
        comm.recv(r ^ d)
        d *= 2
    return buf


def hd_as_ring(comm, x):  # a ring: right bytes on p = 2, too many messages above
    return ring(comm, x)


def hd_zeroed(comm, x):
    out = hd_as_ring(comm, x)
    for obj in gc.get_objects():
        if type(obj).__name__ == "SimWorld":
            obj.msgs_sent[:] = [2 * int(math.log2(comm.world_size))] * comm.world_size
    return out


# --------------------------------------------------------------------------- 21.3 crossover
def crossover_solved(p, alpha, beta):  # the same equation, solved in another order
    if p <= 2:
        return 0.0
    levels = math.ceil(math.log2(p))
    ring_a, tree_a = 2 * (p - 1) * alpha, 2 * levels * alpha
    ring_b, tree_b = 2 * (p - 1) / p * beta, 2 * levels * beta
    return (ring_a - tree_a) / (tree_b - ring_b)


def crossover_log2(p, alpha, beta):  # log2 p without the ceiling
    if p <= 2:
        return 0.0
    levels = math.log2(p)
    return (p - 1 - levels) * alpha / ((levels - (p - 1) / p) * beta)


def crossover_one_way(p, alpha, beta):  # the tree's reduce only, not the broadcast back
    if p <= 2:
        return 0.0
    levels = math.ceil(math.log2(p))
    return (2 * (p - 1) - levels) * alpha / ((levels - 2 * (p - 1) / p) * beta)


def crossover_alpha_over_beta(p, alpha, beta):
    return alpha / beta


def crossover_reference(p, alpha, beta):
    return cost.crossover_bytes(p, alpha, beta)


def crossover_measured(p, alpha, beta):  # times the course's tree and ring on a SimWorld
    from minitorch.comm.simworld import SimWorld

    def t(fn, n):
        w = SimWorld(p, alpha=alpha, beta=beta)
        w.run(fn, [np.ones(max(1, n // 8))] * p, per_rank=True)
        return w.time

    lo, hi = 8.0, 1e9
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (
            (mid, hi)
            if t(A.tree_all_reduce, int(mid)) < t(A.ring_all_reduce, int(mid))
            else (lo, mid)
        )
    return lo


def crossover_torch(p, alpha, beta):

    return float(torch.tensor(crossover(p, alpha, beta)))


def crossover_table(p, alpha, beta):  # memorised for the named cases
    return {4: 31250.0, 8: 23809.5}.get(p, 0.0)


# --------------------------------------------------------------------------- 21.4 hierarchy
def hier_lists(comm, x, g):  # groups from explicit lists, the ring as a nested closure
    from minitorch.comm.collectives import all_gather, reduce_scatter

    def inner_ring(c, v):
        return ring(c, v)

    node, local = divmod(comm.rank, g)
    intra = Group(comm, [node * g + j for j in range(g)])
    inter = Group(comm, [k * g + local for k in range(comm.world_size // g)])
    return all_gather(intra, inner_ring(inter, reduce_scatter(intra, x)))


def hier_flat(comm, x, g):  # ignores the topology: one flat ring
    return ring(comm, x)


def hier_zeroed(comm, x, g):
    out = ring(comm, x)
    for obj in gc.get_objects():
        if type(obj).__name__ == "SimWorld":
            obj.inter_bytes_sent[:] = [0] * len(obj.inter_bytes_sent)
    return out


def hier_reference(comm, x, g):
    from minitorch.comm.hierarchical import hierarchical_all_reduce

    return hierarchical_all_reduce(comm, x, g)


def hier_tree(comm, x, g):  # another lab's reference (the tree) inside the node
    return A.tree_all_reduce(comm, x)


def hier_no_gather(comm, x, g):  # skips the final intra-node all-gather
    from minitorch.comm.collectives import reduce_scatter

    node, local = divmod(comm.rank, g)
    intra = Group(comm, range(node * g, node * g + g))
    inter = Group(comm, range(local, comm.world_size, g))
    return ring(inter, reduce_scatter(intra, x))


# --------------------------------------------------------------------------- 21.5 gloo
def _on_sim(fn):
    def run():
        with mock.patch.object(torchdist, "launch", _sim_launch):
            lab21.check_ring_on_gloo(fn)

    return run


def gloo_class_free(comm, x):  # the ring again, written with send/recv only
    import numpy as np

    p, r, n = comm.world_size, comm.rank, len(x)
    buf = np.array(x, copy=True)
    cuts = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    for s in range(2 * (p - 1)):
        j = (r - s) % p if s < p - 1 else (r + 1 - (s - p + 1)) % p
        k = (j - 1) % p
        h = comm.irecv((r - 1) % p)
        comm.isend(buf[cuts[j] : cuts[j + 1]], (r + 1) % p).wait()
        got = h.wait()
        if s < p - 1:
            buf[cuts[k] : cuts[k + 1]] += got
        else:
            buf[cuts[k] : cuts[k + 1]] = got
    return buf


def gloo_no_gather(comm, x):
    import numpy as np

    p, r, n = comm.world_size, comm.rank, len(x)
    buf = np.array(x, copy=True)
    cuts = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    for s in range(p - 1):
        h = comm.irecv((r - 1) % p)
        comm.isend(buf[cuts[(r - s) % p] : cuts[(r - s) % p + 1]], (r + 1) % p).wait()
        k = (r - s - 1) % p
        buf[cuts[k] : cuts[k + 1]] += h.wait()
    return buf


def gloo_writes_file(comm, x):
    with open("/tmp/a2s-21.5-probe", "w") as f:
        f.write("x")
    return x


def gloo_frames(comm, x):
    import sys

    return sys._getframe(1).f_locals.get("x", x)


def gloo_pg(comm, x):  # the rank's process group, reached through torch.distributed
    import torch.distributed as dist

    dist.distributed_c10d._get_default_group()
    return x


def _g(check, fn):
    return lambda: check(fn)


R, H = lab21.check_ring_all_reduce, lab21.check_halving_doubling
X, Y = lab21.check_crossover, lab21.check_hierarchical

ATTEMPTS = [
    honest("21.1", "array_split views, irecv first", _g(R, ring_split)),
    honest("21.1", "a class, accumulate bounds", _g(R, Ring())),
    wrong("21.1", "whole buffers", _g(R, ring_whole_buffers), "whole buffer"),
    wrong("21.1", "last chunk takes the rest", _g(R, lambda c, x: ring(c, x, True)), "convention"),
    wrong("21.1", "no all-gather", _g(R, lambda c, x: ring(c, x, gather=False)), "all-gather"),
    wrong("21.1", "x to every peer", _g(R, ring_wrong_neighbour), "whole buffer"),
    wrong("21.1", "float64 buffer for ints", _g(R, ring_floats), "keep x.s dtype"),
    cheat("21.1", "calls the reference", _g(R, A.ring_all_reduce), error=REF),
    cheat("21.1", "whole buffers, counters zeroed", _g(R, ring_zeroed), match="whole buffer"),
    cheat("21.1", "comm._world", _g(R, ring_world_attr), match="_world", error=StudentError),
    cheat("21.1", "sums inputs read by gc", _g(R, ring_reads_peers), match="sent|messages"),
    cheat("21.1", "torch", _g(R, lambda c, x: calls_dist(c, x)), error=ForbiddenCallError),
    honest("21.2", "the tests' halving-doubling", _g(H, halving_doubling)),
    honest("21.2", "a stack of steps", _g(H, hd_stack)),
    wrong("21.2", "whole buffers", _g(H, hd_whole), "whole buffer|sent"),
    wrong("21.2", "a ring", _g(H, hd_as_ring), "2 log2 p"),
    wrong("21.2", "no doubling", _g(H, lambda c, x: ring(c, x, gather=False)), "messages|returned"),
    cheat("21.2", "calls the reference", _g(H, A.halving_doubling_all_reduce), error=REF),
    cheat("21.2", "a ring, message counts rewritten", _g(H, hd_zeroed), match="2 log2 p"),
    cheat("21.2", "another algorithm of the lab", _g(H, A.tree_all_reduce), error=REF),
    cheat("21.2", "torch", _g(H, lambda c, x: calls_dist(c, x)), error=ForbiddenCallError),
    honest("21.3", "the tests' crossover", _g(X, crossover)),
    honest("21.3", "solved in another order", _g(X, crossover_solved)),
    wrong("21.3", "log2 p without ceiling", _g(X, crossover_log2), "ceil"),
    wrong("21.3", "one way only", _g(X, crossover_one_way), "Equate"),
    wrong("21.3", "alpha / beta", _g(X, crossover_alpha_over_beta), "return 0.0|Equate"),
    cheat("21.3", "calls cost.crossover_bytes", _g(X, crossover_reference), error=REF),
    cheat("21.3", "measures the course's tree and ring", _g(X, crossover_measured), error=REF),
    cheat("21.3", "torch", _g(X, crossover_torch), error=ForbiddenCallError),
    cheat("21.3", "memorised table", _g(X, crossover_table), match="predicted"),
    honest("21.4", "the tests' hierarchical", _g(Y, hierarchical)),
    honest("21.4", "lists and a nested closure", _g(Y, hier_lists)),
    wrong("21.4", "a flat ring", _g(Y, hier_flat), "between nodes"),
    wrong("21.4", "leaders only", _g(Y, hierarchical_leaders), "per-rank budget"),
    wrong("21.4", "no final all-gather", _g(Y, hier_no_gather), "all-gather"),
    cheat("21.4", "calls the reference", _g(Y, hier_reference), error=REF),
    cheat("21.4", "flat ring, inter-node bytes zeroed", _g(Y, hier_zeroed), match="between nodes"),
    cheat("21.4", "another algorithm of the lab", _g(Y, hier_tree), error=REF),
    cheat("21.4", "torch", _g(Y, lambda c, x, g: calls_dist(c, x)), error=ForbiddenCallError),
    honest("21.5", "the tests' gloo ring", _on_sim(gloo_ring)),
    honest("21.5", "one loop over both phases", _on_sim(gloo_class_free)),
    wrong("21.5", "whole buffers", _on_sim(gloo_whole), "right sums, but ranks sent"),
    wrong("21.5", "widened chunks", _on_sim(gloo_widened), "keep x's dtype"),
    wrong("21.5", "no all-gather", _on_sim(gloo_no_gather), "21.1's ring"),
    cheat("21.5", "calls the reference", _on_sim(A.ring_all_reduce), error=REF),
    cheat("21.5", "torch.distributed", _on_sim(calls_dist), error=ForbiddenCallError),
    cheat("21.5", "the process group", _on_sim(gloo_pg), match="process group", error=StudentError),
    cheat("21.5", "writes a file", _on_sim(gloo_writes_file), match="21.1's ring|open"),
    cheat("21.5", "reads frames", _on_sim(gloo_frames), match="21.1's ring|_getframe"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
