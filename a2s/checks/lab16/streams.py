"""Grader of exercise 16.1: stream and event semantics.

The learner's ``simulate(program)`` returns (start, end) of every op. Ground truth is the
plain loop of ``_truth.program_times``; the known mistakes (event waits ignored, every
stream run as one serial queue, host syncs ignored) each get their hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader
from a2s.checks.lab16._truth import intervals, program_times

__all__ = ["check_simulate", "random_program"]

BLOCKS = (
    "minitorch.runtime.streams:simulate",
    "minitorch.runtime.streams:Device",
    "a2s.checks.lab16._truth:program_times",
)

_TEACHING = {
    "backward then all-reduce": [
        ("op", "compute", "bwd2", 3),
        ("record", "compute", "g2"),
        ("op", "compute", "bwd1", 2),
        ("wait", "comm", "g2"),
        ("op", "comm", "ar2", 4),
        ("op", "compute", "bwd0", 1),
        ("record", "compute", "g0"),
        ("wait", "comm", "g0"),
        ("op", "comm", "ar0", 1),
    ],
    "copy / compute / copy": [
        ("op", "h2d", "in0", 2),
        ("record", "h2d", "i0"),
        ("op", "h2d", "in1", 2),
        ("record", "h2d", "i1"),
        ("wait", "compute", "i0"),
        ("op", "compute", "k0", 3),
        ("record", "compute", "k0"),
        ("wait", "compute", "i1"),
        ("op", "compute", "k1", 3),
        ("wait", "d2h", "k0"),
        ("op", "d2h", "out0", 1),
    ],
    "a wait holds back one stream only": [
        ("op", "compute", "fwd", 4),
        ("record", "compute", "act"),
        ("wait", "copy", "act"),
        ("op", "copy", "offload", 2),
        ("op", "comm", "ar", 3),
        ("op", "compute", "next", 1),
    ],
    "host sync": [
        ("op", "a", "x", 5),
        ("op", "b", "y", 1),
        ("sync", "b"),
        ("op", "b", "z", 2),
        ("sync",),
        ("op", "a", "w", 1),
        ("op", "c", "v", 1),
        ("sync", "b"),
        ("op", "d", "u", 1),
    ],
}

_HINTS: list[tuple[dict[str, Any], str]] = [
    (
        dict(waits=False),
        "An op after `wait(stream, event)` may not start before the event's "
        "time (the end of the work recorded before it): you ignored the wait.",
    ),
    (
        dict(streams=False),
        "Streams run concurrently: an op waits only for the previous op of "
        "its own stream (and for waited events), not for every earlier op.",
    ),
    (
        dict(host_waits=True),
        "`wait(stream, event)` holds back only that stream (cudaStreamWaitEvent), not the "
        "host: ops issued later on other streams do not wait for the event.",
    ),
    (
        dict(record_host=True),
        "An event completes when the work enqueued on its stream so far ends, not at the "
        "host's clock when it is recorded.",
    ),
    (
        dict(host_back=True),
        "The host's clock never goes back: after `sync` it is the later of its own time and "
        "the end of the synchronised stream(s).",
    ),
    (
        dict(wait_sets=True),
        "A wait never moves a stream back: after `wait(stream, event)` the stream is free at "
        "the later of its own last op's end and the event's time (max, not the event's time).",
    ),
    (
        dict(syncs=False),
        "After `sync` the host has waited: ops issued later cannot start "
        "before the host's clock (the end of the synchronised stream(s)).",
    ),
]


def _pair(row: np.ndarray) -> tuple[float, ...]:
    return tuple(float(x) for x in row)


def random_program(gen: np.random.Generator, n: int) -> list[tuple[Any, ...]]:
    """A program of ``n`` instructions on three streams, waits only on recorded events."""
    prog: list[tuple[Any, ...]] = []
    recorded: list[str] = []
    for k in range(n):
        s = ("compute", "comm", "copy")[int(gen.integers(0, 3))]
        r = gen.random()
        if r < 0.5:
            prog.append(("op", s, f"op{k}", int(gen.integers(1, 7))))
        elif r < 0.72:
            prog.append(("record", s, f"e{k}"))
            recorded.append(f"e{k}")
        elif r < 0.92 and recorded:
            prog.append(("wait", s, recorded[int(gen.integers(0, len(recorded)))]))
        else:
            prog.append(("sync", s) if gen.random() < 0.5 else ("sync",))
    return prog


@grader("16.1", blocks=BLOCKS, hand="replay")
def check_simulate(simulate: Callable[..., Any]) -> str:
    """Exercise 16.1: (start, end) of every op of a program of ops, records, waits, syncs."""
    cases = [(name, prog) for name, prog in _TEACHING.items()]
    gen = fresh_rng("16.1")
    cases += [(fresh(f"random program {i}"), random_program(gen, 14)) for i in range(6)]
    busiest = 0.0
    for label, prog in cases:
        want = np.asarray(program_times(prog), dtype=np.float64).reshape(-1, 2)
        got = intervals(simulate(list(prog)), len(want), 2, label, "(start, end) per op")
        if np.allclose(got, want, rtol=1e-9, atol=1e-12):
            busiest = max(busiest, float(want[:, 1].max(initial=0.0)))
            continue
        hints = [
            h
            for kw, h in _HINTS
            if np.allclose(got, np.reshape(program_times(prog, **kw), (-1, 2)), rtol=1e-9)
        ]
        hint = (
            " Or: ".join(hints)
            if hints
            else "Recompute: start = max(end of the stream's previous op, waited events, host "
            "clock)."
        )
        bad = int(np.argmax(np.any(~np.isclose(got, want, rtol=1e-9), axis=1)))
        op = [i for i in prog if i[0] == "op"][bad]
        assert_true(
            False,
            f"[{label}] op {op[2]!r} on {op[1]!r}: got (start, end) = "
            f"{_pair(got[bad])}, expected {_pair(want[bad])}. {hint}",
        )
    return (
        f"{len(cases)} programs (6 fresh, 3 streams) timed exactly; longest {busiest:g} time units"
    )
