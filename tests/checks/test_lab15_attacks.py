"""Lab 15 tried as a class would: answers written differently, usual mistakes, cheats.

Wrong answers are the orders and formulas students write on the way (the untiled ikj order,
point loops outside tile loops, a sign error, a closed band); cheats are shortcuts (the
reference's tile or legality test, a concrete nest handed to ``dependence.respects``, the
grader's own brute force, a hand-made nest, a memorised table, the tuner's count rewritten).
"""

from __future__ import annotations

import gc
import heapq

import numpy as np
import pytest

from a2s.checks import lab15
from a2s.checks.core import ReferenceCalledError
from a2s.checks.lab15 import legality, tuner
from minitorch.compiler import autotune, dependence, loops
from minitorch.compiler.loops import Loop, Nest, fuse, reorder, split, vectorize
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.lab15


# ------------------------------------------------------------------------------------ 15.1
def sched_jik(s):
    """Tile loops in j, i, k order; split in another order."""
    for v in "kji":
        s = split(s, v, 8)
    return reorder(s, "jo", "io", "ko", "ii", "ki", "ji")


def sched_nested(s):
    """i split twice (16, then 8 inside): a tile of 8 with one more loop."""
    s = split(split(s, "i", 16), "ii", 8)
    s = split(split(s, "j", 8), "k", 8)
    return reorder(s, "io", "iio", "ko", "jo", "iii", "ki", "ji")


class Scheduler:
    def __init__(self, tile):
        self.tile = tile

    def __call__(self, s):
        from minitorch.compiler.loops import reorder as r
        from minitorch.compiler.loops import split as sp

        for v in "ijk":
            s = sp(s, v, self.tile)
        return r(s, *(v + "o" for v in "ikj"), *(v + "i" for v in "ikj"))


def sched_points_outside(s):
    for v in "ijk":
        s = split(s, v, 8)
    return reorder(s, "ii", "ki", "ji", "io", "ko", "jo")


def sched_fused(s):
    s = Scheduler(8)(s)
    return fuse(s, "ki", "ji")


def sched_by_hand(s):
    """The tiled nest written out as a Nest, not built with the primitives."""
    n = s.kernel.dims[0][1]
    t = 8
    outer = [Loop(v + "o", -(-n // t)) for v in "ikj"]
    inner = [Loop(v + "i", t) for v in "ikj"]
    bind = tuple((v, f"{v}o*{t}+{v}i") for v in "ijk")
    guarded = frozenset("ijk") if n % t else frozenset()
    return Nest(s.kernel, (*outer, *inner), bind, guarded)


def sched_vectorized(s):
    return vectorize(Scheduler(8)(s), "ji")


class MyNest(Nest):
    __slots__ = ()


ATTEMPTS = [
    honest("15.1", "jik tile order", lambda: lab15.check_schedule_matmul(sched_jik)),
    honest("15.1", "i split twice", lambda: lab15.check_schedule_matmul(sched_nested)),
    honest("15.1", "a class, imports inside", lambda: lab15.check_schedule_matmul(Scheduler(8))),
    wrong(
        "15.1",
        "untiled ikj",
        lambda: lab15.check_schedule_matmul(lambda s: reorder(s, "i", "k", "j")),
        match="budget",
    ),
    wrong(
        "15.1", "tiles of 16", lambda: lab15.check_schedule_matmul(Scheduler(16)), match="budget"
    ),
    wrong(
        "15.1",
        "point loops outside",
        lambda: lab15.check_schedule_matmul(sched_points_outside),
        match="budget",
    ),
    wrong(
        "15.1",
        "fused the point loops",
        lambda: lab15.check_schedule_matmul(sched_fused),
        match="Split and reorder only",
    ),
    cheat(
        "15.1",
        "loops.tile",
        lambda: lab15.check_schedule_matmul(
            lambda s: reorder(loops.tile(loops.split(s, "k", 8), "i", "j", 8, 8), "io", "ko", "jo")
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.1",
        "autotune.matmul_schedule",
        lambda: lab15.check_schedule_matmul(
            lambda s: autotune.matmul_schedule(s.kernel.dims[0][1], autotune.Config(8, 8, 8))
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.1",
        "a nest written by hand",
        lambda: lab15.check_schedule_matmul(sched_by_hand),
        match="Split and reorder only",
    ),
    cheat(
        "15.1",
        "vectorized",
        lambda: lab15.check_schedule_matmul(sched_vectorized),
        match="Split and reorder only",
    ),
    cheat(
        "15.1",
        "a Nest subclass",
        lambda: lab15.check_schedule_matmul(
            lambda s: MyNest(*(getattr(Scheduler(8)(s), f) for f in Nest.__slots__))
        ),
        match="return the scheduled Nest",
    ),
]


# ------------------------------------------------------------------------------------ 15.2
def dist_set(kernel):
    out = set()
    for r in kernel.reads:
        d = tuple(w[1] - x[1] for w, x in zip(kernel.lhs.index, r.index, strict=True))
        if any(d):
            out.add(d if next(x for x in d if x) > 0 else tuple(-x for x in d))
    return sorted(out)


def dist_numpy(kernel):
    w = np.array([c for _, c in kernel.lhs.index])
    reads = np.array([[c for _, c in r.index] for r in kernel.reads])
    d = w - reads
    d = d[np.any(d != 0, axis=1)]
    first = np.array([row[np.flatnonzero(row)[0]] for row in d]) if len(d) else np.array([])
    d = d * np.where(first < 0, -1, 1)[:, None] if len(d) else d
    return sorted({tuple(int(x) for x in row) for row in d})


def dist_variant(sign=1, positive=True, zero=False, anti=True):
    def f(kernel):
        out = set()
        for r in kernel.reads:
            d = tuple(sign * (w[1] - x[1]) for w, x in zip(kernel.lhs.index, r.index, strict=True))
            if not any(d):
                if zero:
                    out.add(d)
                continue
            neg = next(x for x in d if x) < 0
            if neg and not anti:
                continue
            if positive == "inverted":  # flips the positive ones instead of the negative ones
                neg = not neg
            out.add(tuple(-x for x in d) if neg and positive else d)
        return sorted(out)

    return f


_MEMO = {
    ((-1, 0), (0, -1)): [(0, 1), (1, 0)],
    ((-1, 1), (0, -1)): [(0, 1), (1, -1)],
}


def dist_memorised(kernel):
    offs = tuple((x[1] - 1, y[1] - 1) for x, y in (r.index for r in kernel.reads))
    return _MEMO.get(offs, [(0, 1)])


ATTEMPTS += [
    honest("15.2", "a set of tuples", lambda: lab15.check_distance_vectors(dist_set)),
    honest("15.2", "numpy rows", lambda: lab15.check_distance_vectors(dist_numpy)),
    wrong(
        "15.2",
        "flips the positive vectors",
        lambda: lab15.check_distance_vectors(dist_variant(positive="inverted")),
        match="Sign error",
    ),
    wrong(
        "15.2",
        "negative vectors kept",
        lambda: lab15.check_distance_vectors(dist_variant(positive=False)),
        match="lexicographically negative",
    ),
    wrong(
        "15.2",
        "zero vector kept",
        lambda: lab15.check_distance_vectors(dist_variant(zero=True)),
        match="zero vector",
    ),
    wrong(
        "15.2",
        "flow dependences only",
        lambda: lab15.check_distance_vectors(dist_variant(anti=False)),
        match="anti dependences",
    ),
    cheat(
        "15.2",
        "calls the reference",
        lambda: lab15.check_distance_vectors(dependence.distance_vectors),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.2",
        "the reference's private helper",
        lambda: lab15.check_distance_vectors(
            lambda k: sorted({dependence._distance(k, k.lhs, r) for r in k.reads} - {None})
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.2",
        "the grader's brute force",
        lambda: lab15.check_distance_vectors(legality.brute_distances),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.2",
        "a memorised table",
        lambda: lab15.check_distance_vectors(dist_memorised),
        match="dependent iteration pairs",
    ),
    cheat(
        "15.2",
        "ints that equal anything",
        lambda: lab15.check_distance_vectors(lambda k: [tuple(always_equal(1) for _ in k.dims)]),
    ),
]


# ------------------------------------------------------------------------------------ 15.3
def lex(d):
    if not d:
        return False
    return d[0] > 0 if d[0] != 0 else lex(d[1:])  # recursion


def perm_ok(ds, perm):
    return all(lex(tuple(d[p] for p in perm)) for d in ds)


def tile_ok(ds, band):
    lo, hi = band
    return not any(not lex(d[:lo]) and any(x < 0 for x in d[lo:hi]) for d in ds)


class Legality:
    """Both tests as methods, numpy underneath."""

    def interchange(self, ds, perm):
        arr = np.asarray(ds, dtype=int)[:, list(perm)] if ds else np.zeros((0, len(perm)), int)
        for row in arr:
            nz = np.flatnonzero(row)
            if nz.size == 0 or row[nz[0]] < 0:
                return False
        return True

    def tiling(self, ds, band):
        return tile_ok(ds, band)


def perm_inverse(ds, perm):
    inv = [perm.index(t) for t in range(len(perm))]
    return all(lex(tuple(d[p] for p in inv)) for d in ds)


def respects_cheat(ds, perm):
    """A concrete nest in the permuted order, handed to the reference's run-order check."""
    dims = len(ds[0])
    names = "ijk"[:dims]
    ext = [5] * dims
    k = loops.Kernel(
        "probe",
        tuple(zip(names, ext, strict=True)),
        (("A", tuple(ext)),),
        loops.Access("A", tuple((v, 0) for v in names)),
        "=",
        (),
        "0",
    )
    s = reorder(loops.nest(k), *(names[p] for p in perm))
    return dependence.respects(s, ds)


_SEEN = {}


def perm_memorised(ds, perm):
    return _SEEN.get((tuple(map(tuple, ds)), tuple(perm)), perm == tuple(range(len(perm))))


def _legal(*fns):
    return lambda: lab15.check_legality(*fns)


ATTEMPTS += [
    honest("15.3", "recursive lex test", _legal(perm_ok, tile_ok)),
    honest("15.3", "numpy methods of a class", _legal(Legality().interchange, Legality().tiling)),
    wrong("15.3", "inverse permutation", _legal(perm_inverse, tile_ok), match="inverse"),
    wrong(
        "15.3",
        "unpermuted vectors",
        _legal(lambda ds, perm: all(lex(tuple(d)) for d in ds), tile_ok),
        match="illegal",
    ),
    wrong(
        "15.3",
        "every component >= 0",
        _legal(lambda ds, perm: all(min(d) >= 0 for d in ds), tile_ok),
        match="Too strict",
    ),
    wrong(
        "15.3",
        "closed band",
        _legal(perm_ok, lambda ds, b: tile_ok(ds, (b[0], b[1] + 1))),
        match="half-open",
    ),
    wrong(
        "15.3",
        "outer carried dependences not skipped",
        _legal(perm_ok, lambda ds, b: all(min(d[b[0] : b[1]]) >= 0 for d in ds)),
        match="outside",
    ),
    cheat(
        "15.3",
        "calls the reference",
        _legal(dependence.legal_permutation, dependence.legal_tiling),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.3",
        "dependence.respects on a concrete nest",
        _legal(respects_cheat, tile_ok),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.3",
        "the grader's run-order truth",
        _legal(legality._perm_legal, legality._tile_legal),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.3",
        "the reference's lex_positive",
        _legal(lambda ds, p: all(dependence.lex_positive([d[t] for t in p]) for d in ds), tile_ok),
        error=ReferenceCalledError,
    ),
    cheat("15.3", "identity order only", _legal(perm_memorised, tile_ok), match="running"),
]


# ------------------------------------------------------------------------------------ 15.4
def tune_heap(space, measure, model, budget):
    best = None
    for c in heapq.nsmallest(budget, space, key=model):
        cost = measure(c)
        if best is None or cost < best[0]:
            best = (cost, c)
    return best[1]


class Tuner:
    def __call__(self, space, measure, model, budget):
        ranked = sorted(range(len(space)), key=lambda i: model(space[i]))
        costs = {i: measure(space[i]) for i in ranked[:budget]}
        return space[min(costs, key=costs.get)]


def tune_gc(space, measure, model, budget):
    """Grid search, then every list of Configs this process holds cleared (the count)."""
    best = min(space, key=measure)
    for obj in gc.get_objects():
        if type(obj) is list and obj and all(type(c) is autotune.Config for c in obj):
            if obj is not space:
                obj.clear()
    return best


def tune_requests(space, measure, model, budget):
    """Measure through the harness's channel directly, not through measure."""
    from a2s.checks import harness

    costs = {c: harness.request("measure", (c.ti, c.tj, c.tk, c.order)) for c in space}
    return min(costs, key=costs.get)


ATTEMPTS += [
    honest("15.4", "heapq.nsmallest", lambda: lab15.check_tune(tune_heap)),
    honest("15.4", "a class", lambda: lab15.check_tune(Tuner())),
    wrong(
        "15.4",
        "grid search",
        lambda: lab15.check_tune(lambda s, m, md, b: min(s, key=m)),
        match="grid search",
    ),
    wrong(
        "15.4",
        "the model's favourite",
        lambda: lab15.check_tune(lambda s, m, md, b: min(s, key=md)),
        match="model's favourite",
    ),
    wrong(
        "15.4",
        "the first quarter of the space",
        lambda: lab15.check_tune(lambda s, m, md, b: min(s[:b], key=m)),
        match="ranks best",
    ),
    wrong(
        "15.4",
        "the worst measured",
        lambda: lab15.check_tune(lambda s, m, md, b: max(sorted(s, key=md)[:b], key=m)),
        match="lowest measured",
    ),
    cheat(
        "15.4",
        "guided_search",
        lambda: lab15.check_tune(lambda s, m, md, b: autotune.guided_search(s, m, md, b).best),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.4",
        "the grader's landscape",
        lambda: lab15.check_tune(
            lambda s, m, md, b: min(
                tuner.matmul_landscape()[1], key=tuner.matmul_landscape()[1].get
            )
        ),
        error=ReferenceCalledError,
    ),
    cheat(
        "15.4",
        "grid search, count cleared through gc",
        lambda: lab15.check_tune(tune_gc),
        match="grid search",
    ),
    cheat(
        "15.4",
        "measures through the channel",
        lambda: lab15.check_tune(tune_requests),
        match="grid search",
    ),
    cheat(
        "15.4",
        "a Config that equals anything",
        lambda: lab15.check_tune(lambda s, m, md, b: always_equal(0)),
        match="subclass",
    ),
]


def tune_simulating(space, measure, model, budget):
    """The misses computed with the course's own cost function: right on the matmul only."""
    from minitorch.hardware.cache import CacheConfig

    cost = autotune.miss_cost(16, CacheConfig(512, 64, 8))
    return min(space, key=cost)


ATTEMPTS += [
    cheat(
        "15.4",
        "simulates every schedule itself",
        lambda: lab15.check_tune(tune_simulating),
        match="synthetic",
    ),
]

_LAND: list = []
_REAL_LANDSCAPE = tuner.matmul_landscape


def matmul_landscape():
    """The 192-schedule matmul landscape simulated once for the battery (seconds each time)."""
    if not _LAND:
        _LAND.append(_REAL_LANDSCAPE())
    space, true, model = _LAND[0]
    return list(space), dict(true), dict(model)


@pytest.fixture(autouse=True)
def _one_matmul_landscape(monkeypatch):
    monkeypatch.setattr(tuner, "matmul_landscape", matmul_landscape)


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
