"""Lab 06 tried as a class would: correct answers written differently, realistic mistakes
(each must get the hint that names it) and cheats (the reference, its private helpers, the
grader's own ground truth, torch, a memorised answer, a value that decides its own equality,
the micro-kernel's log rewritten, arithmetic outside the kernel, tracing switched off).

06.5 runs the learner's matmul in a forked child (:mod:`a2s.checks.harness`): the
kernel is a request to the grader's process, which keeps the call log.
"""

from __future__ import annotations

import gc
import itertools
import sys
from collections import OrderedDict

import numpy as np
import pytest

from a2s.checks import lab06
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from a2s.checks.lab06 import lru as lru_truth
from a2s.checks.lab06 import traces as trace_truth
from minitorch.hardware import cache
from minitorch.kernels import matmul, traces
from tests.checks.test_lab06 import (
    blocked_trace,
    loop_trace,
    lru_hits,
    matmul_tiled,
    predicted_misses,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal


# --------------------------------------------------------------------------- 06.1
def lru_ordered_dict(addrs, size, line, ways):
    sets = [OrderedDict() for _ in range(size // (line * ways))]
    out = []
    for a in addrs.tolist():
        ln = a // line
        s = sets[ln % len(sets)]
        if ln in s:
            s.move_to_end(ln)
            out.append(True)
            continue
        if len(s) == ways:
            s.popitem(last=False)
        s[ln] = None
        out.append(False)
    return out  # a list of bools is fine


class StampedCache:  # a class, LRU by last-use time stamps
    def __init__(self, size, line, ways):
        self.line, self.ways, self.n = line, ways, size // (line * ways)
        self.sets = [dict() for _ in range(self.n)]
        self.clock = 0

    def access(self, addr):
        self.clock += 1
        ln = addr // self.line
        s = self.sets[ln % self.n]
        hit = ln in s
        if not hit and len(s) == self.ways:
            del s[min(s, key=s.get)]
        s[ln] = self.clock
        return hit


def lru_class(addrs, size, line, ways):
    c = StampedCache(size, line, ways)
    return np.array([c.access(int(a)) for a in addrs])


_MEMO_LRU = {}


def lru_memorised(addrs, size, line, ways):
    key = (tuple(addrs.tolist()), size, line, ways)
    return _MEMO_LRU.get(key, np.zeros(len(addrs), bool))


LRU = [
    honest("06.1", "OrderedDict, a list", lambda: lab06.check_lru_hits(lru_ordered_dict)),
    honest("06.1", "a class with time stamps", lambda: lab06.check_lru_hits(lru_class)),
    wrong(
        "06.1",
        "FIFO",
        lambda: lab06.check_lru_hits(lambda *a: lru_hits(*a, bug="fifo")),
        match="FIFO",
    ),
    wrong(
        "06.1",
        "evicts the most recent",
        lambda: lab06.check_lru_hits(lambda *a: lru_hits(*a, bug="evict mru")),
        match="least",
    ),
    wrong(
        "06.1",
        "set from the byte address",
        lambda: lab06.check_lru_hits(lambda *a: lru_hits(*a, bug="set from address")),
        match="chosen by the line number",
    ),
    wrong(
        "06.1",
        "no lines",
        lambda: lab06.check_lru_hits(lambda *a: lru_hits(*a, bug="no line")),
        match="share one cache line",
    ),
    cheat(
        "06.1",
        "the reference simulator",
        lambda: lab06.check_lru_hits(
            lambda addrs, size, line, ways: cache.hit_mask(
                addrs, cache.CacheConfig(size, line, ways)
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "06.1",
        "the grader's plain loop",
        lambda: lab06.check_lru_hits(lru_truth.plain_lru),
        match="plain_lru",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.1",
        "torch",
        lambda: lab06.check_lru_hits(
            lambda addrs, *a: (
                __import__("torch").zeros(len(addrs), dtype=__import__("torch").bool).numpy()
            )
        ),
        error=ForbiddenCallError,
    ),
    cheat("06.1", "a memorised answer", lambda: lab06.check_lru_hits(lru_memorised), match="LRU"),
    cheat(
        "06.1",
        "an array that equals anything",
        lambda: lab06.check_lru_hits(lambda addrs, *a: always_equal(np.zeros(len(addrs), bool))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 06.2
def trace_broadcast(n, order):  # broadcasting over an (n, n, n) grid, then a transpose
    r = np.arange(n, dtype=np.int64)
    grid = {c: r.reshape([-1 if p == q else 1 for q in range(3)]) for p, c in enumerate(order)}
    i, j, k = (np.broadcast_to(grid[c], (n, n, n)).ravel() for c in "ijk")
    return np.column_stack(
        [8 * (i * n + k), 8 * (n * n + k * n + j), 8 * (2 * n * n + i * n + j)]
    ).ravel()


def trace_meshgrid(n, order):
    import numpy  # an import inside

    axes = numpy.meshgrid(*(numpy.arange(n),) * 3, indexing="ij")
    v = {c: a.ravel().astype(numpy.int64) for c, a in zip(order, axes, strict=True)}
    base = numpy.array([0, n * n * 8, 2 * n * n * 8])
    idx = numpy.stack([v["i"] * n + v["k"], v["k"] * n + v["j"], v["i"] * n + v["j"]], axis=1)
    return (base + 8 * idx).ravel()


def trace_python_loop(n, order):
    out = []
    for x, y, z in itertools.product(range(n), repeat=3):
        v = dict(zip(order, (x, y, z), strict=True))
        i, j, k = v["i"], v["j"], v["k"]
        out += [(i * n + k) * 8, (n * n + k * n + j) * 8, (2 * n * n + i * n + j) * 8]
    return np.array(out, dtype=np.int64)


def trace_untraced_loop(n, order):  # switches the line counter off, then loops
    sys.settrace(None)
    return trace_python_loop(n, order)


TRACE = [
    honest("06.2", "broadcasting", lambda: lab06.check_loop_trace(trace_broadcast)),
    honest("06.2", "meshgrid, import inside", lambda: lab06.check_loop_trace(trace_meshgrid)),
    wrong(
        "06.2",
        "loops reversed",
        lambda: lab06.check_loop_trace(lambda n, o: loop_trace(n, o[::-1])),
        match="reverse",
    ),
    wrong(
        "06.2",
        "column-major",
        lambda: lab06.check_loop_trace(lambda n, o: loop_trace(n, o, layout="col")),
        match="Column-major",
    ),
    wrong(
        "06.2",
        "element indices, not bytes",
        lambda: lab06.check_loop_trace(lambda n, o: loop_trace(n, o, elem=1)),
        match="in bytes",
    ),
    wrong(
        "06.2",
        "float addresses",
        lambda: lab06.check_loop_trace(lambda n, o: loop_trace(n, o).astype(float)),
        match="floats",
    ),
    wrong(
        "06.2",
        "a Python loop over the iterations",
        lambda: lab06.check_loop_trace(trace_python_loop),
        match="Python lines",
    ),
    cheat(
        "06.2",
        "the reference",
        lambda: lab06.check_loop_trace(traces.loop_trace),
        error=ReferenceCalledError,
    ),
    cheat(
        "06.2",
        "the reference's private _interleave",
        lambda: lab06.check_loop_trace(
            lambda n, o: traces._interleave(
                n,
                *(dict(zip(o, np.indices((n,) * 3).reshape(3, -1), strict=True))[c] for c in "ijk"),
                8,
            )
        ),
        match="_interleave",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.2",
        "the grader's plain trace",
        lambda: lab06.check_loop_trace(trace_truth._plain_trace),
        match="_plain_trace",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.2",
        "torch",
        lambda: lab06.check_loop_trace(
            lambda n, o: __import__("torch").from_numpy(loop_trace(n, o)).numpy()
        ),
        error=ForbiddenCallError,
    ),
    cheat(
        "06.2",
        "tracing switched off",
        lambda: lab06.check_loop_trace(trace_untraced_loop),
        match="sys.settrace",
    ),
]


# --------------------------------------------------------------------------- 06.3
_STRIDES = {
    "ik": ("k", "i"),
    "kj": ("j", "k"),
    "ij": ("j", "i"),
}  # (stride-1 letter, stride-n letter)


def predict_table(n, order, line_elems):
    inner = order[-1]
    ones = sum(inner == s1 for s1, _ in _STRIDES.values())
    ns = sum(inner == sn for _, sn in _STRIDES.values())
    return n**3 * ones / line_elems + n**3 * ns


def predict_with_invariant(n, order, line_elems):  # counts the invariant array's n^2 too
    return predicted_misses(n, order, line_elems) + n * n


_MEMO_PRED = {(64, o, 8): predicted_misses(64, o, 8) for o in traces.ORDERS}

PREDICT = [
    honest("06.3", "a table of strides", lambda: lab06.check_predicted_misses(predict_table)),
    honest(
        "06.3",
        "plus n^2 for the invariant array",
        lambda: lab06.check_predicted_misses(predict_with_invariant),
    ),
    wrong(
        "06.3",
        "outermost letter",
        lambda: lab06.check_predicted_misses(lambda n, o, L: predicted_misses(n, o, L, inner_at=0)),
        match="innermost loop is",
    ),
    wrong(
        "06.3",
        "once per access",
        lambda: lab06.check_predicted_misses(
            lambda n, o, L: predicted_misses(n, o, L, per_line=False)
        ),
        match="once per \\*line\\*",
    ),
    wrong(
        "06.3",
        "invariant array misses every time",
        lambda: lab06.check_predicted_misses(
            lambda n, o, L: predicted_misses(n, o, L, invariant=n)
        ),
        match="stays in cache",
    ),
    wrong(
        "06.3",
        "n // L",
        lambda: lab06.check_predicted_misses(
            lambda n, o, L: float(
                n * n * (n // L) * sum(o[-1] == s for s, _ in _STRIDES.values())
                + n**3 * sum(o[-1] == s for _, s in _STRIDES.values())
            )
        ),
        match="true division",
    ),
    cheat(
        "06.3",
        "the reference",
        lambda: lab06.check_predicted_misses(traces.predicted_misses),
        error=ReferenceCalledError,
    ),
    cheat(
        "06.3",
        "the grader's closed form",
        lambda: lab06.check_predicted_misses(trace_truth._formula),
        match="_formula",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.3",
        "torch",
        lambda: lab06.check_predicted_misses(
            lambda n, o, L: float(__import__("torch").tensor(predict_table(n, o, L)))
        ),
        error=ForbiddenCallError,
    ),
    cheat(
        "06.3",
        "a memorised answer",
        lambda: lab06.check_predicted_misses(lambda n, o, L: _MEMO_PRED.get((n, o, L), 0.0)),
        match="predicted",
    ),
    cheat(
        "06.3",
        "a float that equals anything",
        lambda: lab06.check_predicted_misses(lambda *a: always_equal(0.0)),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 06.4
def blocked_vectorised(n, tile):  # one np.indices over (tile blocks, inside), masked at n
    nb = -(-n // tile)
    ii, kk, jj, di, dk, dj = np.indices((nb, nb, nb, tile, tile, tile), dtype=np.int64)
    i, k, j = (x.ravel() for x in (ii * tile + di, kk * tile + dk, jj * tile + dj))
    keep = (i < n) & (k < n) & (j < n)
    i, k, j = i[keep], k[keep], j[keep]
    return np.stack(
        [8 * (i * n + k), 8 * (n * n + k * n + j), 8 * (2 * n * n + i * n + j)], 1
    ).ravel()


def blocked_tiles_ijk(n, tile):  # tiles (ii, jj, kk) and i, j, k inside: another tiling
    parts = []
    for i0, j0, k0 in itertools.product(range(0, n, tile), repeat=3):
        i, j, k = (
            a.ravel()
            for a in np.meshgrid(
                np.arange(i0, min(i0 + tile, n)),
                np.arange(j0, min(j0 + tile, n)),
                np.arange(k0, min(k0 + tile, n)),
                indexing="ij",
            )
        )
        parts.append(
            np.stack(
                [(i * n + k) * 8, (n * n + k * n + j) * 8, (2 * n * n + i * n + j) * 8], 1
            ).ravel()
        )
    return np.concatenate(parts)


BLOCKED = [
    honest("06.4", "one np.indices, masked", lambda: lab06.check_blocked_trace(blocked_vectorised)),
    honest("06.4", "tiles in ijk order", lambda: lab06.check_blocked_trace(blocked_tiles_ijk)),
    wrong(
        "06.4",
        "the untiled ikj trace",
        lambda: lab06.check_blocked_trace(lambda n, t: loop_trace(n, "ikj")),
        match="budget",
    ),
    wrong(
        "06.4",
        "tiles of 16",
        lambda: lab06.check_blocked_trace(lambda n, t: blocked_trace(n, 16)),
        match="budget",
    ),
    wrong(
        "06.4",
        "always tiles of 8",
        lambda: lab06.check_blocked_trace(lambda n, t: blocked_trace(n, 8)),
        match="tile you are given",
    ),
    wrong(
        "06.4",
        "last tiles not clipped",
        lambda: lab06.check_blocked_trace(lambda n, t: blocked_trace(n, t, clip=False)),
        match="clip the last tiles",
    ),
    cheat(
        "06.4",
        "the reference",
        lambda: lab06.check_blocked_trace(traces.blocked_trace),
        error=ReferenceCalledError,
    ),
    cheat(
        "06.4",
        "the reference's _interleave",
        lambda: lab06.check_blocked_trace(
            lambda n, t: traces._interleave(n, *np.indices((n,) * 3).reshape(3, -1), 8)
        ),
        match="_interleave",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.4",
        "the grader's line count to pick a tile",
        lambda: lab06.check_blocked_trace(
            lambda n, t: blocked_trace(n, min((4, 8), key=lambda s: trace_truth.tiled_lines(n, s)))
        ),
        match="tiled_lines",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.4",
        "the reference LRU to pick an order",
        lambda: lab06.check_blocked_trace(
            lambda n, t: min(
                (blocked_trace(n, t), loop_trace(n, "ikj")),
                key=lambda tr: cache.simulate(tr, cache.CacheConfig(2048, 64, 32))[0].misses,
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "06.4",
        "torch",
        lambda: lab06.check_blocked_trace(
            lambda n, t: __import__("torch").from_numpy(blocked_trace(n, t)).numpy()
        ),
        error=ForbiddenCallError,
    ),
]


# --------------------------------------------------------------------------- 06.5
def tiled_recursive(a, b, tile, kernel, k0=0):  # recursion over the inner tiles
    a = np.asarray(a)  # a defensive asarray is fine
    n, m = a.shape[0], b.shape[1]
    if k0 >= a.shape[1]:
        return np.zeros((n, m))
    c = tiled_recursive(a, b, tile, kernel, k0 + tile)
    for i in range(0, n, tile):
        for j in range(0, m, tile):
            c[i : i + tile, j : j + tile] += kernel(
                a[i : i + tile, k0 : k0 + tile], b[k0 : k0 + tile, j : j + tile]
            )
    return c


class Tiler:  # a class; the accumulator from zeros_like
    def __init__(self, tile):
        self.tile = tile

    def blocks(self, size):
        return [slice(s, s + self.tile) for s in range(0, size, self.tile)]

    def __call__(self, a, b, kernel):
        c = np.zeros_like(a, shape=(a.shape[0], b.shape[1]))
        for r, p, q in itertools.product(
            self.blocks(a.shape[0]), self.blocks(a.shape[1]), self.blocks(b.shape[1])
        ):
            c[r, q] += kernel(a[r, p], b[p, q])
        return c


def tiled_without_accumulation(a, b, tile, kernel):
    c = np.zeros((a.shape[0], b.shape[1]))
    for i, k, j in itertools.product(
        range(0, a.shape[0], tile), range(0, a.shape[1], tile), range(0, b.shape[1], tile)
    ):
        c[i : i + tile, j : j + tile] = kernel(
            a[i : i + tile, k : k + tile], b[k : k + tile, j : j + tile]
        )  # = not +=
    return c


def tiled_for_show(a, b, tile, kernel):
    matmul_tiled(a, b, tile, kernel)
    return np.asarray(a) @ np.asarray(b)


def tiled_log_rewritten(a, b, tile, kernel):  # right calls faked: whatever holds a log, cleared
    for obj in gc.get_objects():
        if type(obj).__name__ == "_Kernel":
            obj.shapes[:] = [((tile, tile), (tile, tile))] * 8
    return np.asarray(a) @ np.asarray(b)


def tiled_einsum(a, b, tile, kernel):
    kernel(a[:tile, :tile], b[:tile, :tile])
    return np.einsum("ik,kj->ij", a, b)


TILED = [
    honest(
        "06.5", "recursion over k, asarray first", lambda: lab06.check_matmul_tiled(tiled_recursive)
    ),
    honest(
        "06.5",
        "a class, zeros_like",
        lambda: lab06.check_matmul_tiled(lambda a, b, t, k: Tiler(t)(a, b, k)),
    ),
    wrong(
        "06.5",
        "half the tile",
        lambda: lab06.check_matmul_tiled(lambda a, b, t, k: matmul_tiled(a, b, max(t // 2, 1), k)),
        match="kernel calls",
    ),
    wrong(
        "06.5",
        "whole matrices to the kernel",
        lambda: lab06.check_matmul_tiled(lambda a, b, t, k: k(a, b)),
        match="larger than",
    ),
    wrong(
        "06.5",
        "= instead of +=",
        lambda: lab06.check_matmul_tiled(tiled_without_accumulation),
        match="differs",
    ),
    cheat(
        "06.5",
        "a @ b",
        lambda: lab06.check_matmul_tiled(lambda a, b, t, k: a @ b),
        match="np.matmul",
    ),
    cheat(
        "06.5",
        "np.einsum on A and B",
        lambda: lab06.check_matmul_tiled(tiled_einsum),
        match="np.einsum",
    ),
    cheat(
        "06.5",
        "kernel calls for show",
        lambda: lab06.check_matmul_tiled(tiled_for_show),
        match="sum of what kernel",
    ),
    cheat(
        "06.5",
        "the call log rewritten via gc",
        lambda: lab06.check_matmul_tiled(tiled_log_rewritten),
        match="never called",
    ),
    cheat(
        "06.5",
        "the reference",
        lambda: lab06.check_matmul_tiled(lambda a, b, t, k: matmul.matmul_tiled(a, b, t, k)),
        match="matmul_tiled",
        error=ReferenceCalledError,
    ),
    cheat(
        "06.5",
        "torch",
        lambda: lab06.check_matmul_tiled(
            lambda a, b, t, k: __import__("torch").from_numpy(np.asarray(a)).numpy()
        ),
        error=ForbiddenCallError,
    ),
]

ATTEMPTS = [*LRU, *TRACE, *PREDICT, *BLOCKED, *TILED]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


def test_a_student_error_in_the_child_names_the_case():
    with pytest.raises(StudentError, match="ZeroDivisionError"):
        lab06.check_matmul_tiled(lambda a, b, t, k: 1 / 0)
