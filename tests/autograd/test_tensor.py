"""The Tensor class: construction, dtypes, views of the graph, and import purity."""

import subprocess
import sys

import numpy as np
import pytest

from minitorch.autograd import Tensor, as_tensor, make, no_grad


def test_python_floats_become_float32_arrays_keep_their_dtype():
    assert Tensor([1.0, 2.0]).dtype == np.float32
    assert Tensor(np.ones(2)).dtype == np.float64
    assert Tensor([1, 2]).dtype.kind == "i"
    assert Tensor(np.ones(2), dtype=np.float32).dtype == np.float32


def test_as_tensor_uses_the_other_operands_dtype():
    x = Tensor(np.ones(2, np.float32))
    assert as_tensor(2.5, like=x).dtype == np.float32
    assert as_tensor(x) is x
    assert (x * 2.5).dtype == np.float32 and (2.5 - x).dtype == np.float32


def test_properties_and_helpers():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and len(x) == 2
    assert x.T.shape == (3, 2) and x[1, 0].item() == 3.0
    assert x.numpy() is x.data
    d = x.detach()
    assert d.data is x.data and not d.requires_grad and d.node is None
    assert "requires_grad=True" in repr(x) and "op=mul" in repr(x * 2)


def test_backward_accepts_a_tensor_seed():
    x = Tensor(np.ones(3), requires_grad=True)
    (x * 2).backward(Tensor(np.array([1.0, 2.0, 3.0])))
    assert np.allclose(x.grad, [2, 4, 6])


def test_make_records_a_node_only_when_needed():
    x = Tensor(np.ones(2), requires_grad=True)
    c = Tensor(np.ones(2))
    assert make("add", x.data + c.data, (x, c)).node.parents == (x, c)
    assert make("add", c.data + c.data, (c, c)).node is None
    with no_grad():
        assert make("add", x.data + c.data, (x, c)).node is None


@pytest.mark.parametrize("package", ["autograd", "nn", "optim"])
def test_package_imports_without_torch(package):
    code = f"import sys, minitorch.{package}; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
