"""Graders of lab 20: right collectives pass; wrong values, extra bytes, reference calls fail."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from a2s.checks import lab20
from a2s.checks.core import CheckFailure, ReferenceCalledError, StudentError
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


def test_a_world_of_one_sends_nothing_and_every_message_is_received():
    """p = 1 (nothing sent) is a named case of every rank check; a message nobody receives
    fails even when every result and byte count is right."""
    from a2s.checks.lab20._truth import WorldCase, compare, run_world

    x = np.arange(3)
    outs, run = run_world(broadcast, "20.1", WorldCase("p=1", [(x, 0)], [x], [0]))
    assert run.world.bytes_sent == [0] and np.array_equal(outs[0], x)

    def sends_but_nobody_receives(comm, x, root):
        if comm.rank == root:
            for d in range(comm.world_size):
                if d != root:
                    comm.send(x, d)
        return x  # every rank was given the root's x: right values, no communication

    same = WorldCase("p=3 same inputs", [(x, 0)] * 3, [x] * 3, [2 * x.nbytes, 0, 0])
    outs, run = run_world(sends_but_nobody_receives, "20.1", same)
    assert run.unreceived == [(0, 1, 0, 1), (0, 2, 0, 1)]
    with pytest.raises(CheckFailure, match="never received"):
        compare(same, outs, run, value_hint=lambda *a: "", budget_hint=lambda s: "")


def test_all_gather_of_reduce_scatter_is_the_all_reduce():
    from a2s.checks.harness import run_ranks

    xs = [np.arange(7) * (r + 1) for r in range(3)]
    run = run_ranks(lambda c, x: all_gather(c, reduce_scatter(c, x)), 3, [(x,) for x in xs])
    assert all(np.array_equal(o, sum(xs)) for o in run.results)
    broken = run_ranks(
        lambda c, x: all_gather(c, reduce_scatter(c, x))[::-1].copy(), 3, [(x,) for x in xs]
    )
    assert not all(np.array_equal(o, sum(xs)) for o in broken.results)


MUSTS = [
    (
        "20.1",
        "every rank must send exactly the bytes of the algorithm the exercise names",
        "test_broadcast",
    ),
    (
        "20.1",
        r"the root sends exactly $(p-1)\,n$ bytes ($n$ = `x.nbytes`), every other rank 0 "
        "— no message to itself",
        "test_attempt",
    ),
    (
        "20.1",
        "with $p = 1$ nothing is sent and the root returns `x`",
        "test_a_world_of_one_sends_nothing_and_every_message_is_received",
    ),
    (
        "20.1",
        "talks only through point-to-point messages",
        "test_a_world_of_one_sends_nothing_and_every_message_is_received",
    ),
    (
        "20.2",
        r"rank 0 sends exactly $(p-1)\,n$ bytes, every other rank exactly $n$",
        "test_attempt",
    ),
    ("20.2", "Integer inputs must be summed exactly", "test_all_reduce"),
    ("20.2", "every rank returns the same array", "test_attempt"),
    ("20.3", "Send each peer $j$ only chunk $j$ of your `x`", "test_attempt"),
    (
        "20.3",
        "rank $r$ sends exactly $n - c_r$ bytes (every chunk but its own, once)",
        "test_reduce_scatter",
    ),
    ("20.3", "concatenating the results of ranks $0..p-1$ gives the full sum", "test_attempt"),
    ("20.4", r"rank $r$ sends exactly $(p-1)\,c_r$ bytes, straight to each peer", "test_attempt"),
    (
        "20.4",
        "`all_gather(reduce_scatter(x))` is the all-reduce",
        "test_all_gather_of_reduce_scatter_is_the_all_reduce",
    ),
    (
        "20.5",
        r"summed over ranks, the naive all-reduce sends $2(p-1)\,n$ bytes",
        "test_predict_bytes",
    ),
]


# --------------------------------------------------------------------------- hints are modelled
def all_reduce_sum_twice(comm, x):  # the naive algorithm, but rank 0 sends the sum twice
    p, r = comm.world_size, comm.rank
    if r:
        comm.send(x, 0)
        comm.recv(0)
        return comm.recv(0)
    total = x.copy()
    for s in range(1, p):
        total = total + comm.recv(s)
    for d in range(1, p):
        comm.send(total, d)
        comm.send(total, d)
    return total


def reduce_scatter_twice(comm, x):  # right chunks, each sent twice
    p, r = comm.world_size, comm.rank
    b = _bounds(len(x), p)
    for d in range(p):
        if d != r:
            comm.send(x[b[d][0] : b[d][1]], d)
            comm.send(x[b[d][0] : b[d][1]], d)
    total = x[b[r][0] : b[r][1]].copy()
    for s in range(p):
        if s != r:
            total = total + comm.recv(s)
            comm.recv(s)
    return total


def all_gather_twice(comm, chunk):  # straight to every peer, but twice
    p, r = comm.world_size, comm.rank
    for d in range(p):
        if d != r:
            comm.send(chunk, d)
            comm.send(chunk, d)
    parts = []
    for s in range(p):
        if s != r:
            comm.recv(s)
        parts.append(chunk if s == r else comm.recv(s))
    return np.concatenate(parts)


def test_a_budget_hint_names_a_mistake_only_when_the_bytes_are_that_mistakes():
    """Over budget the way no modelled mistake is: the rule, not "every rank sent to every
    other", "whole buffers" or "gathering at one rank"."""
    with pytest.raises(CheckFailure) as info:
        lab20.check_all_reduce(all_reduce_sum_twice)
    assert "The naive algorithm" in str(info.value) and "Every rank sent" not in str(info.value)
    with pytest.raises(CheckFailure) as info:
        lab20.check_reduce_scatter(reduce_scatter_twice)
    assert "only chunk s" in str(info.value) and "whole buffers" not in str(info.value)
    with pytest.raises(CheckFailure) as info:
        lab20.check_all_gather(all_gather_twice)
    assert "each of the p-1 others" in str(info.value) and "Gathering" not in str(info.value)


def test_a_value_hint_names_rank_0s_own_x_only_when_it_is_missing():
    def off_by_one(comm, x):
        return all_reduce(comm, x) + 1

    with pytest.raises(CheckFailure) as info:
        lab20.check_all_reduce(off_by_one)
    assert "sum of all p ranks' x" in str(info.value) and "its own" not in str(info.value)
