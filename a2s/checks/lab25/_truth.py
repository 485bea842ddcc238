"""The lab 25 graders' own schedule tools, written apart from the reference.

``read_schedule`` turns a learner's answer (made plain) into ``[[(kind, mb, chunk), ...]]``
with a teaching message for each malformed shape. ``audit`` checks a schedule and times it
by a memoised recursion over its dependency graph (program order on each stage plus the
data dependencies between virtual stages): a cycle is a deadlock. ``peaks`` counts stashed
forwards. ``random_schedule`` draws a valid schedule from a random topological order.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from a2s.checks.errors import CheckFailure

__all__ = [
    "audit",
    "peaks",
    "random_schedule",
    "read_schedule",
    "reference_1f1b",
    "reference_interleaved",
]

Op = tuple[str, int, int]
# the graders' own schedules and timing: blocked while a learner's function runs
OWN = tuple(
    f"a2s.checks.lab25._truth:{name}"
    for name in ("audit", "reference_1f1b", "reference_interleaved")
)


def read_schedule(got: Any, p: int, label: str) -> list[list[Op]]:
    """The answer as p lists of ``(kind, mb, chunk)`` tuples, or a CheckFailure."""
    if not isinstance(got, (list, tuple)) or len(got) != p:
        n = len(got) if isinstance(got, (list, tuple)) else type(got).__name__
        raise CheckFailure(f"[{label}] return one list of ops per stage: {p} lists, got {n}.")
    out = []
    for s, ops in enumerate(got):
        row = []
        for op in ops:
            if not isinstance(op, (list, tuple)) or len(op) != 3 or op[0] not in ("F", "B"):
                raise CheckFailure(
                    f"[{label}] stage {s}: an op is a tuple (kind, microbatch, chunk) with kind "
                    f'"F" or "B" and chunk 0 unless interleaved; got {op!r}.'
                )
            row.append((str(op[0]), int(op[1]), int(op[2])))
        out.append(row)
    return out


def audit(
    sched: list[list[Op]],
    m: int,
    v: int,
    label: str,
    t_f: float = 1.0,
    t_b: float = 2.0,
    t_comm: float = 0.0,
) -> tuple[float, float]:
    """Check completeness, F before B, no deadlock; return (makespan, bubble fraction)."""
    p = len(sched)
    for s, ops in enumerate(sched):
        want = {(k, j, c) for k in "FB" for j in range(m) for c in range(v)}
        got = list(ops)
        missing = sorted(want - set(got))
        extra = sorted({op for op in got if op not in want or got.count(op) > 1})
        if missing or extra:
            raise CheckFailure(
                f"[{label}] stage {s} must run the F and the B of every microbatch 0..{m - 1}"
                + (f" and chunk 0..{v - 1}" if v > 1 else "")
                + f" exactly once; missing {missing[:4]}, extra or repeated {extra[:4]}."
            )
        fwd = set()
        for kind, j, c in ops:
            if kind == "F":
                fwd.add((j, c))
            elif (j, c) not in fwd:
                raise CheckFailure(
                    f"[{label}] stage {s} runs the backward of microbatch {j} (chunk {c}) before "
                    "its forward: a backward needs the activations its forward stashed."
                )
    where = {(s, op): i for s in range(p) for i, op in enumerate(sched[s])}
    nv = p * v
    end: dict[tuple[int, int], float] = {}
    busy: set[tuple[int, int]] = set()

    def producer(s: int, op: Op) -> tuple[int, int] | None:
        kind, j, c = op
        k = c * p + s
        if kind == "F" and k > 0:
            k2 = k - 1
        elif kind == "B" and k < nv - 1:
            k2 = k + 1
        else:
            return None
        s2 = k2 % p
        return s2, where[(s2, (kind, j, k2 // p))]

    def finish(s: int, i: int) -> float:
        if (s, i) in end:
            return end[(s, i)]
        if (s, i) in busy:
            kind, j, c = sched[s][i]
            raise CheckFailure(
                f"[{label}] the schedule deadlocks: stage {s}'s {kind} of microbatch {j} "
                f"(chunk {c}) waits, through a chain of stages, for an op that runs after it. "
                "A dependency between stages is broken: a stage's F of microbatch j needs the "
                "previous stage's F of j, its B needs the next stage's B of j."
            )
        busy.add((s, i))
        start = finish(s, i - 1) if i else 0.0
        src = producer(s, sched[s][i])
        if src is not None:
            start = max(start, finish(*src) + (t_comm if src[0] != s else 0.0))
        end[(s, i)] = start + (t_f if sched[s][i][0] == "F" else t_b)
        return end[(s, i)]

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * sum(len(o) for o in sched) + 1000))
    try:
        span = max(finish(s, len(ops) - 1) for s, ops in enumerate(sched) if ops)
    finally:
        sys.setrecursionlimit(old)
    work = m * v * (t_f + t_b) * p
    return span, 1.0 - work / (p * span)


def peaks(sched: list[list[Op]]) -> list[int]:
    """Per stage, the most forwards whose backward has not run yet."""
    out = []
    for ops in sched:
        live = np.cumsum([1 if k == "F" else -1 for k, _, _ in ops])
        out.append(int(live.max()) if len(live) else 0)
    return out


def reference_1f1b(p: int, m: int) -> list[list[Op]]:
    """The grader's own 1F1B, to feed the timing exercise."""
    out = []
    for s in range(p):
        w = min(p - s - 1, m)
        f = [("F", j, 0) for j in range(m)]
        b = [("B", j, 0) for j in range(m)]
        ops = f[:w]
        for j in range(m - w):
            ops += [f[w + j], b[j]]
        out.append(ops + b[m - w :])
    return out


def reference_interleaved(p: int, m: int, v: int) -> list:
    """The grader's own Megatron interleaved order (m a multiple of p; v = 1 is 1F1B)."""

    def mc(k: int, fwd: bool) -> tuple[int, int]:
        g, w = divmod(k, p * v)
        c = w // p
        return g * p + w % p, c if fwd else v - 1 - c

    out = []
    for s in range(p):
        warm = min(2 * (p - s - 1) + (v - 1) * p if v > 1 else p - s - 1, m * v)
        ops = [("F", *mc(k, True)) for k in range(warm)]
        for k in range(m * v - warm):
            ops += [("F", *mc(warm + k, True)), ("B", *mc(k, False))]
        out.append(ops + [("B", *mc(k, False)) for k in range(m * v - warm, m * v)])
    return out


def random_schedule(gen: np.random.Generator, p: int, m: int, v: int) -> list[list[Op]]:
    """A valid schedule: a random topological order of the ops, split by stage."""
    nv = p * v
    done: set[tuple[str, int, int]] = set()  # (kind, mb, virtual stage)
    todo = [(k, j, q) for k in "FB" for j in range(m) for q in range(nv)]
    out: list[list[Op]] = [[] for _ in range(p)]
    while todo:
        ready = [
            (k, j, q)
            for k, j, q in todo
            if (k == "F" and (q == 0 or ("F", j, q - 1) in done))
            or (k == "B" and ("F", j, q) in done and (q == nv - 1 or ("B", j, q + 1) in done))
        ]
        k, j, q = ready[int(gen.integers(len(ready)))]
        todo.remove((k, j, q))
        done.add((k, j, q))
        out[q % p].append((k, j, q // p))
    return out
