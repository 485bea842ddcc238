"""The proxies of exercises 22.1 and 22.2 handed to the learner's code in the forked child:
queue pairs, hosts, regions and a region's bytes, whose every call is a request."""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.checks import guard
from a2s.checks.harness import request
from minitorch.comm import verbs as V


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
