"""Lab 05 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Frame, ``gc``
and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from a2s.checks import lab05
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

REF = "minitorch.hardware"
TRUTH = "a2s.checks.lab05"


# --------------------------------------------------------------------------- 05.1 op costs
def gemv(m, n, s):
    return 2 * m * n, s * (m * n + n + m)


def softmax(r, c, s):
    return 5 * r * c, 2 * s * r * c


def layernorm(r, c, s):
    return 8 * r * c + 5 * r, s * (2 * r * c + 2 * c)


def attention(n, d, s, materialized):
    return 4 * n * n * d + 5 * n * n, s * (4 * n * d + (4 * n * n if materialized else 0))


def costs(**swap):
    fns = {"gemv": gemv, "softmax": softmax, "layernorm": layernorm, "attention": attention}
    fns.update(swap)
    return lambda: lab05.check_op_costs(
        fns["gemv"], fns["softmax"], fns["layernorm"], fns["attention"]
    )


def loop_gemv(m, n, s):
    flops = 0
    for _ in range(m):
        for _ in range(n):
            flops += 2
    return flops, s * m * n + s * n + s * m


def loop_attention(n, d, s, materialized):
    per_score = 2 * d + 5  # one dot product, then 5 softmax ops on it
    flops = n * n * per_score + 2 * n * n * d
    elements = [n * d] * 4 + ([n * n] * 4 if materialized else [])
    return flops, sum(e * s for e in elements)


@dataclass
class Cost:
    flops: int
    bytes: int


def numpy_layernorm(r, c, s):
    return np.array([8 * r * c + 5 * r, s * (2 * r * c + 2 * c)], dtype=np.int64)


def _torch_softmax(r, c, s):
    import torch

    return int(torch.tensor(5 * r * c)), 2 * s * r * c


def _ref_gemv(m, n, s):
    from minitorch.hardware import gemv_cost

    c = gemv_cost(m, n, s)
    return c.flops, c.bytes


def _gemm_as_gemv(m, n, s):
    from minitorch.hardware.intensity import gemm_cost

    c = gemm_cost(m, 1, n, s)
    return c.flops, c.bytes


def _truth_attention(n, d, s, materialized):
    from a2s.checks.lab05 import intensity

    return intensity._attention(n, d, s, materialized)


OP_COSTS = [
    honest("05.1", "explicit loops", costs(gemv=loop_gemv, attention=loop_attention)),
    honest(
        "05.1",
        "own dataclass, numpy pair",
        costs(softmax=lambda r, c, s: Cost(*softmax(r, c, s)), layernorm=numpy_layernorm),
    ),
    honest(
        "05.1",
        "numpy integers in a list",
        costs(gemv=lambda m, n, s: [np.int64(2 * m * n), np.int64(s * (m * n + n + m))]),
    ),
    wrong(
        "05.1",
        "gemv counts the multiply only",
        costs(gemv=lambda m, n, s: (m * n, s * (m * n + n + m))),
        match="add as well",
    ),
    wrong(
        "05.1",
        "softmax without the max",
        costs(softmax=lambda r, c, s: (4 * r * c, 2 * s * r * c)),
        match="max",
    ),
    wrong(
        "05.1",
        "layernorm forgets gamma and beta",
        costs(layernorm=lambda r, c, s: (8 * r * c + 5 * r, 2 * s * r * c)),
        match="gamma and beta",
    ),
    wrong(
        "05.1",
        "materialised S and P moved once",
        costs(
            attention=lambda n, d, s, materialized: (
                attention(n, d, s, materialized)[0],
                s * (4 * n * d + (2 * n * n if materialized else 0)),
            )
        ),
        match="read back once",
    ),
    wrong(
        "05.1",
        "fused attention still moves S and P",
        costs(attention=lambda n, d, s, materialized: attention(n, d, s, True)),
        match="never leave on-chip",
    ),
    wrong(
        "05.1",
        "floats where ints are asked",
        costs(gemv=lambda m, n, s: (2.0 * m * n, s * (m * n + n + m) * 1.0)),
        match="Python ints",
    ),
    cheat(
        "05.1",
        "calls the reference",
        costs(gemv=_ref_gemv),
        match="gemv_cost",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.1",
        "gemv as the reference's gemm_cost",
        costs(gemv=_gemm_as_gemv),
        match="gemm_cost",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.1",
        "the grader's own loop counter",
        costs(attention=_truth_attention),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat("05.1", "torch", costs(softmax=_torch_softmax), match="torch", error=ForbiddenCallError),
    cheat(
        "05.1",
        "an int whose == always says yes",
        costs(gemv=lambda m, n, s: (always_equal(0), always_equal(0))),
        match="subclass",
    ),
    cheat(
        "05.1",
        "replays the fixed cases",
        costs(
            softmax=lambda r, c, s: (
                softmax(r, c, s) if (r, c, s) in {(2, 5, 4), (1, 1, 1)} else (5 * r * c, 8 * r * c)
            )
        ),
        match="softmax_cost returned",
    ),
]


# --------------------------------------------------------------------------- 05.2 roofline
def roof(i, p, b):
    return (i * b, "memory") if i * b < p else (p, "compute")


def ridge_roof(i, p, b):
    side = "memory" if i < p / b else "compute"
    return min(p, i * b), side


class Roof:
    sides = ("compute", "memory")

    def __call__(self, intensity, peak, bandwidth):
        attainable = np.minimum(peak, intensity * bandwidth)
        return [attainable, self.sides[int(intensity * bandwidth < peak)]]


def _ref_roof(i, p, b):
    from minitorch.hardware import Roofline

    r = Roofline("mine", p, b)
    return r.attainable(i), r.bound(i)


def _truth_roof(i, p, b):
    from a2s.checks.lab05.roofline import _truth

    return _truth(i, p, b)


def _torch_roof(i, p, b):
    import torch

    return float(torch.minimum(torch.tensor(p), torch.tensor(i * b))), roof(i, p, b)[1]


_NAMED_ROOFS = {(0.5, 1e11, 4e10), (170.0, 1e11, 4e10), (2.5, 1e11, 4e10)}

ROOFLINE = [
    honest("05.2", "compare with the ridge point", lambda: lab05.check_roofline(ridge_roof)),
    honest("05.2", "a class, numpy minimum, a list", lambda: lab05.check_roofline(Roof())),
    wrong(
        "05.2",
        "max instead of min",
        lambda: lab05.check_roofline(lambda i, p, b: (max(p, i * b), roof(i, p, b)[1])),
        match="min, not max",
    ),
    wrong(
        "05.2",
        "intensity divided by bandwidth",
        lambda: lab05.check_roofline(lambda i, p, b: (min(p, i / b), roof(i, p, b)[1])),
        match="multiply",
    ),
    wrong(
        "05.2",
        "the ridge itself called memory",
        lambda: lab05.check_roofline(
            lambda i, p, b: (min(p, i * b), "memory" if i * b <= p else "compute")
        ),
        match="ridge",
    ),
    wrong(
        "05.2",
        "sides swapped",
        lambda: lab05.check_roofline(
            lambda i, p, b: (min(p, i * b), "compute" if i * b < p else "memory")
        ),
        match="slanted",
    ),
    cheat(
        "05.2",
        "the reference's Roofline class",
        lambda: lab05.check_roofline(_ref_roof),
        match="Roofline",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.2",
        "the grader's own closed form",
        lambda: lab05.check_roofline(_truth_roof),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "05.2",
        "torch.minimum",
        lambda: lab05.check_roofline(_torch_roof),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "05.2",
        "a float whose == always says yes",
        lambda: lab05.check_roofline(lambda i, p, b: (always_equal(0.0), roof(i, p, b)[1])),
        match="subclass",
    ),
    cheat(
        "05.2",
        "replays the named cases",
        lambda: lab05.check_roofline(
            lambda i, p, b: roof(i, p, b) if (i, p, b) in _NAMED_ROOFS else (p, "compute")
        ),
        match="expected",
    ),
]


# --------------------------------------------------------------------------- 05.3 predict
PEAK, BW = 1.2e11, 4e10  # ridge 3 FLOP/byte: materialised attention (15.8) compute-bound


def seconds(f, b, p, w):
    return max(f / p, b / w)


def bounds():
    return {k: roof(f / b, PEAK, BW)[1] for k, (f, b) in lab05.PREDICT_OPS.items()}


HAND_BOUNDS = {  # reasoned by hand from the ridge point 3 FLOP/byte
    "gemm 1024x1024x1024": "compute",
    "gemv 4096x4096": "memory",
    "softmax 4096x1024": "memory",
    "layernorm 4096x1024": "memory",
    "attention n=2048 d=64, fused": "compute",
    "attention n=2048 d=64, materialised": "compute",
}


def predict(time_fn, bounds_fn):
    return lambda: lab05.check_prediction(time_fn, bounds_fn, peak=PEAK, bandwidth=BW)


def _ref_bounds():
    from minitorch.hardware.roofline import bound

    return {k: bound(f / b, PEAK, BW) for k, (f, b) in lab05.PREDICT_OPS.items()}


def _truth_seconds(f, b, p, w):
    from a2s.checks.lab05 import roofline

    return roofline._seconds(f, b, p, w)


def _torch_seconds(f, b, p, w):
    import torch

    return float(torch.maximum(torch.tensor(f / p), torch.tensor(b / w)))


PREDICTION = [
    honest(
        "05.3",
        "if/else, bounds reasoned by hand",
        predict(lambda f, b, p, w: f / p if f / p > b / w else b / w, lambda: HAND_BOUNDS),
    ),
    honest(
        "05.3",
        "numpy max, bounds from my own roof",
        predict(lambda f, b, p, w: float(np.max([f / p, b / w])), bounds),
    ),
    wrong(
        "05.3",
        "compute plus memory time",
        predict(lambda f, b, p, w: f / p + b / w, bounds),
        match="overlap",
    ),
    wrong(
        "05.3",
        "the faster of the two",
        predict(lambda f, b, p, w: min(f / p, b / w), bounds),
        match="max of the two",
    ),
    wrong(
        "05.3",
        "materialised attention memory-bound (the H100 answer)",
        predict(seconds, lambda: {**HAND_BOUNDS, "attention n=2048 d=64, materialised": "memory"}),
        match="materialised.*memory-bound here|materialised.*compute-bound here",
    ),
    wrong(
        "05.3",
        "one op left out",
        predict(seconds, lambda: {k: v for k, v in HAND_BOUNDS.items() if "gemm" not in k}),
        match="no prediction",
    ),
    cheat(
        "05.3",
        "the reference's predicted_seconds",
        predict(
            lambda f, b, p, w: __import__("minitorch.hardware", fromlist=["x"]).predicted_seconds(
                f, b, p, w
            ),
            bounds,
        ),
        match="predicted_seconds",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.3",
        "the reference's bound in my_bounds",
        predict(seconds, _ref_bounds),
        match="bound",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.3",
        "the grader's own time",
        predict(_truth_seconds, bounds),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "05.3",
        "torch.maximum",
        predict(_torch_seconds, bounds),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "05.3",
        "a float whose == always says yes",
        predict(lambda f, b, p, w: always_equal(1.0), bounds),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 05.4 laws
def amdahl(f, p):
    return 1 / (f + (1 - f) / p)


def gustafson(f, p):
    return f + p * (1 - f)


def amdahl_by_time(f, p):
    time_left = f + (1 - f) / p
    return 1 / time_left


def gustafson_expanded(f, p):
    return p - f * (p - 1)


def laws(a, g):
    return lambda: lab05.check_speedups(a, g)


def _ref_amdahl(f, p):
    from minitorch.hardware.scaling import amdahl_speedup

    return amdahl_speedup(f, p)


def _truth_gustafson(f, p):
    from a2s.checks.lab05 import scaling

    return scaling._gustafson(f, p)


def _torch_amdahl(f, p):
    import torch

    return float(torch.reciprocal(torch.tensor(f + (1 - f) / p, dtype=torch.float64)))


SPEEDUPS = [
    honest("05.4", "time fraction first, p - f(p - 1)", laws(amdahl_by_time, gustafson_expanded)),
    honest(
        "05.4",
        "exact fractions",
        laws(
            lambda f, p: 1 / (Fraction(f) + (1 - Fraction(f)) / Fraction(p)),
            lambda f, p: Fraction(f) + Fraction(p) * (1 - Fraction(f)),
        ),
    ),
    wrong(
        "05.4",
        "returns the time fraction",
        laws(lambda f, p: f + (1 - f) / p, gustafson),
        match="inverse",
    ),
    wrong(
        "05.4",
        "f taken as the parallel part",
        laws(lambda f, p: 1 / ((1 - f) + f / p), gustafson),
        match="serial",
    ),
    wrong(
        "05.4",
        "Gustafson without the serial part",
        laws(amdahl, lambda f, p: p * (1 - f)),
        match="counts once",
    ),
    wrong("05.4", "the two laws swapped", laws(gustafson, amdahl), match="Gustafson's scaled"),
    cheat(
        "05.4",
        "calls the reference",
        laws(_ref_amdahl, gustafson),
        match="amdahl_speedup",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.4",
        "the grader's own closed form",
        laws(amdahl, _truth_gustafson),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat("05.4", "torch", laws(_torch_amdahl, gustafson), match="torch", error=ForbiddenCallError),
    cheat(
        "05.4",
        "a float whose == always says yes",
        laws(lambda f, p: always_equal(1.0), gustafson),
        match="subclass",
    ),
    cheat(
        "05.4",
        "replays the named table",
        laws(
            lambda f, p: {(0.0, 8.0): 8.0, (1.0, 8.0): 1.0, (0.1, 1.0): 1.0}.get((f, p), 1.0),
            gustafson,
        ),
        match="amdahl returned",
    ),
]


# --------------------------------------------------------------------------- 05.5 fit
def fit(workers, seconds):
    p, t = np.asarray(workers, float), np.asarray(seconds, float)
    (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(p), 1 / p], 1), t, rcond=None)
    return float(a / (a + b))


def normal_equations(workers, seconds):
    xs = [1 / p for p in workers]
    n = len(xs)
    mx, my = sum(xs) / n, sum(seconds) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, seconds, strict=True))
    b = sxy / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    return a / (a + b)


def polyfit(workers, seconds):
    import numpy

    b, a = numpy.polyfit(1 / numpy.asarray(workers, float), seconds, 1)
    return a / (a + b)


def _last_repeat_only(workers, seconds):
    last = dict(zip(workers, seconds, strict=False))
    return fit(list(last), list(last.values()))


def _mean_of_repeats(workers, seconds):
    by_p = {}
    for p, s in zip(workers, seconds, strict=False):
        by_p.setdefault(p, []).append(s)
    return fit(list(by_p), [float(np.mean(v)) for v in by_p.values()])


def _measured_t1(workers, seconds):
    p, t = np.asarray(workers, float), np.asarray(seconds, float)
    (a, _), *_ = np.linalg.lstsq(np.stack([np.ones_like(p), 1 / p], 1), t, rcond=None)
    return float(a / t[0])


def _ref_fit(workers, seconds):
    from minitorch.hardware import fit_serial_fraction

    return fit_serial_fraction(workers, seconds)


def _truth_fit(workers, seconds):
    from a2s.checks.lab05.scaling import _least_squares

    return _least_squares(list(workers), list(seconds))


def _torch_fit(workers, seconds):
    import torch

    p = torch.tensor(workers, dtype=torch.float64)
    design = torch.stack([torch.ones_like(p), 1 / p], 1)
    a, b = torch.linalg.lstsq(design, torch.tensor(seconds, dtype=torch.float64)[:, None]).solution
    return float(a / (a + b))


def serial(fn):
    return lambda: lab05.check_serial_fraction(fn)


FIT = [
    honest("05.5", "np.linalg.lstsq", serial(fit)),
    honest("05.5", "normal equations by hand", serial(normal_equations)),
    honest("05.5", "np.polyfit, import inside", serial(polyfit)),
    wrong(
        "05.5",
        "the parallel fraction",
        serial(lambda w, s: 1 - fit(w, s)),
        match="parallel fraction",
    ),
    wrong(
        "05.5",
        "first and last point only",
        serial(lambda w, s: fit([w[0], w[-1]], [s[0], s[-1]])),
        match="every measurement",
    ),
    wrong("05.5", "repeats collapsed to the last time", serial(_last_repeat_only), match="repeats"),
    wrong(
        "05.5",
        "repeats averaged before the fit",
        serial(_mean_of_repeats),
        match="averaging them first",
    ),
    wrong("05.5", "divided by the measured T(1)", serial(_measured_t1), match="fitted a \\+ b"),
    cheat(
        "05.5",
        "calls the reference",
        serial(_ref_fit),
        match="fit_serial_fraction",
        error=ReferenceCalledError,
    ),
    cheat(
        "05.5",
        "the grader's least squares",
        serial(_truth_fit),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "05.5", "torch.linalg.lstsq", serial(_torch_fit), match="torch", error=ForbiddenCallError
    ),
    cheat(
        "05.5",
        "a float whose == always says yes",
        serial(lambda w, s: always_equal(fit(w, s))),
        match="subclass",
    ),
    cheat("05.5", "replays the invariant", serial(lambda w, s: 0.25), match="fitted f"),
]

ATTEMPTS = OP_COSTS + ROOFLINE + PREDICTION + SPEEDUPS + FIT


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
