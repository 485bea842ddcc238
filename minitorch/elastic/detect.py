"""Finding a dead or hung rank within a deadline, without calling a slow rank failed.

Every rank publishes a heartbeat ``"<step> <time>"`` in a c10d ``TCPStore`` (hosted by rank 0,
as torchrun's agent hosts the rendezvous store) after each step, and keeps beating while it
waits in a collective. A rank that neither steps nor waits stops beating: a *dead* rank (its
process is gone) and a *hung* one (alive, stuck in its own code) alike. A survivor waiting in
an all-reduce polls the beats; a rank whose last beat is older than ``deadline`` seconds is
failed (:class:`HeartbeatMonitor`); after the first, a survivor listens one more deadline so
that ranks which stopped together but went silent a poll apart are all named. A *slow* rank
beats every step, so it is never named as long as its step is shorter than the deadline.
Without heartbeats the fallback is the collective's own timeout: after ``collective_timeout``
seconds the suspects are the ranks whose last published step is behind
(:meth:`HeartbeatMonitor.behind`).

On detection each survivor stops, returns a report (who failed, how, when, at which step) and
its process exits with code 0; :func:`run_detection` spawns the gloo ranks (torch imported only
in them), plants the failures, collects the reports and kills what is left of a hung rank.
Detection latency is measured from the failing rank's own record of when it failed.

Lab: 32_fault_tolerance_elastic
Paper: PyTorch ``torch.distributed`` (``TCPStore``, gloo ``Work.is_completed``/``wait``) and
TorchElastic's agent (worker liveness by monitoring); T. D. Chandra, S. Toueg, "Unreliable
failure detectors for reliable distributed systems", JACM 43(2), 1996 (a detector is judged by
completeness and accuracy: every failed rank named, no live one).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import socket
import time
import traceback
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

__all__ = ["HeartbeatMonitor", "run_detection"]

HOST = "127.0.0.1"


class HeartbeatMonitor:
    """The last ``(step, time)`` heard from each rank, and who is past the deadline."""

    def __init__(self, world: int, deadline: float, start: float = 0.0) -> None:
        self.deadline = float(deadline)
        self.last = {r: (0, float(start)) for r in range(world)}

    def beat(self, rank: int, step: int, t: float) -> None:
        if t >= self.last[rank][1]:
            self.last[rank] = (int(step), float(t))

    def failed(self, now: float, exclude: Sequence[int] = ()) -> list[int]:
        """Ranks silent for longer than the deadline at ``now``."""
        return sorted(
            r for r, (_, t) in self.last.items() if r not in exclude and now - t > self.deadline
        )

    def behind(self, step: int, exclude: Sequence[int] = ()) -> list[int]:
        """Ranks whose last published step is below ``step`` (the collective-timeout view)."""
        return sorted(r for r, (s, _) in self.last.items() if r not in exclude and s < step)


def _read_beats(store: Any, world: int, mon: HeartbeatMonitor) -> None:
    for r in range(world):
        key = f"hb/{r}"
        if store.check([key]):
            step, t = store.get(key).decode().split()
            mon.beat(r, int(step), float(t))


def _fail_times(store: Any, ranks: Sequence[int]) -> dict[int, float]:
    out = {}
    for r in ranks:
        if store.check([f"fail/{r}"]):
            out[r] = float(store.get(f"fail/{r}").decode())
    return out


def _rank_loop(rank: int, world: int, store: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    mon = HeartbeatMonitor(world, cfg["deadline"], time.monotonic())
    x = torch.ones(4, dtype=torch.float64)
    for step in range(1, cfg["steps"] + 1):
        if step == cfg["fail_step"] and rank in cfg["dead"]:
            store.set(f"fail/{rank}", repr(time.monotonic()))
            os.kill(os.getpid(), signal.SIGKILL)
        if step == cfg["fail_step"] and rank in cfg["hung"]:
            store.set(f"fail/{rank}", repr(time.monotonic()))
            time.sleep(3600)  # alive, no progress: the parent kills it
        time.sleep(cfg["step_s"] * (cfg["slow_factor"] if rank in cfg["slow"] else 1.0))
        if cfg["heartbeats"]:
            store.set(f"hb/{rank}", f"{step} {time.monotonic()!r}")
        else:
            store.set(f"step/{rank}", str(step))  # arrived at this step's collective
        work = dist.all_reduce(x, async_op=True)
        started, broken, first = time.monotonic(), "", 0.0
        suspects: set[int] = set()
        while True:
            if work.is_completed() and not broken:
                try:
                    work.wait()
                    break
                except RuntimeError as e:  # a peer's connection broke: find out who
                    broken = f" after a collective error ({str(e).splitlines()[0][:80]})"
            now = time.monotonic()
            if cfg["heartbeats"]:
                store.set(f"hb/{rank}", f"{step} {now!r}")  # waiting, still alive
                _read_beats(store, world, mon)
                gone = mon.failed(now, exclude=[rank])
                if gone and not suspects:
                    first = now  # ranks that stopped together go silent a poll or two apart:
                suspects.update(gone)  # keep listening one more deadline to name them all
                if suspects and now - first >= cfg["deadline"]:
                    return _report(rank, step, sorted(suspects), "heartbeat" + broken, store)
            elif broken or now - started > cfg["collective_timeout"]:
                for r in range(world):  # who never arrived: their last published step
                    if store.check([f"step/{r}"]):
                        mon.beat(r, int(store.get(f"step/{r}").decode()), now)
                how = "collective error" if broken else "collective timeout"
                return _report(rank, step, mon.behind(step, exclude=[rank]), how, store)
            time.sleep(cfg["poll_s"])
    return {"rank": rank, "failed": [], "how": "finished", "step": cfg["steps"], "latency": {}}


def _report(rank: int, step: int, failed: list[int], how: str, store: Any) -> dict[str, Any]:
    now = time.monotonic()
    fail = _fail_times(store, failed)
    latency = {r: now - t for r, t in fail.items()}
    return {"rank": rank, "failed": failed, "how": how, "step": step, "latency": latency}


def _rank_main(
    rank: int, world: int, ports: tuple[int, int], cfg: dict[str, Any], out: Any
) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        wait = timedelta(seconds=cfg["collective_timeout"] + 30)
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{HOST}:{ports[0]}",
            rank=rank,
            world_size=world,
            timeout=wait,
        )
        store = dist.TCPStore(HOST, ports[1], world, rank == 0, timeout=timedelta(seconds=60))
        dist.barrier()
        report = _rank_loop(rank, world, store, cfg)
        out.put((rank, True, report))
        store.set(f"done/{rank}", "1")
        if rank == 0:  # the store's host leaves last: wait for the other survivors' reports
            others = [f"done/{r}" for r in range(1, world) if r not in report["failed"]]
            end = time.monotonic() + 3 * cfg["deadline"] + cfg["collective_timeout"]
            while others and not store.check(others) and time.monotonic() < end:
                time.sleep(cfg["poll_s"])
    except BaseException:
        out.put((rank, False, traceback.format_exc(limit=6)))
    finally:
        out.close()
        out.join_thread()
        os._exit(0)  # a clean exit: no teardown of a group whose peer is gone


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def run_detection(
    world: int = 4,
    dead: Sequence[int] = (1,),
    hung: Sequence[int] = (2,),
    slow: Sequence[int] = (3,),
    *,
    steps: int = 12,
    fail_step: int = 3,
    step_s: float = 0.05,
    slow_factor: float = 4.0,
    deadline: float = 1.0,
    heartbeats: bool = True,
    collective_timeout: float = 3.0,
    poll_s: float = 0.02,
    timeout: float = 90.0,
) -> dict[str, Any]:
    """Spawn ``world`` gloo ranks, fail some at ``fail_step``; the survivors' reports.

    Returns ``{"reports": {rank: report}, "exitcodes": {rank: code}, "errors": {...}}``;
    rank 0 hosts the store and must not be planted with a failure."""
    planted = set(dead) | set(hung)
    if 0 in planted or not planted <= set(range(world)):
        raise ValueError("failures must be planted on ranks 1..world-1 (rank 0 hosts the store)")
    cfg = dict(
        steps=steps,
        fail_step=fail_step,
        step_s=step_s,
        slow_factor=slow_factor,
        deadline=deadline,
        heartbeats=heartbeats,
        collective_timeout=collective_timeout,
        poll_s=poll_s,
        dead=set(dead),
        hung=set(hung),
        slow=set(slow),
    )
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    ports = (_free_port(), _free_port())
    procs = {
        r: ctx.Process(target=_rank_main, args=(r, world, ports, cfg, out), daemon=True)
        for r in range(world)
    }
    for p in procs.values():
        p.start()
    survivors = set(range(world)) - planted
    reports: dict[int, Any] = {}
    errors: dict[int, str] = {}
    end = time.monotonic() + timeout
    try:
        while len(reports) + len(errors) < len(survivors) and time.monotonic() < end:
            try:
                rank, ok, value = out.get(timeout=0.5)
            except queue.Empty:
                continue
            (reports if ok else errors)[rank] = value
        for r in survivors:
            procs[r].join(max(0.1, end - time.monotonic()))
    finally:
        for p in procs.values():
            if p.is_alive():
                p.kill()
            p.join(5.0)
    codes = {r: p.exitcode for r, p in procs.items()}
    return {"reports": reports, "exitcodes": codes, "errors": errors}
