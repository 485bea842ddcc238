"""Graders of lab 06: right answers pass, realistic wrong ones, budget breakers and reference
calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab06
from a2s.checks.core import ReferenceCalledError
from a2s.checks.lab06.lru import plain_lru
from minitorch.hardware import cache
from minitorch.kernels import matmul, traces
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked_k = unblocked_in("minitorch.kernels")
unblocked_h = unblocked_in("minitorch.hardware")


# --------------------------------------------------------------------------- answers
def lru_hits(addrs, size, line, ways, bug=""):
    """A learner's LRU (the grader's plain loop, copied: calling the grader's is forbidden)."""
    n_sets = size // (line * ways)
    sets: list[list[int]] = [[] for _ in range(n_sets)]
    hits = np.zeros(len(addrs), dtype=bool)
    for t, addr in enumerate(int(a) for a in addrs):
        ln = addr if bug == "no line" else addr // line
        s = sets[(addr if bug == "set from address" else ln) % n_sets]
        if ln in s:
            hits[t] = True
            if bug != "fifo":
                s.remove(ln)
                s.append(ln)
            continue
        if len(s) == ways:
            s.pop(-1 if bug == "evict mru" else 0)
        s.append(ln)
    return hits


def loop_trace(n, order, layout="row", elem=8):
    v = dict(zip(order, np.indices((n, n, n), dtype=np.int64).reshape(3, -1), strict=True))
    i, j, k = v["i"], v["j"], v["k"]

    def at(r, c):
        return r * n + c if layout == "row" else c * n + r

    a, b, c = at(i, k) * elem, n * n * elem + at(k, j) * elem, 2 * n * n * elem + at(i, j) * elem
    return np.stack([a, b, c], axis=1).ravel()


def predicted_misses(n, order, line_elems, inner_at=-1, invariant=0.0, per_line=True):
    inner = order[inner_at]
    per_run = 0.0
    for index in ("ik", "kj", "ij"):
        if index[1] == inner:
            per_run += n / line_elems if per_line else n
        elif index[0] == inner:
            per_run += n
        else:
            per_run += invariant
    return float(n * n * per_run)


def blocked_trace(n, tile, clip=True, b_swapped=False):
    parts = []
    for i0 in range(0, n, tile):
        for k0 in range(0, n, tile):
            for j0 in range(0, n, tile):
                end = (lambda s: min(s + tile, n)) if clip else (lambda s: s + tile)
                i, k, j = np.meshgrid(
                    np.arange(i0, end(i0)),
                    np.arange(k0, end(k0)),
                    np.arange(j0, end(j0)),
                    indexing="ij",
                )
                i, k, j = i.ravel(), k.ravel(), j.ravel()
                parts.append(
                    np.stack(
                        [
                            (i * n + k) * 8,
                            (n * n + (j * n + k if b_swapped else k * n + j)) * 8,
                            (2 * n * n + i * n + j) * 8,
                        ],
                        axis=1,
                    ).ravel()
                )
    return np.concatenate(parts)


def matmul_tiled(a, b, tile, kernel=np.matmul):
    (n, inner), m = a.shape, b.shape[1]
    c = np.zeros((n, m))
    for i in range(0, n, tile):
        for k in range(0, inner, tile):
            for j in range(0, m, tile):
                c[i : i + tile, j : j + tile] += kernel(
                    a[i : i + tile, k : k + tile], b[k : k + tile, j : j + tile]
                )
    return c


# --------------------------------------------------------------------------- 06.1
def test_lru_hits_passes(capsys):
    hit_mask = unblocked_h(cache.hit_mask)
    lab06.check_lru_hits(lru_hits)
    lab06.check_lru_hits(lambda a, s, ln, w: hit_mask(a, cache.CacheConfig(s, ln, w)))
    assert capsys.readouterr().out.count("✔ Exercise 06.1 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("fifo", "FIFO"),
        ("evict mru", "\\*least\\* recently used"),
        ("set from address", "chosen by the line number"),
        ("no line", "share one cache line"),
    ],
)
def test_lru_hits_rejects_wrong_answers(bug, match):
    rejects(lab06.check_lru_hits, lambda *a: lru_hits(*a, bug=bug), match=match)


def test_lru_hits_rejects_values_that_decide_their_own_equality():
    rejects(lab06.check_lru_hits, lambda *a: always_equal(lru_hits(*a)), match="subclass")


def test_lru_hits_rejects_the_reference():
    def through_simulator(addrs, size, line, ways):
        return cache.hit_mask(addrs, cache.CacheConfig(size, line, ways))

    def through_class(addrs, size, line, ways):
        return ~cache.LRUCache(cache.CacheConfig(size, line, ways)).access_lines(addrs // line)

    for fn in (through_simulator, through_class):
        rejects(lab06.check_lru_hits, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 06.2
def test_loop_trace_passes(capsys):
    lab06.check_loop_trace(loop_trace)
    lab06.check_loop_trace(unblocked_k(traces.loop_trace))
    assert capsys.readouterr().out.count("✔ Exercise 06.2 passed") == 2


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda n, o: loop_trace(n, o[::-1]), "outermost"),
        (lambda n, o: loop_trace(n, o, layout="col"), "Column-major"),
        (lambda n, o: loop_trace(n, o, elem=1), "in bytes"),
        (lambda n, o: loop_trace(n, o).astype(np.float64), "int"),
    ],
)
def test_loop_trace_rejects_wrong_answers(wrong, match):
    rejects(lab06.check_loop_trace, wrong, match=match)


def test_loop_trace_rejects_the_reference():
    rejects(
        lab06.check_loop_trace, traces.loop_trace, match="loop_trace", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 06.3
def test_predicted_misses_passes(capsys):
    lab06.check_predicted_misses(predicted_misses)
    lab06.check_predicted_misses(unblocked_k(traces.predicted_misses))
    assert capsys.readouterr().out.count("✔ Exercise 06.3 passed") == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"inner_at": 0}, "innermost loop is order\\[-1\\]"),
        ({"per_line": False}, "once per \\*line\\*"),
        ({"invariant": "n"}, "stays in cache"),
    ],
)
def test_predicted_misses_rejects_wrong_answers(kwargs, match):
    def wrong(n, order, line_elems):
        extra = {"invariant": float(n)} if kwargs.get("invariant") == "n" else kwargs
        return predicted_misses(n, order, line_elems, **extra)

    rejects(lab06.check_predicted_misses, wrong, match=match)


def test_predicted_misses_accepts_one_miss_per_run_for_the_invariant_array(capsys):
    lab06.check_predicted_misses(lambda *a: predicted_misses(*a, invariant=1.0))
    assert "✔ Exercise 06.3 passed" in capsys.readouterr().out


def test_predicted_misses_rejects_the_reference():
    rejects(
        lab06.check_predicted_misses,
        traces.predicted_misses,
        match="predicted_misses",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 06.4
def test_blocked_trace_passes(capsys):
    lab06.check_blocked_trace(blocked_trace)
    lab06.check_blocked_trace(unblocked_k(traces.blocked_trace))
    assert capsys.readouterr().out.count("✔ Exercise 06.4 passed") == 2


def test_blocked_trace_value_correct_but_untiled_breaks_the_budget():
    # every iteration exactly once (C is right), in the best loop order: ~2-4x the traffic
    rejects(lab06.check_blocked_trace, lambda n, t: loop_trace(n, "ikj"), match="budget")
    rejects(lab06.check_blocked_trace, lambda n, t: loop_trace(n, "ijk"), match="budget")


def test_blocked_trace_with_the_wrong_tile_breaks_the_budget():
    # tiles of 16 do not fit 3 at a time in 2 KiB: correct values, too much traffic
    rejects(lab06.check_blocked_trace, lambda n, t: blocked_trace(n, 16), match="budget")


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda n, t: blocked_trace(n, t, clip=False), "integer addresses"),
        (lambda n, t: blocked_trace(n, t)[: -3 * 8], "integer addresses"),
        (lambda n, t: blocked_trace(n, t, b_swapped=True), "one iteration"),
        (
            lambda n, t: np.concatenate([blocked_trace(n, t)[3:], blocked_trace(n, t)[-3:]]),
            "missing",
        ),
    ],
)
def test_blocked_trace_rejects_wrong_iterations(wrong, match):
    rejects(lab06.check_blocked_trace, wrong, match=match)


def test_blocked_trace_rejects_the_reference():
    for fn in (traces.blocked_trace, lambda n, t: traces.loop_trace(n, "ikj")):
        rejects(lab06.check_blocked_trace, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 06.5
def test_matmul_tiled_passes(capsys):
    lab06.check_matmul_tiled(matmul_tiled)
    lab06.check_matmul_tiled(unblocked_k(matmul.matmul_tiled))
    assert capsys.readouterr().out.count("✔ Exercise 06.5 passed") == 2


def _for_show(a, b, tile, kernel):
    matmul_tiled(a, b, tile, kernel)  # the right calls, results thrown away
    return np.asarray(a) @ np.asarray(b)  # (plain views: the operands refuse `a @ b` itself)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda a, b, tile, kernel: a @ b, "computed `np.matmul` on A or B"),
        (lambda a, b, tile, kernel: np.asarray(a) @ np.asarray(b), "never called"),
        (lambda a, b, tile, kernel: kernel(a, b), "larger than"),
        (lambda a, b, tile, kernel: matmul_tiled(a, b, max(tile // 2, 1), kernel), "kernel calls"),
        (_for_show, "sum of what kernel\\(\\) returns"),
        (lambda a, b, tile, kernel: matmul_tiled(a, b.T.copy().T, tile, kernel).T, "differs|shape"),
    ],
)
def test_matmul_tiled_rejects_wrong_answers(wrong, match):
    rejects(lab06.check_matmul_tiled, wrong, match=match)


def test_matmul_tiled_rejects_the_reference():
    rejects(
        lab06.check_matmul_tiled,
        lambda a, b, tile, kernel: matmul.matmul_tiled(a, b, tile, kernel),
        match="matmul_tiled",
        error=ReferenceCalledError,
    )


def test_blocked_trace_any_tile_order_passes(capsys):
    def tiles_ijk(n, tile):  # tiles (ii, jj, kk), inside i, j, k: another legitimate tiling
        parts = []
        for i0 in range(0, n, tile):
            for j0 in range(0, n, tile):
                for k0 in range(0, n, tile):
                    i, j, k = np.meshgrid(
                        np.arange(i0, min(i0 + tile, n)),
                        np.arange(j0, min(j0 + tile, n)),
                        np.arange(k0, min(k0 + tile, n)),
                        indexing="ij",
                    )
                    i, j, k = i.ravel(), j.ravel(), k.ravel()
                    block = np.stack(
                        [(i * n + k) * 8, (n * n + k * n + j) * 8, (2 * n * n + i * n + j) * 8],
                        axis=1,
                    ).ravel()
                    parts.append(block)
        return np.concatenate(parts)

    lab06.check_blocked_trace(tiles_ijk)
    assert "✔ Exercise 06.4 passed" in capsys.readouterr().out


def test_a_tiled_matmul_that_resets_the_call_count_is_rejected():
    def reset(a, b, tile, kernel):  # right values, then whatever the kernel holds rewritten
        out = np.asarray(a) @ np.asarray(b)
        for cell in getattr(kernel, "__closure__", None) or ():
            cell.cell_contents = 0
        return out

    # the kernel is a request to the grader's process: its log is not in reach
    rejects(lab06.check_matmul_tiled, reset, match="never called")


# --------------------------------------------------------------------------- review additions
def test_checks_reject_the_graders_own_ground_truth():
    """The grader's plain-loop simulator and closed forms are not the student's work."""
    from a2s.checks.lab06 import traces as truth

    match = "a2s.checks.lab06"
    rejects(lab06.check_lru_hits, plain_lru, match=match, error=ReferenceCalledError)
    rejects(lab06.check_loop_trace, truth._plain_trace, match=match, error=ReferenceCalledError)
    rejects(lab06.check_predicted_misses, truth._formula, match=match, error=ReferenceCalledError)
    rejects(
        lab06.check_blocked_trace,
        lambda n, tile: (truth.tiled_lines(n, tile), blocked_trace(n, tile))[1],
        match=match,
        error=ReferenceCalledError,
    )


def test_loop_trace_of_floats_says_addresses_are_integers():
    rejects(
        lab06.check_loop_trace,
        lambda n, order: loop_trace(n, order).astype(float),
        match="addresses are integers",
    )


@pytest.mark.parametrize("kind", [list, lambda a: a.astype(np.int32)])
def test_loop_trace_accepts_lists_and_other_int_widths(kind, capsys):
    lab06.check_loop_trace(lambda n, order: kind(loop_trace(n, order)))
    assert "✔ Exercise 06.2 passed" in capsys.readouterr().out


# --------------------------------------------------------------------------- issue 18 additions
def test_loop_trace_rejects_a_python_loop_over_the_iterations():
    def looped(n, order):
        out = []
        for x in range(n):
            for y in range(n):
                for z in range(n):
                    v = dict(zip(order, (x, y, z), strict=True))
                    i, j, k = v["i"], v["j"], v["k"]
                    out += [(i * n + k) * 8, (n * n + k * n + j) * 8, (2 * n * n + i * n + j) * 8]
        return np.array(out, dtype=np.int64)

    rejects(lab06.check_loop_trace, looped, match="Python lines")


def test_loop_trace_blocks_the_references_private_helper():
    def via_interleave(n, order):
        grids = dict(zip(order, np.indices((n, n, n)).reshape(3, -1), strict=True))
        return traces._interleave(n, grids["i"], grids["j"], grids["k"], 8)

    rejects(lab06.check_loop_trace, via_interleave, match="_interleave", error=ReferenceCalledError)


def test_predicted_misses_rejects_floor_division():
    def floor_lines(n, order, line_elems):  # n // L misses per stride-1 run
        inner, per_run = order[-1], 0
        for index in ("ik", "kj", "ij"):
            per_run += n // line_elems if index[1] == inner else n if index[0] == inner else 0
        return float(n * n * per_run)

    rejects(lab06.check_predicted_misses, floor_lines, match="true division")


def test_blocked_trace_ignoring_the_tile_is_rejected():
    rejects(
        lab06.check_blocked_trace, lambda n, tile: blocked_trace(n, 8), match="tile you are given"
    )


def test_matmul_tiled_rejects_arithmetic_outside_the_kernel():
    def einsum(a, b, tile, kernel):
        matmul_tiled(a, b, tile, kernel)
        return np.einsum("ik,kj->ij", a, b)

    def elementwise(a, b, tile, kernel):
        return (a[:, :, None] * b[None, :, :]).sum(axis=1)

    for fn, what in (
        (einsum, "np.einsum"),
        (elementwise, "np.multiply"),
        (lambda a, b, t, k: a.dot(b), "dot"),
    ):
        rejects(lab06.check_matmul_tiled, fn, match=what)


def test_prose_invariants_hold():
    """The invariants of the prose, recomputed from the prose's formulas (not the graders)."""
    assert lru_hits(np.array([0, 8, 64, 0]), 128, 64, 2).tolist() == [False, True, False, True]
    # 06.2: n = 2, ijk: iterations (0,0,0) and (0,0,1): A[0,k], B[k,0], C[0,0]
    n = 2
    assert [0, 8 * n * n + 0, 16 * n * n, 8, 8 * n * n + 8 * n, 16 * n * n] == [
        0,
        32,
        64,
        8,
        48,
        64,
    ]
    assert loop_trace(2, "ijk")[:6].tolist() == [0, 32, 64, 8, 48, 64]
    assert 2 * 64**3 / 8 == 65536.0  # 06.3: ikj, two stride-1 arrays: 2 n^3 / L
    assert np.array_equal(np.sort(blocked_trace(4, 2)), np.sort(loop_trace(4, "ijk")))


MUSTS = [
    (
        "06.1",
        "a hit moves the line to the most recent place of its set; a miss in a full set evicts "
        "the least recently used line",
        "test_lru_hits_rejects_wrong_answers",
    ),
    (
        "06.1",
        "`lru_hits(np.array([0, 8, 64, 0]), 128, 64, 2)` is `[False, True, False, True]`",
        "test_prose_invariants_hold",
    ),
    ("06.1", "Exercise code may not call torch, nor the `minitorch` reference", "test_attempt"),
    (
        "06.2",
        "No Python loop over iterations.",
        "test_loop_trace_rejects_a_python_loop_over_the_iterations",
    ),
    (
        "06.2",
        "the int64 array of $3n^3$ byte addresses",
        "test_loop_trace_of_floats_says_addresses_are_integers",
    ),
    (
        "06.2",
        '`loop_trace(2, "ijk")[:6]` is `[0, 32, 64, 8, 48, 64]`',
        "test_prose_invariants_hold",
    ),
    (
        "06.3",
        "Decide each array's stride from the innermost letter `order[-1]`",
        "test_predicted_misses_rejects_wrong_answers",
    ),
    (
        "06.3",
        "($n / L$ is a true division, not `n // L`)",
        "test_predicted_misses_rejects_floor_division",
    ),
    ("06.3", '`predicted_misses(64, "ikj", 8) == 65536.0`', "test_prose_invariants_hold"),
    (
        "06.4",
        "every iteration $(i, j, k)$ appears exactly once",
        "test_blocked_trace_rejects_wrong_iterations",
    ),
    (
        "06.4",
        "at most 1.5x the lines a tiled nest loads",
        "test_blocked_trace_value_correct_but_untiled_breaks_the_budget",
    ),
    ("06.4", "for the tile it is given", "test_blocked_trace_ignoring_the_tile_is_rejected"),
    ("06.4", "clip the last tiles at $n$ when $T$ does not divide it", "test_attempt"),
    (
        "06.4",
        "a trace that computes the right values but moves too many bytes fails",
        "test_blocked_trace_value_correct_but_untiled_breaks_the_budget",
    ),
    (
        "06.4",
        '`np.sort(blocked_trace(4, 2))` equals `np.sort(loop_trace(4, "ijk"))`',
        "test_prose_invariants_hold",
    ),
    (
        "06.5",
        "all arithmetic goes through `kernel(a_tile, b_tile)`",
        "test_matmul_tiled_rejects_arithmetic_outside_the_kernel",
    ),
    (
        "06.5",
        "exactly one call per (row tile, inner tile, column tile)",
        "test_matmul_tiled_rejects_wrong_answers",
    ),
    ("06.5", "no operand over $T \\times T$", "test_matmul_tiled_rejects_wrong_answers"),
    (
        "06.5",
        "C must change by exactly the number of inner tiles",
        "test_matmul_tiled_rejects_wrong_answers",
    ),
    (
        "06.5",
        "with `tile >= max(n, k, m)` there is exactly one kernel call",
        "test_matmul_tiled_rejects_wrong_answers",
    ),
]
