"""Reverse-mode automatic differentiation: a scalar engine and a numpy-backed tensor engine.

    from minitorch.autograd import Tensor, Value, no_grad, gradcheck
    x = Tensor(np.random.randn(4, 3), requires_grad=True)
    (x.relu() @ w).sum().backward()

Every differentiable op is a function in an ``ops_*`` module; its backward is a rule in
``BACKWARD_RULES`` (op name -> rule), which a lab can swap with ``override_rule``.
``sum``, ``max`` and ``pow`` are reached as methods and operators (``x.sum()``, ``x ** y``)
or from their ops modules, so a star import never shadows the builtins.

Lab: 02_autograd_scalar, 03_autograd_tensor, 04_training_loop
"""

from minitorch.autograd.checkpoint import (
    backward_peak_bytes,
    checkpoint,
    checkpoint_sequential,
    tape_bytes,
)
from minitorch.autograd.engine import (
    BACKWARD_RULES,
    Node,
    backward_rule,
    enable_grad,
    is_grad_enabled,
    no_grad,
    override_rule,
    toposort,
    unbroadcast,
)
from minitorch.autograd.gradcheck import gradcheck, numerical_derivative, numerical_grad
from minitorch.autograd.ops_conv import avg_pool2d, col2im, conv2d, im2col, max_pool2d
from minitorch.autograd.ops_elementwise import (
    add,
    div,
    exp,
    gelu,
    log,
    mul,
    neg,
    relu,
    sigmoid,
    sub,
    tanh,
)
from minitorch.autograd.ops_loss import cross_entropy, dropout, log_softmax, softmax
from minitorch.autograd.ops_matmul import linear, matmul
from minitorch.autograd.ops_norm import batch_norm, layer_norm
from minitorch.autograd.ops_reduce import mean
from minitorch.autograd.ops_shape import (
    concat,
    flatten,
    getitem,
    permute,
    reshape,
    stack,
    transpose,
)
from minitorch.autograd.scalar import Value
from minitorch.autograd.tensor import Tensor, as_tensor, make

__all__ = [
    "BACKWARD_RULES",
    "Node",
    "Tensor",
    "Value",
    "add",
    "as_tensor",
    "avg_pool2d",
    "backward_peak_bytes",
    "backward_rule",
    "batch_norm",
    "checkpoint",
    "checkpoint_sequential",
    "col2im",
    "concat",
    "conv2d",
    "cross_entropy",
    "div",
    "dropout",
    "enable_grad",
    "exp",
    "flatten",
    "gelu",
    "getitem",
    "gradcheck",
    "im2col",
    "is_grad_enabled",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "make",
    "matmul",
    "max_pool2d",
    "mean",
    "mul",
    "neg",
    "no_grad",
    "numerical_derivative",
    "numerical_grad",
    "override_rule",
    "permute",
    "relu",
    "reshape",
    "sigmoid",
    "softmax",
    "stack",
    "sub",
    "tanh",
    "tape_bytes",
    "toposort",
    "transpose",
    "unbroadcast",
]
