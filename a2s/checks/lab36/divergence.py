"""Grader of exercise 36.5: lock-step comparison of a pipeline's cycle log with the golden trace.

The truth (``_truth.divergence``) walks the log cycle by cycle (cycles numbered from 1):
a retire is compared with the next golden record (``mismatch``; ``extra`` past the end),
``k`` cycles in a row without a retire is a ``hang``, and a log that ends before the golden
trace does is ``missing`` (at its last cycle). The logs are written here: the pipeline's fill,
bubbles, and one planted fault each (a wrong value, a wrong next pc, a skipped retire, an
extra one, an early stop, a stall of exactly ``k`` cycles and one of ``k - 1``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab36._truth import CPU, divergence
from a2s.checks.table import Table

__all__ = ["check_first_divergence"]


Rec = tuple[int, int, Any, int, int]


def _golden(n: int, seed: int = 0) -> list[Rec]:
    out = []
    for i in range(n):
        w = (0x00108113 + 0x9E3779B1 * (i + 7 * seed)) & 0xFFFFFFFF
        rd = None if i % 4 == 3 else 1 + (i * 5 + seed) % 31
        out.append((4 * i, w, rd, (i * 37 + seed) % 101 - 50, 4 * i + 4))
    return out


def _log(recs: list[Rec], bubbles: dict[int, int] | None = None) -> list[Rec | None]:
    """Fill (4 empty cycles), then one retire a cycle, ``bubbles[i]`` empty cycles before i."""
    out: list[Rec | None] = [None] * 4
    for i, r in enumerate(recs):
        out += [None] * (bubbles or {}).get(i, 0) + [r]
    return out


def _bad(r: Rec, field: int, delta: int) -> Rec:
    f = list(r)
    f[field] = f[field] + delta
    return (f[0], f[1], f[2], f[3], f[4])


_G = _golden(12)
_NAMED = [
    ("identical, no bubbles", (_G, _log(_G), 10)),
    ("identical, with stalls and redirects", (_G, _log(_G, {3: 1, 6: 2, 9: 1}), 10)),
    ("a wrong value at retire 3", (_G, _log([*_G[:3], _bad(_G[3], 3, 1), *_G[4:]]), 10)),
    ("a wrong next pc at retire 0", (_G, _log([_bad(_G[0], 4, 8), *_G[1:]], {0: 1}), 10)),
    ("retire 5 skipped", (_G, _log([*_G[:5], *_G[6:]], {2: 2}), 10)),
    ("one retire past the end", (_G[:6], _log(_G[:7]), 10)),
    ("the log stops at retire 8", (_G, _log(_G[:8], {4: 1}), 10)),
    ("stuck for 10 cycles after retire 6", (_G, _log(_G[:7]) + [None] * 12, 10)),
    ("a 9-cycle stall, then on", (_G, _log(_G, {7: 9}), 10)),
    ("nothing ever retires", (_G, [None] * 15, 10)),
    ("k = 3: a 3-cycle stall is a hang", (_G, _log(_G, {5: 3}), 3)),
    ("empty program, empty log", ([], [], 10)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple]:
    n = int(g.integers(3, 30))
    recs = _golden(n, i + 1)
    bubbles = {int(j): int(g.integers(1, 4)) for j in g.integers(0, n, 4)}
    kind = i % 5
    got, want_recs = list(recs), recs
    j = int(g.integers(0, n))
    if kind == 0:
        got[j] = _bad(recs[j], int(g.integers(2, 5)) if recs[j][2] is not None else 3, 1)
    elif kind == 1:
        got = got[:j]
    elif kind == 2:
        want_recs = recs[:j]
    elif kind == 3:
        bubbles[j] = int(g.integers(8, 14))
    return (f"random log {i}", (want_recs, _log(got, bubbles), 10))


def _read(got: Any, label: str) -> Any:
    if got is None:
        return None
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise CheckFailure(f"[{label}] return None or a (kind, cycle, index) tuple, got {got!r}.")
    return tuple(got)


_MISTAKES = (
    Mistake(
        " Cycles are numbered from 1 (the first cycle of the log is cycle 1), like the "
        "pipeline's trace.",
        answer=lambda e, log, k: divergence(e, log, k, base=0),
    ),
    Mistake(
        " A hang is k cycles in a row without a retire, counted from the last retire (or from "
        "cycle 0): the k-th empty cycle is the one to report.",
        when=lambda got, e, log, k: (
            got in (divergence(e, log, k, late=1), divergence(e, log, k, late=-1))
        ),
    ),
    Mistake(
        " The pipeline's fill counts too: a hang is k empty cycles in a row from cycle 0, "
        "before the first retire as after any other.",
        answer=lambda e, log, k: divergence(e, log, k, after_first=True),
    ),
    Mistake(
        " A log that ends before the golden trace does is a divergence too ('missing'): the "
        "pipeline stopped early.",
        answer=lambda e, log, k: divergence(e, log, k, quiet_end=True),
    ),
    Mistake(
        " Compare the whole record (pc, word, rd, value, next_pc): a right pc with a wrong value "
        "is exactly the timing bug to find.",
        answer=lambda e, log, k: divergence(e, log, k, pc_only=True),
    ),
    Mistake(
        " 'missing' is reported at the log's last cycle (len(log), cycles numbered from 1), "
        "the one after which nothing more came.",
        when=lambda got, e, log, k: (
            got in (divergence(e, log, k, end=1), divergence(e, log, k, end=-1))
        ),
    ),
)

DIVERGENCE = Table(
    "36.5",
    truth=divergence,
    named=_NAMED,
    draw=_draw,
    seeded=10,
    fresh=5,
    mistakes=_MISTAKES,
    read=_read,
    hint="(kind, cycle, index): kind is mismatch, extra, hang or missing; None when they agree.",
    what="first_divergence",
    message="[{label}] first_divergence returned {got!r}, expected {want!r}.{hint}",
)


@grader("36.5", blocks=CPU)
def check_first_divergence(student: Callable[..., Any]) -> str:
    """Exercise 36.5: first_divergence(expected, log, k) -> None or (kind, cycle, index)."""
    n = DIVERGENCE.grade(student)
    return (
        f"{n} logs judged exactly like the grader's lock-step loop (mismatch, extra, hang, missing)"
    )
