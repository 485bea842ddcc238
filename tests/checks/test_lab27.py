"""Graders of lab 27: right answers pass, realistic wrong ones, budget breakers and reference
calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab27
from a2s.checks.core import ReferenceCalledError
from minitorch.hardware import chiplet, memory_hierarchy, noc, systolic
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.hardware")


# --------------------------------------------------------------------------- answers
def weight_stationary(a, b, rows, cols, mac, bug=""):
    """A learner's WS array, with a known mistake switchable on."""
    (m, k), n = a.shape, b.shape[1]
    w = np.zeros((rows, cols))
    w[:k, :n] = b
    load = 0 if bug == "no load" else rows
    total = load + m + rows + cols - 2 if bug != "no drain" else load + m
    act, psum = np.zeros((rows, cols)), np.zeros((rows, cols))
    valid = np.zeros((rows, cols), bool)
    out, busy, r = np.zeros((m, n)), np.zeros(total, np.int64), np.arange(rows)
    for t in range(load, load + m + rows + cols - 2):
        s = t - load
        mi = s - (0 if bug == "no skew" else r)
        enter = (mi >= 0) & (mi < m) & (r < k)
        act[:, 1:], valid[:, 1:] = act[:, :-1].copy(), valid[:, :-1].copy()
        act[:, 0] = np.where(enter, a[np.clip(mi, 0, m - 1), np.clip(r, 0, k - 1)], 0.0)
        valid[:, 0] = enter
        above = np.zeros((rows, cols))
        above[1:] = psum[:-1]
        psum = mac(act, w, above)
        if t < total:
            busy[t] = valid[:k, :n].sum()
        cm = s - (rows - 1) - np.arange(n)
        done = (cm >= 0) & (cm < m)
        out[cm[done], np.nonzero(done)[0]] = psum[rows - 1, :n][done]
    return out, busy


_WS, _OS = unblocked(systolic.simulate_ws), unblocked(systolic.simulate_os)
_GEMM, _CUBE = unblocked(systolic.gemm_cycles), unblocked(systolic.cube_cycles)
_LOADS, _SNAKE = unblocked(noc.xy_link_loads), unblocked(noc.snake_ring)


def ws_reference(a, b, rows, cols, mac):
    run = _WS(a, b, rows, cols, mac)
    return run.c, run.busy


def os_reference(a, b, rows, cols, mac):
    run = _OS(a, b, rows, cols, mac)
    return run.c, run.busy


def choose_tiles(m, k, n, sram, ridge, fit=True):
    best = None
    for i in range(1, 65):
        for j in range(1, 65):
            tm, tn, tk = -(-m // i), -(-n // j), min(k, 16)
            need = 2 * 2 * (tm * tk + tk * tn) + (4 * tm * tn if fit else 0)
            if need > sram:
                continue
            q = 2 * (m * k * -(-n // tn) + k * n * -(-m // tm) + m * n)
            if best is None or 2 * m * k * n / q > best[0]:
                best = (2 * m * k * n / q, (tm, tk, tn))
    return best[1]


# --------------------------------------------------------------------------- 27.1 / 27.2
def test_dataflows_pass(capsys):
    lab27.check_weight_stationary(weight_stationary)
    lab27.check_weight_stationary(ws_reference)
    lab27.check_output_stationary(os_reference)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize(
    ("bug", "match"),
    [("no skew", "skew"), ("no load", "weight load"), ("no drain", "Fill and drain")],
)
def test_weight_stationary_rejects_wrong_answers(bug, match):
    rejects(
        lab27.check_weight_stationary,
        lambda *a: weight_stationary(*a, bug=bug),
        match=match,
    )


def test_weight_stationary_rejects_a_product_taken_outside_the_pes():
    def shortcut(a, b, rows, cols, mac):
        _, busy = weight_stationary(a, b, rows, cols, mac)
        return a @ b, busy  # right values, right wavefront, but C never came out of the PEs

    rejects(lab27.check_weight_stationary, shortcut, match="not a product taken")


def test_output_stationary_rejects_a_missing_drain():
    def no_drain(a, b, rows, cols, mac):
        c, busy = os_reference(a, b, rows, cols, mac)
        return c, busy[: a.shape[1] + rows + cols - 2]

    rejects(lab27.check_output_stationary, no_drain, match="drain")


def test_output_stationary_rejects_weight_stationary_cycles():
    def ws_count(a, b, rows, cols, mac):
        c, _ = os_reference(a, b, rows, cols, mac)
        return c, np.zeros(2 * rows + cols + a.shape[0] - 2, np.int64)

    rejects(lab27.check_output_stationary, ws_count, match="cycles|wavefront")


def test_dataflows_reject_the_reference():
    def ws(a, b, rows, cols, mac):
        run = systolic.simulate_ws(a, b, rows, cols, mac)
        return run.c, run.busy

    def os_(a, b, rows, cols, mac):
        run = systolic.simulate_os(a, b, rows, cols, mac)
        return run.c, run.busy

    rejects(lab27.check_weight_stationary, ws, match="reference", error=ReferenceCalledError)
    rejects(lab27.check_output_stationary, os_, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 27.3
def _mapped(m, k, n, r, c):
    return _GEMM(m, k, n, r, c)


def test_mapped_cycles_passes(capsys):
    lab27.check_mapped_cycles(_mapped, _CUBE)
    assert "✔ Exercise 27.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda m, k, n, r, c: -(-k // r) * -(-n // c) * (2 * r + c + m - 2), "Double buffering"),
        (lambda m, k, n, r, c: r + m + (-(-k // r) * -(-n // c) - 1) * max(m, r), "Fill and drain"),
    ],
)
def test_mapped_cycles_rejects_wrong_answers(wrong, match):
    rejects(lab27.check_mapped_cycles, wrong, _CUBE, match=match)


def test_cube_cycles_rejects_partial_blocks():
    rejects(
        lab27.check_mapped_cycles,
        _mapped,
        lambda m, k, n, cube: m * k * n // cube**3,
        match="whole 16x16x16 block",
    )


def test_mapped_cycles_rejects_the_reference():
    rejects(
        lab27.check_mapped_cycles,
        systolic.gemm_cycles,
        systolic.cube_cycles,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 27.4
def test_choose_tiles_passes(capsys):
    lab27.check_choose_tiles(choose_tiles)
    assert "✔ Exercise 27.4 passed" in capsys.readouterr().out


def test_choose_tiles_exceeding_sram_is_rejected():
    # forgot the accumulators: the tiles chosen overflow the SRAM budget
    rejects(
        lab27.check_choose_tiles, lambda *a: choose_tiles(*a, fit=False), match="over the budget"
    )


def test_choose_tiles_that_fit_but_stay_memory_bound_break_the_traffic_budget():
    # a valid tiling of the GEMM that fits easily, value-correct, but re-reads A and B too often
    rejects(lab27.check_choose_tiles, lambda m, k, n, s, r: (64, 64, 64), match="traffic budget")


def test_choose_tiles_rejects_the_reference():
    def through_reference(m, k, n, sram, ridge):
        memory_hierarchy.sram_footprint(128, 16, 128)
        return choose_tiles(m, k, n, sram, ridge)

    rejects(
        lab27.check_choose_tiles, through_reference, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 27.5
def _loads(traffic, w, h):
    return _LOADS(traffic, w, h)


def _snake(w, h):
    return _SNAKE(w, h)


def test_mesh_passes(capsys):
    lab27.check_mesh(_loads, _snake)
    assert "✔ Exercise 27.5 passed" in capsys.readouterr().out


def test_mesh_rejects_yx_routing():
    def yx(traffic, w, h):  # y first, then x
        out = np.zeros((h, w, 4))
        for (x, y), (tx, ty), nbytes in traffic:
            while y != ty:
                d = 2 if ty > y else 3
                out[y, x, d] += nbytes
                y += 1 if d == 2 else -1
            while x != tx:
                d = 0 if tx > x else 1
                out[y, x, d] += nbytes
                x += 1 if d == 0 else -1
        return out

    rejects(lab27.check_mesh, yx, _snake, match="x first")


def test_mesh_rejects_counting_messages_not_bytes():
    rejects(
        lab27.check_mesh,
        lambda t, w, h: _loads([(s, d, 1.0) for s, d, _ in t], w, h),
        _snake,
        match="bytes",
    )


def test_mesh_row_major_ring_breaks_the_link_budget():
    rejects(
        lab27.check_mesh,
        _loads,
        lambda w, h: [(i % w, i // w) for i in range(w * h)],
        match="link budget",
    )


def test_mesh_rejects_the_reference():
    rejects(
        lab27.check_mesh, noc.xy_link_loads, _snake, match="reference", error=ReferenceCalledError
    )


def test_dataflows_reject_a_product_that_probes_the_mac():
    """mac called the right number of times on zeros to learn the mark; C taken as a @ b."""

    def probe(a, b, rows, cols, mac, ws=True):
        (m, k), n = a.shape, b.shape[1]
        steps = (m if ws else k) + rows + cols - 2
        zero = np.zeros((rows, cols))
        mark = 0.0
        for _ in range(steps):
            mark = float(mac(zero, zero, zero)[0, 0])
        busy = np.zeros(steps + rows, np.int64)
        for i in range(m):
            for j in range(k):
                busy[(rows if ws else 0) + i + j : (rows if ws else 0) + i + j + n] += 1
        return a @ b + (rows if ws else steps) * mark, busy

    rejects(lab27.check_weight_stationary, probe, match="PEs computed")
    rejects(lab27.check_output_stationary, lambda *a: probe(*a, ws=False), match="PEs computed")


def test_choose_tiles_accepts_integral_floats(capsys):
    lab27.check_choose_tiles(lambda *a: tuple(float(t) for t in choose_tiles(*a)))
    assert "✔ Exercise 27.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("perm", "match"), [([1, 0, 2, 3], "east and west"), ([0, 1, 3, 2], "north and south")]
)
def test_mesh_names_swapped_directions(perm, match):
    rejects(
        lab27.check_mesh,
        lambda t, w, h: np.asarray(_loads(t, w, h))[..., perm],
        _snake,
        match=match,
    )


def test_the_graders_own_ground_truth_is_blocked():
    """The grader's closed forms and router are importable: calling them calls the reference."""
    from a2s.checks.lab27 import mapping, mesh

    for check, fns in [
        (lab27.check_mapped_cycles, (mapping._ws, mapping._cube)),
        (lab27.check_mesh, (mesh._loads, _snake)),
    ]:
        rejects(check, *fns, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 27.6
def place_on_dies(traffic, dies, capacity, d2d, on_die, budget_s, bug=""):
    """A learner's exhaustive search, with a known mistake switchable on."""
    import itertools

    n, best = len(traffic), None
    edges = [(i, j, b) for i, row in enumerate(traffic) for j, b in enumerate(row) if b]
    for place in itertools.product(range(dies), repeat=n):
        if bug != "capacity" and max(place.count(d) for d in range(dies)) > capacity:
            continue
        links = {}
        for i, j, b in edges:
            if place[i] != place[j]:
                a, c = place[i], place[j]
                key = (min(a, c), max(a, c)) if bug == "undirected" else (a, c)
                links[key] = links.get(key, 0) + b
        if bug == "idle":
            used = set(place)
            links |= {(a, b): links.get((a, b), 0) for a in used for b in used if a != b}
        lat = 0.0 if bug == "no latency" else d2d["latency"]
        if bug != "no budget" and any(
            lat + v / d2d["bandwidth"] > budget_s for v in links.values()
        ):
            continue
        cut = sum(b for i, j, b in edges if place[i] != place[j])
        kept = sum(b for i, j, b in edges if place[i] == place[j] and i != j)
        energy = 8e-12 * (cut * d2d["pj_per_bit"] + kept * on_die["pj_per_bit"])
        if best is None or energy < best[0]:
            best = (energy, list(place))
    if best is None and bug == "best effort":
        return place_on_dies(traffic, dies, capacity, d2d, on_die, budget_s, bug="no budget")
    return None if best is None else best[1]


_PLACE = unblocked(chiplet.place_on_dies)


def test_place_on_dies_passes(capsys):
    lab27.check_place_on_dies(place_on_dies)
    lab27.check_place_on_dies(lambda *a: None if (p := _PLACE(*a)) is None else np.array(p))
    assert capsys.readouterr().out.count("✔ Exercise 27.6 passed") == 2


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("no budget", "over the link budget"),
        ("no latency", "add the latency"),
        ("undirected", "its own link"),
        ("idle", "no bytes takes no time"),
        ("best effort", "return None"),
        ("capacity", "over its capacity"),
    ],
)
def test_place_on_dies_rejects_wrong_answers(bug, match):
    rejects(lab27.check_place_on_dies, lambda *a: place_on_dies(*a, bug=bug), match=match)


def test_place_on_dies_rejects_a_placement_that_fits_but_costs_more():
    """The first placement that fits the budget, not the cheapest one that does."""

    def first_fit(traffic, dies, capacity, d2d, on_die, budget_s):
        import itertools

        n = len(traffic)
        for place in itertools.product(range(dies), repeat=n):
            if max(place.count(d) for d in range(dies)) > capacity:
                continue
            links = {}
            for i in range(n):
                for j in range(n):
                    if place[i] != place[j] and traffic[i][j]:
                        key = place[i], place[j]
                        links[key] = links.get(key, 0) + traffic[i][j]
            if all(d2d["latency"] + b / d2d["bandwidth"] <= budget_s for b in links.values()):
                return list(place)
        return None

    rejects(lab27.check_place_on_dies, first_fit, match="within the budget but costs")


def test_place_on_dies_rejects_bad_output_with_a_clear_message():
    rejects(lab27.check_place_on_dies, lambda *a: "die 0", match="list of 8 die numbers")
    rejects(lab27.check_place_on_dies, lambda *a: [9] * 8, match="die numbers run 0")


def test_place_on_dies_rejects_the_reference():
    rejects(
        lab27.check_place_on_dies,
        chiplet.place_on_dies,
        match="reference",
        error=ReferenceCalledError,
    )


def test_place_on_dies_rejects_the_reference_enumerator():
    def through_enumerator(traffic, dies, capacity, d2d, on_die, budget_s):
        list(chiplet._placements(len(traffic), dies, capacity))
        return place_on_dies(traffic, dies, capacity, d2d, on_die, budget_s)

    rejects(
        lab27.check_place_on_dies, through_enumerator, match="reference", error=ReferenceCalledError
    )


def test_place_on_dies_rejects_the_graders_own_truth():
    from a2s.checks.lab27 import _truth

    def through_truth(traffic, dies, capacity, d2d, on_die, budget_s):
        got = _truth.best_placement(traffic, dies, capacity, d2d, on_die, budget_s)
        return None if got is None else got[1]

    rejects(lab27.check_place_on_dies, through_truth, match="reference", error=ReferenceCalledError)


def test_named_cases_of_27_6_catch_their_mistakes():
    """Each named case is one where its mistake changes the answer (not only by a tie)."""
    from a2s.checks.lab27 import _truth, dies

    cases = {c[0]: c[1:] for c in dies.place_cases()}

    def best(label, **variant):
        return _truth.best_placement(*cases[label], **variant)

    free = _truth.best_placement(*cases["the cheapest cut overloads one link"][:5], 1.0)
    assert free[0] < best("the cheapest cut overloads one link")[0]
    assert best("each direction is its own link", directed=False) is None
    assert (
        best("a link's time includes its latency", latency=False)[0]
        < best("a link's time includes its latency")[0]
    )
    assert best("an idle link takes no time: budget under one latency", idle=True) is None
    assert best("tiny GPT layer, 2 dies of 4, advanced package, 1 us")[1] == [
        0,
        0,
        0,
        0,
        1,
        1,
        1,
        1,
    ]
    assert best("a chain that no placement fits") is None
    assert best("tiny GPT layer, 2 dies of 4, standard package, 2 us: none fits") is None
    layer = cases["tiny GPT layer, 4 dies of 2, advanced package, 1 us"]
    assert (
        _truth.best_placement(*layer[:5], 1.0)[0]
        < best("tiny GPT layer, 4 dies of 2, advanced package, 1 us")[0]
    )


def _busiest(t, p, d2d):
    from a2s.checks.lab27 import _truth

    return max([_truth.link_time(b, d2d) for b in _truth.d2d_loads(t, p).values()], default=0.0)


def test_fresh_cases_of_27_6_bind_their_budget():
    """Each fresh layer fits its budget, its unbudgeted optimum does not, and the placement with
    the least busiest link is not the cheapest: None, the free optimum or min-max all fail."""
    from a2s.checks.lab27 import _truth, dies

    for seed in range(4):
        for _, t, n_dies, cap, d2d, on_die, budget in dies._fresh_cases(
            np.random.default_rng(seed)
        ):
            within = _truth.best_placement(t, n_dies, cap, d2d, on_die, budget)
            free = _truth.best_placement(t, n_dies, cap, d2d, on_die, 1.0)
            assert within is not None and _truth.over_budget(t, free[1], d2d, budget)
            assert within[0] > free[0] * (1 + 1e-9)
            least = min(_busiest(t, p, d2d) for p in _truth.placements(len(t), n_dies, cap))
            minmax = [
                _truth.energy_of(t, p, d2d, on_die)
                for p in _truth.placements(len(t), n_dies, cap)
                if _busiest(t, p, d2d) == least
            ]
            assert min(minmax) > within[0] * (1 + 1e-9)


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("27.1", "Exercise code may not call torch", "test_attempt"),
    (
        "27.1",
        "nor the `minitorch` reference of the function the exercise asks you to write",
        "test_dataflows_reject_the_reference",
    ),
    (
        "27.1",
        "the **only** arithmetic of the array, on all $R \\times C$ PEs at once",
        "test_weight_stationary_rejects_a_product_taken_outside_the_pes",
    ),
    (
        "27.1",
        "*Invariant:* `busy.sum() == M * K * N` and PE $(k, n)$ works on row $m$ at cycle "
        "$R + m + k + n$",
        "test_weight_stationary_rejects_wrong_answers",
    ),
    ("27.1", "`mac` is a request to the grader's, which counts the calls", "test_attempt"),
    (
        "27.1",
        "each output grows by the $R$ marks its partial sum met",
        "test_dataflows_reject_a_product_that_probes_the_mac",
    ),
    (
        "27.2",
        "*Invariant:* PE $(m, n)$ does step $k$ at cycle $m + n + k$",
        "test_output_stationary_rejects_a_missing_drain",
    ),
    (
        "27.3",
        "*Invariant:* `mapped_cycles(128, 128, 128, 128, 128) == 510`, "
        "`cube_cycles(17, 16, 16, 16) == 2`",
        "test_mapped_cycles_rejects_wrong_answers",
    ),
    (
        "27.4",
        "pick SRAM tiles under a capacity budget so that a large GEMM stays compute-bound",
        "test_choose_tiles_that_fit_but_stay_memory_bound_break_the_traffic_budget",
    ),
    (
        "27.4",
        "*Invariant:* for a 4096³ GEMM with 2 MiB of SRAM",
        "test_choose_tiles_exceeding_sram_is_rejected",
    ),
    (
        "27.5",
        "the busiest link may carry at most **one** chunk",
        "test_mesh_row_major_ring_breaks_the_link_budget",
    ),
    (
        "27.5",
        "*Invariant:* a message from `(2, 0)` to `(0, 2)` loads `[0, 2, 1]`",
        "test_mesh_rejects_yx_routing",
    ),
    (
        "27.6",
        "every link direction that carries bytes must finish them within `budget_s`",
        "test_place_on_dies_rejects_wrong_answers",
    ),
    (
        "27.6",
        "each die holds at most `capacity` tiles",
        "test_place_on_dies_rejects_wrong_answers",
    ),
    (
        "27.6",
        "the **least** energy of any placement within the budget",
        "test_place_on_dies_rejects_a_placement_that_fits_but_costs_more",
    ),
    (
        "27.6",
        "return `None` when no placement meets the budget",
        "test_place_on_dies_rejects_wrong_answers",
    ),
    ("27.6", "$L + b/B \\le$ `budget_s`", "test_attempt"),
    (
        "27.6",
        "where $a \\to b$ and $b \\to a$ are separate links",
        "test_place_on_dies_rejects_wrong_answers",
    ),
    ("27.6", "an idle link takes no time", "test_place_on_dies_rejects_wrong_answers"),
    ("27.6", "any optimal placement passes (renaming the dies changes nothing)", "test_attempt"),
    (
        "27.6",
        "the layer splits into its attention half and its MLP half, `[0, 0, 0, 0, 1, 1, 1, 1]`",
        "test_named_cases_of_27_6_catch_their_mistakes",
    ),
    (
        "27.6",
        "on 4 dies of 2 the cheapest placement of all misses the 1 µs budget",
        "test_named_cases_of_27_6_catch_their_mistakes",
    ),
    ("27.6", "fresh random layers", "test_fresh_cases_of_27_6_bind_their_budget"),
]
