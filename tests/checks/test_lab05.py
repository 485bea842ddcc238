"""Graders of lab 05: the reference passes, realistic wrong answers and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab05
from a2s.checks.core import CheckFailure, ReferenceCalledError
from minitorch import hardware
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.hardware")


# --------------------------------------------------------------------------- 05.1 op costs
def gemv(m, n, s):
    return 2 * m * n, s * (m * n + n + m)


def softmax(r, c, s):
    return 5 * r * c, 2 * s * r * c


def layernorm(r, c, s):
    return 8 * r * c + 5 * r, s * (2 * r * c + 2 * c)


def attention(n, d, s, materialized):
    return 4 * n * n * d + 5 * n * n, s * (4 * n * d + (4 * n * n if materialized else 0))


def _costs(**swap):
    fns = {"gemv": gemv, "softmax": softmax, "layernorm": layernorm, "attention": attention}
    fns.update(swap)
    return fns["gemv"], fns["softmax"], fns["layernorm"], fns["attention"]


def test_op_costs_reference_passes(capsys):
    ref = [
        unblocked(f)
        for f in (
            hardware.gemv_cost,
            hardware.softmax_cost,
            hardware.layernorm_cost,
            hardware.attention_cost,
        )
    ]
    lab05.check_op_costs(*ref)
    assert "✔ Exercise 05.1 passed" in capsys.readouterr().out


def test_op_costs_student_style_passes():
    lab05.check_op_costs(*_costs())


@pytest.mark.parametrize(
    ("swap", "match"),
    [
        ({"gemv": lambda m, n, s: (2 * m * n, s * m * n)}, "reads x and writes y"),
        ({"gemv": lambda m, n, s: (m * n, s * (m * n + n + m))}, "add as well as the multiply"),
        ({"softmax": lambda r, c, s: (4 * r * c, 2 * s * r * c)}, "max"),
        ({"softmax": lambda r, c, s: (5 * r * c, s * r * c)}, "write of the output"),
        ({"layernorm": lambda r, c, s: (8 * r * c, s * (2 * r * c + 2 * c))}, "per-row scalar"),
        ({"layernorm": lambda r, c, s: (8 * r * c + 5 * r, 2 * s * r * c)}, "gamma and beta"),
        (
            {
                "attention": lambda n, d, s, materialized: (
                    4 * n * n * d,
                    attention(n, d, s, materialized)[1],
                )
            },
            "softmax",
        ),
        (
            {"attention": lambda n, d, s, materialized: attention(n, d, s, True)},
            "never leave on-chip",
        ),
        (
            {
                "attention": lambda n, d, s, materialized: (
                    attention(n, d, s, materialized)[0],
                    s * (4 * n * d + (2 * n * n if materialized else 0)),
                )
            },
            "read back once",
        ),
        ({"gemv": lambda m, n, s: 2 * m * n}, "pair"),
        ({"gemv": lambda m, n, s: (always_equal(2 * m * n), s * (m * n + n + m))}, "subclass"),
    ],
)
def test_op_costs_rejects_wrong_counts(swap, match):
    rejects(lab05.check_op_costs, *_costs(**swap), match=match)


def test_op_costs_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab05.check_op_costs(
            *_costs(softmax=lambda r, c, s: tuple(hardware.softmax_cost(r, c, s).__reduce__()[1]))
        )
    with pytest.raises(ReferenceCalledError):
        lab05.check_op_costs(
            *_costs(attention=lambda n, d, s, materialized: hardware.attention_cost(n, d, s))
        )


# --------------------------------------------------------------------------- 05.2 roofline
def roof(i, p, b):
    return (i * b, "memory") if i * b < p else (p, "compute")


def test_roofline_reference_passes():
    lab05.check_roofline(unblocked(hardware.roofline_bound))
    lab05.check_roofline(roof)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda i, p, b: (max(p, i * b), roof(i, p, b)[1]), "min, not max"),
        (lambda i, p, b: (min(p, i / b), roof(i, p, b)[1]), "multiply"),
        (lambda i, p, b: (min(p, i * b), "compute" if i * b < p else "memory"), "slanted"),
        (lambda i, p, b: (min(p, i * b), "memory" if i * b <= p else "compute"), "ridge"),
        (lambda i, p, b: (min(p, i * b), "bandwidth" if i * b < p else "peak"), "string"),
        (lambda i, p, b: min(p, i * b), "expected"),
    ],
)
def test_roofline_rejects_wrong_bounds(wrong, match):
    rejects(lab05.check_roofline, wrong, match=match)


def test_roofline_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab05.check_roofline(lambda i, p, b: (hardware.attainable(i, p, b), roof(i, p, b)[1]))
    with pytest.raises(ReferenceCalledError):
        lab05.check_roofline(lambda i, p, b: (min(p, i * b), hardware.Roofline("x", p, b).bound(i)))


# --------------------------------------------------------------------------- 05.3 predict
PEAK, BW = 1.2e11, 4e10  # ridge 3: attention materialised (15.8 FLOP/B) compute-bound


def seconds(f, b, p, w):
    return max(f / p, b / w)


def bounds(peak=PEAK, bw=BW):
    return {k: roof(f / b, peak, bw)[1] for k, (f, b) in lab05.PREDICT_OPS.items()}


def test_prediction_reference_passes():
    lab05.check_prediction(unblocked(hardware.predicted_seconds), bounds, peak=PEAK, bandwidth=BW)
    # a machine with a ridge of 30 FLOP/B: materialised attention turns memory-bound
    lab05.check_prediction(seconds, lambda: bounds(1.2e12, 4e10), peak=1.2e12, bandwidth=4e10)


@pytest.mark.parametrize(
    ("time_fn", "bounds_fn", "match"),
    [
        (lambda f, b, p, w: f / p + b / w, bounds, "overlap"),
        (lambda f, b, p, w: min(f / p, b / w), bounds, "max of the two"),
        (lambda f, b, p, w: f / p, bounds, "expected"),
        (seconds, lambda: bounds(1.2e12, 4e10), "materialised.*ridge point is 3"),
        (seconds, lambda: {**bounds(), "gemv 4096x4096": "compute"}, "memory-bound here"),
        (seconds, lambda: {k: v for k, v in bounds().items() if "gemm" not in k}, "no prediction"),
        (seconds, lambda: list(bounds().values()), "dict"),
    ],
)
def test_prediction_rejects_wrong_answers(time_fn, bounds_fn, match):
    with pytest.raises(CheckFailure, match=match):
        lab05.check_prediction(time_fn, bounds_fn, peak=PEAK, bandwidth=BW)


def test_prediction_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab05.check_prediction(hardware.predicted_seconds, bounds, peak=PEAK, bandwidth=BW)
    with pytest.raises(ReferenceCalledError):
        lab05.check_prediction(
            seconds,
            lambda: {k: hardware.bound(f / b, PEAK, BW) for k, (f, b) in lab05.PREDICT_OPS.items()},
            peak=PEAK,
            bandwidth=BW,
        )


# --------------------------------------------------------------------------- 05.4 laws
def amdahl(f, p):
    return 1 / (f + (1 - f) / p)


def gustafson(f, p):
    return f + p * (1 - f)


def test_speedups_reference_passes():
    lab05.check_speedups(unblocked(hardware.amdahl_speedup), unblocked(hardware.gustafson_speedup))
    lab05.check_speedups(amdahl, gustafson)


@pytest.mark.parametrize(
    ("a", "g", "match"),
    [
        (lambda f, p: f + (1 - f) / p, gustafson, "inverse"),
        (lambda f, p: 1 / ((1 - f) + f / p), gustafson, "serial"),
        (gustafson, gustafson, "Gustafson's scaled"),
        (amdahl, lambda f, p: p * (1 - f), "counts once"),
        (amdahl, amdahl, "Amdahl's fixed-size"),
        (amdahl, lambda f, p: (1 - f) + p * f, "parallel part"),
    ],
)
def test_speedups_reject_wrong_laws(a, g, match):
    rejects(lab05.check_speedups, a, g, match=match)


def test_speedups_reject_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab05.check_speedups(hardware.amdahl_speedup, gustafson)
    with pytest.raises(ReferenceCalledError):
        lab05.check_speedups(amdahl, lambda f, p: hardware.gustafson_speedup(f, p))


# --------------------------------------------------------------------------- 05.5 fit
def fit(workers, seconds):
    p, t = np.asarray(workers, float), np.asarray(seconds, float)
    (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(p), 1 / p], 1), t, rcond=None)
    return float(a / (a + b))


def test_serial_fraction_reference_passes():
    lab05.check_serial_fraction(unblocked(hardware.fit_serial_fraction))
    lab05.check_serial_fraction(fit)


def _two_points(workers, seconds):
    return fit([workers[0], workers[-1]], [seconds[0], seconds[-1]])


def _unnormalised(workers, seconds):
    p, t = np.asarray(workers, float), np.asarray(seconds, float)
    (a, _), *_ = np.linalg.lstsq(np.stack([np.ones_like(p), 1 / p], 1), t, rcond=None)
    return float(a)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda w, s: 1 - fit(w, s), "parallel fraction"),
        (_two_points, "every measurement"),
        (_unnormalised, "divide by T"),
        (lambda w, s: always_equal(fit(w, s)), "subclass"),
    ],
)
def test_serial_fraction_rejects_wrong_fits(wrong, match):
    rejects(lab05.check_serial_fraction, wrong, match=match)


def test_serial_fraction_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab05.check_serial_fraction(lambda w, s: hardware.fit_serial_fraction(w, s))


def test_no_check_fails_on_an_error_message_without_a_case():
    with pytest.raises(CheckFailure, match="callable"):
        lab05.check_roofline(3.0)


# --------------------------------------------------------------------------- review additions
def test_op_costs_accepts_a_numpy_pair():
    def as_array(n, d, s, materialized):
        return np.array(attention(n, d, s, materialized))

    lab05.check_op_costs(*_costs(attention=as_array))


def test_checks_reject_the_graders_own_ground_truth():
    """The loop counters and closed forms in the grader are not the student's work."""
    from a2s.checks.lab05 import intensity, roofline, scaling

    truth = "a2s.checks.lab05"
    rejects(
        lab05.check_op_costs, *_costs(gemv=intensity._gemv), match=truth, error=ReferenceCalledError
    )
    rejects(lab05.check_roofline, roofline._truth, match=truth, error=ReferenceCalledError)
    rejects(
        lab05.check_speedups,
        scaling._amdahl,
        scaling._gustafson,
        match=truth,
        error=ReferenceCalledError,
    )
    rejects(
        lab05.check_serial_fraction, scaling._least_squares, match=truth, error=ReferenceCalledError
    )


def test_op_costs_accepts_a_dataclass_of_ones_own():
    """A student's own dataclass with .flops and .bytes is an answer, not the blocked OpCost."""
    from dataclasses import dataclass

    @dataclass
    class Cost:
        flops: int
        bytes: int

    lab05.check_op_costs(*_costs(gemv=lambda m, n, s: Cost(*gemv(m, n, s))))


def test_op_costs_rejects_floats_where_ints_are_asked():
    rejects(
        lab05.check_op_costs,
        *_costs(softmax=lambda r, c, s: (5.0 * r * c, 2 * s * r * c)),
        match="Python ints",
    )


def test_serial_fraction_fits_repeats_as_points():
    def mean_first(workers, seconds):
        by_p = {}
        for p, s in zip(workers, seconds, strict=True):
            by_p.setdefault(p, []).append(s)
        return fit(list(by_p), [float(np.mean(v)) for v in by_p.values()])

    rejects(lab05.check_serial_fraction, mean_first, match="averaging them first")

    def last_only(workers, seconds):
        last = dict(zip(workers, seconds, strict=True))
        return fit(list(last), list(last.values()))

    rejects(lab05.check_serial_fraction, last_only, match="repeats at the same p")


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("05.1", "Exercise code may not call torch", "test_attempt"),
    (
        "05.1",
        "nor the `minitorch` reference of the function the exercise asks you to write",
        "test_op_costs_rejects_reference_calls",
    ),
    (
        "05.1",
        "returning the pair `(flops, bytes)` as Python ints",
        "test_op_costs_rejects_floats_where_ints_are_asked",
    ),
    ("05.1", "per-row scalar ops included", "test_op_costs_rejects_wrong_counts"),
    (
        "05.1",
        "writes $S = QK^\\top$ and $P = \\mathrm{softmax}(S)$ to memory and reads each back once",
        "test_op_costs_rejects_wrong_counts",
    ),
    (
        "05.1",
        "*Invariant:* `softmax_cost(1, 1, 4) == (5, 8)`",
        "test_op_costs_rejects_wrong_counts",
    ),
    (
        "05.2",
        'exactly at the ridge both roofs are equal; call it `"compute"`',
        "test_roofline_rejects_wrong_bounds",
    ),
    (
        "05.2",
        '`"memory"` when the op is left of the ridge point',
        "test_roofline_rejects_wrong_bounds",
    ),
    (
        "05.2",
        '*Invariant:* `roofline_bound(1.0, 100.0, 10.0) == (10.0, "memory")`',
        "test_roofline_rejects_wrong_bounds",
    ),
    ("05.3", "the roofline's lower bound on time", "test_prediction_rejects_wrong_answers"),
    ("05.3", "for each op of `lab05.PREDICT_OPS`", "test_prediction_rejects_wrong_answers"),
    (
        "05.3",
        'your prediction `"memory"` or `"compute"` on **this** machine',
        "test_prediction_rejects_wrong_answers",
    ),
    (
        "05.3",
        "*Invariant:* `predicted_seconds(1e9, 1e6, 1e9, 1e9) == 1.0`",
        "test_prediction_rejects_wrong_answers",
    ),
    ("05.4", "`f` the serial fraction", "test_speedups_reject_wrong_laws"),
    (
        "05.4",
        "*Invariant:* `amdahl(0.25, 4) == 16 / 7` and `gustafson(0.25, 4) == 3.25`",
        "test_speedups_reject_wrong_laws",
    ),
    (
        "05.5",
        "fit $a, b$ by least squares over **all** the measurements (repeats at the same $p$ "
        "allowed)",
        "test_serial_fraction_fits_repeats_as_points",
    ),
    ("05.5", "return $f = a/(a + b)$", "test_serial_fraction_rejects_wrong_fits"),
]
