"""Graders of exercises 07.1 (predict a warp's transactions) and 07.2 (vector add).

Ground truth for 07.1: a plain loop over the 32 lanes of a warp, collecting the segment of
each lane's address. For 07.2: ``a + b`` in float32 (exact), and the closed-form minimum of
global traffic, ``ceil(4 n / 32)`` segments per array, enforced.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Mistake, fresh
from a2s.checks.core import assert_bits_equal, assert_true, fresh_rng, grader, rng
from a2s.checks.lab06._truth import line_events
from a2s.checks.lab07._truth import KERNELS, at_most, device, run_kernel, touched_all
from a2s.checks.table import Table

__all__ = ["check_vector_add", "check_warp_transactions"]


def _loop_segments(stride: int, itemsize: int, segment: int) -> int:
    """Segments touched by lanes 0..31 reading element ``lane * stride`` (base 0)."""
    touched = set()
    for lane in range(32):
        touched.add(lane * stride * itemsize // segment)
    return len(touched)


_PREDICT_MISTAKES = (
    Mistake(
        "Segments are counted whole: use integer division (//), not /.",
        when=lambda got, s, b, seg: isinstance(got, float) and not float(got).is_integer(),
    ),
    Mistake(
        "A warp has 32 lanes, so it touches at most 32 segments, however far apart.",
        when=lambda got, s, b, seg: got > 32,
    ),
    Mistake(
        "Stride 0: every lane reads the same address, one segment (a broadcast).",
        when=lambda got, s, b, seg: s == 0 and got != 1,
    ),
    Mistake(
        "Count segments, not bytes over the segment size rounded down: a partly used "
        "segment is still moved whole.",
        answer=lambda s, b, seg: 32 * s * b // seg,
    ),
    Mistake(
        "The warp spans 31 strides plus one element, from address 0: the last lane's "
        "segment is (31 * stride * itemsize) // segment.",
        answer=lambda s, b, seg: -(-32 * s * b // seg),
    ),
)


_LABEL = "stride {}, {}-byte items, {}-byte segments"


def _stride(src: np.random.Generator, i: int) -> tuple[str, tuple[int, int, int]]:
    s, b, g = int(src.integers(0, 40)), int(src.choice([1, 2, 4, 8])), int(src.choice([32, 128]))
    return _LABEL.format(s, b, g), (s, b, g)


SEGMENTS = Table(
    "07.1",
    truth=_loop_segments,
    named=[
        (_LABEL.format(*c), c)
        for c in [
            (1, 4, 32),
            (2, 4, 32),
            (0, 4, 32),
            (8, 4, 32),
            (33, 4, 32),
            (1, 4, 128),
            (3, 4, 32),
            (4, 8, 32),
            (1, 2, 32),
            (5, 4, 128),
            (64, 4, 128),
        ]
    ],
    draw=_stride,
    seeded=40,
    fresh=10,
    mistakes=_PREDICT_MISTAKES,
    what="segments",
    message="[{label}] predicted {got!r}, a warp touches {want}.{hint}",
)


@grader(
    "07.1",
    blocks=(
        f"{KERNELS}:strided_copy",
        "minitorch.kernels.simt_memory:warp_segments",
        f"{__name__}:_loop_segments",  # the grader's own ground truth
    ),
)
def check_warp_transactions(student: Callable[..., object]) -> str:
    """Exercise 07.1: segments one warp touches reading at a stride (closed form)."""
    n = SEGMENTS.grade(student)
    _, lines = line_events(student, 33, 4, 32)
    assert_true(
        lines < 32,
        f"[stride 33, 4-byte items, 32-byte segments] your function ran {lines} Python lines: a "
        "loop over the 32 lanes. Write a closed form of stride, itemsize and segment: how many "
        "bytes apart are lane 0's and lane 31's addresses?",
    )
    return f"{n} strides predicted exactly (stride 1: 4 sectors of 32 B; stride >= 8: 32)"


def _segments(n: int) -> int:
    return -(-4 * n // 32)  # float32: ceil(bytes / 32-byte sector)


_COALESCE = (
    "Consecutive threads (threadIdx.x) must touch consecutive elements: i = blockIdx.x * "
    "blockDim.x + threadIdx.x. Any other mapping spreads a warp over many segments."
)


_VALUES = "c[i] must be a[i] + b[i] in float32, for every i < n."


@grader("07.2", blocks=(f"{KERNELS}:vector_add",), hand="kernel")
def check_vector_add(kernel: Callable[..., object]) -> str:
    """Exercise 07.2: c = a + b, one element per thread, at the minimum global traffic."""
    gen, new = rng(702), fresh_rng("07.2")
    sizes = [(f"n = {n}", n, gen) for n in (1, 31, 256, 257, 1000, 4096)]
    sizes += [(fresh(f"n = {n}"), n, new) for n in (int(v) for v in new.integers(1, 5000, 2))]
    total = 0
    for case, n, src in sizes:
        a, b = (src.standard_normal(n).astype(np.float32) for _ in range(2))
        da, db, dc = device(a), device(b), device(np.full(n, np.nan, np.float32))
        stats = run_kernel(kernel, -(-n // 256), 256, (da, db, dc, n), case)
        got, want = dc.to_numpy().view(np.uint32), (a + b).view(np.uint32)
        assert_bits_equal(got, want, case=case, what="c (float32 bits)", hint=_VALUES)
        for arr, name, stored in ((da, "a", False), (db, "b", False), (dc, "c", True)):
            touched_all(arr, stored=stored, name=name, case=case)
        why = "2 arrays x ceil(4n / 32) sectors"
        total += at_most(stats, "gld_transactions", 2 * _segments(n), case, why, _COALESCE)
        at_most(stats, "gst_transactions", _segments(n), case, "ceil(4n / 32) sectors", _COALESCE)
    return f"{len(sizes)} sizes exact, at the minimum traffic: {total:,} load sectors in all"
