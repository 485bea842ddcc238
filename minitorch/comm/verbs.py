"""RDMA verbs in simulation: memory regions, queue pairs, completion queues, copies counted.

Two hosts own byte buffers. A buffer becomes reachable by the NIC once registered as a
:class:`MemoryRegion` (``reg_mr``), which hands out an ``lkey`` (for local work requests) and an
``rkey`` (for a peer's one-sided access, granted by the access flags). A :class:`QueuePair`
joins the two hosts:

* two-sided: the receiver ``post_recv``s a buffer, the sender ``post_send``s; the NIC moves the
  bytes into the posted buffer and *both* sides get a completion they must poll (receiver CPU
  involved). A send without a posted receive fails (receiver-not-ready).
* one-sided: ``rdma_write`` / ``rdma_read`` name the remote buffer by address and ``rkey``; only
  the initiator posts and polls, the target's CPU does nothing.

Every verb a host calls counts one CPU operation on that host; ``memcpy`` (a CPU copy between
two of its own regions) counts a copy and its bytes; NIC transfers count wire bytes only.

Lab: 22 (RDMA and transport).
Paper: InfiniBand Architecture Specification, vol. 1, ch. 10-11 (verbs); Kalia et al., "Design
Guidelines for High Performance RDMA Systems", USENIX ATC 2016.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "LOCAL_WRITE",
    "REMOTE_READ",
    "REMOTE_WRITE",
    "Host",
    "MemoryRegion",
    "QueuePair",
    "VerbsError",
    "WorkCompletion",
    "connect",
    "rdma_put",
    "send_recv",
]

LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ = 1, 2, 4


class VerbsError(RuntimeError):
    """A verb the hardware would refuse: bad key, missing access right, no posted receive."""


@dataclass
class MemoryRegion:
    """A registered buffer: the host's bytes, its keys and the access the peer was granted."""

    host: Host
    buf: np.ndarray
    lkey: int
    rkey: int
    access: int

    @property
    def length(self) -> int:
        return int(self.buf.size)


@dataclass(frozen=True)
class WorkCompletion:
    """One entry of a completion queue: which request finished, its opcode and byte count."""

    wr_id: int
    opcode: str
    byte_len: int


@dataclass
class Host:
    """One machine: its registered regions, its completion queue and its cost counters."""

    name: str
    cpu_ops: int = 0
    copies: int = 0
    bytes_copied: int = 0
    wire_bytes: int = 0
    mrs: dict[int, MemoryRegion] = field(default_factory=dict)
    cq: deque[WorkCompletion] = field(default_factory=deque)
    _next_key: int = 0

    def reg_mr(self, buf: np.ndarray, access: int = LOCAL_WRITE) -> MemoryRegion:
        """Register ``buf`` (a uint8 array, shared, not copied) with the NIC."""
        if buf.dtype != np.uint8 or buf.ndim != 1:
            raise VerbsError("register a 1-D uint8 buffer")
        self.cpu_ops += 1
        self._next_key += 1
        key = (hash(self.name) & 0xFFFF) << 16 | self._next_key
        mr = MemoryRegion(self, buf, lkey=key, rkey=key ^ 0x5A5A, access=access)
        self.mrs[mr.rkey] = mr
        return mr

    def memcpy(self, dst: MemoryRegion, src: MemoryRegion, length: int) -> None:
        """A CPU copy between two of this host's regions: one copy, ``length`` bytes."""
        if dst.host is not self or src.host is not self:
            raise VerbsError("memcpy copies between this host's own regions")
        self.cpu_ops += 1
        self.copies += 1
        self.bytes_copied += length
        dst.buf[:length] = src.buf[:length]

    def poll_cq(self, max_entries: int = 16) -> list[WorkCompletion]:
        """Pop up to ``max_entries`` completions (a CPU operation even when empty)."""
        self.cpu_ops += 1
        out: list[WorkCompletion] = []
        while self.cq and len(out) < max_entries:
            out.append(self.cq.popleft())
        return out


@dataclass
class QueuePair:
    """One end of a reliable connection: ``local`` posts, ``remote`` is the peer."""

    local: Host
    remote: Host
    peer: QueuePair | None = None
    recv_queue: deque[tuple[int, MemoryRegion]] = field(default_factory=deque)

    def _own(self, mr: MemoryRegion, length: int) -> None:
        if mr.host is not self.local or mr.lkey not in {m.lkey for m in self.local.mrs.values()}:
            raise VerbsError("the lkey does not name a region of this host")
        if length > mr.length:
            raise VerbsError(f"length {length} exceeds the region ({mr.length} bytes)")

    def _target(self, rkey: int, offset: int, length: int, right: int) -> MemoryRegion:
        mr = self.remote.mrs.get(rkey)
        if mr is None:
            raise VerbsError("remote access error: unknown rkey")
        if not mr.access & right:
            raise VerbsError("remote access error: the region was not registered for this")
        if offset < 0 or offset + length > mr.length:
            raise VerbsError("remote access error: out of the region's bounds")
        return mr

    def post_recv(self, mr: MemoryRegion, wr_id: int = 0) -> None:
        """Post a receive buffer: the next incoming send lands in it."""
        self._own(mr, 0)
        self.local.cpu_ops += 1
        self.recv_queue.append((wr_id, mr))

    def post_send(self, mr: MemoryRegion, length: int, wr_id: int = 0) -> None:
        """Two-sided send of ``mr[:length]`` into the peer's oldest posted receive."""
        self._own(mr, length)
        self.local.cpu_ops += 1
        assert self.peer is not None
        if not self.peer.recv_queue:
            raise VerbsError("receiver not ready: no receive posted on the peer")
        rid, dst = self.peer.recv_queue.popleft()
        if length > dst.length:
            raise VerbsError("local length error: the posted receive is too small")
        dst.buf[:length] = mr.buf[:length]
        self.local.wire_bytes += length
        self.local.cq.append(WorkCompletion(wr_id, "SEND", length))
        self.remote.cq.append(WorkCompletion(rid, "RECV", length))

    def rdma_write(
        self, mr: MemoryRegion, length: int, remote_offset: int, rkey: int, wr_id: int = 0
    ) -> None:
        """One-sided write of ``mr[:length]`` to the peer's region ``rkey`` at ``remote_offset``."""
        self._own(mr, length)
        dst = self._target(rkey, remote_offset, length, REMOTE_WRITE)
        self.local.cpu_ops += 1
        dst.buf[remote_offset : remote_offset + length] = mr.buf[:length]
        self.local.wire_bytes += length
        self.local.cq.append(WorkCompletion(wr_id, "RDMA_WRITE", length))

    def rdma_read(
        self, mr: MemoryRegion, length: int, remote_offset: int, rkey: int, wr_id: int = 0
    ) -> None:
        """One-sided read of the peer's region ``rkey`` at ``remote_offset`` into ``mr``."""
        self._own(mr, length)
        src = self._target(rkey, remote_offset, length, REMOTE_READ)
        self.local.cpu_ops += 1
        mr.buf[:length] = src.buf[remote_offset : remote_offset + length]
        self.remote.wire_bytes += length
        self.local.cq.append(WorkCompletion(wr_id, "RDMA_READ", length))


def connect(a: Host, b: Host) -> tuple[QueuePair, QueuePair]:
    """A connected pair of queue pairs: ``(qp on a, qp on b)``."""
    qa, qb = QueuePair(a, b), QueuePair(b, a)
    qa.peer, qb.peer = qb, qa
    return qa, qb


def rdma_put(qp: QueuePair, src: MemoryRegion, length: int, remote_offset: int, rkey: int) -> int:
    """Zero-copy put: one RDMA write, then poll the initiator's CQ until it completes."""
    qp.rdma_write(src, length, remote_offset, rkey, wr_id=1)
    for _ in range(8):
        for wc in qp.local.poll_cq():
            if wc.wr_id == 1:
                return wc.byte_len
    raise VerbsError("the write never completed")


def send_recv(
    qs: QueuePair, qr: QueuePair, src: MemoryRegion, dst: MemoryRegion, length: int
) -> int:
    """Two-sided transfer: the receiver posts first, the sender sends, both sides poll."""
    qr.post_recv(dst, wr_id=2)
    qs.post_send(src, length, wr_id=1)
    got = [wc for wc in qr.local.poll_cq() if wc.wr_id == 2]
    sent = [wc for wc in qs.local.poll_cq() if wc.wr_id == 1]
    if not got or not sent:
        raise VerbsError("a completion is missing")
    return got[0].byte_len
