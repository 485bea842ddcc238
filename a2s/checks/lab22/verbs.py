"""Graders of exercises 22.1 (zero-copy one-sided put) and 22.2 (two-sided send/recv).

The hosts, their regions and the log of every verb stay in the grader's process; the
learner's transfer runs in a forked child (:func:`a2s.checks.harness.run_apart`) and
gets proxies (queue pairs, hosts, regions, a region's bytes) whose every call is a request:
no closure, attribute or ``gc`` route in the child leads to the log, and a write into a
region's bytes by the CPU is a copy, counted. Each case builds two fresh simulated hosts,
registers a source and a destination region and zeroes the cost counters, then runs the
student's transfer. Ground truth is the payload itself
(random bytes drawn here) and the budgets of the verbs: a one-sided write costs the target's CPU
nothing and nobody a copy; a two-sided transfer costs the receiver one posted receive and one
poll, and no copy either (the NIC writes into the posted buffer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_apart
from a2s.checks.lab22._truth import _QueuePair, _Region, _World
from a2s.checks.values import assert_true

__all__ = ["check_rdma_put", "check_send_recv"]

_REF = "minitorch.comm.verbs"
# (label, region size, message length, remote offset)
_Case = tuple[str, int, int, int]
_NAMED: list[_Case] = [
    ("one byte", 8, 1, 0),
    ("a 4 KiB page", 4096, 4096, 0),
    ("into the middle of the remote region", 64, 16, 32),
    ("a message that fills the region exactly", 100, 100, 0),
]


def _cases(exercise: str, offsets: bool) -> list[_Case]:
    g, out = fresh_rng(exercise), list(_NAMED if offsets else [c for c in _NAMED if not c[3]])
    for i in range(3):
        size = int(g.integers(2, 5000))
        length = int(g.integers(1, size + 1))
        off = int(g.integers(0, size - length + 1)) if offsets else 0
        out.append((fresh(f"random case {i}: {length} B at offset {off}"), size, length, off))
    return out


class _Log:
    """What the two hosts did, written by the verbs themselves (the hosts' counters, being
    attributes the learner's code can reach, are not trusted)."""

    def __init__(self, entries: list[tuple[str, str, tuple[int, ...]]]) -> None:
        self.entries = entries

    def ops(self, host: str) -> int:
        return sum(1 for h, _, _ in self.entries if h == host)

    def copied(self, host: str | None = None) -> list[int]:
        return [d[0] for h, v, d in self.entries if v == "memcpy" and host in (None, h)]

    def wire(self) -> int:
        return sum(
            d[1] for _, v, d in self.entries if v in ("post_send", "rdma_write", "rdma_read")
        )

    def undrained(self, host: str, peer: str) -> int:
        """Completions made for ``host`` that it has not polled."""
        made = sum(
            1
            for h, v, _ in self.entries
            if (h == host and v in ("post_send", "rdma_write", "rdma_read"))
            or (h == peer and v == "post_send")
        )
        return made - sum(d[0] for h, v, d in self.entries if h == host and v == "poll_cq")

    def verbs(self, host: str, verb: str) -> list[tuple[int, ...]]:
        return [d for h, v, d in self.entries if h == host and v == verb]

    def index(self, host: str, verb: str, detail: tuple[int, ...]) -> int:
        for i, e in enumerate(self.entries):
            if e == (host, verb, detail):
                return i
        return -1


def _run(
    student: Callable[..., Any], world: _World, args: tuple[Any, ...], label: str, hint: str
) -> Any:
    """The learner's transfer in a forked child: the hosts and the log stay here."""
    try:
        return run_apart(student, *args, serve=world.serve())
    except StudentError as exc:
        if world.refused and "VerbsError" in str(exc):
            raise CheckFailure(
                f"[{label}] the NIC refused a verb: {world.refused[-1]}. {hint}"
            ) from None
        raise


def _arrived(dst: Any, off: int, payload: np.ndarray, label: str) -> None:
    got = dst.buf[off : off + payload.size]
    bad = np.flatnonzero(got != payload)
    assert_true(
        bad.size == 0,
        f"[{label}] the remote region holds the wrong bytes ({bad.size} of {payload.size} "
        f"differ, first at byte {bad[0] if bad.size else 0}).",
    )
    rest = np.delete(dst.buf, np.arange(off, off + payload.size))
    assert_true(not rest.any(), f"[{label}] bytes outside [offset, offset+length) were written.")


_COPY = (
    "A CPU copy (memcpy into a staging or bounce buffer) is what RDMA exists to avoid: the NIC "
    "reads the registered source region directly. Post the work request on the source region."
)
_DRAIN = (
    "A work request is finished only when its completion has been polled from the completion "
    "queue (poll_cq); until then the source buffer may not be reused. Poll until it appears."
)


@grader("22.1", blocks=(f"{_REF}:rdma_put", f"{_REF}:send_recv"), hand="ranks")
def check_rdma_put(student: Any) -> str:
    cases = _cases("22.1", offsets=True)
    for k, (label, size, length, off) in enumerate(cases):
        world = _World(size, length, 100 + k)
        log, src, dst, payload = _Log(world.entries), world.src, world.dst, world.payload
        hint = "Use qp.rdma_write with the remote region's rkey (and an access right it granted)."
        args = (
            _QueuePair("qa", "sender", "receiver"),
            _Region(world.info(src)),
            length,
            off,
            dst.rkey,
        )
        n = plain(_run(student, world, args, label, hint), what="rdma_put")
        _arrived(dst, off, payload, label)
        peer_ops = log.ops("receiver")
        assert_true(
            peer_ops == 0,
            f"[{label}] the receiver's CPU ran {peer_ops} verb(s) (post_recv, poll_cq, ...). "
            "A one-sided RDMA write needs no receive posted and no poll on the target: that is "
            "its point. Use qp.rdma_write, not post_send/post_recv.",
        )
        copies = log.copied()
        assert_true(not copies, f"[{label}] {len(copies)} CPU copy(ies) ({sum(copies)} B). {_COPY}")
        assert_true(
            (src.lkey, length, off, dst.rkey) in log.verbs("sender", "rdma_write"),
            f"[{label}] the bytes arrived, but no qp.rdma_write of the source region "
            f"({length} B at remote offset {off}) put them there: the NIC must move them.",
        )
        assert_true(
            log.wire() == length,
            f"[{label}] {log.wire()} bytes crossed the wire for a {length}-byte message: "
            "write the message once, exactly its length.",
        )
        assert_true(
            not log.undrained("sender", "receiver"),
            f"[{label}] a completion was left in the sender's queue. {_DRAIN}",
        )
        ops = log.ops("sender")
        assert_true(
            ops <= 3,
            f"[{label}] the sender spent {ops} CPU operations: one write and a poll or two "
            "suffice (budget 3).",
        )
        assert_true(
            n == length, f"[{label}] return the completion's byte_len ({length}), got {n!r}."
        )
    return f"{len(cases)} puts, receiver CPU ops 0, copies 0, wire bytes = payload"


@grader("22.2", blocks=(f"{_REF}:send_recv", f"{_REF}:rdma_put"), hand="ranks")
def check_send_recv(student: Any) -> str:
    cases = _cases("22.2", offsets=False)
    for k, (label, size, length, _off) in enumerate(cases):
        world = _World(size, length, 200 + k)
        log, src, dst, payload = _Log(world.entries), world.src, world.dst, world.payload
        hint = (
            "Two-sided: the receiver must post_recv its buffer *before* the sender's post_send "
            "(otherwise receiver-not-ready)."
        )
        args = (
            _QueuePair("qa", "sender", "receiver"),
            _QueuePair("qb", "receiver", "sender"),
            _Region(world.info(src)),
            _Region(world.info(dst)),
            length,
        )
        n = plain(_run(student, world, args, label, hint), what="send_recv")
        _arrived(dst, 0, payload, label)
        copies = log.copied()
        assert_true(
            not copies,
            f"[{label}] {len(copies)} CPU copy(ies). Post the destination region itself as the "
            f"receive buffer: the NIC writes there, no copy out of a staging buffer. {_COPY}",
        )
        peer_ops = log.ops("receiver")
        assert_true(
            peer_ops == 2,
            f"[{label}] the receiver ran {peer_ops} verb(s); a two-sided receive is exactly "
            "one post_recv and one poll_cq that returns its completion. (An rdma_write would "
            "skip the receiver: that is exercise 22.1, not a send/recv.)",
        )
        posted = log.index("receiver", "post_recv", (dst.lkey,))
        sent = log.index("sender", "post_send", (src.lkey, length))
        assert_true(
            0 <= posted < sent,
            f"[{label}] the bytes arrived, but not through qs.post_send of the source region "
            "into the receive qr posted on dst: the NIC must move them.",
        )
        assert_true(
            not log.undrained("sender", "receiver") and not log.undrained("receiver", "sender"),
            f"[{label}] completions were left unpolled. {_DRAIN}",
        )
        ops = log.ops("sender")
        assert_true(ops <= 3, f"[{label}] the sender spent {ops} CPU operations (budget 3).")
        assert_true(
            n == length,
            f"[{label}] return the receive completion's byte_len ({length}), got {n!r}.",
        )
    return f"{len(cases)} send/recv pairs, receiver CPU ops 2 each, copies 0"
