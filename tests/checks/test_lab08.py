"""Graders of lab 08: the reference kernels pass; wrong values, reference calls and kernels
that are right but break the traffic or memory budget fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.kernels.attention as attention
import minitorch.kernels.flash as flash
import minitorch.kernels.fusion as fusion
import minitorch.kernels.io_model as io_model
from a2s.checks import lab08
from a2s.checks.core import CheckFailure, ReferenceCalledError, StudentError
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.kernels")
gelu = unblocked(fusion.gelu_tanh)
rms = unblocked(fusion.rmsnorm)


# --------------------------------------------------------------------------- 08.1 fusion
def test_fusion_passes(capsys):
    lab08.check_fusion(unblocked(fusion.bias_gelu_fused), unblocked(fusion.add_rmsnorm_fused))
    assert "✔ Exercise 08.1 passed" in capsys.readouterr().out


def bias_gelu_reloading_b(hbm, tile_rows):
    n, _ = hbm.shape("X")
    for i in range(0, n, tile_rows):
        rows = slice(i, min(i + tile_rows, n))
        hbm.store("Y", gelu(hbm.load("X", rows) + hbm.load("B")), rows)


def add_rmsnorm_without_residual(hbm, tile_rows, eps):
    n, _ = hbm.shape("X")
    g = hbm.load("G")
    for i in range(0, n, tile_rows):
        rows = slice(i, min(i + tile_rows, n))
        hbm.store("Y", rms(hbm.load("X", rows) + hbm.load("R", rows), g, eps), rows)


@pytest.mark.parametrize(
    ("fns", "match"),
    [  # the unfused pair: right values, the intermediate's round trip breaks the budget
        ((unblocked(fusion.bias_gelu_unfused), unblocked(fusion.add_rmsnorm_fused)), "unfused"),
        ((unblocked(fusion.bias_gelu_fused), unblocked(fusion.add_rmsnorm_unfused)), "read h"),
        ((bias_gelu_reloading_b, unblocked(fusion.add_rmsnorm_fused)), "once per tile"),
        ((unblocked(fusion.bias_gelu_fused), add_rmsnorm_without_residual), "residual"),
    ],
)
def test_fusion_rejects_unfused_and_wrong_kernels(fns, match):
    rejects(lab08.check_fusion, *fns, match=match)


def test_fusion_rejects_the_reference():
    rejects(
        lab08.check_fusion,
        fusion.bias_gelu_fused,
        fusion.add_rmsnorm_fused,
        match="bias_gelu_fused",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 08.2 softmax
def test_online_softmax_passes(capsys):
    lab08.check_online_softmax(unblocked(attention.online_softmax_hbm))
    assert "✔ Exercise 08.2 passed" in capsys.readouterr().out


def _blocks(n, block):
    return [slice(j, min(j + block, n)) for j in range(0, n, block)]


def safe_softmax_three_passes(hbm, block):
    r, n = hbm.shape("X")
    m = np.full(r, -np.inf)
    for c in _blocks(n, block):
        m = np.maximum(m, hbm.load("X", cols=c).max(axis=1))
    s = np.zeros(r)
    for c in _blocks(n, block):
        s += np.exp(hbm.load("X", cols=c) - m[:, None]).sum(axis=1)
    for c in _blocks(n, block):
        hbm.store("Y", np.exp(hbm.load("X", cols=c) - m[:, None]) / s[:, None], cols=c)


def online_softmax_without_rescaling(hbm, block):
    r, n = hbm.shape("X")
    m, s = np.full(r, -np.inf), np.zeros(r)
    for c in _blocks(n, block):
        x = hbm.load("X", cols=c)
        m = np.maximum(m, x.max(axis=1))
        s = s + np.exp(x - m[:, None]).sum(axis=1)  # the old sum is not rescaled
    for c in _blocks(n, block):
        hbm.store("Y", np.exp(hbm.load("X", cols=c) - m[:, None]) / s[:, None], cols=c)


def softmax_whole_rows(hbm, block):
    x = hbm.load("X")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    hbm.store("Y", e / e.sum(axis=1, keepdims=True))


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (safe_softmax_three_passes, "Three passes"),  # right values, one pass too many
        (online_softmax_without_rescaling, "multiply it by exp"),
        (softmax_whole_rows, "SRAM tile"),
    ],
)
def test_online_softmax_rejects_wrong_kernels(fn, match):
    rejects(lab08.check_online_softmax, fn, match=match)


def test_online_softmax_rejects_the_reference():
    rejects(
        lab08.check_online_softmax,
        attention.online_softmax_hbm,
        match="online_softmax",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 08.3 prediction
_naive_t, _flash_t = (
    unblocked(io_model.naive_attention_traffic),
    unblocked(io_model.flash_forward_traffic),
)


def predict(n, d, bq, bk, causal, itemsize):
    return _naive_t(n, d, itemsize).total, _flash_t(n, d, bq, bk, causal, itemsize).total


def test_predicted_traffic_passes(capsys):
    lab08.check_predicted_traffic(predict)
    assert "✔ Exercise 08.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda n, d, bq, bk, c, s: predict(n, d, bq, bk, False, s), "Causal attention skips"),
        (
            lambda n, d, bq, bk, c, s: (
                predict(n, d, bq, bk, c, s)[0],
                predict(n, d, bq, bk, c, s)[1] - n * s,
            ),
            "logsumexp",
        ),
        (lambda n, d, bq, bk, c, s: (s * (4 * n * d + 2 * n * n), 0), "writes S and P"),
        (lambda n, d, bq, bk, c, s: predict(n // bq * bq, d, bq, bk, c, s), "ceil"),
    ],
)
def test_predicted_traffic_rejects_wrong_counts(fn, match):
    rejects(lab08.check_predicted_traffic, fn, match=match)


def test_predicted_traffic_rejects_the_reference():
    def via_reference(n, d, bq, bk, causal, itemsize):
        return (
            io_model.naive_attention_traffic(n, d, itemsize).total,
            io_model.flash_forward_traffic(n, d, bq, bk, causal, itemsize).total,
        )

    rejects(
        lab08.check_predicted_traffic,
        via_reference,
        match="naive_attention_traffic",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 08.4 forward
def test_flash_forward_passes(capsys):
    lab08.check_flash_forward(unblocked(flash.flash_attention_forward))
    assert "✔ Exercise 08.4 passed" in capsys.readouterr().out


def _mask(s, i0, j0, causal):
    if causal:
        rows, cols = np.arange(i0, i0 + s.shape[0]), np.arange(j0, j0 + s.shape[1])
        s = np.where(cols[None] > rows[:, None], -np.inf, s)
    return s


def forward_materializing_rows(hbm, bq, bk, causal, scale):
    """Right values and traffic, but a whole row block of S (bq x n) in memory at once."""
    n, d = hbm.shape("Q")
    scale = 1 / np.sqrt(d) if scale is None else scale
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        q = hbm.load("Q", slice(i0, i1))
        ks, vs = [], []
        for j0 in range(0, n, bk):
            if causal and j0 >= i1:
                break
            ks.append(hbm.load("K", slice(j0, min(j0 + bk, n))))
            vs.append(hbm.load("V", slice(j0, min(j0 + bk, n))))
        k, v = np.concatenate(ks), np.concatenate(vs)
        s = _mask(scale * q @ k.T, i0, 0, causal)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        hbm.store("O", p @ v / p.sum(axis=1, keepdims=True), slice(i0, i1))
        hbm.store("L", (m + np.log(p.sum(axis=1, keepdims=True)))[:, 0], slice(i0, i1))


def forward_naive_loads(hbm, bq, bk, causal, scale):
    hbm.load("K")  # the whole of K at once: it does not fit in SRAM


def forward_variant(no_skip=False, no_rescale=False):
    def kernel(hbm, bq, bk, causal, scale):
        n, d = hbm.shape("Q")
        scale = 1 / np.sqrt(d) if scale is None else scale
        for i0 in range(0, n, bq):
            i1 = min(i0 + bq, n)
            q = hbm.load("Q", slice(i0, i1))
            m, l, acc = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0), np.zeros((i1 - i0, d))
            for j0 in range(0, n, bk):
                if causal and j0 >= i1 and not no_skip:
                    break
                k, v = (
                    hbm.load("K", slice(j0, min(j0 + bk, n))),
                    hbm.load("V", slice(j0, min(j0 + bk, n))),
                )
                s = _mask(scale * q @ k.T, i0, j0, causal)
                m_new = np.maximum(m, s.max(axis=1))
                p = np.exp(s - m_new[:, None])
                p = np.nan_to_num(p)  # a block wholly in the future: exp(-inf + inf)
                alpha = np.ones_like(m) if no_rescale else np.exp(m - m_new)
                l, acc, m = alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ v, m_new
            hbm.store("O", acc / l[:, None], slice(i0, i1))
            hbm.store("L", m + np.log(l), slice(i0, i1))

    return kernel


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (forward_materializing_rows, "allocated"),  # right values and traffic, O(n) memory
        (forward_variant(no_skip=True), "Causal: skip"),  # right values, extra K/V reads
        (forward_variant(no_rescale=True), "rescale both l and the output"),
        (forward_naive_loads, "SRAM tile"),
    ],
)
def test_flash_forward_rejects_budget_breaking_and_wrong_kernels(fn, match):
    rejects(lab08.check_flash_forward, fn, match=match)


def test_flash_forward_rejects_the_reference():
    def via_naive(hbm, bq, bk, causal, scale):
        attention.naive_attention(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2)))

    for fn in (flash.flash_attention_forward, via_naive):
        rejects(lab08.check_flash_forward, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 08.5 backward
def test_flash_backward_passes(capsys):
    lab08.check_flash_backward(unblocked(flash.flash_attention_backward))
    assert "✔ Exercise 08.5 passed" in capsys.readouterr().out


_backward = unblocked(flash.flash_attention_backward)


def backward_storing_p(hbm, bq, bk, causal, scale):
    """Right gradients, but P written to HBM tile by tile, as a standard backward keeps it."""
    n, _ = hbm.shape("Q")
    hbm.alloc("P", (n, n))
    for i0 in range(0, n, bq):
        for j0 in range(0, n, bk):
            rows, cols = slice(i0, min(i0 + bq, n)), slice(j0, min(j0 + bk, n))
            hbm.store("P", np.zeros((rows.stop - i0, cols.stop - j0)), rows, cols)
    _backward(hbm, bq, bk, causal, scale)


def backward_with_full_p(hbm, bq, bk, causal, scale):
    """Right gradients and traffic, but the whole n x n P kept in Python memory."""
    n, _ = hbm.shape("Q")
    big = np.ones((n, n))  # e.g. a cache of every recomputed P tile
    _backward(hbm, bq, bk, causal, scale)
    del big


def backward_ignoring_scale(hbm, bq, bk, causal, scale):
    _backward(hbm, bq, bk, causal, None)  # always 1/sqrt(d)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (backward_with_full_p, "allocated"),
        (backward_storing_p, "HBM traffic"),
        (backward_ignoring_scale, "differs"),
    ],
)
def test_flash_backward_rejects_budget_breaking_and_wrong_kernels(fn, match):
    rejects(lab08.check_flash_backward, fn, match=match)


def test_flash_backward_rejects_the_reference():
    rejects(
        lab08.check_flash_backward,
        flash.flash_attention_backward,
        match="flash_attention_backward",
        error=ReferenceCalledError,
    )


def softmax_that_zeroes_its_counters(hbm, block):  # right values, then the traffic reset
    x = hbm.load("X")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    hbm.store("Y", e / e.sum(axis=1, keepdims=True))
    hbm.reads.clear()


def softmax_reading_uncounted(hbm, block):  # reads X whole through the host-side copy
    x = hbm.array("X")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    for c in _blocks(hbm.shape("X")[1], block):
        hbm.store("Y", (e / e.sum(axis=1, keepdims=True))[:, c], cols=c)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (softmax_that_zeroes_its_counters, "SRAM tile"),  # fails on the whole-X load first
        (softmax_reading_uncounted, "no attribute 'array'"),
    ],
)
def test_a_kernel_that_touches_the_counters_is_rejected(fn, match):
    # the kernel's HBM is a proxy of requests: no counters, no host copy on it
    with pytest.raises((CheckFailure, StudentError), match=match):
        lab08.check_online_softmax(fn)


def test_the_kernels_hbm_holds_no_path_to_the_counters():
    seen = {}

    def probe(hbm, block):
        seen["slots"] = type(hbm).__slots__
        seen["attrs"] = sorted(a for a in dir(hbm) if not a.startswith("__"))
        online_softmax_keeping_tiles(hbm, block)

    with pytest.raises(CheckFailure):
        lab08.check_online_softmax(probe)
    # seen was filled in the child: nothing of it comes back
    assert seen == {}


def test_a_kernel_that_catches_a_too_large_tile_still_fails():
    def catching(hbm, block):
        try:
            hbm.load("X")
        except Exception:
            pass
        online_softmax_keeping_tiles(hbm, block)

    rejects(lab08.check_online_softmax, catching, match="SRAM tile")


# --------------------------------------------------------------------------- review additions
def test_predicted_traffic_accepts_a_list_pair(capsys):
    lab08.check_predicted_traffic(lambda *args: list(predict(*args)))
    assert "✔ Exercise 08.3 passed" in capsys.readouterr().out


def test_predicted_traffic_rejects_the_graders_own_loop():
    from a2s.checks.lab08 import traffic as truth

    rejects(
        lab08.check_predicted_traffic,
        lambda n, d, bq, bk, causal, s: (
            truth.naive_bytes(n, d, s),
            truth.flash_forward_bytes(n, d, bq, bk, causal, s),
        ),
        match="naive_bytes",
        error=ReferenceCalledError,
    )


def online_softmax_keeping_tiles(hbm, block):
    """Right values, X read once: the tiles of the first pass are kept for the second."""
    r, n = hbm.shape("X")
    m, l, tiles = np.full(r, -np.inf), np.zeros(r), []
    for c in _blocks(n, block):
        x = hbm.load("X", cols=c)
        tiles.append((c, x))
        m_new = np.maximum(m, x.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(x - m_new[:, None]).sum(axis=1)
        m = m_new
    for c, x in tiles:
        hbm.store("Y", np.exp(x - m[:, None]) / l[:, None], cols=c)


def test_online_softmax_that_keeps_x_in_memory_is_told_so():
    rejects(lab08.check_online_softmax, online_softmax_keeping_tiles, match="kept its tiles")


def online_softmax_loading_twice_keeping_tiles(hbm, block):
    """Right values and traffic (X loaded twice), but the first pass's tiles kept."""
    r, n = hbm.shape("X")
    m, l, tiles = np.full(r, -np.inf), np.zeros(r), []
    for c in _blocks(n, block):
        x = hbm.load("X", cols=c)
        tiles.append(x)
        m_new = np.maximum(m, x.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(x - m_new[:, None]).sum(axis=1)
        m = m_new
    for c, x in zip(_blocks(n, block), tiles, strict=True):
        hbm.load("X", cols=c)
        hbm.store("Y", np.exp(x - m[:, None]) / l[:, None], cols=c)


def test_online_softmax_keeping_every_tile_breaks_the_memory_budget():
    rejects(
        lab08.check_online_softmax,
        online_softmax_loading_twice_keeping_tiles,
        match="4 x 16384.*allocated",
    )


def test_online_softmax_hint_only_for_the_mistake_made():
    def off_by_one(hbm, block):  # not a rescale mistake: a uniform Y, X read twice
        r, n = hbm.shape("X")
        for c in _blocks(n, block):
            hbm.load("X", cols=c)
        for c in _blocks(n, block):
            hbm.load("X", cols=c)
            hbm.store("Y", np.full((r, c.stop - c.start), 1.0 / n), cols=c)

    with pytest.raises(CheckFailure) as info:
        lab08.check_online_softmax(off_by_one)
    assert "exp(m - m')" not in str(info.value) and "Y must be exp(x - m) / l" in str(info.value)


def test_predicted_traffic_rejects_floats():
    rejects(
        lab08.check_predicted_traffic,
        lambda *a: tuple(float(v) for v in predict(*a)),
        match="integers",
    )


def test_the_invariant_of_08_3_is_the_closed_form():
    """The prose's pair, recomputed from the closed forms of the prose (not the grader)."""
    import re

    import nbformat

    from a2s.syllabus import LABS

    lab = next(lab for lab in LABS if lab.number == "08")
    text = " ".join(c.source for c in nbformat.read(lab.solution_path(ROOT), 4).cells)
    found = re.search(
        r"predict_bytes\((\d+), (\d+), (\d+), (\d+), False, (\d+)\) == \((\d+), (\d+)\)", text
    )
    n, d, bq, _, s, naive, fl = (int(v) for v in found.groups())
    tr = -(-n // bq)
    assert (naive, fl) == ((4 * n * d + 4 * n * n) * s, (n * d + tr * 2 * n * d + n * d + n) * s)


_fwd_ok = unblocked(flash.flash_attention_forward)


def test_flash_forward_hints_name_the_mistake():
    def forward_with_l_as_m(hbm, bq, bk, causal, scale):  # O right, L = the running max
        _fwd_ok(hbm, bq, bk, causal, scale)
        n, _ = hbm.shape("Q")
        for i0 in range(0, n, bq):
            r = slice(i0, min(i0 + bq, n))
            hbm.load("Q", r)  # (the traffic is not what is tested here)
            hbm.store("L", np.zeros(r.stop - i0), r)

    with pytest.raises(CheckFailure) as info:
        lab08.check_flash_forward(forward_with_l_as_m)
    assert "rescale" not in str(info.value)


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]

MUSTS = [
    (
        "08.1",
        "Budget: exactly the fused column of the table, so load `B` and `G` **once**",
        "test_fusion_rejects_unfused_and_wrong_kernels",
    ),
    ("08.1", "the unfused versions are rejected", "test_fusion_rejects_unfused_and_wrong_kernels"),
    (
        "08.1",
        "may touch its arrays **only** through",
        "test_a_kernel_that_touches_the_counters_is_rejected",
    ),
    ("08.1", "Exercise code may not call torch", "test_attempt"),
    (
        "08.2",
        "`X` read exactly twice, `Y` written once",
        "test_online_softmax_rejects_wrong_kernels",
    ),
    ("08.2", "at most `block` columns", "test_online_softmax_rejects_wrong_kernels"),
    (
        "08.2",
        "extra memory a few tiles (a kernel that keeps the first pass's tiles for the second "
        "fails, "
        "even if it loads them again)",
        "test_online_softmax_keeping_every_tile_breaks_the_memory_budget",
    ),
    ("08.2", "the three-pass softmax is rejected", "test_online_softmax_rejects_wrong_kernels"),
    ("08.3", "as integers", "test_predicted_traffic_rejects_floats"),
    (
        "08.3",
        "`predict_bytes(64, 16, 16, 16, False, 8) == (163840, 82432)`",
        "test_the_invariant_of_08_3_is_the_closed_form",
    ),
    ("08.3", "4 fresh ones", "test_attempt"),
    (
        "08.4",
        "every load and store must fit its SRAM tile",
        "test_flash_forward_rejects_budget_breaking_and_wrong_kernels",
    ),
    (
        "08.4",
        "Budget: traffic equal to the IO model",
        "test_flash_forward_rejects_budget_breaking_and_wrong_kernels",
    ),
    (
        "08.4",
        "extra memory (tracemalloc) within a few tiles",
        "test_flash_forward_rejects_budget_breaking_and_wrong_kernels",
    ),
    (
        "08.4",
        "Building a whole row block of $S$, or not skipping future blocks, is rejected.",
        "test_flash_forward_rejects_budget_breaking_and_wrong_kernels",
    ),
    (
        "08.5",
        "Budget: traffic equal to the model above, extra memory a few tiles (no $P$ kept anywhere)",
        "test_flash_backward_rejects_budget_breaking_and_wrong_kernels",
    ),
    ("08.5", "Write `D` (first, block by block), then `dQ, dK, dV`", "test_flash_backward_passes"),
]
