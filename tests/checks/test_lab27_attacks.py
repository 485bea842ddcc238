"""Lab 27 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`); 27.1 and 27.2
run the simulator in a forked child whose ``mac`` is a request to the grader's process. Frame,
``gc`` and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.

27.6 (chiplets, ``CHIPLETS``): honest a branch and bound that renames the dies, the search
run backwards, a numpy grid returning an array, the bytes a link can carry within the budget, the
fewest bytes across dies; wrong latency forgotten, both directions as one link, idle links
budgeted, ``<`` for the budget and for the capacity, the least bad placement instead of
``None``, the least busiest link; cheats the reference and its helpers, the grader's search,
its ``_canonical`` and its frame, every tile on one die (cheaper than any optimum), torch, a
link widened in the dict handed over, the named answers (public) with ``None``, a min-max
search or the budget ignored for the fresh layers, die numbers whose ``==`` says yes.
Rebinding the grader's ``truth`` passes in-process: a strict xfail (the sealed kernel's).
"""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab27
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

TRUTH = "a2s.checks.lab27"


# --------------------------------------------------------------------------- the solutions


def weight_stationary(a, b, rows, cols, mac):
    """One WS fold of A (M, K) @ B (K, N) on a rows x cols array -> (C (M, N), busy (cycles,))."""
    (m, k), n = a.shape, b.shape[1]
    w = np.zeros((rows, cols))
    w[:k, :n] = b
    total = 2 * rows + cols + m - 2
    act, psum = np.zeros((rows, cols)), np.zeros((rows, cols))
    valid = np.zeros((rows, cols), bool)
    c, busy, r = np.zeros((m, n)), np.zeros(total, np.int64), np.arange(rows)
    for t in range(rows, total):
        s = t - rows
        row_m = s - r
        enter = (row_m >= 0) & (row_m < m) & (r < k)
        act[:, 1:], valid[:, 1:] = act[:, :-1].copy(), valid[:, :-1].copy()
        act[:, 0] = np.where(enter, a[np.clip(row_m, 0, m - 1), np.clip(r, 0, k - 1)], 0.0)
        valid[:, 0] = enter
        above = np.zeros((rows, cols))
        above[1:] = psum[:-1]
        psum = mac(act, w, above)
        busy[t] = valid[:k, :n].sum()
        out_m = s - (rows - 1) - np.arange(n)
        done = (out_m >= 0) & (out_m < m)
        c[out_m[done], np.nonzero(done)[0]] = psum[rows - 1, :n][done]
    return c, busy


def output_stationary(a, b, rows, cols, mac):
    """One OS fold of A (M, K) @ B (K, N) on a rows x cols array -> (C (M, N), busy (cycles,))."""
    (m, k), n = a.shape, b.shape[1]
    compute = k + rows + cols - 2
    busy = np.zeros(compute + rows, np.int64)
    left, top, acc = np.zeros((rows, cols)), np.zeros((rows, cols)), np.zeros((rows, cols))
    lv, tv = np.zeros((rows, cols), bool), np.zeros((rows, cols), bool)
    r, cl = np.arange(rows), np.arange(cols)
    for t in range(compute):
        ka, kb = t - r, t - cl
        ea, eb = (ka >= 0) & (ka < k) & (r < m), (kb >= 0) & (kb < k) & (cl < n)
        left[:, 1:], lv[:, 1:] = left[:, :-1].copy(), lv[:, :-1].copy()
        top[1:], tv[1:] = top[:-1].copy(), tv[:-1].copy()
        left[:, 0] = np.where(ea, a[np.clip(r, 0, m - 1), np.clip(ka, 0, k - 1)], 0.0)
        top[0] = np.where(eb, b[np.clip(kb, 0, k - 1), np.clip(cl, 0, n - 1)], 0.0)
        lv[:, 0], tv[0] = ea, eb
        acc = mac(left, top, acc)
        busy[t] = (lv & tv).sum()
    return acc[:m, :n].copy(), busy


def mapped_cycles(m, k, n, rows, cols):
    folds = -(-k // rows) * -(-n // cols)
    return 2 * rows + cols + m - 2 + (folds - 1) * max(m, rows)


def cube_cycles(m, k, n, cube):
    return -(-m // cube) * -(-k // cube) * -(-n // cube)


def choose_tiles(m, k, n, sram_bytes, ridge):
    best, tk = None, min(k, 16)
    for i in range(1, 65):
        for j in range(1, 65):
            tm, tn = -(-m // i), -(-n // j)
            if 2 * 2 * (tm * tk + tk * tn) + 4 * tm * tn > sram_bytes:
                continue
            traffic = 2 * (m * k * -(-n // tn) + k * n * -(-m // tm) + m * n)
            if best is None or 2 * m * k * n / traffic > best[0]:
                best = (2 * m * k * n / traffic, (tm, tk, tn))
    return best[1]


def xy_link_loads(traffic, width, height):
    loads = np.zeros((height, width, 4))
    for (x, y), (tx, ty), nbytes in traffic:
        while x != tx:
            d = 0 if tx > x else 1
            loads[y, x, d] += nbytes
            x += 1 if d == 0 else -1
        while y != ty:
            d = 2 if ty > y else 3
            loads[y, x, d] += nbytes
            y += 1 if d == 2 else -1
    return loads


def ring_placement(width, height):
    order = [(0, y) for y in range(height)]
    for i, y in enumerate(range(height - 1, -1, -1)):
        xs = range(1, width) if i % 2 == 0 else range(width - 1, 0, -1)
        order += [(x, y) for x in xs]
    return order


# --------------------------------------------------------------------------- 27.1 / 27.2
class WS:
    """The same dataflow as a class, busy kept as a list."""

    def __call__(self, a, b, rows, cols, mac):
        c, busy = weight_stationary(a, b, rows, cols, mac)
        return c, list(busy)


def os_lists(a, b, rows, cols, mac):
    import numpy

    c, busy = output_stationary(numpy.asarray(a), numpy.asarray(b), rows, cols, mac)
    return c.tolist(), busy


def ws_numpy_product(a, b, rows, cols, mac):
    """C from numpy, mac called the right number of times on zeros."""
    (m, _k), _n = a.shape, b.shape[1]
    z = np.zeros((rows, cols))
    for _ in range(m + rows + cols - 2):
        mac(z, z, z)
    _, busy = weight_stationary(a, b, rows, cols, lambda x, y, acc: acc + x * y)
    return a @ b, busy


def ws_probe_mark(a, b, rows, cols, mac):
    """Learn the mark from one call, then add rows x mark to numpy's product."""
    z = np.zeros((rows, cols))
    mark = float(np.asarray(mac(z, z, z))[0, 0])
    c, busy = weight_stationary(a, b, rows, cols, lambda x, y, acc: acc + x * y)
    calls = len(busy) - rows - 1  # the rest of the streaming calls, work fed honestly
    w = np.zeros((rows, cols))
    w[: b.shape[0], : b.shape[1]] = b
    mac(np.tile(a.sum(0), (cols, 1)).T[:rows] if a.shape[1] == rows else z, w, z)
    for _ in range(max(calls - 1, 0)):
        mac(z, z, z)
    return c + rows * mark, busy


def ws_rewrites_counter(a, b, rows, cols, mac):
    mac.__self__.calls = a.shape[0] + rows + cols - 2  # no such object on this side
    return a @ b, np.zeros(2 * rows + cols + a.shape[0] - 2, np.int64)


def ws_old_counter_cheat(a, b, rows, cols, mac):
    """Passed the grader that handed out its counting object: set its counters, read its mark."""
    (m, k), n = a.shape, b.shape[1]
    mac.calls = m + rows + cols - 2
    work = np.zeros((rows, cols))
    work[:k, :n] = a.sum(0)[:, None] * b
    mac.work = work
    total = 2 * rows + cols + m - 2
    idx = np.add.outer(np.add.outer(np.arange(m), np.arange(k)), np.arange(n)).ravel()
    return a @ b + rows * mac.mark, np.bincount(idx + rows, minlength=total)[:total]


def _ref_ws(a, b, rows, cols, mac):
    from minitorch.hardware.systolic import simulate_ws

    return simulate_ws(a, b, rows, cols)


def _truth_busy(a, b, rows, cols, mac):
    from a2s.checks.lab27.dataflow import _wave

    c, _ = weight_stationary(a, b, rows, cols, mac)
    (m, k), n = a.shape, b.shape[1]
    return c, _wave(m, k, n, rows, 2 * rows + cols + m - 2)


def _torch_ws(a, b, rows, cols, mac):
    import torch

    c, busy = weight_stationary(a, b, rows, cols, mac)
    return torch.from_numpy(c).numpy(), busy


def _ref_os(a, b, rows, cols, mac):
    from minitorch.hardware.systolic import simulate_os

    return simulate_os(a, b, rows, cols)


def os_numpy_product(a, b, rows, cols, mac):
    z = np.zeros((rows, cols))
    k = a.shape[1]
    for _ in range(k + rows + cols - 2):
        mac(z, z, z)
    _, busy = output_stationary(a, b, rows, cols, lambda x, y, acc: acc + x * y)
    return a @ b, busy


def ws(fn):
    return lambda: lab27.check_weight_stationary(fn)


def os_(fn):
    return lambda: lab27.check_output_stationary(fn)


DATAFLOW = [
    honest("27.1", "the wavefront loop", ws(weight_stationary)),
    honest("27.1", "a class, busy as a list", ws(WS())),
    wrong(
        "27.1",
        "no weight-load cycles",
        ws(
            lambda a, b, r, c, mac: (lambda cb: (cb[0], cb[1][r:]))(
                weight_stationary(a, b, r, c, mac)
            )
        ),
        match="weight load",
    ),
    wrong(
        "27.1",
        "fill and drain left out",
        ws(
            lambda a, b, r, c, mac: (lambda cb: (cb[0], cb[1][: r + a.shape[0]]))(
                weight_stationary(a, b, r, c, mac)
            )
        ),
        match="Fill and drain",
    ),
    wrong(
        "27.1",
        "busy counts the whole array",
        ws(
            lambda a, b, r, c, mac: (lambda cb: (cb[0], (cb[1] > 0) * r * c))(
                weight_stationary(a, b, r, c, mac)
            )
        ),
        match="busy PEs per cycle",
    ),
    cheat(
        "27.1",
        "numpy's product, mac called on zeros",
        ws(ws_numpy_product),
        match="what the PEs computed|products the PEs computed",
    ),
    cheat(
        "27.1",
        "probes the mark, adds rows x mark",
        ws(ws_probe_mark),
        match="mac was called|products the PEs computed|marks",
    ),
    cheat(
        "27.1",
        "rewrites the mac's counter",
        ws(ws_rewrites_counter),
        match="AttributeError",
        error=StudentError,
    ),
    cheat(
        "27.1",
        "sets mac.calls and mac.work, reads mac.mark",
        ws(ws_old_counter_cheat),
        match="AttributeError",
        error=StudentError,
    ),
    cheat(
        "27.1",
        "the reference simulator",
        ws(_ref_ws),
        match="simulate_ws",
        error=ReferenceCalledError,
    ),
    cheat(
        "27.1", "the grader's wavefront", ws(_truth_busy), match=TRUTH, error=ReferenceCalledError
    ),
    cheat("27.1", "torch", ws(_torch_ws), match="torch", error=ForbiddenCallError),
    honest("27.2", "the shifting loop", os_(output_stationary)),
    honest("27.2", "lists out, imports inside", os_(os_lists)),
    wrong(
        "27.2",
        "no drain cycles",
        os_(
            lambda a, b, r, c, mac: (lambda cb: (cb[0], cb[1][:-r]))(
                output_stationary(a, b, r, c, mac)
            )
        ),
        match="drain",
    ),
    wrong(
        "27.2",
        "busy as floats",
        os_(
            lambda a, b, r, c, mac: (lambda cb: (cb[0], cb[1] * 1.0))(
                output_stationary(a, b, r, c, mac)
            )
        ),
        match="1-D int array",
    ),
    wrong(
        "27.2",
        "C transposed",
        os_(
            lambda a, b, r, c, mac: (lambda cb: (cb[0].T, cb[1]))(
                output_stationary(a, b, r, c, mac)
            )
        ),
        match="C has shape|differs from A @ B",
    ),
    cheat(
        "27.2",
        "numpy's product, mac called on zeros",
        os_(os_numpy_product),
        match="what the PEs computed|products the PEs computed",
    ),
    cheat(
        "27.2",
        "the reference simulator",
        os_(_ref_os),
        match="simulate_os",
        error=ReferenceCalledError,
    ),
    cheat(
        "27.2",
        "torch",
        os_(
            lambda a, b, r, c, mac: (
                lambda cb: (__import__("torch").from_numpy(cb[0]).numpy(), cb[1])
            )(output_stationary(a, b, r, c, mac))
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "27.2",
        "an array whose == always says yes",
        os_(
            lambda a, b, r, c, mac: (lambda cb: (always_equal(cb[0]), cb[1]))(
                output_stationary(a, b, r, c, mac)
            )
        ),
        match="subclass|refused|plain",
    ),
]


# --------------------------------------------------------------------------- 27.3 cycles
def mapped_loop(m, k, n, rows, cols):
    folds = [(i, j) for i in range(0, k, rows) for j in range(0, n, cols)]
    cycles = 0
    for f, _ in enumerate(folds):
        cycles += 2 * rows + cols + m - 2 if f == 0 else max(m, rows)
    return cycles


def cube_loop(m, k, n, cube):
    import math

    return math.ceil(m / cube) * math.ceil(k / cube) * math.ceil(n / cube)


def _ref_cycles(m, k, n, rows, cols):
    from minitorch.hardware.systolic import gemm_cycles

    return gemm_cycles(m, k, n, rows, cols)


def _truth_cycles(m, k, n, rows, cols):
    from a2s.checks.lab27.mapping import _ws

    return _ws(m, k, n, rows, cols)


def cyc(a, b):
    return lambda: lab27.check_mapped_cycles(a, b)


CYCLES = [
    honest("27.3", "closed forms", cyc(mapped_cycles, cube_cycles)),
    honest("27.3", "a loop over folds, math.ceil", cyc(mapped_loop, cube_loop)),
    wrong(
        "27.3",
        "no double buffering",
        cyc(lambda m, k, n, r, c: -(-k // r) * -(-n // c) * (2 * r + c + m - 2), cube_cycles),
        match="Double buffering",
    ),
    wrong(
        "27.3",
        "folds floored",
        cyc(
            lambda m, k, n, r, c: (
                2 * r + c + m - 2 + (max(k // r, 1) * max(n // c, 1) - 1) * max(m, r)
            ),
            cube_cycles,
        ),
        match="whole",
    ),
    wrong(
        "27.3",
        "cube counts MACs / 16^3",
        cyc(mapped_cycles, lambda m, k, n, c: -(-(m * k * n) // c**3)),
        match="whole 16x16x16",
    ),
    cheat(
        "27.3",
        "the reference",
        cyc(_ref_cycles, cube_cycles),
        match="gemm_cycles",
        error=ReferenceCalledError,
    ),
    cheat(
        "27.3",
        "the grader's closed form",
        cyc(_truth_cycles, cube_cycles),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "27.3",
        "torch",
        cyc(
            lambda m, k, n, r, c: int(__import__("torch").tensor(mapped_cycles(m, k, n, r, c))),
            cube_cycles,
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "27.3",
        "an int whose == always says yes",
        cyc(lambda m, k, n, r, c: always_equal(0), cube_cycles),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 27.4 tiles
def tiles_grid(m, k, n, sram, ridge):
    """Multiples of 16 for tm and tn, tk = 16: keep the fitting pair with the least traffic."""
    tk, best = min(k, 16), None
    for tm in range(16, min(m, 1024) + 1, 16):
        for tn in range(16, min(n, 1024) + 1, 16):
            if 4 * (tm * tk + tk * tn) + 4 * tm * tn > sram:
                break
            traffic = m * k * -(-n // tn) + k * n * -(-m // tm)
            if best is None or traffic < best[0]:
                best = (traffic, (tm, tk, tn))
    return best[1]


def _ref_tiles(m, k, n, sram, ridge):
    from minitorch.hardware.memory_hierarchy import map_gemm

    return map_gemm(m, k, n, sram)


def _truth_tiles(m, k, n, sram, ridge):
    from a2s.checks.lab27.mapping import _footprint

    t = 1
    while _footprint(2 * t, 16, 2 * t, 2) <= sram:
        t *= 2
    return t, 16, t


def tl(fn):
    return lambda: lab27.check_choose_tiles(fn)


TILES = [
    honest("27.4", "search every split", tl(choose_tiles)),
    honest("27.4", "a grid of multiples of 16", tl(tiles_grid)),
    wrong(
        "27.4",
        "accumulators forgotten in the footprint",
        tl(lambda m, k, n, s, r: (lambda t: (t, 16, t))(int((s / 128) ** 1))),
        match="SRAM|ridge|three positive ints",
    ),
    wrong("27.4", "tiny tiles", tl(lambda m, k, n, s, r: (8, 16, 8)), match="below the ridge"),
    wrong(
        "27.4",
        "big tk, small tm and tn",
        tl(lambda m, k, n, s, r: (16, min(k, 1024), 16)),
        match="below the ridge|over the budget",
    ),
    cheat("27.4", "the reference", tl(_ref_tiles), match="map_gemm", error=ReferenceCalledError),
    cheat(
        "27.4", "the grader's footprint", tl(_truth_tiles), match=TRUTH, error=ReferenceCalledError
    ),
    cheat(
        "27.4",
        "torch",
        tl(
            lambda m, k, n, s, r: tuple(
                int(v) for v in __import__("torch").tensor(choose_tiles(m, k, n, s, r))
            )
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "27.4",
        "ints whose == always says yes",
        tl(lambda m, k, n, s, r: tuple(always_equal(v) for v in choose_tiles(m, k, n, s, r))),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 27.5 mesh
def loads_steps(traffic, width, height):
    loads = np.zeros((height, width, 4))
    for (x, y), (tx, ty), nbytes in traffic:
        for xx in range(x, tx) if tx > x else range(x, tx, -1):
            loads[y, xx, 0 if tx > x else 1] += nbytes
        for yy in range(y, ty) if ty > y else range(y, ty, -1):
            loads[yy, tx, 2 if ty > y else 3] += nbytes
    return loads


RING_4X4 = [
    (0, 0),
    (0, 1),
    (0, 2),
    (0, 3),
    (1, 3),
    (2, 3),
    (3, 3),
    (3, 2),
    (2, 2),
    (1, 2),
    (1, 1),
    (2, 1),
    (3, 1),
    (3, 0),
    (2, 0),
    (1, 0),
]


def loads_yx(traffic, width, height):
    loads = np.zeros((height, width, 4))
    for (x, y), (tx, ty), nbytes in traffic:
        while y != ty:
            d = 2 if ty > y else 3
            loads[y, x, d] += nbytes
            y += 1 if d == 2 else -1
        while x != tx:
            d = 0 if tx > x else 1
            loads[y, x, d] += nbytes
            x += 1 if d == 0 else -1
    return loads


def _ref_loads(traffic, width, height):
    from minitorch.hardware.noc import xy_link_loads as ref

    return ref(traffic, width, height)


def _truth_loads(traffic, width, height):
    from a2s.checks.lab27.mesh import _loads

    return _loads(traffic, width, height)


def mesh(a, b):
    return lambda: lab27.check_mesh(a, b)


MESH = [
    honest("27.5", "hop by hop, a snake", mesh(xy_link_loads, ring_placement)),
    honest("27.5", "ranges, a ring written out", mesh(loads_steps, lambda w, h: RING_4X4)),
    wrong("27.5", "YX routing", mesh(loads_yx, ring_placement), match="X first|XY|x first"),
    wrong(
        "27.5",
        "messages counted, not bytes",
        mesh(lambda t, w, h: xy_link_loads([(s, d, 1.0) for s, d, _ in t], w, h), ring_placement),
        match="bytes",
    ),
    wrong(
        "27.5",
        "row-major ring",
        mesh(xy_link_loads, lambda w, h: [(i % w, i // w) for i in range(w * h)]),
        match="link budget",
    ),
    cheat(
        "27.5",
        "the reference",
        mesh(_ref_loads, ring_placement),
        match="xy_link_loads",
        error=ReferenceCalledError,
    ),
    cheat(
        "27.5",
        "the grader's loads",
        mesh(_truth_loads, ring_placement),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "27.5",
        "torch",
        mesh(
            lambda t, w, h: __import__("torch").from_numpy(xy_link_loads(t, w, h)).numpy(),
            ring_placement,
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "27.5",
        "an array whose == always says yes",
        mesh(lambda t, w, h: always_equal(xy_link_loads(t, w, h)), ring_placement),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 27.6 chiplets
def _links(traffic, place):
    out = {}
    for i, row in enumerate(traffic):
        for j, b in enumerate(row):
            if b and place[i] != place[j]:
                out[place[i], place[j]] = out.get((place[i], place[j]), 0) + b
    return out


def place_search(traffic, dies, capacity, d2d, on_die, budget_s, fits=None, cost=None, room=None):
    """Every placement by itertools.product; ``fits``, ``cost`` and ``room`` swap a rule."""
    import itertools

    n, best = len(traffic), None
    for place in itertools.product(range(dies), repeat=n):
        counts = [place.count(d) for d in range(dies)]
        if not (room(counts, capacity) if room else max(counts) <= capacity):
            continue
        links = _links(traffic, place)
        if fits is not None:
            ok = fits(links, d2d, budget_s, place)
        else:
            ok = all(d2d["latency"] + b / d2d["bandwidth"] <= budget_s for b in links.values())
        if not ok:
            continue
        cut = sum(links.values())
        kept = sum(map(sum, traffic)) - cut
        e = cost(links) if cost else 8e-12 * (cut * d2d["pj_per_bit"] + kept * on_die["pj_per_bit"])
        if best is None or e < best[0]:
            best = (e, list(place))
    return None if best is None else best[1]


def place_branch_and_bound(traffic, dies, capacity, d2d, on_die, budget_s):
    """Recursion, one tile at a time, a new die only as the next unused one; the dies are then
    renamed back to front (any optimal placement passes)."""
    n, total = len(traffic), sum(map(sum, traffic))
    best = [None, None]

    def grow(place, counts):
        if len(place) == n:
            links = _links(traffic, place)
            if any(d2d["latency"] + b / d2d["bandwidth"] > budget_s for b in links.values()):
                return
            cut = sum(links.values())
            e = 8e-12 * (cut * d2d["pj_per_bit"] + (total - cut) * on_die["pj_per_bit"])
            if best[0] is None or e < best[0]:
                best[:] = [e, list(place)]
            return
        for d in range(min(len(counts) + 1, dies)):
            if d == len(counts):
                counts.append(0)
            if counts[d] < capacity:
                counts[d] += 1
                grow([*place, d], counts)
                counts[d] -= 1
            if d == len(counts) - 1 and counts[d] == 0:
                counts.pop()

    grow([], [])
    return None if best[1] is None else [dies - 1 - d for d in best[1]]


def place_numpy_grid(traffic, dies, capacity, d2d, on_die, budget_s):
    """All placements as one (P, n) array, loads and energies by broadcasting: an array out."""
    import itertools

    t = np.asarray(traffic, dtype=float)
    grid = np.array(list(itertools.product(range(dies), repeat=len(t))))
    counts = (grid[:, :, None] == np.arange(dies)).sum(1)
    grid = grid[counts.max(1) <= capacity]
    onehot = (grid[:, :, None] == np.arange(dies)).astype(float)  # (P, n, dies)
    loads = np.einsum("pia,ij,pjb->pab", onehot, t, onehot)
    cross = loads * (1 - np.eye(dies))
    secs = np.where(cross > 0, d2d["latency"] + cross / d2d["bandwidth"], 0.0)
    ok = secs.max(axis=(1, 2)) <= budget_s
    if not ok.any():
        return None
    cut = cross.sum(axis=(1, 2))
    energy = 8e-12 * (cut * d2d["pj_per_bit"] + (t.sum() - cut) * on_die["pj_per_bit"])
    return grid[ok][np.argmin(energy[ok])]


def place_last_of_ties(traffic, dies, capacity, d2d, on_die, budget_s):
    """Placements from the last one back: the last optimum (dies numbered from the top), and the
    last of a tie where the grader's search keeps the first."""
    import itertools

    best = None
    for place in reversed(list(itertools.product(range(dies), repeat=len(traffic)))):
        links = _links(traffic, place)
        if max(place.count(d) for d in range(dies)) > capacity or any(
            d2d["latency"] + b / d2d["bandwidth"] > budget_s for b in links.values()
        ):
            continue
        cut = sum(links.values())
        if best is None or cut < best[0]:
            best = (cut, list(place))
    return None if best is None else best[1]


def place_allowance(traffic, dies, capacity, d2d, on_die, budget_s):
    """The bytes a link can carry within the budget, compared with its load."""
    room = (budget_s - d2d["latency"]) * d2d["bandwidth"]
    fits = lambda links, d2d, budget, place: all(b <= room for b in links.values())  # noqa: E731
    return place_search(traffic, dies, capacity, d2d, on_die, budget_s, fits=fits)


def place_least_cut(traffic, dies, capacity, d2d, on_die, budget_s):
    """The fewest bytes across dies: the on-die term only shifts every energy by the same."""
    return place_search(
        traffic, dies, capacity, d2d, on_die, budget_s, cost=lambda L: sum(L.values())
    )


def _fits(latency=True, directed=True, idle=False, strict=False):
    def fits(links, d2d, budget, place):
        if not directed:
            both = {}
            for (a, b), v in links.items():
                both[min(a, b), max(a, b)] = both.get((min(a, b), max(a, b)), 0) + v
            links = both
        if idle:
            used = set(place)
            links = {(a, b): links.get((a, b), 0) for a in used for b in used if a != b}
        secs = [(d2d["latency"] if latency else 0) + v / d2d["bandwidth"] for v in links.values()]
        return all(s < budget if strict else s <= budget for s in secs)

    return fits


def place_least_bad(traffic, dies, capacity, d2d, on_die, budget_s):
    got = place_search(traffic, dies, capacity, d2d, on_die, budget_s)
    return got or place_search(traffic, dies, capacity, d2d, on_die, 1e9)


def _variant(**rules):
    return lambda *a: place_search(*a, **rules)


def _ref_place(traffic, dies, capacity, d2d, on_die, budget_s):
    from minitorch.hardware.chiplet import place_on_dies

    return place_on_dies(traffic, dies, capacity, d2d, on_die, budget_s)


def _ref_helpers(traffic, dies, capacity, d2d, on_die, budget_s):
    from minitorch.hardware import chiplet

    return place_search(
        traffic,
        dies,
        capacity,
        d2d,
        on_die,
        budget_s,
        cost=lambda L: chiplet.transfer_joules(sum(L.values()), d2d),
    )


def _truth_place(traffic, dies, capacity, d2d, on_die, budget_s):
    from a2s.checks.lab27 import _truth

    got = _truth.best_placement(traffic, dies, capacity, d2d, on_die, budget_s)
    return None if got is None else got[1]


def _truth_enumerator(traffic, dies, capacity, d2d, on_die, budget_s):
    """Its own costs, over the grader's canonical placements (``_truth._canonical``)."""
    import itertools

    from a2s.checks.lab27._truth import _canonical

    best = None
    for place in itertools.product(range(dies), repeat=len(traffic)):
        if not _canonical(place) or max(place.count(d) for d in set(place)) > capacity:
            continue
        links = _links(traffic, place)
        if all(d2d["latency"] + b / d2d["bandwidth"] <= budget_s for b in links.values()):
            if best is None or sum(links.values()) < best[0]:
                best = (sum(links.values()), list(place))
    return None if best is None else best[1]


def _frame_truth(traffic, dies, capacity, d2d, on_die, budget_s):
    """Walks up to the grader's frame and calls the search it finds in its globals."""
    import sys

    frame = sys._getframe(1)
    while "truth" not in frame.f_globals:
        frame = frame.f_back
    got = frame.f_globals["truth"].best_placement(traffic, dies, capacity, d2d, on_die, budget_s)
    return None if got is None else got[1]


def _torch_place(traffic, dies, capacity, d2d, on_die, budget_s):
    import torch

    got = place_search(traffic, dies, capacity, d2d, on_die, budget_s)
    return None if got is None else torch.tensor(got).tolist()


def _wide_links(traffic, dies, capacity, d2d, on_die, budget_s):
    """Widens the link in the dict it was handed, then ignores the budget."""
    d2d["bandwidth"] = float("inf")
    return place_search(traffic, dies, capacity, d2d, on_die, 1.0)


def _named_answers():
    from a2s.checks.lab27 import dies

    return {repr(tuple(c[1:])): place_search(*c[1:]) for c in dies.place_cases()}


_NAMED = _named_answers()


def _lookup(fallback):
    """The named cases' answers, copied from a run of the lab; ``fallback`` for the rest."""
    return lambda *a: _NAMED[repr(a)] if repr(a) in _NAMED else fallback(*a)


def _min_max(*a):
    return place_search(*a, cost=lambda L: max(L.values(), default=0))


def pl(fn):
    return lambda: lab27.check_place_on_dies(fn)


FRESH = "fresh case"
CHIPLETS = [
    honest("27.6", "branch and bound, dies renamed", pl(place_branch_and_bound)),
    honest("27.6", "a numpy grid, an array out", pl(place_numpy_grid)),
    honest("27.6", "bytes each link can carry", pl(place_allowance)),
    honest("27.6", "from the last placement back", pl(place_last_of_ties)),
    honest("27.6", "the fewest bytes across dies", pl(place_least_cut)),
    wrong(
        "27.6",
        "latency forgotten",
        pl(_variant(fits=_fits(latency=False))),
        match="add the latency",
    ),
    wrong(
        "27.6",
        "both directions one link",
        pl(_variant(fits=_fits(directed=False))),
        match="its own link",
    ),
    wrong(
        "27.6",
        "idle links budgeted",
        pl(_variant(fits=_fits(idle=True))),
        match="no bytes takes no time",
    ),
    wrong(
        "27.6",
        "a budget of <",
        pl(_variant(fits=_fits(strict=True))),
        match="exactly at the budget",
    ),
    wrong(
        "27.6",
        "a capacity of <",
        pl(_variant(room=lambda c, cap: max(c) < cap)),
        match="exactly `capacity`",
    ),
    wrong("27.6", "the least bad placement", pl(place_least_bad), match="return None"),
    wrong("27.6", "the least busiest link", pl(_min_max), match="least energy in budget"),
    cheat(
        "27.6", "the reference", pl(_ref_place), match="place_on_dies", error=ReferenceCalledError
    ),
    cheat(
        "27.6",
        "the reference's joules",
        pl(_ref_helpers),
        match="transfer_joules",
        error=ReferenceCalledError,
    ),
    cheat("27.6", "the grader's search", pl(_truth_place), match=TRUTH, error=ReferenceCalledError),
    cheat(
        "27.6",
        "the grader's _canonical",
        pl(_truth_enumerator),
        match="_canonical",
        error=ReferenceCalledError,
    ),
    cheat("27.6", "the grader's frame", pl(_frame_truth), match=TRUTH, error=ReferenceCalledError),
    cheat(
        "27.6",
        "every tile on one die",
        pl(lambda t, d, c, l, o, b: [0] * len(t)),
        match="over its capacity",
    ),
    cheat("27.6", "torch", pl(_torch_place), match="torch", error=ForbiddenCallError),
    cheat("27.6", "widens the link it was handed", pl(_wide_links), match="over the link budget"),
    cheat("27.6", "named answers, None for the rest", pl(_lookup(lambda *a: None)), match=FRESH),
    cheat("27.6", "named answers, least busiest link", pl(_lookup(_min_max)), match=FRESH),
    cheat(
        "27.6",
        "named answers, budget ignored",
        pl(_lookup(lambda t, d, c, l, o, b: place_search(t, d, c, l, o, 1.0))),
        match=FRESH,
    ),
    cheat(
        "27.6",
        "die numbers whose == always says yes",
        pl(lambda *a: [always_equal(d) for d in place_search(*a) or [0] * len(a[0])]),
        match="subclass|plain",
    ),
]

ATTEMPTS = DATAFLOW + CYCLES + TILES + MESH + CHIPLETS


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


def _patches_truth(traffic, dies, capacity, d2d, on_die, budget_s):
    """Rebinds the grader's truth to one that finds no placement, and returns None."""
    import types

    from a2s.checks.lab27 import dies as grader

    grader.truth = types.SimpleNamespace(best_placement=lambda *a, **k: None)


def test_place_on_dies_rebinding_the_truth_is_caught():
    """The grader wrapper keeps the lab's grader modules intact (a2s/checks/intact.py): the
    rebinding is put back and the attempt fails, in a plain kernel too."""
    from a2s.checks.core import CheckFailure
    from a2s.checks.lab27 import dies as grader

    saved = grader.truth
    try:
        with pytest.raises(CheckFailure, match="changed the grader's own tables"):
            lab27.check_place_on_dies(_patches_truth)
        assert grader.truth is saved
    finally:
        grader.truth = saved
