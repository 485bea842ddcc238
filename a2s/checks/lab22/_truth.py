"""Lab 22's trusted side (exercises 22.1 and 22.2): two simulated hosts, their regions and the
log of every verb, served to the learner's child process as requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitorch.comm import verbs as V


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


# ----------------------------------------------------------------------------- the hosts
# The two hosts, their regions, queue pairs and the log of every verb live in the grader's
# process; the learner's function runs in a forked child (harness.run_apart) and gets the
# proxies below, whose every call is a request. Nothing in the child reaches the log.


class _World:
    """Two fresh hosts, regions registered, counters zeroed; every verb logged here."""

    def __init__(self, size: int, length: int, seed: int) -> None:
        self.entries: list[tuple[str, str, tuple[int, ...]]] = []
        self.refused: list[str] = []
        a, b = V.Host("sender"), V.Host("receiver")
        self.hosts = {"sender": a, "receiver": b}
        self.payload = np.random.default_rng(seed).integers(1, 256, length, dtype=np.uint8)
        self.src = a.reg_mr(np.zeros(size, np.uint8))
        self.src.buf[:length] = self.payload
        self.dst = b.reg_mr(np.zeros(size, np.uint8), V.LOCAL_WRITE | V.REMOTE_WRITE)
        self.mrs: dict[int, V.MemoryRegion] = {1: self.src, 2: self.dst}
        qa, qb = V.connect(a, b)
        self.qps = {"qa": qa, "qb": qb}
        for h in (a, b):
            h.cpu_ops = h.copies = h.bytes_copied = h.wire_bytes = 0
        self.log = _Log(self.entries)

    def info(self, mr: V.MemoryRegion) -> tuple[Any, ...]:
        key = next((k for k, m in self.mrs.items() if m is mr), None)
        if key is None:
            key = len(self.mrs) + 1
            self.mrs[key] = mr
        return (key, mr.host.name, mr.lkey, mr.rkey, mr.access, mr.length)

    def mr(self, key: int) -> V.MemoryRegion:
        mr = self.mrs.get(int(key))
        if mr is None:
            raise V.VerbsError("no such memory region")
        return mr

    def serve(self) -> dict[str, Callable[..., Any]]:
        world, hosts, qps, log = self, self.hosts, self.qps, self.entries

        def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                try:
                    return ("ok", fn(*args))
                except V.VerbsError as exc:
                    world.refused.append(str(exc))
                    return ("verbs", str(exc))

            return call

        def reg_mr(host: str, buf: Any, access: int) -> tuple[Any, ...]:
            if type(buf) is not np.ndarray:
                raise V.VerbsError("register a 1-D uint8 buffer")
            mr = hosts[host].reg_mr(buf.copy(), int(access))
            log.append((host, "reg_mr", ()))
            return world.info(mr)

        def memcpy(host: str, dst: int, src: int, length: int) -> None:
            hosts[host].memcpy(world.mr(dst), world.mr(src), int(length))
            log.append((host, "memcpy", (int(length),)))

        def poll_cq(host: str, max_entries: int) -> list[tuple[int, str, int]]:
            out = hosts[host].poll_cq(int(max_entries))
            log.append((host, "poll_cq", (len(out),)))
            return [(wc.wr_id, wc.opcode, wc.byte_len) for wc in out]

        def post_recv(qp: str, mr: int, wr_id: int) -> None:
            q, m = qps[qp], world.mr(mr)
            q.post_recv(m, wr_id)
            log.append((q.local.name, "post_recv", (m.lkey,)))

        def post_send(qp: str, mr: int, length: int, wr_id: int) -> None:
            q, m = qps[qp], world.mr(mr)
            q.post_send(m, int(length), wr_id)
            log.append((q.local.name, "post_send", (m.lkey, int(length))))

        def one_sided(verb: str) -> Callable[..., None]:
            def call(qp: str, mr: int, length: int, off: int, rkey: int, wr_id: int) -> None:
                q, m = qps[qp], world.mr(mr)
                getattr(q, verb)(m, int(length), int(off), int(rkey), wr_id)
                log.append((q.local.name, verb, (m.lkey, int(length), int(off), int(rkey))))

            return call

        def buf_get(mr: int, key: tuple) -> Any:
            return world.mr(mr).buf[_index(key)].copy()

        def buf_set(mr: int, key: tuple, value: Any) -> None:
            m = world.mr(mr)  # the CPU of the region's host writes it: a copy, counted
            view = m.buf[_index(key)]
            m.buf[_index(key)] = np.asarray(value).astype(np.uint8)
            m.host.cpu_ops += 1
            log.append((m.host.name, "memcpy", (int(np.asarray(view).size),)))

        def mrs(host: str) -> list[tuple[Any, ...]]:
            return [world.info(m) for m in hosts[host].mrs.values()]

        def counter(host: str, name: str) -> int:
            if name not in ("cpu_ops", "copies", "bytes_copied", "wire_bytes"):
                raise V.VerbsError(f"no counter {name}")
            return int(getattr(hosts[host], name))

        def cq(host: str) -> list[tuple[int, str, int]]:
            return [(wc.wr_id, wc.opcode, wc.byte_len) for wc in hosts[host].cq]

        table: dict[str, Callable[..., Any]] = {
            "reg_mr": reg_mr,
            "memcpy": memcpy,
            "poll_cq": poll_cq,
            "post_recv": post_recv,
            "post_send": post_send,
            "rdma_write": one_sided("rdma_write"),
            "rdma_read": one_sided("rdma_read"),
            "buf_get": buf_get,
            "buf_set": buf_set,
            "mrs": mrs,
            "counter": counter,
            "cq": cq,
        }
        return {f"verbs.{k}": guarded(v) for k, v in table.items()}


def _index(key: Any) -> Any:
    if type(key) is tuple and len(key) == 4 and key[0] == "s":
        return slice(key[1], key[2], key[3])
    if type(key) is tuple and len(key) == 2 and key[0] == "i":
        return int(key[1])
    raise V.VerbsError("index a region's buffer with an int or a slice")
