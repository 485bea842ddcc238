"""Grader of exercise 32.3: which ranks are dead or hung, from their heartbeats, and when.

``failed_ranks(beats, deadline, poll, horizon)`` returns ``{rank: t}``: for each rank declared
failed, the first poll ``t`` (``poll``, ``2·poll``, ... up to ``horizon``) at which its last
heartbeat at or before ``t`` (the start, 0, when none) is more than ``deadline`` old. A slow
rank that still beats within the deadline is never declared. The truth is a poll loop per
rank written in :mod:`._truth`. Times are whole milliseconds, so the edges are exact: a gap of
exactly the deadline, a rank that never beat, a stall followed by more beats, two ranks that
fail at different times, a horizon before the deadline passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab32._truth import declared
from a2s.checks.table import Table

__all__ = ["DETECT", "check_failed_ranks"]

_TRUTH = "a2s.checks.lab32._truth"
_D, _P = 1000.0, 100.0  # deadline and poll period of the named cases (ms)


def _every(gap: float, until: float, start: float = 0.0) -> list[float]:
    out, t = [], start + gap
    while t <= until:
        out.append(float(t))
        t += gap
    return out


def _case(label: str, beats: list, horizon: float = 6000.0) -> tuple:
    return (label, (beats, _D, _P, horizon))


_NAMED = [
    _case("4 healthy ranks", [_every(200, 6000)] * 4),
    _case("rank 1 dies at 2000", [_every(200, 6000), _every(200, 2000), _every(200, 6000)]),
    _case("rank 2 slow (a beat every 900 ms)", [_every(200, 6000)] * 2 + [_every(900, 6000)]),
    _case("rank 0 hung before its first beat", [[], _every(200, 6000)]),
    _case(
        "a gap of exactly the deadline",
        [_every(200, 6000), [500.0, 1500.0, *_every(300, 6000, 1500)]],
    ),
    _case(
        "rank 1 stalls for 1500 ms, then beats again",
        [_every(200, 6000), [*_every(200, 1000), *_every(200, 6000, 2500)]],
    ),
    _case(
        "ranks 3 and 1 fail at different times, rank 2 slow",
        [_every(200, 6000), _every(200, 3000), _every(950, 6000), _every(200, 1200)],
    ),
    _case("a hang the horizon ends too soon to see", [_every(200, 2000), [300.0]], 1200.0),
]


def _draw(gen: Any, i: int) -> tuple:
    poll = float(gen.choice([50, 100, 250]))
    deadline = poll * int(gen.integers(4, 20))
    horizon = deadline * int(gen.integers(4, 10))
    beats = []
    for _ in range(int(gen.integers(2, 7))):
        gap = poll * int(gen.integers(1, int(deadline // poll) + 1))  # at most the deadline
        kind = str(gen.choice(["healthy", "healthy", "dead", "stall", "never"]))
        times = _every(gap, horizon)
        if kind == "dead":
            times = [t for t in times if t <= float(gen.integers(0, int(horizon)))]
        elif kind == "stall":
            at = float(gen.integers(1, int(horizon) // 2))
            pause = deadline + poll * int(gen.integers(1, 5))
            times = [t for t in times if t <= at or t > at + pause]
        elif kind == "never":
            times = []
        beats.append(times)
    label = f"random {len(beats)} ranks {i}: poll {poll:g}, deadline {deadline:g}"
    return (label, (beats, deadline, poll, horizon))


def _draw_fresh(gen: Any, i: int) -> tuple:
    """A random job plus the ranks each mistake misses (drawn jobs alone often lack them): a
    rank that stalls past the deadline and beats again, a rank beating exactly every deadline,
    and (by turns) one that never beat."""
    label, (beats, deadline, poll, horizon) = _draw(gen, i)
    at = float(poll * int(gen.integers(1, int(horizon // poll) // 2)))
    stall = [t for t in _every(poll, horizon) if t <= at or t > at + deadline + 2 * poll]
    extra = [stall, _every(deadline, horizon)] + ([[]] if i % 2 else [])
    beats = [beats[j] for j in gen.permutation(len(beats))] + extra
    order = gen.permutation(len(beats))
    return (f"fresh {label[7:]}", ([beats[j] for j in order], deadline, poll, horizon))


def _at_least(beats: list, deadline: float, poll: float, horizon: float) -> Any:
    return declared(beats, deadline - 1e-6, poll, horizon)


def _last_overall(beats: list, deadline: float, poll: float, horizon: float) -> Any:
    out, k = {}, 1
    for rank, times in enumerate(beats):
        last, k = max(times, default=0.0), 1
        while k * poll <= horizon:
            if k * poll - last > deadline:
                out[rank] = k * poll
                break
            k += 1
    return out


def _skip_silent(beats: list, deadline: float, poll: float, horizon: float) -> Any:
    return {r: t for r, t in declared(beats, deadline, poll, horizon).items() if beats[r]}


def _slowest_too(beats: list, deadline: float, poll: float, horizon: float) -> Any:
    got = declared(beats, deadline, poll, horizon)
    gaps = {r: (b[-1] - b[0]) / (len(b) - 1) for r, b in enumerate(beats) if len(b) > 1}
    if gaps and len(set(gaps.values())) > 1:
        slow = max(gaps, key=lambda r: gaps[r])
        got.setdefault(slow, min(got.values(), default=horizon))
    return got


_MISTAKES = (
    Mistake(
        " A rank is failed after *more* than the deadline without a beat: a gap of exactly "
        "the deadline is not a failure.",
        answer=_at_least,
    ),
    Mistake(
        " At a poll at time t the monitor has heard only the beats at or before t: a rank "
        "that stalled past the deadline is declared then, even if it beats again later.",
        answer=_last_overall,
    ),
    Mistake(
        " A rank that never beat is silent since the start: count its progress from 0.",
        answer=_skip_silent,
    ),
    Mistake(
        " A slow rank still beats within the deadline: it is not failed, whatever its pace "
        "next to the others.",
        answer=_slowest_too,
    ),
)


def _read(got: Any, label: str) -> dict[int, float]:
    if not isinstance(got, dict):
        raise CheckFailure(
            f"[{label}] failed_ranks must return a dict {{rank: poll time}} ({{}} when none); "
            f"got {type(got).__name__}."
        )
    try:
        return {int(r): float(t) for r, t in got.items()}
    except (TypeError, ValueError):
        raise CheckFailure(f"[{label}] failed_ranks: ranks are ints, times numbers.") from None


def _same(got: dict, want: dict) -> bool:
    return set(got) == set(want) and all(abs(got[r] - want[r]) < 1e-6 for r in want)


DETECT = Table(
    "32.3",
    truth=declared,
    named=_NAMED,
    draw=_draw,
    seeded=8,
    fresh=4,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Per rank, poll t = poll, 2·poll, ... <= horizon; declare it at the first t with "
    "t - (its last beat <= t, else 0) > deadline.",
    read=_read,
    same=_same,
    what="failed_ranks",
    message="[{label}] failed_ranks returned {got!r}, the polls declare {want!r}.{hint}",
)


@grader(
    "32.3",
    blocks=("minitorch.elastic.detect", "minitorch.driver.recovery", f"{_TRUTH}:declared"),
)
def check_failed_ranks(failed_ranks: Callable[..., object]) -> str:
    """Exercise 32.3: dead and hung ranks caught within deadline + poll, slow ones never."""
    n = DETECT.grade(failed_ranks)
    return f"{n} jobs: every dead or hung rank named within deadline + one poll, no slow one"
