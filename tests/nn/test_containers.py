"""Sequential, MLP, activations, Dropout and Flatten."""

import numpy as np
import torch

from minitorch.autograd import Tensor
from minitorch.nn import GELU, MLP, Dropout, Flatten, Linear, ReLU, Sequential, Sigmoid, Tanh


def test_mlp_structure_and_output():
    m = MLP([784, 512, 512, 10], rng=np.random.default_rng(0))
    kinds = [type(x).__name__ for x in m]
    assert kinds == ["Linear", "ReLU", "Linear", "ReLU", "Linear"] and len(m) == 5
    assert isinstance(m[-1], Linear) and m[0].weight.shape == (512, 784)
    assert m(Tensor(np.zeros((3, 784), np.float32))).shape == (3, 10)
    assert sum(p.size for p in m.parameters()) == 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10


def test_activations_match_torch():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    for ours, theirs in [(ReLU(), torch.relu), (Tanh(), torch.tanh), (Sigmoid(), torch.sigmoid)]:
        np.testing.assert_allclose(
            ours(Tensor(x)).data, theirs(torch.from_numpy(x)).numpy(), atol=1e-6
        )
    approx = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(GELU("tanh")(Tensor(x)).data, approx, atol=1e-6)


def test_dropout_train_and_eval():
    d = Dropout(0.5, rng=np.random.default_rng(0))
    x = Tensor(np.ones((100, 100), np.float32))
    a, b = d(x).data, d(x).data
    assert not np.array_equal(a, b)  # a new mask every call
    assert 0.45 < (a == 0).mean() < 0.55
    d.eval()
    assert d(x) is x


def test_flatten_in_a_sequential():
    m = Sequential(Flatten(), Linear(12, 2, rng=np.random.default_rng(0)))
    assert m(Tensor(np.ones((5, 3, 2, 2), np.float32))).shape == (5, 2)
