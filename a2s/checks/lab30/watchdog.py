"""Grader of exercise 30.3: a watchdog that declares a kernel hung from missing heartbeats.

``watchdog(heartbeats_ns, completion_ns, deadline_ns, poll_ns, horizon_ns)`` returns the time
of the first poll (``poll_ns``, ``2·poll_ns``, ... up to ``horizon_ns``) at which the kernel
has not completed and no heartbeat was seen for more than ``deadline_ns``, or ``None``. The
truth is a poll loop written here. The cases put a slow but progressing kernel (which must
never raise an alarm) beside hung ones, and the edges: a gap of exactly the deadline, a
completion on a poll, a stall followed by more beats, a horizon before the alarm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab30._truth import first_alarm
from a2s.checks.table import Table

__all__ = ["WATCH", "check_watchdog"]

_REC = "minitorch.driver.recovery"
_D, _P = 2000, 100  # deadline and poll period of the teaching cases (ns of the model)


def _beats(every: int, until: int, start: int = 0) -> list[float]:
    return [float(t) for t in range(start + every, until, every)]


def _case(label: str, beats: list, done: float | None, horizon: int = 20000) -> tuple:
    return (label, (beats, done, _D, _P, horizon))


_NAMED = [
    _case("a healthy kernel: beats every 500, done at 3000", _beats(500, 3000), 3000.0),
    _case("slow but progressing: beats every 1500, done at 9000", _beats(1500, 9000), 9000.0),
    _case("hung at 1200: last beat at 1000", _beats(500, 1200), None),
    _case("hung before its first beat", [], None),
    _case("a gap of exactly the deadline is not an alarm", [1000.0, 3050.0], 3500.0),
    _case("it completes on the poll that would have fired", [900.0], 3000.0),
    _case("a stall longer than the deadline, then beats again", [500.0, 3000.0, 3500.0], 4000.0),
    _case("hung, but the horizon ends before the deadline passes", [400.0], None, 2000),
]


def _draw(gen: Any, i: int) -> tuple:
    every = int(gen.integers(2, 30)) * 100
    dur = int(gen.integers(5, 60)) * 100
    kind = ("healthy", "slow", "hung")[i % 3]
    if kind == "slow":
        k = int(gen.integers(2, 6))
        return _case(f"random slow kernel {i}", [b * k for b in _beats(every, dur)], float(dur * k))
    if kind == "hung":
        at = int(gen.integers(0, dur))
        return _case(f"random hung kernel {i}", [b for b in _beats(every, dur) if b <= at], None)
    return _case(f"random healthy kernel {i}", _beats(every, dur), float(dur))


def _draw_fresh(gen: Any, i: int) -> tuple:
    """Fresh kernels, one of each edge a named case teaches, with their own poll period and
    deadline: a stall longer than the deadline and then more beats (a watchdog that looks at
    later beats misses it), a completion on the poll that would fire, a gap of exactly the
    deadline, a hang caught on the horizon's own poll, then a slow kernel."""
    poll = int(gen.choice([50, 100, 250]))
    deadline = poll * int(gen.integers(4, 25))
    every = poll * int(gen.integers(1, 4))
    at = every * int(gen.integers(2, 6))  # the last beat before the edge (>= 2 polls)
    beats = [float(b) for b in range(every, at + 1, every)]
    kind = (
        "stall, then beats",
        "done on the firing poll",
        "a gap of exactly the deadline",
        "hung, caught on the horizon",
        "slow",
    )[i % 5]
    fire = (at + deadline) // poll * poll + poll  # the first poll past last beat + deadline
    if kind == "stall, then beats":
        resume = fire + poll * int(gen.integers(1, 5))
        beats += [float(resume + every * j) for j in range(1, 4)]
        done, horizon = float(resume + 4 * every), resume + 20 * deadline
    elif kind == "done on the firing poll":
        done, horizon = float(fire), fire + 10 * deadline
    elif kind == "a gap of exactly the deadline":
        beats += [float(at + deadline), float(at + deadline + every)]
        done, horizon = float(at + deadline + 2 * every), at + 10 * deadline
    elif kind == "hung, caught on the horizon":
        done, horizon = None, fire
    else:
        gap = poll * int(gen.integers(1, deadline // poll + 1))  # at most the deadline
        beats = [float(gap * j) for j in range(1, 40)]
        done, horizon = float(gap * 40), gap * 40 + deadline
    label = f"fresh kernel {i}: {kind}, poll {poll}, deadline {deadline}"
    return (label, (beats, done, float(deadline), float(poll), float(horizon)))


def _completion_only(beats: list, done: Any, deadline: float, poll: float, horizon: float) -> Any:
    return first_alarm([], done, deadline, poll, horizon)


def _at_least(beats: list, done: Any, deadline: float, poll: float, horizon: float) -> Any:
    return first_alarm(beats, done, deadline - 1e-6, poll, horizon)


def _last_overall(beats: list, done: Any, deadline: float, poll: float, horizon: float) -> Any:
    last, k = max(beats, default=0.0), 1
    while k * poll <= horizon:
        t = k * poll
        if done is not None and done <= t:
            return None
        if t - last > deadline:
            return t
        k += 1
    return None


def _hang_first(beats: list, done: Any, deadline: float, poll: float, horizon: float) -> Any:
    k = 1
    while k * poll <= horizon:
        t = k * poll
        if t - max([b for b in beats if b <= t], default=0.0) > deadline:
            return t
        if done is not None and done <= t:
            return None
        k += 1
    return None


_MISTAKES = (
    Mistake(
        " A slow kernel that still beats is progressing: the deadline is on the time since the "
        "last heartbeat, not on the time since the start.",
        answer=_completion_only,
    ),
    Mistake(
        " The alarm is for *more* than deadline_ns without progress (t - last > deadline): a "
        "gap of exactly the deadline is not a hang.",
        answer=_at_least,
    ),
    Mistake(
        " At a poll at time t the host has seen only the heartbeats at or before t: the last "
        "beat of the whole trace is in its future.",
        answer=_last_overall,
    ),
    Mistake(
        " Look at the completion first: a kernel that has completed by the poll is not hung.",
        answer=_hang_first,
    ),
)


def _read(got: Any, label: str) -> float | None:
    if got is None:
        return None
    try:
        return float(got)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] watchdog must return the alarm time (a number) or None; got "
            f"{type(got).__name__}."
        ) from None


WATCH = Table(
    "30.3",
    truth=first_alarm,
    named=_NAMED,
    draw=_draw,
    seeded=6,
    fresh=5,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Poll at t = poll, 2·poll, ... <= horizon: None once it has completed (completion "
    "<= t); an alarm at the first t with t - (last beat <= t, else 0) > deadline.",
    read=_read,
    same=lambda got, want: (
        (got is None and want is None)
        or (got is not None and want is not None and abs(got - want) < 1e-6)
    ),
    what="watchdog",
    message="[{label}] watchdog returned {got!r}, the polls give {want!r}.{hint}",
)


@grader("30.3", blocks=(_REC, "minitorch.driver.faults", "a2s.checks.lab30._truth:first_alarm"))
def check_watchdog(watchdog: Callable[..., object]) -> str:
    """Exercise 30.3: hung kernels caught within deadline + poll, slow ones never."""
    n = WATCH.grade(watchdog)
    return f"{n} kernels: every hang caught within deadline + one poll, no false alarm"
