"""Graders of lab 20: right collectives pass; wrong values, extra bytes, reference calls fail."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from minitorch.checks import lab20
from minitorch.checks.core import ReferenceCalledError, StudentError
from minitorch.comm import collectives as C
from minitorch.comm import cost
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.comm")


def _bounds(n, p):
    cuts = np.cumsum([0] + [n // p + (r < n % p) for r in range(p)])
    return list(pairwise(cuts))


# --------------------------------------------------------------------------- 20.1 broadcast
def broadcast(comm, x, root):
    if comm.rank == root:
        for d in range(comm.world_size):
            if d != root:
                comm.send(x, d)
        return x.copy()
    return comm.recv(root)


def broadcast_self_send(comm, x, root):
    if comm.rank == root:
        for d in range(comm.world_size):
            comm.send(x, d)
        return comm.recv(root)
    return comm.recv(root)


def broadcast_no_root_return(comm, x, root):
    out = broadcast(comm, x, root)
    return None if comm.rank == root else out


def test_broadcast():
    lab20.check_broadcast(broadcast)
    lab20.check_broadcast(unblocked(C.broadcast))
    rejects(lab20.check_broadcast, broadcast_self_send, match="not send to itself")
    rejects(lab20.check_broadcast, broadcast_no_root_return, match="root included")
    rejects(lab20.check_broadcast, C.broadcast, match="reference", error=ReferenceCalledError)
    wrong_peer = lambda c, x, root: broadcast(c, x, root) if c.rank == root else c.recv(0)  # noqa: E731
    rejects(lab20.check_broadcast, wrong_peer, match="deadlock: .*rank 0 waits for a message")
    rejects(lab20.check_broadcast, broadcast_chain, match="Only the root sends")


def broadcast_chain(comm, x, root):  # right values, but every rank relays to the next
    p, r = comm.world_size, comm.rank
    if r != root:
        x = comm.recv((r - 1) % p)
    if (r + 1) % p != root:
        comm.send(x, (r + 1) % p)
    return x


# --------------------------------------------------------------------------- 20.2 all-reduce
def all_reduce(comm, x):
    p = comm.world_size
    if comm.rank != 0:
        comm.send(x, 0)
        return comm.recv(0)
    total = x.copy()
    for s in range(1, p):
        total = total + comm.recv(s)
    for d in range(1, p):
        comm.send(total, d)
    return total


def all_reduce_everyone(comm, x):
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(x, d)
    total = x.copy()
    for s in range(p):
        if s != r:
            total = total + comm.recv(s)
    return total


def all_reduce_forgets_own(comm, x):
    out = all_reduce(comm, x)
    return out - x if comm.rank == 0 else out


def test_all_reduce():
    lab20.check_all_reduce(all_reduce)
    lab20.check_all_reduce(unblocked(C.all_reduce))
    rejects(lab20.check_all_reduce, all_reduce_everyone, match=r"right results.*\(p-1\) n bytes")
    rejects(lab20.check_all_reduce, all_reduce_forgets_own, match="add its own")
    rejects(lab20.check_all_reduce, C.all_reduce, match="reference", error=ReferenceCalledError)
    rejects(lab20.check_all_reduce, all_reduce_float_total, match="keep the dtype")
    rejects(  # the rank program gets the protocol only: the world's counters are out of reach
        lab20.check_all_reduce,
        all_reduce_fixes_counters,
        match="no attribute '_world'",
        error=StudentError,
    )


def all_reduce_float_total(comm, x):  # np.zeros(n): int inputs come back as floats
    p = comm.world_size
    if comm.rank != 0:
        comm.send(x, 0)
        return comm.recv(0)
    total = np.zeros(len(x))
    total += x
    for s in range(1, p):
        total += comm.recv(s)
    for d in range(1, p):
        comm.send(total, d)
    return total


def all_reduce_fixes_counters(comm, x):  # everyone-to-everyone, then rewrites the byte count
    out = all_reduce_everyone(comm, x)
    comm._world.bytes_sent[comm.rank] = (
        (comm.world_size - 1) * x.nbytes if comm.rank == 0 else x.nbytes
    )
    return out


# --------------------------------------------------------------------------- 20.3, 20.4
def reduce_scatter(comm, x, split=_bounds):
    p, r = comm.world_size, comm.rank
    b = split(len(x), p)
    for d in range(p):
        if d != r:
            comm.send(x[b[d][0] : b[d][1]], d)
    total = x[b[r][0] : b[r][1]].copy()
    for s in range(p):
        if s != r:
            total = total + comm.recv(s)
    return total


def _last_takes_rest(n, p):
    k = n // p
    return [(i * k, (i + 1) * k if i < p - 1 else n) for i in range(p)]


def reduce_scatter_whole(comm, x):
    b = _bounds(len(x), comm.world_size)[comm.rank]
    return all_reduce_everyone(comm, x)[b[0] : b[1]]


def all_gather(comm, chunk):
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(chunk, d)
    return np.concatenate([chunk if s == r else comm.recv(s) for s in range(p)])


def all_gather_funnel(comm, chunk):
    p, r = comm.world_size, comm.rank
    if r != 0:
        comm.send(chunk, 0)
        return comm.recv(0)
    full = np.concatenate([chunk] + [comm.recv(s) for s in range(1, p)])
    for d in range(1, p):
        comm.send(full, d)
    return full


def test_reduce_scatter():
    lab20.check_reduce_scatter(reduce_scatter)
    lab20.check_reduce_scatter(unblocked(C.reduce_scatter))
    rejects(
        lab20.check_reduce_scatter,
        lambda c, x: reduce_scatter(c, x, _last_takes_rest),
        match="n % p",
    )
    rejects(lab20.check_reduce_scatter, reduce_scatter_whole, match="whole buffers")
    rejects(lab20.check_reduce_scatter, C.reduce_scatter, match="ref", error=ReferenceCalledError)


def test_all_gather():
    lab20.check_all_gather(all_gather)
    lab20.check_all_gather(unblocked(C.all_gather))
    rejects(lab20.check_all_gather, all_gather_funnel, match="straight to every")
    rejects(
        lab20.check_all_gather,
        lambda c, ch: np.concatenate([all_gather(c, ch)[::-1]]),
        match="rank order",
    )
    rejects(lab20.check_all_gather, C.all_gather, match="ref", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 20.5 predict
def predict_bytes(collective, n, p, rank, itemsize):
    full, chunk = n * itemsize, (n // p + (rank < n % p)) * itemsize
    if collective == "broadcast":
        return (p - 1) * full if rank == 0 else 0
    if collective == "all_reduce":
        return (p - 1) * full if rank == 0 else full
    if collective == "reduce_scatter":
        return full - chunk
    return (p - 1) * chunk


def test_predict_bytes():
    lab20.check_predict_bytes(predict_bytes)

    def even(c, n, p, r, i):
        return (p - 1) * (n // p) * i if c == "all_gather" else predict_bytes(c, n, p, r, i)

    rejects(lab20.check_predict_bytes, even, match="own chunk")
    lab20.check_predict_bytes(lambda *a: float(predict_bytes(*a)))  # 120.0 bytes is 120 bytes
    rejects(
        lab20.check_predict_bytes,
        lambda c, n, p, r, i: cost.bytes_sent(c, n, p, r, i),
        match="reference",
        error=ReferenceCalledError,
    )
