"""Grader of exercise 32.7: an asynchronous save that holds the loop only for the copy.

``AsyncSaver(disk, max_pending)`` with ``save(step, state)`` (``state``: a dict of numpy
arrays the loop keeps training in place) and ``wait()``: snapshot the state, hand the copy to
a background writer that calls ``disk.write(step, snapshot)``, keep at most ``max_pending``
snapshots alive (a save that finds the bound reached waits), and ``wait()`` until every
queued save is written.

The grader's loop runs in a child process (:func:`~a2s.checks.harness.run_apart`) with the
learner's class: it sets the state of step ``k`` in place, calls ``save``, and changes every
array in place the moment ``save`` returns. ``disk`` *holds* each write until the loop is
blocked in a save for a while or waiting in ``wait()`` (a bounded hold, never a clock
asserted), then sends it to the grader's process, which records it in order with the loop's
own events (save begun, save returned, wait begun, wait returned). Judged from that record:

* what was written for step ``k`` equals the state of step ``k`` (a save without a copy
  writes what the loop made of the arrays later);
* no write happened on the loop's thread, and none before its own save returned (a
  synchronous save, or one that waits for its writer, does not overlap training);
* when a write completes, saves returned minus writes completed is at most ``max_pending``
  (a bounded queue with one more snapshot in the writer's hands exceeds it);
* every save written exactly once, in order, before ``wait()`` returned.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, grader, guarded
from a2s.checks.harness import request, run_apart

__all__ = ["check_async_saver"]

_HOLD = 0.12  # seconds a save must have been blocked before a held write goes through
_OWN = 0.6  # ... or blocked this long in the save of the write's own step (a save that joins)
_CAP = 8.0  # a write is never held longer than this
_MUT = 1000.0  # what training adds to every array right after save returns
_BLOCKS = ("minitorch.elastic.sharded", "minitorch.elastic.checkpoint")

_CASES = [
    ("max_pending=1, 4 saves", 1, 4),
    ("max_pending=2, 5 saves", 2, 5),
    ("max_pending=3, 2 saves (fewer than the bound)", 3, 2),
]


def _state(k: int) -> dict[str, np.ndarray]:
    return {
        "w": np.arange(12, dtype=np.float64).reshape(3, 4) + 10.0 * k,
        "adam_m": np.full(5, 0.5 * k),
        "step": np.array([k], np.int64),
    }


class _Loop:
    """The loop's side in the child: the hold's state and the signed requests. The learner's
    ``disk`` holds none of it (its only attribute is ``write``): rewriting the hold, or
    sending a loop event, takes reflection (closure cells, ``gc``), which the sealed kernel
    vetoes. Each request carries a sequence number and an HMAC keyed with a secret made in the
    grader's process for this run, so one sent with ``request`` itself is refused there."""

    def __init__(self, key: bytes) -> None:
        self._key, self._seq = key, 0
        self._lock = threading.Lock()  # one request at a time on the child's channel
        self.cond = threading.Condition()
        self.thread: int | None = None  # the loop thread's ident
        self.saving: tuple[int, float] | None = None  # (step, since) of the save in progress
        self.waiting = False

    def ask(self, name: str, *args: Any) -> Any:
        with self._lock:
            seq, self._seq = self._seq, self._seq + 1
            return request(name, seq, _sign(self._key, name, seq), *args)

    def write(self, step: Any, snapshot: Any) -> None:
        on_loop = threading.get_ident() == self.thread
        t0 = time.monotonic()
        with self.cond:
            while time.monotonic() - t0 < _CAP:
                cur = self.saving  # a later save's block releases at once; its own only when
                # the save is evidently waiting for it (a writer woken inside save races it)
                hold = _OWN if cur is not None and cur[0] == step else _HOLD
                if self.waiting or (cur is not None and time.monotonic() - cur[1] >= hold):
                    break
                self.cond.wait(0.01)
        self.ask("disk.write", step, snapshot, on_loop)


def _sign(key: bytes, name: str, seq: int) -> bytes:
    return hmac.new(key, f"{name}:{seq}".encode(), "sha256").digest()


def _held_disk(loop: _Loop) -> Any:
    """The learner's ``disk``: ``write`` only, a class of ``__slots__ = ()``."""

    def write(self: Any, step: Any, snapshot: Any) -> None:
        loop.write(step, snapshot)

    return type("HeldDisk", (), {"__slots__": (), "write": write})()


def _drive(cls: Any, key: bytes, max_pending: int, saves: int) -> None:
    """The grader's training loop (in the child), around the learner's class."""
    loop = _Loop(key)
    loop.thread = threading.get_ident()
    saver = cls(_held_disk(loop), max_pending)
    state = _state(0)
    for k in range(saves):
        for name, value in _state(k).items():
            state[name][...] = value
        loop.ask("loop.begin", k)
        loop.saving = (k, time.monotonic())
        saver.save(k, state)
        loop.saving = None
        loop.ask("loop.end", k)
        for a in state.values():  # training goes on in place
            a += np.asarray(_MUT, a.dtype)
    loop.ask("loop.waiting")
    loop.waiting = True
    saver.wait()
    loop.ask("loop.waited")


def _recorder(events: list[tuple], name: str, key: bytes) -> Callable[..., None]:
    """The serve entry of ``name``: records the event once its sequence number and MAC
    check out (the next number expected, signed with this run's key)."""

    def record(seq: Any, mac: Any, *args: Any) -> None:
        expected = sum(1 for e in events if e[0] != "forged")
        if (
            type(seq) is not int
            or seq != expected
            or type(mac) is not bytes
            or not hmac.compare_digest(mac, _sign(key, name, seq))
        ):
            events.append(("forged", name))
            raise CheckFailure(
                f"a {name!r} request reached the grader that its loop's disk did not send "
                "(unsigned or out of sequence): the record is the grader's, not the learner's."
            )
        events.append((name, *args))

    return record


def _equal(snap: Any, want: dict[str, np.ndarray]) -> bool:
    if type(snap) is not dict or set(snap) != set(want):
        return False
    return all(np.array_equal(np.asarray(snap[n]), want[n]) for n in want)


def _torn(snap: Any, saves: int) -> bool:
    """A snapshot equal to the loop's arrays at another moment: written without a copy."""
    later = [_state(j) for j in range(saves)]
    later += [{n: a + np.asarray(_MUT, a.dtype) for n, a in s.items()} for s in later]
    return any(_equal(snap, s) for s in later)


def _loop_events(events: list[tuple]) -> list[tuple]:
    return [e for e in events if e[0].startswith("loop.")]


def _judge(label: str, events: list[tuple], max_pending: int, saves: int) -> int:
    want: list[tuple] = [e for k in range(saves) for e in (("loop.begin", k), ("loop.end", k))]
    want += [("loop.waiting",), ("loop.waited",)]
    forged = [e[1] for e in events if e[0] == "forged"]
    if forged:
        raise CheckFailure(
            f"[{label}] {forged[0]!r} requests reached the grader that its loop's disk did not "
            "send (unsigned or out of sequence): the record is the grader's, not the learner's."
        )
    if _loop_events(events) != want:
        raise CheckFailure(
            f"[{label}] the loop's record is not the grader's loop: events were sent to the "
            "grader that its loop did not send."
        )
    ended = written = peak = 0
    steps: list[Any] = []
    for ev in events:
        if ev[0] == "loop.end":
            ended += 1
        elif ev[0] == "loop.waited":
            break
        elif ev[0] == "disk.write":
            _, step, snap, on_loop = ev
            if on_loop:
                raise CheckFailure(
                    f"[{label}] disk.write({step!r}, ...) ran on the training loop's thread: the "
                    "loop waited for the whole write (no overlap). Hand the snapshot to a "
                    "background thread that writes it."
                )
            if step not in range(saves) or step >= ended:
                raise CheckFailure(
                    f"[{label}] step {step!r} was written before save({step!r}) returned: the save "
                    "waited for its own write, so the loop never overlaps it. save() returns "
                    "once the copy is queued."
                )
            if not _equal(snap, _state(step)):
                why = (
                    " It holds what training made of the arrays after save returned: copy "
                    "every array in save (np.copy; a new dict of the same arrays is no copy)."
                    if _torn(snap, saves)
                    else " Write the snapshot as a dict of the same names and arrays."
                )
                raise CheckFailure(
                    f"[{label}] what was written for step {step} is not the state at step "
                    f"{step}.{why}"
                )
            pending = ended - written
            peak = max(peak, pending)
            if pending > max_pending:
                raise CheckFailure(
                    f"[{label}] {pending} saves had returned and were not yet written when "
                    f"step {step} was: {pending} snapshots alive, max_pending is {max_pending}."
                    + (
                        " The snapshot the writer holds counts too: a queue of max_pending "
                        "items plus that one is one too many. Take a slot before the copy and "
                        "give it back once its write is done."
                        if pending == max_pending + 1
                        else " Nothing bounded the copies: take a slot (a semaphore of "
                        "max_pending) before the copy, give it back once its write is done."
                    )
                )
            written += 1
            steps.append(step)
    if steps != list(range(saves)):
        raise CheckFailure(
            f"[{label}] when wait() returned the writes were of steps {steps}, not "
            f"{list(range(saves))}: every save written once, in order, before wait() returns."
        )
    return peak


@grader("32.7", blocks=_BLOCKS, hand="replay")
def check_async_saver(AsyncSaver: Callable[..., Any]) -> str:
    """Exercise 32.7: copy, overlap, bounded pending snapshots, every save written in order."""
    raw = getattr(AsyncSaver, "fn", AsyncSaver)
    peaks = []
    for label, max_pending, saves in _CASES:
        events: list[tuple] = []
        key = secrets.token_bytes(32)
        serve = {
            n: _recorder(events, n, key)
            for n in ("disk.write", "loop.begin", "loop.end", "loop.waiting", "loop.waited")
        }
        run_apart(
            guarded(_drive, "32.7", _BLOCKS),
            raw,
            key,
            max_pending,
            saves,
            serve=serve,
            timeout=20,
        )
        if not any(e[0] == "loop.waited" for e in events):
            raise CheckFailure(f"[{label}] wait() never returned.")
        peaks.append((max_pending, _judge(label, events, max_pending, saves)))
    total = sum(s for _, _, s in _CASES)
    return (
        f"{total} asynchronous saves in {len(_CASES)} runs: each written as it was at its step "
        "although training changed the arrays right after save returned, off the loop's "
        "thread, in order; pending snapshots at most " + ", ".join(f"{p} of {m}" for m, p in peaks)
    )
