"""The Communicator protocol over ``torch.distributed`` (gloo), and a launcher of local ranks.

:func:`launch` spawns ``world_size`` processes on this machine (``spawn`` start method, gloo
over 127.0.0.1), builds a :class:`TorchDistComm` in each, calls ``fn(comm, *args)`` on every
rank and returns the results in rank order. ``fn`` is an importable function (or a
``"module:function"`` string): notebook cells are not importable, so a learner's function
travels as source text and runs through :func:`run_source`. A rank that raises makes
:func:`launch` raise :class:`RankError` with that rank's traceback; a rank that dies or hangs
is reported the same way after ``timeout`` seconds.

:class:`TorchDistComm` moves numpy arrays: a 64-byte header (dtype, shape) and the payload,
one gloo message while a channel's size repeats; only payload bytes count in ``bytes_sent``
(per peer in ``bytes_to``), as on the simulated world. ``send``/``isend`` are buffered (copied;
done by ``flush``/``barrier``), so a ring where every rank sends first cannot deadlock.
This is the one reference module that imports torch, and only inside the spawned ranks.

Spawning costs about 8 s for 2 ranks and 18 s for 4 on a 2-core laptop (each imports torch):
batch every case of a check into one launch. Lab: 21_ring_allreduce. Paper: Sergeev & Del
Balso, "Horovod: fast and easy distributed deep learning in TensorFlow" (2018) for the
launcher pattern; PyTorch ``torch.distributed`` documentation (gloo backend).
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import queue
import socket
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np

__all__ = ["HOST", "RankError", "TorchDistComm", "launch", "run_source"]

HOST = "127.0.0.1"
_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8]
_HEADER = 8  # int64 words: dtype code, ndim, up to six dimensions
_JOINED = 16  # added to the dtype code when the payload follows the header in one message
_Fn = Callable[..., Any] | str  # a rank program, or "module:function"


class RankError(RuntimeError):
    """A rank raised, died or did not finish in time; the message holds its traceback."""


class _Send:
    """A buffered send: the data was copied when it was posted, so ``wait()`` returns at once.

    gloo completes a send only once the receiver has posted the matching receive; waiting for
    that here would deadlock ``h = irecv(left); isend(x, right).wait(); h.wait()``. The
    transfer itself is completed by :meth:`TorchDistComm.flush` (or ``barrier``).
    """

    def __init__(self, works: list[Any], keep: list[Any]) -> None:
        self._works, self._keep = works, keep  # the tensors must outlive the transfer
        self.reuse: np.ndarray | None = None  # a joined buffer the comm may send again after

    def wait(self) -> None:
        return None

    def done(self) -> bool:
        return all(w.is_completed() for w in self._works)

    def complete(self) -> None:
        for w in self._works:
            w.wait()
        self._works, self._keep = [], []


class _Recv:
    def __init__(self, comm: TorchDistComm, src: int, tag: int) -> None:
        self._comm, self._src, self._tag = comm, src, tag
        self._value: np.ndarray | None = None

    def wait(self) -> np.ndarray:
        if self._value is None:
            self._value = self._comm.recv(self._src, self._tag)
        return self._value


class TorchDistComm:
    """One rank of a gloo process group, speaking numpy (see the module docstring)."""

    def __init__(self) -> None:
        import torch
        import torch.distributed as dist

        self._torch, self._dist = torch, dist
        self._rank, self._size = dist.get_rank(), dist.get_world_size()
        self._pending: list[_Send] = []
        # payload bytes of the last message per (peer, tag), kept alike on both ends
        self._sent_size: dict[tuple[int, int], int] = {}
        self._recv_size: dict[tuple[int, int], int] = {}
        self._free: dict[int, list[np.ndarray]] = {}  # send buffers whose transfer completed
        self.messages_sent = self.bytes_sent = 0
        self.bytes_to = [0] * self._size

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._size

    def _check_peer(self, peer: int) -> int:
        peer = int(peer)
        if not 0 <= peer < self._size or peer == self._rank:
            raise ValueError(f"rank {self._rank}: no peer {peer} (world size {self._size})")
        return peer

    def isend(self, x: np.ndarray, dst: int, tag: int = 0) -> _Send:
        dst = self._check_peer(dst)
        a = np.ascontiguousarray(x)
        code = next((i for i, d in enumerate(_DTYPES) if a.dtype == d), None)
        if code is None or a.ndim > _HEADER - 2:
            raise TypeError(f"cannot send dtype {a.dtype} with {a.ndim} dimensions")
        t, key = self._torch, (dst, tag)
        same = self._sent_size.get(key, 0) == a.nbytes  # the receiver posts header + this size
        self._sent_size[key] = a.nbytes
        msg: np.ndarray
        if same:  # header and payload in one message: one rendezvous, one copy
            msg = self._spare(8 * _HEADER + a.nbytes)
            head = msg[: 8 * _HEADER].view(np.int64)
            head[:] = 0
            msg[8 * _HEADER :] = a.reshape(-1).view(np.uint8)
        else:  # the size changed: the header announces it, the payload follows
            msg = head = np.zeros(_HEADER, np.int64)
        head[0], head[1], head[2 : 2 + a.ndim] = code + _JOINED * same, a.ndim, a.shape
        keep = [t.from_numpy(msg)]
        works = [self._dist.isend(keep[0], dst, tag=2 * tag)]
        if a.size and not same:
            keep.append(t.from_numpy(a.copy()).reshape(-1))
            works.append(self._dist.isend(keep[1], dst, tag=2 * tag + 1))
        self.messages_sent += 1
        self.bytes_sent += a.nbytes
        self.bytes_to[dst] += a.nbytes
        handle = _Send(works, keep)
        handle.reuse = msg if same else None
        self._retire()
        self._pending.append(handle)
        return handle

    def _spare(self, nbytes: int) -> np.ndarray:
        """A send buffer of ``nbytes``: one whose send completed if any (fresh pages fault)."""
        free = self._free.get(nbytes)
        return free.pop() if free else np.empty(nbytes, np.uint8)

    def _retire(self) -> None:
        """Drop completed sends; keep up to two of their joined buffers per size for reuse."""
        keep = []
        for s in self._pending:
            if not s.done():
                keep.append(s)
            elif s.reuse is not None:
                free = self._free.setdefault(s.reuse.nbytes, [])
                if len(free) < 2:
                    free.append(s.reuse)
        self._pending = keep

    def send(self, x: np.ndarray, dst: int, tag: int = 0) -> None:
        self.isend(x, dst, tag)

    def recv(self, src: int, tag: int = 0) -> np.ndarray:
        src = self._check_peer(src)
        t, key = self._torch, (src, tag)
        msg = np.empty(8 * _HEADER + self._recv_size.get(key, 0), np.uint8)
        self._dist.recv(t.from_numpy(msg), src, tag=2 * tag)
        h = msg[: 8 * _HEADER].view(np.int64)
        joined, code = divmod(int(h[0]), _JOINED)
        shape = tuple(int(s) for s in h[2 : 2 + int(h[1])])
        dtype = np.dtype(_DTYPES[code])
        self._recv_size[key] = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if joined:  # the payload came with the header: a view of it, no copy
            return msg[8 * _HEADER :].view(dtype).reshape(shape)
        out = np.empty(shape, dtype)
        if out.size:
            buf = t.from_numpy(out).reshape(-1)
            self._dist.recv(buf, src, tag=2 * tag + 1)
        return out

    def irecv(self, src: int, tag: int = 0) -> _Recv:
        return _Recv(self, self._check_peer(src), tag)

    def flush(self) -> None:
        """Complete every buffered send."""
        for s in self._pending:
            s.complete()
        self._retire()

    def barrier(self) -> None:
        self.flush()
        self._dist.barrier()

    def torch_all_reduce(self, x: np.ndarray) -> np.ndarray:
        """``dist.all_reduce`` (sum) of a copy of ``x``: the library's own, for comparison."""
        buf = self._torch.from_numpy(np.array(x, copy=True))
        self._dist.all_reduce(buf)
        return buf.numpy()


def run_source(comm: TorchDistComm, source: str, name: str, *args: Any) -> Any:
    """Define ``name`` from ``source`` in a fresh namespace (``np`` bound) and call it on comm."""
    namespace: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    exec(compile(source, f"<{name} on rank {comm.rank}>", "exec"), namespace)
    return namespace[name](comm, *args)


def _resolve(fn: Callable[..., Any] | str) -> Callable[..., Any]:
    if callable(fn):
        return fn
    module, _, attr = fn.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def _rank_main(fn: Any, rank: int, size: int, port: int, args: tuple, out: Any, cfg: dict) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(cfg["threads"])
        wait = timedelta(seconds=cfg["timeout"])
        url = f"tcp://{HOST}:{port}"
        dist.init_process_group("gloo", init_method=url, rank=rank, world_size=size, timeout=wait)
        try:
            comm = TorchDistComm()
            result = _resolve(fn)(comm, *args)
            comm.flush()
            out.put((rank, True, result))
        finally:
            dist.destroy_process_group()
    except BaseException:  # the parent reports it
        out.put((rank, False, traceback.format_exc(limit=8)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _root_cause(errors: dict[int, str], out: Any, until: float) -> str:
    """The first error that is not a lost connection: when one rank raises, its peers fail too."""
    while time.monotonic() < until and len(errors) < 16:
        try:
            rank, ok, value = out.get(timeout=max(0.05, until - time.monotonic()))
        except queue.Empty:
            break
        if not ok:
            errors[rank] = value
    lost = [r for r, tb in errors.items() if "gloo/transport" in tb or "Connection" in tb]
    rank = min((r for r in errors if r not in lost), default=min(errors))
    also = sorted(r for r in errors if r != rank)
    tail = f"\n(rank(s) {also} failed after it: lost their connection)" if also else ""
    return f"rank {rank} raised:\n{errors[rank]}{tail}"


def launch(fn: _Fn, world_size: int, *args: Any, timeout: float = 120.0, threads: int = 1) -> list:
    """Run ``fn(comm, *args)`` on ``world_size`` fresh local processes; results in rank order."""
    if not 1 <= int(world_size) <= 16:
        raise ValueError(f"world_size must be 1..16, not {world_size}")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    cfg = {"threads": int(threads), "timeout": float(timeout)}
    port = _free_port()
    rest, ranks = (world_size, port, args, out, cfg), range(world_size)
    procs = [ctx.Process(target=_rank_main, args=(fn, r, *rest), daemon=True) for r in ranks]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(results) < world_size:
            try:
                rank, ok, value = out.get(timeout=0.5)
            except queue.Empty:
                dead = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    why = f"died (exit code {procs[dead[0]].exitcode})" if dead else "timed out"
                    raise RankError(f"rank {dead[0] if dead else '?'} {why}") from None
                continue
            if not ok:
                raise RankError(_root_cause({rank: value}, out, time.monotonic() + 3.0))
            results[rank] = value
    finally:
        for p in procs:
            p.join(timeout=5.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)
    return [results[r] for r in range(world_size)]
