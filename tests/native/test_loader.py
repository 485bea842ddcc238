"""The C++ kernels through ctypes equal numpy (lab 06's matmul, lab 08's bias + GELU)."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.kernels.fusion import gelu_tanh
from minitorch.native.loader import LoadError, kernels, load
from tests.native.conftest import needs_gxx

pytestmark = needs_gxx


@pytest.mark.parametrize("order", ["ijk", "ikj"])
@pytest.mark.parametrize("n", [1, 5, 33])
def test_loop_orders_equal_numpy(order: str, n: int) -> None:
    g = np.random.default_rng(n)
    a, b = g.normal(size=(n, n)), g.normal(size=(n, n))
    np.testing.assert_allclose(kernels().matmul(a, b, order), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("shape", "tile"), [((7, 5, 9), 3), ((16, 16, 16), 16), ((4, 6, 2), 50)])
def test_tiled_equals_numpy_for_any_tile(shape: tuple[int, int, int], tile: int) -> None:
    n, k, m = shape
    g = np.random.default_rng(tile)
    a, b = g.normal(size=(n, k)), g.normal(size=(k, m))
    np.testing.assert_allclose(kernels().matmul_tiled(a, b, tile), a @ b, atol=1e-12)


def test_inputs_are_cast_and_made_contiguous() -> None:
    g = np.random.default_rng(1)
    a = g.normal(size=(6, 6)).astype(np.float32)
    b = np.asfortranarray(g.normal(size=(6, 6)))
    want = a.astype(np.float64) @ b
    np.testing.assert_allclose(kernels().matmul(a.T.T, b), want, atol=1e-12)
    np.testing.assert_allclose(kernels().matmul_tiled(a[:, :4], b[:4, :], 2), a[:, :4] @ b[:4])


def test_bias_gelu_and_its_backward() -> None:
    g = np.random.default_rng(2)
    x, b, up = g.normal(size=(9, 13)) * 3, g.normal(size=13), g.normal(size=(9, 13))
    k = kernels()
    np.testing.assert_allclose(k.bias_gelu(x, b), gelu_tanh(x + b), rtol=1e-13, atol=1e-15)
    eps = 1e-6
    fd = (gelu_tanh(x + b + eps) - gelu_tanh(x + b - eps)) / (2 * eps)
    np.testing.assert_allclose(k.bias_gelu_backward(x, b, up), up * fd, rtol=1e-6, atol=1e-8)


def test_shapes_are_checked_before_c_sees_a_pointer() -> None:
    k = kernels()
    with pytest.raises(ValueError, match="square"):
        k.matmul(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="order"):
        k.matmul(np.ones((2, 2)), np.ones((2, 2)), "kji")
    with pytest.raises(ValueError, match="inner dimensions"):
        k.matmul_tiled(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="tile"):
        k.matmul_tiled(np.ones((2, 2)), np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="bias"):
        k.bias_gelu(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="dimensions"):
        k.bias_gelu(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="g must"):
        k.bias_gelu_backward(np.ones((2, 3)), np.ones(3), np.ones((3, 2)))


def test_the_library_is_loaded_once_per_process() -> None:
    assert kernels() is kernels()


def test_a_file_that_is_no_library_is_a_load_error(tmp_path) -> None:
    bad = tmp_path / "libnot.so"
    bad.write_text("not an ELF file")
    with pytest.raises(LoadError, match="cannot load"):
        load(bad)
