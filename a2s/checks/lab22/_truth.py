"""Lab 22's trusted side (exercises 22.1 and 22.2): two simulated hosts, their regions and the
log of every verb, served to the learner's child process as requests, and the proxies handed
to the learner's code in that child: queue pairs, hosts, regions and a region's bytes, whose
every call is a request. The graders read the log through ``verbs._Log``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks import guard
from a2s.checks.harness import request
from minitorch.comm import verbs as V

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


# --------------------------------------------------------- the proxies, in the learner's child
def _ask(name: str, *args: Any) -> Any:
    """Child side: one verb, a request to the grader's process; a refusal is a VerbsError."""
    status, value = request(f"verbs.{name}", *args)
    if status == "verbs":
        raise V.VerbsError(value)
    return value


def _key(k: Any) -> tuple:
    if isinstance(k, slice):
        return ("s", k.start, k.stop, k.step)
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        return ("i", int(k))
    raise TypeError("index a region's buffer with an int or a slice")


class _Buf:
    """A region's bytes, read and written by requests (a write is a CPU copy, counted)."""

    __slots__ = ("_mr", "size")

    def __init__(self, mr: int, size: int) -> None:
        self._mr, self.size = mr, size

    def __getitem__(self, k: Any) -> np.ndarray:
        return _ask("buf_get", self._mr, _key(k))  # type: ignore[no-any-return]

    def __setitem__(self, k: Any, value: Any) -> None:
        _ask("buf_set", self._mr, _key(k), np.asarray(value, dtype=np.uint8))

    def __len__(self) -> int:
        return self.size

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self[:]
        return out if dtype is None else out.astype(dtype)

    shape = property(lambda self: (self.size,))
    dtype = property(lambda self: np.dtype(np.uint8))
    ndim = 1


class _Region:
    """A registered region as the learner's code sees it: keys, access, length, bytes."""

    __slots__ = ("_id", "access", "buf", "host", "length", "lkey", "rkey")

    def __init__(self, info: tuple[Any, ...]) -> None:
        self._id, host, self.lkey, self.rkey, self.access, self.length = info
        self.host, self.buf = _Host(host), _Buf(self._id, self.length)

    def __repr__(self) -> str:
        return f"<MemoryRegion of {self.host.name}: {self.length} B, lkey {self.lkey:#x}>"


class _Host:
    """A host as the learner's code sees it: its verbs, its regions, its counters (read)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def reg_mr(self, buf: Any, access: int = V.LOCAL_WRITE) -> _Region:
        return _Region(_ask("reg_mr", self.name, np.asarray(buf), int(access)))

    def memcpy(self, dst: _Region, src: _Region, length: int) -> None:
        _ask("memcpy", self.name, dst._id, src._id, int(length))

    def poll_cq(self, max_entries: int = 16) -> list[V.WorkCompletion]:
        return [V.WorkCompletion(*wc) for wc in _ask("poll_cq", self.name, int(max_entries))]

    @property
    def mrs(self) -> dict[int, _Region]:
        return {info[3]: _Region(info) for info in _ask("mrs", self.name)}

    @property
    def cq(self) -> list[V.WorkCompletion]:
        """A copy of the completion queue (emptying it empties the copy only)."""
        return [V.WorkCompletion(*wc) for wc in _ask("cq", self.name)]

    # the host's counters, read from the grader's process; a write reaches nothing there
    cpu_ops = property(lambda self: _ask("counter", self.name, "cpu_ops"), lambda s, v: None)
    copies = property(lambda self: _ask("counter", self.name, "copies"), lambda s, v: None)
    bytes_copied = property(
        lambda self: _ask("counter", self.name, "bytes_copied"), lambda s, v: None
    )
    wire_bytes = property(lambda self: _ask("counter", self.name, "wire_bytes"), lambda s, v: None)

    def __repr__(self) -> str:
        return f"<Host {self.name}>"


class _QueuePair:
    """A queue pair as the learner's code sees it: its verbs, ``local``, ``remote``, ``peer``."""

    __slots__ = ("_name", "local", "remote")

    def __init__(self, name: str, local: str, remote: str) -> None:
        self._name, self.local, self.remote = name, _Host(local), _Host(remote)

    @property
    def peer(self) -> _QueuePair:
        other = "qb" if self._name == "qa" else "qa"
        return _QueuePair(other, self.remote.name, self.local.name)

    def post_recv(self, mr: _Region, wr_id: int = 0) -> None:
        _ask("post_recv", self._name, _region(mr), wr_id)

    def post_send(self, mr: _Region, length: int, wr_id: int = 0) -> None:
        _ask("post_send", self._name, _region(mr), int(length), wr_id)

    def rdma_write(
        self, mr: _Region, length: int, remote_offset: int, rkey: int, wr_id: int = 0
    ) -> None:
        _ask("rdma_write", self._name, _region(mr), length, remote_offset, rkey, wr_id)

    def rdma_read(
        self, mr: _Region, length: int, remote_offset: int, rkey: int, wr_id: int = 0
    ) -> None:
        _ask("rdma_read", self._name, _region(mr), length, remote_offset, rkey, wr_id)

    def __repr__(self) -> str:
        return f"<QueuePair {self.local.name} -> {self.remote.name}>"


for _cls in (_Buf, _Region, _Host, _QueuePair):  # handed to the learner: callable by it
    getattr(guard, "handout", lambda obj: obj)(_cls)


def _region(mr: Any) -> int:
    if type(mr) is not _Region:
        raise V.VerbsError("the lkey does not name a region of this host")
    return int(mr._id)
