"""SimWorld: deterministic schedule, counts per rank and link, alpha-beta clock, deadlocks."""

import numpy as np
import pytest

from minitorch.comm.simworld import DeadlockError, SimWorld


def _ring(comm, x):
    p, r = comm.world_size, comm.rank
    h = comm.irecv((r - 1) % p)
    comm.isend(x, (r + 1) % p).wait()
    return h.wait()


def test_ring_shift_counts_and_links():
    w = SimWorld(4, alpha=1.0, beta=0.5)
    out = w.run(_ring, [np.full(3, r, np.int64) for r in range(4)], per_rank=True)
    assert [int(o[0]) for o in out] == [3, 0, 1, 2]
    assert w.bytes_sent == [24] * 4 and w.bytes_recv == [24] * 4 and w.msgs_sent == [1] * 4
    assert dict(w.link_bytes) == {(r, (r + 1) % 4): 24 for r in range(4)}
    assert w.time == pytest.approx(1.0 + 0.5 * 24)  # the four sends overlap


def test_port_serialises_sends_from_one_rank():
    def fan_out(comm):
        if comm.rank == 0:
            for d in (1, 2, 3):
                comm.send(np.zeros(10), d)
        else:
            comm.recv(0)

    w = SimWorld(4, alpha=2.0, beta=0.1)
    w.run(fan_out)
    assert w.clock[1:] == pytest.approx([10.0, 20.0, 30.0])  # (k)(alpha + beta 80)


def test_messages_are_fifo_per_tag_and_copied():
    def prog(comm):
        if comm.rank == 0:
            x = np.arange(2)
            comm.send(x, 1, tag=1)
            x[:] = 9  # the message is a copy
            comm.send(x, 1, tag=2)
            return None
        b = comm.recv(0, tag=2)
        a = comm.recv(0, tag=1)
        return a.tolist(), b.tolist()

    assert SimWorld(2).run(prog)[1] == ([0, 1], [9, 9])


def test_barrier_aligns_clocks_and_deadlock_is_reported():
    def late(comm):
        if comm.rank == 0:
            comm.send(np.zeros(100), 1)
        if comm.rank == 1:
            comm.recv(0)
        comm.barrier()

    w = SimWorld(3, alpha=1.0, beta=1.0)
    w.run(late)
    assert w.clock == [801.0] * 3  # alpha + beta * 800 bytes
    with pytest.raises(DeadlockError):
        SimWorld(3).run(lambda c: c.recv((c.rank + 1) % 3))


def test_errors_propagate_and_bad_peer():
    with pytest.raises(ValueError, match="outside"):
        SimWorld(2).run(lambda c: c.send(np.zeros(1), 5))
    with pytest.raises(ValueError):
        SimWorld(0)
