"""Module/Parameter: registration, parameters(), state dicts, train/eval."""

import numpy as np
import pytest

from minitorch.autograd import Tensor
from minitorch.nn import MLP, BatchNorm, Linear, Module, Parameter, Sequential


class Block(Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(3, 4, rng=np.random.default_rng(0))
        self.bn = BatchNorm(4)
        self.scale = Parameter(np.ones(4, np.float32))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


def test_registration_and_dotted_names():
    m = Sequential(Block(), Linear(4, 2, rng=np.random.default_rng(1)))
    names = [n for n, _ in m.named_parameters()]
    assert names == [
        "0.scale",
        "0.fc.weight",
        "0.fc.bias",
        "0.bn.weight",
        "0.bn.bias",
        "1.weight",
        "1.bias",
    ]
    assert [n for n, _ in m.named_buffers()] == ["0.bn.running_mean", "0.bn.running_var"]
    assert len(m.parameters()) == 7 and all(p.requires_grad for p in m.parameters())


def test_shared_parameter_is_listed_once():
    a = Linear(3, 3, rng=np.random.default_rng(0))
    b = Linear(3, 3, rng=np.random.default_rng(1))
    b.weight = a.weight  # tied
    assert len(Sequential(a, b).parameters()) == 3


def test_reassignment_replaces_registration():
    m = Block()
    m.scale = None  # no longer a parameter
    assert "scale" not in dict(m.named_parameters())
    m.bn.running_mean = np.full(4, 2.0, np.float32)  # a buffer stays a buffer
    assert np.all(m.state_dict()["bn.running_mean"] == 2.0)


def test_state_dict_round_trip_copies():
    m1, m2 = Block(), Block()
    m1.bn.running_var[:] = 3.0
    m1.fc.weight.data += 1.0
    state = m1.state_dict()
    state["fc.bias"][:] = 99.0  # a copy: the model is untouched
    assert not np.any(m1.fc.bias.data == 99.0)
    m2.load_state_dict(m1.state_dict())
    for (n1, a), (n2, b) in zip(m1.state_dict().items(), m2.state_dict().items(), strict=True):
        assert n1 == n2 and np.array_equal(a, b)
    w = m2.fc.weight.data
    m2.load_state_dict(m1.state_dict())
    assert m2.fc.weight.data is w  # loaded in place, optimizers keep their references


def test_load_state_dict_errors():
    m = Block()
    state = m.state_dict()
    state.pop("scale")
    with pytest.raises(KeyError, match="scale"):
        m.load_state_dict(state)
    m.load_state_dict(state, strict=False)
    state = m.state_dict()
    state["fc.weight"] = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"fc\.weight"):
        m.load_state_dict(state)


def test_train_eval_recurse():
    m = Sequential(Block(), MLP([4, 3, 2]))
    m.eval()
    assert not any(sub.training for _, sub in m.named_modules())
    m.train()
    assert all(sub.training for _, sub in m.named_modules())


def test_zero_grad_and_forward_backward():
    m = Block()
    m(Tensor(np.ones((5, 3), np.float32))).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_forgetting_super_init_is_a_clear_error():
    class Broken(Module):
        def __init__(self):
            self.w = Parameter(np.ones(2))

    with pytest.raises(AttributeError, match="super"):
        Broken()
    with pytest.raises(NotImplementedError):
        Module()(1)
