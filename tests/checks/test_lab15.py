"""Graders of lab 15: right answers pass; realistic wrong ones, budget breakers, illegal
interchanges and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab15
from a2s.checks.core import ReferenceCalledError
from a2s.checks.lab15.legality import brute_distances
from minitorch.compiler import autotune, dependence, loops
from minitorch.compiler.loops import Nest, reorder, split, stencil
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.compiler")


MUSTS = [
    (
        "15.1",
        "built with `split` and `reorder` only (`tile` is blocked: build it yourself)",
        "test_attempt",
    ),
    (
        "15.1",
        r"misses at most **twice the lines of an $8\times8\times8$ tiled nest**",
        "test_schedule_matmul_rejects_wrong_answers",
    ),
    (
        "15.1",
        "checks every $(i, j, k)$ runs exactly once",
        "test_schedule_matmul_rejects_wrong_answers",
    ),
    ("15.1", "the three tile loops outside the three point loops", "test_attempt"),
    (
        "15.2",
        "the sorted list of distinct distance vectors",
        "test_distance_vectors_must_be_sorted_and_distinct",
    ),
    (
        "15.2",
        "Make each vector lexicographically positive; drop zero vectors.",
        "test_distance_vectors_rejects_wrong_answers",
    ),
    (
        "15.3",
        "keeps every distance vector lexicographically positive",
        "test_legality_rejects_wrong_answers",
    ),
    (
        "15.3",
        "(a half-open range of positions, source order)",
        "test_legality_rejects_wrong_answers",
    ),
    (
        "15.3",
        "A test that allows the stencil's illegal interchange fails.",
        "test_a_test_that_allows_the_illegal_interchange_is_rejected",
    ),
    (
        "15.4",
        "call it at most `budget` times; the grader counts",
        "test_tune_cannot_read_the_costs_out_of_measure",
    ),
    ("15.4", "at most 1.10x the grid's minimum", "test_tune_rejects_a_random_quarter"),
    (
        "15.4",
        "Rank by the model, measure the best-ranked, return the best *measured*.",
        "test_tune_rejects_wrong_answers",
    ),
]


# --------------------------------------------------------------------------- 15.1
def schedule_matmul(s: Nest, t: int = 8, order: str = "ikj") -> Nest:
    for v in "ijk":
        s = split(s, v, t)
    return reorder(s, *(v + "o" for v in order), *(v + "i" for v in order))


def test_schedule_matmul_passes(capsys):
    lab15.check_schedule_matmul(schedule_matmul)
    lab15.check_schedule_matmul(lambda s: schedule_matmul(s, 8, "ijk"))
    assert capsys.readouterr().out.count("✔ Exercise 15.1 passed") == 2


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        # value-correct, budget-breaking: the best untiled order, and tiles too big for the cache
        (lambda s: reorder(s, "i", "k", "j"), "budget"),
        (lambda s: schedule_matmul(s, 16), "budget"),
        # only i and j split: k runs the whole row of A and column of B inside
        (lambda s: reorder(split(split(s, "i", 8), "j", 8), "io", "jo", "ii", "ji"), "budget"),
        # a hand-made nest that drops the last iterations
        (lambda s: Nest(s.kernel, (*s.loops[:2], loops.Loop("k", 3)), s.bind), "never run"),
        (lambda s: "io jo ko ii ji ki", "Nest"),
    ],
)
def test_schedule_matmul_rejects_wrong_answers(wrong, match):
    rejects(lab15.check_schedule_matmul, wrong, match=match)


def test_schedule_matmul_rejects_the_reference():
    for fn in (
        lambda s: loops.tile(loops.split(s, "k", 8), "i", "j", 8, 8),
        lambda s: autotune.matmul_schedule(s.kernel.dims[0][1], autotune.Config(8, 8, 8)),
    ):
        rejects(lab15.check_schedule_matmul, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 15.2
def distance_vectors(kernel, sign=1, normalize=True, anti=True, zero=False):
    out = set()
    for r in kernel.reads:
        d = tuple(
            sign * (cw - cr) for (_, cw), (_, cr) in zip(kernel.lhs.index, r.index, strict=True)
        )
        if not any(d) and not zero:
            continue
        positive = next((x > 0 for x in d if x), False)
        if not positive and normalize:
            if not anti:
                continue
            d = tuple(-x for x in d)
        out.add(d)
    return sorted(out)


def test_distance_vectors_passes(capsys):
    lab15.check_distance_vectors(distance_vectors)
    lab15.check_distance_vectors(unblocked(dependence.distance_vectors))
    assert capsys.readouterr().out.count("✔ Exercise 15.2 passed") == 2


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda k: distance_vectors(k, sign=-1, normalize=False), "Sign error"),
        (lambda k: distance_vectors(k, normalize=False), "anti dependence"),
        (lambda k: distance_vectors(k, anti=False), "missing"),
        (lambda k: distance_vectors(k, zero=True), "zero vector"),
        (lambda k: [np.array(d) for d in distance_vectors(k)], "tuples of ints"),
    ],
)
def test_distance_vectors_rejects_wrong_answers(wrong, match):
    rejects(lab15.check_distance_vectors, wrong, match=match)


def test_distance_vectors_must_be_sorted_and_distinct():
    rejects(
        lab15.check_distance_vectors,
        lambda k: distance_vectors(k)[::-1] * 2,
        match="sorted list of distinct",
    )


def test_distance_vectors_rejects_the_reference():
    rejects(
        lab15.check_distance_vectors,
        dependence.distance_vectors,
        match="reference",
        error=ReferenceCalledError,
    )


@pytest.mark.parametrize("offsets", [[(-1, 0), (0, -1)], [(-1, 1), (0, -1)], [(1, 1), (0, 0)]])
def test_brute_force_agrees_with_the_reference(offsets):
    kernel = stencil(7, 7, offsets)
    assert brute_distances(kernel) == dependence.distance_vectors(kernel)


# --------------------------------------------------------------------------- 15.3
def lex_positive(d):
    return next((x > 0 for x in d if x != 0), False)


def interchange_legal(ds, perm):
    return all(lex_positive([d[p] for p in perm]) for d in ds)


def tiling_legal(ds, band):
    lo, hi = band
    return all(lex_positive(d[:lo]) or min(d[lo:hi]) >= 0 for d in ds)


def test_legality_passes(capsys):
    lab15.check_legality(interchange_legal, tiling_legal)
    legal = (unblocked(dependence.legal_permutation), unblocked(dependence.legal_tiling))
    lab15.check_legality(*legal)
    assert capsys.readouterr().out.count("✔ Exercise 15.3 passed") == 2


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        # allows every interchange: tests the unpermuted vectors
        ((lambda ds, perm: all(lex_positive(d) for d in ds), tiling_legal), "illegal"),
        # only looks at the new outermost component
        ((lambda ds, perm: all(d[perm[0]] >= 0 for d in ds), tiling_legal), "running"),
        ((lambda ds, perm: all(min(d) >= 0 for d in ds), tiling_legal), "Too strict"),
        ((interchange_legal, lambda ds, band: True), "every band component"),
        ((interchange_legal, lambda ds, b: all(min(d[b[0] : b[1]]) >= 0 for d in ds)), "outside"),
        ((lambda ds, perm: 1, tiling_legal), "bool"),
        # the inverse permutation: d scattered to positions perm instead of gathered from them
        (
            (
                lambda ds, p: all(lex_positive([d[p.index(t)] for t in range(len(p))]) for d in ds),
                tiling_legal,
            ),
            "inverse permutation",
        ),
        # the band read as closed [lo, hi]
        (
            (interchange_legal, lambda ds, b: tiling_legal(ds, (b[0], b[1] + 1))),
            "half-open",
        ),
    ],
)
def test_legality_rejects_wrong_answers(fns, match):
    rejects(lab15.check_legality, *fns, match=match)


def test_a_test_that_allows_the_illegal_interchange_is_rejected():
    """The skewed stencil's (1, -1) becomes (-1, 1) under interchange: the sink runs first."""

    def allows_skewed(ds, perm):
        return True if (1, -1) in [tuple(d) for d in ds] else interchange_legal(ds, perm)

    rejects(lab15.check_legality, allows_skewed, tiling_legal, match=r"order \(1, 0\).*illegal")


def test_legality_rejects_the_reference():
    rejects(
        lab15.check_legality,
        dependence.legal_permutation,
        tiling_legal,
        match="reference",
        error=ReferenceCalledError,
    )
    rejects(
        lab15.check_legality,
        lambda ds, p: all(dependence.lex_positive([d[t] for t in p]) for d in ds),
        tiling_legal,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 15.4
def tune(space, measure, model, budget):
    return min(sorted(space, key=model)[:budget], key=measure)


def test_tune_passes(capsys):
    lab15.check_tune(tune)
    guided = unblocked(autotune.guided_search)
    lab15.check_tune(lambda space, m, model, b: guided(space, m, model, b).best)
    assert capsys.readouterr().out.count("✔ Exercise 15.4 passed") == 2


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda space, measure, model, budget: min(space, key=measure), "grid search"),
        (lambda space, measure, model, budget: min(space, key=model), "model's favourite"),
        (lambda s, m, model, b: max(sorted(s, key=model)[:b], key=m), "lowest measured"),
        (lambda space, measure, model, budget: min(space[:budget], key=measure), "ranks best"),
        (lambda s, m, model, b: (tune(s, m, model, b), 0.0), "one Config"),
    ],
)
def test_tune_rejects_wrong_answers(wrong, match):
    rejects(lab15.check_tune, wrong, match=match)


def random_tune(seed):
    def tune(space, measure, model, budget):
        picks = np.random.default_rng(seed).permutation(len(space))[:budget]
        return min((space[int(p)] for p in picks), key=measure)

    return tune


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tune_rejects_a_random_quarter(monkeypatch, seed):
    # a random quarter finds the one configuration within 10% of a synthetic landscape one time
    # in four, and one of the matmul's two 44 times in 100: all five landscapes ~1 in 600
    monkeypatch.setenv("A2S_SEED", str(seed))
    rejects(lab15.check_tune, random_tune(seed), match="ranks best")


def test_tune_cannot_read_the_costs_out_of_measure():
    """measure is a request to the grader's process (checks.harness): nothing in the learner's
    process holds the costs or the count; every call of it is counted there."""

    def from_closure(space, measure, model, budget):
        import gc

        for cell in getattr(measure, "__closure__", None) or ():
            if isinstance(cell.cell_contents, dict):
                return min(cell.cell_contents, key=cell.cell_contents.get)
        for obj in gc.get_objects():  # the grader's list of calls, if this process had it
            if (
                type(obj) is list
                and obj is not space
                and obj
                and all(type(c).__name__ == "Config" for c in obj)
            ):
                obj.clear()
        return min(space, key=measure)

    rejects(lab15.check_tune, from_closure, match="grid search")


def test_tune_rejects_the_reference():
    for fn in (
        lambda space, measure, model, budget: autotune.guided_search(space, measure, model, budget),
        lambda space, measure, model, budget: autotune.random_search(space, measure, budget),
    ):
        rejects(lab15.check_tune, fn, match="reference", error=ReferenceCalledError)


def test_the_graders_own_ground_truth_is_blocked():
    """The grader's truth functions are importable; calling them is calling the reference."""
    from a2s.checks.lab15 import legality, tuner

    def from_landscape(space, measure, model, budget):
        _, true, _ = tuner.matmul_landscape()
        return min(true, key=true.get)

    for check, fns in [
        (lab15.check_distance_vectors, (legality.brute_distances,)),
        (lab15.check_legality, (legality._perm_legal, legality._tile_legal)),
        (lab15.check_tune, (from_landscape,)),
    ]:
        rejects(check, *fns, match="reference", error=ReferenceCalledError)
