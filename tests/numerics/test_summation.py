"""minitorch.numerics.summation: the three sums against plain loops and math.fsum."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minitorch.numerics.summation import (
    U32,
    gamma,
    kahan_error_bound,
    kahan_sum,
    naive_error_bound,
    naive_sum,
    pairwise_depth,
    pairwise_error_bound,
    pairwise_sum,
)


def exact(x: np.ndarray) -> float:
    return math.fsum(np.asarray(x, np.float64).tolist())


def test_naive_is_sequential_float32():
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    s = naive_sum(x)
    assert isinstance(s, np.float32)
    assert s == np.cumsum(x, dtype=np.float32)[-1]  # numpy's accumulate is left to right


def test_pairwise_split_by_hand():
    x = np.random.default_rng(1).standard_normal(9).astype(np.float32)
    left = ((x[0] + x[1]) + x[2]) + x[3]
    right = (((x[4] + x[5]) + x[6]) + x[7]) + x[8]
    assert pairwise_sum(x) == left + right
    assert pairwise_sum(x[:8]) == naive_sum(x[:8])


def test_kahan_step_by_step():
    x = np.array([1.0, 2.0**-24, 2.0**-24], np.float32)
    assert naive_sum(x) == 1.0  # each 2^-24 is a tie with 1.0, lost to even
    assert kahan_sum(x) == np.float32(1.0 + 2.0**-23)  # compensation carries them


def test_empty_and_single():
    for f in (naive_sum, pairwise_sum, kahan_sum):
        assert f(np.array([], np.float32)) == 0.0
        assert f(np.array([3.5], np.float32)) == 3.5


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 16, 17, 1000, 1025])
def test_pairwise_depth(n):
    assert pairwise_depth(n, block=2) == (math.ceil(math.log2(n)) if n > 1 else 0)

    def depth(m, block=8):  # by brute force: the most additions any element sees
        return m - 1 if m <= block else 1 + max(depth(m // 2), depth(m - m // 2))

    assert pairwise_depth(n) == depth(n)


def test_adversarial_input_naive_loses_kahan_and_pairwise_do_not():
    x = np.concatenate([[1.0], np.full(65_536, 2.0**-25)]).astype(np.float32)
    assert naive_sum(x) == 1.0
    assert abs(float(naive_sum(x)) - exact(x)) > 2 * U32 * exact(np.abs(x))
    assert kahan_sum(x) == np.float32(exact(x))
    # pairwise loses only a few tiny values near 1.0 (its naive block), not 65,536 of them
    assert abs(float(pairwise_sum(x)) - exact(x)) <= 8 * 2.0**-25


def test_gamma():
    assert gamma(0) == 0.0
    assert gamma(10, 0.01) == pytest.approx(0.1 / 0.9)
    assert gamma(200, 0.01) == math.inf


arrays = hnp.arrays(
    np.float32,
    st.integers(0, 3000),
    elements=st.floats(-1e6, 1e6, width=32),
)


@settings(max_examples=40, deadline=None)
@given(arrays)
def test_errors_within_bounds(x):
    sigma = exact(x)
    assert abs(float(naive_sum(x)) - sigma) <= naive_error_bound(x)
    assert abs(float(pairwise_sum(x)) - sigma) <= pairwise_error_bound(x)
    assert abs(float(kahan_sum(x)) - sigma) <= kahan_error_bound(x)


def test_bounds_ordered_for_large_n():
    x = np.random.default_rng(2).standard_normal(100_000).astype(np.float32)
    assert kahan_error_bound(x) < pairwise_error_bound(x) < naive_error_bound(x)
    # measured errors typically sit far below the worst case, in the same order
    errs = [abs(float(f(x)) - exact(x)) for f in (kahan_sum, pairwise_sum, naive_sum)]
    assert errs[0] <= errs[1] <= errs[2]
