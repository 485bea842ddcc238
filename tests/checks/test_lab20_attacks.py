"""Lab 20 tried as a class would: correct answers written differently, typical mistakes, cheats.

In-process graders; every rank program runs in its own forked process
(:func:`a2s.checks.harness.run_ranks`), so the counters a cheat rewrites (the world's,
through ``comm._world``, ``__closure__`` or ``gc``) are the rank's copies, never the router's.
"""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest

from a2s.checks import lab20
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import ForbiddenCallError, StudentError
from minitorch.comm import collectives as C
from minitorch.comm import cost
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong

REF = ReferenceCalledError


def _bounds(n, p):
    starts = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    return list(itertools.pairwise(starts))


def _set_own_count(rank, nbytes):
    """What a cheat does to the counters: its own rank's bytes set to the budget, in every
    SimWorld gc can find (in-process, that was the world the grader reads)."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "SimWorld" and rank < len(obj.bytes_sent):
            obj.bytes_sent[rank] = nbytes


# --------------------------------------------------------------------------- 20.1 broadcast
def bc_isend(comm, x, root):  # non-blocking sends, handles waited for
    if comm.rank != root:
        return comm.recv(root)
    handles = [comm.isend(x, d) for d in range(comm.world_size) if d != root]
    for h in handles:
        h.wait()
    return x.copy()


class Broadcaster:  # a class with __call__, a generator of peers
    def peers(self, p, root):
        yield from (d for d in range(p) if d != root)

    def __call__(self, comm, x, root):
        if comm.rank == root:
            for d in self.peers(comm.world_size, root):
                comm.send(x, d)
            return x
        return comm.irecv(root).wait()


def bc_self_send(comm, x, root):
    if comm.rank == root:
        for d in range(comm.world_size):
            comm.send(x, d)
        return comm.recv(root)
    return comm.recv(root)


def bc_root_none(comm, x, root):
    if comm.rank == root:
        for d in range(comm.world_size):
            if d != root:
                comm.send(x, d)
        return None
    return comm.recv(root)


def bc_chain(comm, x, root):  # a chain: each rank relays to the next
    p, r = comm.world_size, comm.rank
    if r != root:
        x = comm.recv((r - 1) % p)
    if (r + 1) % p != root:
        comm.send(x, (r + 1) % p)
    return x


def bc_root_zero(comm, x, root):  # assumes root 0
    if comm.rank == 0:
        for d in range(1, comm.world_size):
            comm.send(x, d)
        return x
    return comm.recv(0)


def bc_chain_zeroed(comm, x, root):  # relays, then sets its count to the budget via gc
    out = bc_chain(comm, x, root)
    _set_own_count(comm.rank, (comm.world_size - 1) * x.nbytes if comm.rank == root else 0)
    return out


def bc_world_attr(comm, x, root):  # the world one attribute away (as it was)
    out = bc_chain(comm, x, root)
    comm._world.bytes_sent[comm.rank] = (comm.world_size - 1) * x.nbytes * (comm.rank == root)
    return out


def bc_torch(comm, x, root):
    import torch

    return torch.from_numpy(x).clone().numpy()


def bc_no_recv(comm, x, root):  # root sends right; the others read the value without recv
    if comm.rank == root:
        for d in range(comm.world_size):
            if d != root:
                comm.send(x, d)
        return x
    for obj in gc.get_objects():  # the fork's copy of the grader's case, found by gc
        if type(obj).__name__ == "WorldCase" and len(obj.args) == comm.world_size:
            mine = obj.args[comm.rank][0]
            if mine.shape == x.shape and np.array_equal(mine, x):
                return obj.args[root][0]
    return x


# --------------------------------------------------------------------------- 20.2 all-reduce
def ar_functools(comm, x):
    import functools
    import operator

    p = comm.world_size
    if comm.rank:
        comm.send(x, 0)
        return comm.recv(0)
    total = functools.reduce(operator.add, [comm.recv(s) for s in range(1, p)], x.copy())
    for d in range(1, p):
        comm.isend(total, d).wait()
    return total


def ar_recursive(comm, x, s=1, acc=None):
    p = comm.world_size
    if comm.rank:
        comm.send(x, 0)
        return comm.recv(0)
    acc = x.copy() if acc is None else acc
    if s == p:
        for d in range(1, p):
            comm.send(acc, d)
        return acc
    return ar_recursive(comm, x, s + 1, acc + comm.recv(s))


def ar_everyone(comm, x):
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(x, d)
    return x + sum(comm.recv(s) for s in range(p) if s != r)


def ar_forgets_own(comm, x):
    p = comm.world_size
    if comm.rank:
        comm.send(x, 0)
        return comm.recv(0)
    total = np.zeros_like(x)
    for s in range(1, p):
        total = total + comm.recv(s)
    for d in range(1, p):
        comm.send(total, d)
    return total


def ar_float_acc(comm, x):
    p = comm.world_size
    if comm.rank:
        comm.send(x, 0)
        return comm.recv(0)
    total = np.zeros(len(x)) + x
    for s in range(1, p):
        total = total + comm.recv(s)
    for d in range(1, p):
        comm.send(total, d)
    return total


def ar_everyone_zeroed(comm, x):
    out = ar_everyone(comm, x)
    _set_own_count(comm.rank, (comm.world_size - 1) * x.nbytes if comm.rank == 0 else x.nbytes)
    return out


def ar_closure(comm, x):  # the world behind the communicator's methods, set to the budget
    out = ar_everyone(comm, x)
    p, r = comm.world_size, comm.rank
    for cell in comm.send.__func__.__closure__ or ():
        world = getattr(cell.cell_contents, "_world", None)
        if world is not None:
            world.bytes_sent[r] = (p - 1) * x.nbytes if r == 0 else x.nbytes
    return out


def ar_memorised(comm, x):
    return np.arange(len(x))


# --------------------------------------------------------------------------- 20.3, 20.4
def rs_split(comm, x):  # np.array_split gives the course's chunks
    p, r = comm.world_size, comm.rank
    parts = np.array_split(x, p)
    for d in range(p):
        if d != r:
            comm.send(parts[d], d)
    out = parts[r].copy()
    for s in range(p):
        if s != r:
            out = out + comm.recv(s)
    return out


def rs_bounds(comm, x):  # bounds by hand, sends posted non-blocking
    p, r = comm.world_size, comm.rank
    b = _bounds(len(x), p)
    hs = [comm.isend(x[b[d][0] : b[d][1]], d) for d in range(p) if d != r]
    out = x[b[r][0] : b[r][1]].copy()
    for s in (s for s in range(p) if s != r):
        out += comm.recv(s)
    for h in hs:
        h.wait()
    return out


def rs_last_takes_rest(comm, x):
    p, r = comm.world_size, comm.rank
    k = len(x) // p
    b = [(i * k, (i + 1) * k if i < p - 1 else len(x)) for i in range(p)]
    for d in range(p):
        if d != r:
            comm.send(x[b[d][0] : b[d][1]], d)
    out = x[b[r][0] : b[r][1]].copy()
    for s in range(p):
        if s != r:
            out = out + comm.recv(s)
    return out


def rs_whole(comm, x):
    b = _bounds(len(x), comm.world_size)[comm.rank]
    return ar_everyone(comm, x)[b[0] : b[1]]


def rs_own_chunk_only(comm, x):  # forgets to add its own chunk
    p, r = comm.world_size, comm.rank
    b = _bounds(len(x), p)
    for d in range(p):
        if d != r:
            comm.send(x[b[d][0] : b[d][1]], d)
    out = np.zeros(b[r][1] - b[r][0], dtype=x.dtype)
    for s in range(p):
        if s != r:
            out = out + comm.recv(s)
    return out


def rs_whole_zeroed(comm, x):
    out = rs_whole(comm, x)
    b = _bounds(len(x), comm.world_size)[comm.rank]
    _set_own_count(comm.rank, (len(x) - (b[1] - b[0])) * x.itemsize)
    return out


def ag_list(comm, chunk):  # a list of pieces, concatenated once
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(chunk, d)
    pieces = []
    for s in range(p):
        pieces.append(chunk if s == r else comm.recv(s))
    return np.concatenate(pieces)


def ag_ring_order(comm, chunk):  # sends ordered by distance, still straight to each peer
    p, r = comm.world_size, comm.rank
    for k in range(1, p):
        comm.isend(chunk, (r + k) % p).wait()
    got = {r: chunk}
    for k in range(1, p):
        got[(r - k) % p] = comm.recv((r - k) % p)
    return np.concatenate([got[s] for s in range(p)])


def ag_funnel(comm, chunk):
    p, r = comm.world_size, comm.rank
    if r:
        comm.send(chunk, 0)
        return comm.recv(0)
    full = np.concatenate([chunk] + [comm.recv(s) for s in range(1, p)])
    for d in range(1, p):
        comm.send(full, d)
    return full


def ag_reversed(comm, chunk):
    return ag_list(comm, chunk)[::-1].copy()


def ag_arrival_order(comm, chunk):  # own chunk first, then the others
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(chunk, d)
    return np.concatenate([chunk] + [comm.recv(s) for s in range(p) if s != r])


def ag_funnel_zeroed(comm, chunk):
    out = ag_funnel(comm, chunk)
    _set_own_count(comm.rank, (comm.world_size - 1) * chunk.nbytes)
    return out


# --------------------------------------------------------------------------- 20.5 predict
def pb(collective, n, p, rank, itemsize):
    full, chunk = n * itemsize, (n // p + (rank < n % p)) * itemsize
    return {
        "broadcast": (p - 1) * full if rank == 0 else 0,
        "all_reduce": (p - 1) * full if rank == 0 else full,
        "reduce_scatter": full - chunk,
        "all_gather": (p - 1) * chunk,
    }[collective]


class Predictor:  # match-case, a class
    def __call__(self, collective, n, p, rank, itemsize):
        import math

        chunk = (math.ceil(n / p) if rank < n % p else n // p) * itemsize
        match collective:
            case "broadcast":
                return (p - 1) * n * itemsize * (rank == 0)
            case "all_reduce":
                return (p - 1) * n * itemsize if rank == 0 else n * itemsize
            case "reduce_scatter":
                return n * itemsize - chunk
            case _:
                return (p - 1) * chunk


def pb_even(collective, n, p, rank, itemsize):
    if collective == "all_gather":
        return (p - 1) * (n // p) * itemsize
    return pb(collective, n, p, rank, itemsize)


def pb_elements(collective, n, p, rank, itemsize):  # forgets itemsize
    return pb(collective, n, p, rank, 1)


def pb_everyone_broadcasts(collective, n, p, rank, itemsize):
    if collective == "broadcast":
        return (p - 1) * n * itemsize
    return pb(collective, n, p, rank, itemsize)


def pb_reference(collective, n, p, rank, itemsize):
    return cost.bytes_sent(collective, n, p, rank, itemsize)


def pb_simulated(collective, n, p, rank, itemsize):  # measures the course's collectives
    from minitorch.comm.simworld import SimWorld

    world, full = SimWorld(p), np.zeros(n, f"u{itemsize}")
    if collective == "broadcast":
        world.run(lambda c: C.broadcast(c, full, 0))
    elif collective == "all_gather":
        world.run(C.all_gather, np.array_split(full, p), per_rank=True)
    else:
        world.run(getattr(C, collective), [full] * p, per_rank=True)
    return world.bytes_sent[rank]


def pb_torch(collective, n, p, rank, itemsize):
    import torch

    return int(torch.tensor(pb(collective, n, p, rank, itemsize)).item())


def pb_table(collective, n, p, rank, itemsize):  # answers memorised from the named cases
    named = {("broadcast", 10, 4, 0, 4): 120, ("all_reduce", 10, 4, 0, 4): 120}
    return named.get((collective, n, p, rank, itemsize), 0)


def _g(check, fn):
    return lambda: check(fn)


ATTEMPTS = [
    honest("20.1", "isend handles", _g(lab20.check_broadcast, bc_isend)),
    honest("20.1", "a class with a generator", _g(lab20.check_broadcast, Broadcaster())),
    wrong("20.1", "sends to itself", _g(lab20.check_broadcast, bc_self_send), "not send to itself"),
    wrong("20.1", "root returns None", _g(lab20.check_broadcast, bc_root_none), "root included"),
    wrong("20.1", "chain relay", _g(lab20.check_broadcast, bc_chain), "Only the root sends"),
    wrong("20.1", "assumes root 0", _g(lab20.check_broadcast, bc_root_zero), "deadlock|Receive"),
    cheat("20.1", "calls the reference", _g(lab20.check_broadcast, C.broadcast), error=REF),
    cheat(
        "20.1",
        "relays, zeroes counters by gc",
        _g(lab20.check_broadcast, bc_chain_zeroed),
        match="Only the root sends",
    ),
    cheat(
        "20.1",
        "comm._world",
        _g(lab20.check_broadcast, bc_world_attr),
        match="_world",
        error=StudentError,
    ),
    cheat("20.1", "torch", _g(lab20.check_broadcast, bc_torch), error=ForbiddenCallError),
    cheat(
        "20.1",
        "reads root's x by gc, no recv",
        _g(lab20.check_broadcast, bc_no_recv),
        match="never received",
    ),
    honest("20.2", "functools.reduce", _g(lab20.check_all_reduce, ar_functools)),
    honest("20.2", "recursion", _g(lab20.check_all_reduce, ar_recursive)),
    wrong("20.2", "everyone to everyone", _g(lab20.check_all_reduce, ar_everyone), r"\(p-1\) n"),
    wrong("20.2", "forgets its own x", _g(lab20.check_all_reduce, ar_forgets_own), "its own"),
    wrong("20.2", "float accumulator", _g(lab20.check_all_reduce, ar_float_acc), "keep the dtype"),
    cheat("20.2", "calls the reference", _g(lab20.check_all_reduce, C.all_reduce), error=REF),
    cheat(
        "20.2",
        "everyone, counters zeroed by gc",
        _g(lab20.check_all_reduce, ar_everyone_zeroed),
        match=r"\(p-1\) n",
    ),
    cheat(
        "20.2",
        "world through the closure",
        _g(lab20.check_all_reduce, ar_closure),
        match=r"\(p-1\) n",
    ),
    cheat("20.2", "memorised answer", _g(lab20.check_all_reduce, ar_memorised), match="returned"),
    honest("20.3", "np.array_split", _g(lab20.check_reduce_scatter, rs_split)),
    honest("20.3", "bounds, isend", _g(lab20.check_reduce_scatter, rs_bounds)),
    wrong(
        "20.3",
        "last chunk takes the rest",
        _g(lab20.check_reduce_scatter, rs_last_takes_rest),
        r"n % p",
    ),
    wrong("20.3", "whole buffers", _g(lab20.check_reduce_scatter, rs_whole), "whole buffers"),
    wrong(
        "20.3",
        "own chunk not added",
        _g(lab20.check_reduce_scatter, rs_own_chunk_only),
        "your own included",
    ),
    cheat(
        "20.3", "calls the reference", _g(lab20.check_reduce_scatter, C.reduce_scatter), error=REF
    ),
    cheat(
        "20.3",
        "another collective of the lab",
        _g(
            lab20.check_reduce_scatter,
            lambda c, x: C.all_reduce(c, x)[: len(np.array_split(x, c.world_size)[c.rank])],
        ),
        error=REF,
    ),
    cheat(
        "20.3",
        "whole buffers, counters zeroed",
        _g(lab20.check_reduce_scatter, rs_whole_zeroed),
        match="whole buffers",
    ),
    cheat(
        "20.3",
        "torch",
        _g(lab20.check_reduce_scatter, lambda c, x: bc_torch(c, x, 0)),
        error=ForbiddenCallError,
    ),
    honest("20.4", "list of pieces", _g(lab20.check_all_gather, ag_list)),
    honest("20.4", "by distance", _g(lab20.check_all_gather, ag_ring_order)),
    wrong("20.4", "funnel through rank 0", _g(lab20.check_all_gather, ag_funnel), "straight to"),
    wrong("20.4", "reversed", _g(lab20.check_all_gather, ag_reversed), "rank order"),
    wrong("20.4", "own chunk first", _g(lab20.check_all_gather, ag_arrival_order), "rank order"),
    cheat("20.4", "calls the reference", _g(lab20.check_all_gather, C.all_gather), error=REF),
    cheat(
        "20.4",
        "funnel, counters zeroed",
        _g(lab20.check_all_gather, ag_funnel_zeroed),
        match="straight to",
    ),
    cheat(
        "20.4",
        "torch",
        _g(lab20.check_all_gather, lambda c, x: bc_torch(c, x, 0)),
        error=ForbiddenCallError,
    ),
    cheat(
        "20.4",
        "comm._world",
        _g(lab20.check_all_gather, lambda c, x: bc_world_attr(c, x, 0)),
        match="_world",
        error=StudentError,
    ),
    honest("20.5", "dict of closed forms", _g(lab20.check_predict_bytes, pb)),
    honest("20.5", "a class with match", _g(lab20.check_predict_bytes, Predictor())),
    honest(
        "20.5", "floats of whole bytes", _g(lab20.check_predict_bytes, lambda *a: float(pb(*a)))
    ),
    wrong("20.5", "even chunks", _g(lab20.check_predict_bytes, pb_even), "own chunk"),
    wrong("20.5", "elements, not bytes", _g(lab20.check_predict_bytes, pb_elements), "predicted"),
    wrong(
        "20.5",
        "every rank broadcasts",
        _g(lab20.check_predict_bytes, pb_everyone_broadcasts),
        "Flat broadcast",
    ),
    cheat("20.5", "calls cost.bytes_sent", _g(lab20.check_predict_bytes, pb_reference), error=REF),
    cheat("20.5", "measures the reference", _g(lab20.check_predict_bytes, pb_simulated), error=REF),
    cheat("20.5", "torch", _g(lab20.check_predict_bytes, pb_torch), error=ForbiddenCallError),
    cheat("20.5", "memorised table", _g(lab20.check_predict_bytes, pb_table), match="predicted"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
