"""Graders of lab 21: right algorithms pass; wrong values, extra bytes, reference calls fail.

One real launch (21.5): the ring passes on 3 gloo ranks. Wrong answers of 21.5 are rejected
in-process: the worker's grading loop runs on SimWorld ranks with a stand-in for
TorchDistComm (a ring sending whole buffers fails on bytes, a call of dist.all_reduce raises).
The rank's seal (one for every gloo rank, :func:`a2s.checks.ranks.seal`) is tested in
tests/checks/test_ranks.py.
"""

from __future__ import annotations

import math

import numpy as np

from a2s.checks import lab21
from a2s.checks.core import ReferenceCalledError
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.lab21 import workers
from minitorch.comm import allreduce as A
from minitorch.comm import collectives as C
from minitorch.comm import cost
from minitorch.comm.hierarchical import Group, hierarchical_all_reduce
from minitorch.comm.simworld import SimWorld
from tests.checks.test_ranks import (  # noqa: F401 - named in MUSTS
    test_the_seal_refuses_what_a_rank_must_not_do_and_lets_honest_code_run,
)
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.comm")


def _bounds(n, p, last_takes_rest=False):
    if last_takes_rest:
        k = n // p
        return [(i * k, (i + 1) * k if i < p - 1 else n) for i in range(p)]
    out, start = [], 0
    for r in range(p):
        stop = start + n // p + (r < n % p)
        out.append((start, stop))
        start = stop
    return out


# --------------------------------------------------------------------------- 21.1 ring
def ring(comm, x, last_takes_rest=False, gather=True, off=0):
    p, r = comm.world_size, comm.rank
    buf = x.copy()
    b = [slice(*s) for s in _bounds(len(x), p, last_takes_rest)]
    for s in range(p - 1):
        comm.send(buf[b[(r - s + off) % p]], (r + 1) % p)
        buf[b[(r - s - 1) % p]] += comm.recv((r - 1) % p)
    for s in range(p - 1 if gather else 0):
        comm.send(buf[b[(r + 1 - s) % p]], (r + 1) % p)
        buf[b[(r - s) % p]] = comm.recv((r - 1) % p)
    return buf


def ring_whole_buffers(comm, x):
    """Reduce then broadcast dressed as a ring: pass the running total, then the sum."""
    p, r = comm.world_size, comm.rank
    total = x.copy()
    for _ in range(p - 1):
        comm.send(x if _ == 0 else part, (r + 1) % p)  # noqa: F821
        part = comm.recv((r - 1) % p)
        total = total + part
    for _ in range(p - 1):
        comm.send(total, (r + 1) % p)
        comm.recv((r - 1) % p)
    return total


def ring_wrong_neighbour(comm, x):
    p = comm.world_size
    total = x.copy()
    for d in range(1, p):
        comm.send(x, (comm.rank + d) % p)
    for d in range(1, p):
        total = total + comm.recv((comm.rank - d) % p)
    for d in range(1, p):
        comm.send(total[:0], (comm.rank + d) % p)
        comm.recv((comm.rank - d) % p)
    return total


def test_ring():
    lab21.check_ring_all_reduce(ring)
    lab21.check_ring_all_reduce(unblocked(A.ring_all_reduce))
    rejects(lab21.check_ring_all_reduce, ring_whole_buffers, match="whole buffer")
    rejects(lab21.check_ring_all_reduce, lambda c, x: ring(c, x, True), match="n % p")
    rejects(lab21.check_ring_all_reduce, lambda c, x: ring(c, x, gather=False), match="all-gather")
    rejects(lab21.check_ring_all_reduce, ring_wrong_neighbour, match="bytes")
    rejects(lab21.check_ring_all_reduce, lambda c, x: ring(c, x, off=1), match="chunk indices")

    def mirrored(comm, x):  # sends left, receives right: right sums, wrong links
        class Mirror:
            rank, world_size = (-comm.rank) % comm.world_size, comm.world_size
            send = staticmethod(lambda a, d: comm.send(a, (-d) % comm.world_size))
            recv = staticmethod(lambda s: comm.recv((-s) % comm.world_size))

        return ring(Mirror(), x)

    rejects(lab21.check_ring_all_reduce, mirrored, match="right neighbour|right sums")
    rejects(lab21.check_ring_all_reduce, A.ring_all_reduce, match="ref", error=ReferenceCalledError)
    rejects(lab21.check_ring_all_reduce, unblocked(C.all_reduce), match="messages per rank")

    def in_place(comm, x):  # right sums, but into the caller's x
        x[:] = ring(comm, x)
        return x

    rejects(lab21.check_ring_all_reduce, in_place, match="changed in place")


# --------------------------------------------------------------------------- 21.2 halving-doubling
def halving_doubling(comm, x):
    p, r = comm.world_size, comm.rank
    buf, b = x.copy(), _bounds(len(x), p)
    lo, hi, d, steps = 0, p, p // 2, []
    while d:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if r & d else ((lo, mid), (mid, hi))
        comm.send(buf[b[give[0]][0] : b[give[1] - 1][1]], r ^ d)
        k = slice(b[keep[0]][0], b[keep[1] - 1][1])
        buf[k] = buf[k] + comm.recv(r ^ d)
        steps.append((r ^ d, k, slice(b[give[0]][0], b[give[1] - 1][1])))
        (lo, hi), d = keep, d // 2
    for partner, k, g in reversed(steps):
        comm.send(buf[k], partner)
        buf[g] = comm.recv(partner)
    return buf


def doubling_whole(comm, x):
    """Recursive doubling on whole buffers: right sums, log2 p messages, n bytes each."""
    p, r, total, d = comm.world_size, comm.rank, x.copy(), 1
    while d < p:
        comm.send(total, r ^ d)
        total = total + comm.recv(r ^ d)
        d *= 2
    for _ in range(int(math.log2(p))):  # pad the message count with empty messages
        comm.send(total[:0], r ^ 1)
        comm.recv(r ^ 1)
    return total


def test_halving_doubling():
    lab21.check_halving_doubling(halving_doubling)
    lab21.check_halving_doubling(unblocked(A.halving_doubling_all_reduce))
    rejects(lab21.check_halving_doubling, doubling_whole, match="whole buffer")
    rejects(lab21.check_halving_doubling, ring, match="2 log2 p")
    rejects(
        lab21.check_halving_doubling, A.tree_all_reduce, match="ref", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 21.3 crossover
def crossover(p, alpha, beta):
    if p <= 2:
        return 0.0
    L = math.ceil(math.log2(p))
    return (p - 1 - L) * alpha / ((L - (p - 1) / p) * beta)


def test_crossover():
    lab21.check_crossover(crossover)

    def no_ceil(p, a, b):
        if p <= 2:
            return 0.0
        return (p - 1 - math.log2(p)) * a / ((math.log2(p) - (p - 1) / p) * b)

    rejects(lab21.check_crossover, no_ceil, match="ceil")
    no_guard = lambda p, a, b: crossover(max(p, 4), a, b) if p > 3 else -1.0  # noqa: E731
    rejects(lab21.check_crossover, no_guard, match=r"\(1, 1e-06, 1e-09\).*return 0\.0")
    rejects(lab21.check_crossover, lambda p, a, b: crossover(p, a, b) / 8, match="model gives")
    rejects(lab21.check_crossover, cost.crossover_bytes, match="ref", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 21.4 hierarchical
def hierarchical(comm, x, g):
    node, local = divmod(comm.rank, g)
    intra = Group(comm, range(node * g, node * g + g))
    inter = Group(comm, range(local, comm.world_size, g))
    return C.all_gather(intra, ring(inter, C.reduce_scatter(intra, x)))


def hierarchical_leaders(comm, x, g):
    """Reduce to each node's first rank, leaders all-reduce the whole buffer, broadcast."""
    node, local = divmod(comm.rank, g)
    intra = Group(comm, range(node * g, node * g + g))
    total = C.reduce(intra, x, 0)
    if local == 0:
        total = ring(Group(comm, range(0, comm.world_size, g)), total)
    return C.broadcast(intra, total, 0)


def test_hierarchical():
    lab21.check_hierarchical(hierarchical)
    lab21.check_hierarchical(unblocked(hierarchical_all_reduce))
    rejects(lab21.check_hierarchical, lambda c, x, g: ring(c, x), match="flat all-reduce")
    rejects(lab21.check_hierarchical, hierarchical_leaders, match="One rank per node")
    rejects(
        lab21.check_hierarchical,
        lambda c, x, g: C.reduce_scatter(Group(c, range(c.world_size)), x),
        match="all-gather",
    )
    rejects(
        lab21.check_hierarchical, hierarchical_all_reduce, match="ref", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 21.5 gloo
def gloo_ring(comm, x):
    p, r = comm.world_size, comm.rank
    buf = x.copy()
    n = len(buf)
    starts = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    b = [slice(starts[j], starts[j + 1]) for j in range(p)]
    for s in range(p - 1):
        h = comm.irecv((r - 1) % p)
        comm.isend(buf[b[(r - s) % p]], (r + 1) % p).wait()
        buf[b[(r - s - 1) % p]] += h.wait()
    for s in range(p - 1):
        h = comm.irecv((r - 1) % p)
        comm.isend(buf[b[(r + 1 - s) % p]], (r + 1) % p).wait()
        buf[b[(r - s) % p]] = h.wait()
    return buf


def gloo_whole(comm, x):
    p, r = comm.world_size, comm.rank
    total, part = x.copy(), x
    for _ in range(p - 1):
        comm.send(part, (r + 1) % p)
        part = comm.recv((r - 1) % p)
        total = total + part
    for _ in range(p - 1):
        comm.send(total[:0], (r + 1) % p)
        comm.recv((r - 1) % p)
    return total


def gloo_widened(comm, x):  # right sums, but 8-byte chunks for int32 and float32 buffers
    p, r = comm.world_size, comm.rank
    buf = x.astype(np.float64)
    n = len(buf)
    starts = [j * (n // p) + min(j, n % p) for j in range(p + 1)]
    b = [slice(starts[j], starts[j + 1]) for j in range(p)]
    for s in range(p - 1):
        comm.send(buf[b[(r - s) % p]], (r + 1) % p)
        buf[b[(r - s - 1) % p]] += comm.recv((r - 1) % p)
    for s in range(p - 1):
        comm.send(buf[b[(r + 1 - s) % p]], (r + 1) % p)
        buf[b[(r - s) % p]] = comm.recv((r - 1) % p)
    return buf


def calls_dist(comm, x):
    import torch
    import torch.distributed as dist

    t = torch.from_numpy(x.copy())
    dist.all_reduce(t)
    return t.numpy()


def test_ring_on_gloo():
    """The one real launch of the suite: 3 gloo ranks, every case."""
    lab21.check_ring_on_gloo(gloo_ring)


def _sim_launch(target, world_size, *args, **kwargs):
    """``launch`` stand-in: the worker loop on SimWorld ranks (no spawn, the seal in each
    learner child as on gloo)."""
    assert target == "a2s.checks.lab21.workers:grade_ring"
    return SimWorld(world_size).run(lambda c: workers.grade_ring(_StandIn(c), *args))


def test_ring_on_gloo_rejects_in_process(monkeypatch):
    import torch  # noqa: F401 - imported once here, not in every sealed child

    from minitorch.comm import torchdist

    monkeypatch.setattr(torchdist, "launch", _sim_launch)
    lab21.check_ring_on_gloo(gloo_ring)  # the stand-in passes the right answer
    rejects(lab21.check_ring_on_gloo, gloo_whole, match="right sums, but ranks sent")
    rejects(lab21.check_ring_on_gloo, gloo_widened, match="keep x's dtype")
    # caught by the dry run on SimWorld, before any spawn
    rejects(lab21.check_ring_on_gloo, A.ring_all_reduce, match="ref", error=ReferenceCalledError)
    rejects(lab21.check_ring_on_gloo, lambda c, x: ring(c, x, gather=False), match="21.1's ring")


class _Sent:
    def wait(self):
        return None


class _StandIn:
    """SimComm with TorchDistComm's counters and a torch_all_reduce (for the worker loop)."""

    def __init__(self, comm):
        self._c, self.rank, self.world_size = comm, comm.rank, comm.world_size
        self.bytes_sent = self.messages_sent = 0
        self.bytes_to = [0] * comm.world_size
        self.recv, self.irecv, self.barrier = comm.recv, comm.irecv, comm.barrier

    def send(self, x, dst, tag=0):
        self._c.send(x, dst, tag)
        self.bytes_sent += x.nbytes
        self.messages_sent += 1
        self.bytes_to[dst] += x.nbytes

    def isend(self, x, dst, tag=0):
        self.send(x, dst, tag)
        return _Sent()

    def flush(self):
        pass

    def torch_all_reduce(self, x):
        return A.ring_all_reduce(self._c, x)


def test_worker_refuses_collectives_and_hides_the_communicator():
    import inspect

    import torch  # noqa: F401 - imported once here, not in every sealed child

    def rank(comm, source, name):
        try:
            out = workers.grade_ring(_StandIn(comm), source, name, [(5, "int64", 1)])
        except (CheckFailure, StudentError) as exc:
            return type(exc).__name__, str(exc)
        return "", out[0]["bytes"]

    errors = SimWorld(2).run(rank, inspect.getsource(calls_dist), "calls_dist")
    assert all(k == "ForbiddenCallError" and "torch" in e for k, e in errors), errors
    peek = "def peek(comm, x):\n    return comm.torch_all_reduce(x)\n"
    errors = SimWorld(2).run(rank, peek, "peek")
    assert all(k == "StudentError" and "AttributeError" in e for k, e in errors), errors
    ok = SimWorld(3).run(rank, inspect.getsource(gloo_ring), "gloo_ring")
    assert [k for k, _ in ok] == ["", "", ""]


MUSTS = [
    (
        "21.1",
        "sending only to `(rank + 1) % p`, receiving only from `(rank - 1) % p`",
        "test_attempt",
    ),
    ("21.1", "integers must come out exact", "test_attempt"),
    ("21.1", "every rank sends exactly $2(p-1)$ messages of one chunk each", "test_attempt"),
    ("21.1", "chunk boundaries that do not follow the course convention", "test_ring"),
    (
        "21.1",
        "a reduce-then-broadcast dressed as a ring, fails even with the right sums",
        "test_attempt",
    ),
    ("21.1", "Exercise code may not call torch", "test_attempt"),
    ("21.2", r"exactly $2\log_2 p$ messages per rank", "test_attempt"),
    ("21.2", r"$2\log_2 p = 6$ rounds when only $\alpha$ counts", "test_halving_doubling"),
    ("21.2", "after the halving phase rank $r$ holds the sum of chunk $r$", "test_attempt"),
    ("21.3", r"for $p = 8$, $n^\ast \approx 1.9\,\alpha/\beta$", "test_crossover"),
    (
        "21.3",
        "nor the reference all-reduce algorithms of `minitorch.comm` or the cost formulas",
        "test_attempt",
    ),
    ("21.4", "exactly $2(q-1)n$ bytes cross between nodes in all", "test_attempt"),
    (
        "21.4",
        r"no rank more than $2(q-1)\lceil\lceil n/g\rceil/q\rceil$ elements' worth",
        "test_hierarchical",
    ),
    ("21.4", "with one node ($g = p$) nothing crosses", "test_hierarchical"),
    (
        "21.5",
        "Your function sees only `rank`, `world_size`, `send`, `recv`, `isend`, `irecv`, "
        "`barrier` and numpy",
        "test_worker_refuses_collectives_and_hides_the_communicator",
    ),
    (
        "21.5",
        "counted by each rank's own process, outside your function's reach",
        "test_ring_on_gloo_rejects_in_process",
    ),
    (
        "21.5",
        "a rank whose code calls torch (a `torch.distributed` collective included) or the "
        "course's reference, or reaches for frames, `gc`, files, sockets, threads or new processes "
        "is stopped",
        "test_the_seal_refuses_what_a_rank_must_not_do_and_lets_honest_code_run",
    ),
    ("21.5", "it also passes 21.1's check on SimWorld", "test_attempt"),
]
