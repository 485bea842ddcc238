"""What the ranks run in lab 21's real-process checks and experiment (importable: spawned).

:func:`grade_ring` runs a learner's ring, given as source text, on every case of one
launch: its function receives a :class:`RankView` (only ``rank``, ``world_size``, ``send``,
``recv``, ``isend``, ``irecv``, ``barrier``), and while it runs every collective of
``torch.distributed`` raises :class:`CollectiveCalled`. Ground truth is gloo's own
``all_reduce``, called outside that window. Each case returns the result, the truth and the
bytes and messages counted by :class:`~minitorch.comm.torchdist.TorchDistComm`.
:func:`time_ring` times the learner's ring (or the reference) against gloo's all-reduce.
"""

from __future__ import annotations

import hmac
import pickle
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from minitorch.checks.lab21.seal import LEARNER

__all__ = ["CollectiveCalled", "RankView", "grade_ring", "no_collectives", "time_ring"]

COLLECTIVES = (
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "gather", "scatter", "all_reduce_coalesced", "broadcast_object_list",
)  # fmt: skip


_PROFILE = types.MethodType(sys.audit, "a2s.profile")  # every call becomes an audit event


class CollectiveCalled(RuntimeError):
    """The learner's code called a torch.distributed collective."""


class RankView:
    """What the learner's function may use of the communicator, and nothing else."""

    __slots__ = ("barrier", "irecv", "isend", "rank", "recv", "send", "world_size")

    def __init__(self, comm: Any) -> None:
        self.rank, self.world_size = comm.rank, comm.world_size
        self.send, self.recv, self.isend = comm.send, comm.recv, comm.isend
        self.irecv, self.barrier = comm.irecv, comm.barrier


@contextmanager
def no_collectives() -> Iterator[None]:
    """Make every torch.distributed collective raise while the block runs."""
    import torch.distributed as dist

    def refuse(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise CollectiveCalled(
                f"torch.distributed.{name} was called: build the all-reduce from send/recv"
            )

        return call

    saved = {n: getattr(dist, n) for n in COLLECTIVES if hasattr(dist, n)}
    try:
        for n in saved:
            setattr(dist, n, refuse(n))
        yield
    finally:
        for n, f in saved.items():
            setattr(dist, n, f)


def _learner(source: str | None, name: str) -> Callable[..., Any]:
    if source is None:
        from minitorch.comm.allreduce import ring_all_reduce

        return ring_all_reduce
    namespace: dict[str, Any] = {"np": np, "numpy": np, "__name__": "__a2s_rank__"}
    exec(compile(source, f"{LEARNER}{name}>", "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


def _data(rank: int, n: int, dtype: str, seed: int, gen: Any = None) -> np.ndarray:
    gen = np.random.default_rng([seed, rank]) if gen is None else gen
    if np.dtype(dtype).kind in "iu":
        return gen.integers(-1000, 1000, n).astype(dtype)
    return gen.standard_normal(n).astype(dtype)


def _scrub() -> None:
    """Drop this process's own reference to its launch arguments (the signing key)."""
    import multiprocessing as mp

    mp.current_process()._args = ()  # type: ignore[attr-defined]


def grade_ring(
    comm: Any, source: str, name: str, cases: list[tuple[int, str, int]],
    secret: dict[str, Any] | None = None,
) -> Any:  # fmt: skip
    """Run the learner's ``name`` on each ``(n, dtype, seed)``; one record per case.

    With ``secret`` (``key``, ``report``, ``seal``), as the grader launches it: the rank is
    sealed (:mod:`minitorch.checks.lab21.seal`) before the learner's source is compiled, every
    rank's data comes from fresh OS entropy (the seeds are public), bytes and messages are
    counted by the seal, and the records come back pickled and signed with the key (HMAC).
    """
    sealed = bool(secret and secret.get("seal"))
    data, quiet = _data, no_collectives  # module globals the learner could rebind later
    if sealed:
        assert secret is not None
        import torch
        import torch.distributed as dist

        from minitorch.checks.lab21 import seal

        _scrub()
        # bound before the learner's code exists: it could rebind module attributes later
        gen, audit, setprofile, profile = (
            np.random.default_rng(),
            sys.audit,
            sys.setprofile,
            _PROFILE,
        )
        seal.install(comm.rank, comm.world_size, secret["report"], grade_ring.__code__)
        parts = (comm._dist, comm._torch, type(comm), set(vars(comm)))  # checked after each case
    fn, view, out = _learner(source, name), RankView(comm), []
    for n, dtype, seed in cases:
        x = data(comm.rank, n, dtype, seed, gen if sealed else None)  # sealed: fresh entropy
        want = comm.torch_all_reduce(x)
        comm.barrier()
        b0, m0, to0 = comm.bytes_sent, comm.messages_sent, list(comm.bytes_to)
        counted: list[Any] = []
        try:
            with quiet():
                if sealed:
                    audit("a2s.window", "open")
                    setprofile(profile)
                try:
                    got = fn(view, x.copy())
                    if got is not None:
                        got = np.array(got, copy=True)
                        if got.dtype == object:
                            raise TypeError("return a numeric array (the sum), not objects")
                finally:
                    if sealed:
                        setprofile(None)
                        audit("a2s.window", "close", counted)
            comm.flush()
            error = ""
        except Exception as exc:  # reported by the grader in the parent
            got, error = None, f"{type(exc).__name__}: {exc}"
        rec = {"got": got, "want": want, "error": error, "x": x}
        rec["bytes"], rec["messages"] = comm.bytes_sent - b0, comm.messages_sent - m0
        rec["to"] = [a - b for a, b in zip(comm.bytes_to, to0, strict=True)]
        if sealed and not error:
            if (comm._dist, comm._torch, type(comm), set(vars(comm))) != (dist, torch, *parts[2:]):
                rec["error"] = error = "the communicator was changed"
            elif counted != [rec["bytes"], rec["messages"], rec["to"]]:
                rec["error"] = error = (
                    f"the communicator's counters say {rec['bytes']} bytes in "
                    f"{rec['messages']} messages, gloo carried {counted[:2]} (bytes, messages)"
                )
        out.append(rec)
        if error:
            break
        comm.barrier()
    if secret is None:
        return out
    payload = pickle.dumps(out)
    mac = hmac.new(bytes.fromhex(secret["key"]), payload, "sha256").hexdigest()
    return {"payload": payload, "mac": mac}


def time_ring(
    comm: Any, source: str | None, name: str, sizes: list[int], reps: int = 3
) -> list[tuple[float, float]]:
    """Best-of-``reps`` seconds of the ring and of gloo's all-reduce on float32 buffers."""
    fn, view, out = _learner(source, name), RankView(comm), []
    for n in sizes:
        x = np.ones(n, np.float32)
        best = [float("inf"), float("inf")]
        for _ in range(reps):
            for k in (0, 1):
                comm.barrier()
                t0 = time.perf_counter()
                fn(view, x) if k == 0 else comm.torch_all_reduce(x)
                comm.flush()
                best[k] = min(best[k], time.perf_counter() - t0)
        out.append((best[0], best[1]))
    return out
