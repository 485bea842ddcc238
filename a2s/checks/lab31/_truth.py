"""Ground truth of lab 31, written apart from ``minitorch.chip``.

* the ATen kernels of 31.1: torch's own CPU kernels, called here by the grader (the learner's
  kernel runs with torch forbidden; the truth is what the CPU backend computes);
* the grader's end of the host link of 31.2 (:class:`Link`): chip buffers behind opaque
  handles, every byte across the link counted in the grader's own record;
* the conv-BatchNorm fold of 31.3 in closed form, and the two-kernel original it must equal;
* the MLP of 31.4 as plain numpy.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = [
    "AtenNode",
    "ChipLink",
    "Handle",
    "Link",
    "LowerKit",
    "Record",
    "Ref",
    "conv_bn",
    "conv_of",
    "fold",
    "kernels_per_call",
    "launch_budget",
    "mlp",
    "run_graph",
    "torch_kernel",
]

_SERIAL = itertools.count(1)  # handle ids of this process: a counter, never a list


# ----------------------------------------------------------------------------- 31.1
def _t(x: Any) -> Any:
    return torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x


def torch_kernel(name: str, *args: Any) -> Any:
    """What CPU torch's ATen kernel ``name`` returns on numpy operands (as numpy)."""
    aten = torch.ops.aten
    op = {
        "mm": aten.mm.default,
        "addmm": aten.addmm.default,
        "softmax": aten._softmax.default,
        "softmax_backward": aten._softmax_backward_data.default,
        "layer_norm": aten.native_layer_norm.default,
        "embedding": aten.embedding.default,
    }[name]
    if name == "addmm":
        c, a, b, beta, alpha = args
        out = op(_t(c), _t(a), _t(b), beta=beta, alpha=alpha)
    elif name == "softmax_backward":
        g, y, dim = args
        out = op(_t(g), _t(y), dim, torch.float32)
    else:
        out = op(*[_t(a) for a in args])
    if isinstance(out, tuple):
        return tuple(o.numpy() for o in out)
    return out.numpy()


# ----------------------------------------------------------------------------- 31.2
class Handle:
    """A chip buffer as the learner's fallback sees it: an opaque name, no data."""

    __slots__ = ("_id", "dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._id = next(_SERIAL)
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def __repr__(self) -> str:
        return f"Handle(#{self._id}, shape={self.shape}, dtype={self.dtype})"


@dataclass
class Record:
    """The grader's count of one run: link traffic each way, per call."""

    down_bytes: int = 0
    up_bytes: int = 0
    downloads: int = 0
    uploads: int = 0
    calls: int = 0
    per_call: list[tuple[str, int, int]] = field(default_factory=list)  # op, down, up

    @property
    def bytes(self) -> int:
        return self.down_bytes + self.up_bytes


class Link:
    """The grader's chip memory and host link; the learner's child sends it requests."""

    def __init__(self) -> None:
        self.buffers: dict[int, np.ndarray] = {}
        self.handles: dict[int, Handle] = {}
        self.record = Record()

    def put(self, array: np.ndarray) -> Handle:
        """A buffer placed on the chip by the grader (not counted: it was already there)."""
        data = np.array(array, copy=True, order="C")
        h = Handle(data.shape, data.dtype)
        self.buffers[h._id], self.handles[h._id] = data, h
        return h

    def get(self, h: Any) -> np.ndarray:
        """The grader's read of a chip buffer (not counted)."""
        if not isinstance(h, Handle) or h._id not in self.buffers:
            raise TypeError(f"{h!r} is not a chip buffer")
        return self.buffers[h._id]

    def download(self, h: Any) -> np.ndarray:
        data = np.array(self.get(h), copy=True)
        self.record.down_bytes += data.nbytes
        self.record.downloads += 1
        return data

    def upload(self, host: Any) -> Handle:
        if isinstance(host, torch.Tensor):
            host = host.detach().contiguous().numpy()
        if not isinstance(host, np.ndarray):
            raise TypeError(
                f"upload takes a numpy array or a CPU tensor, got {type(host).__name__}"
            )
        h = self.put(host)
        self.record.up_bytes += h.dtype.itemsize * int(np.prod(h.shape))
        self.record.uploads += 1
        return h

    def serve(self) -> dict[str, Any]:
        """The requests the learner's child may send: a download by id, an upload (its id)."""
        return {
            "link.download": lambda i: self.download(self.handles.get(i)),
            "link.upload": lambda host: self.upload(host)._id,
        }


class ChipLink:
    """The host link: ``download(handle)``, ``upload(array)``, ``is_chip(x)``.

    Held in the learner's forked child: each method only sends a request to the grader's
    :class:`Link`, which holds the buffers and counts every byte in its own process.
    """

    __slots__ = ()

    def download(self, handle: Any) -> np.ndarray:
        """A host copy of a chip buffer (a numpy array), counted chip -> host."""
        from a2s.checks.harness import request

        if type(handle) is not Handle:
            raise TypeError(f"{handle!r} is not a chip buffer")
        return np.array(request("link.download", handle._id), copy=True)

    def upload(self, host: Any) -> Handle:
        """A numpy array (or CPU tensor) copied to a new chip buffer; its handle."""
        from a2s.checks.harness import request

        if isinstance(host, torch.Tensor):
            host = host.detach().contiguous().numpy()
        if type(host) is not np.ndarray:
            raise TypeError(
                f"upload takes a numpy array or a CPU tensor, got {type(host).__name__}"
            )
        h = Handle.__new__(Handle)
        h._id = int(request("link.upload", np.ascontiguousarray(host)))
        h.shape, h.dtype = tuple(host.shape), np.dtype(host.dtype)
        return h

    def is_chip(self, x: Any) -> bool:
        """Whether ``x`` is a chip buffer's handle."""
        return isinstance(x, Handle)

    def __repr__(self) -> str:
        return "<ChipLink: requests to the grader's host link>"


# ----------------------------------------------------------------------------- 31.3
def fold(
    w: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    eps: float,
) -> tuple[np.ndarray, np.ndarray]:
    """W' = W s, b' = (b - mu) s + beta with s = gamma / sqrt(var + eps), per out channel."""
    w64, s = w.astype(np.float64), gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    w2 = w64 * s.reshape(-1, *([1] * (w.ndim - 1)))
    b2 = (b.astype(np.float64) - mean) * s + beta
    return w2.astype(w.dtype), b2.astype(w.dtype)


def conv_of(x: np.ndarray, w: np.ndarray, b: np.ndarray, padding: int) -> np.ndarray:
    """One convolution as torch's CPU kernel computes it (the grader's run of the CNN)."""
    return torch.nn.functional.conv2d(_t(x), _t(w), _t(b), padding=padding).numpy()


def conv_bn(x: np.ndarray, params: Sequence[Any], padding: int) -> np.ndarray:
    """The unfolded pair: convolution, then inference BatchNorm with frozen statistics."""
    w, b, mean, var, gamma, beta, eps = params
    z = _t(conv_of(x, w, b, padding))
    out = torch.nn.functional.batch_norm(
        z, _t(mean), _t(var), _t(gamma), _t(beta), training=False, eps=eps
    )
    return out.numpy()


# ----------------------------------------------------------------------------- 31.4
def mlp(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> Any:
    """relu(x W1^T + b1) W2^T + b2, weights as (out, in) like ``torch.nn.Linear``."""
    h = x.astype(np.float64) @ w1.T.astype(np.float64) + b1
    return (np.maximum(h, 0) @ w2.T.astype(np.float64) + b2).astype(np.float32)


# ----------------------------------------------------------------------------- 31.5
@dataclass(frozen=True)
class Ref:
    """An argument that is the value of an earlier node (by its name)."""

    name: str


@dataclass(frozen=True)
class AtenNode:
    """One node of the ATen graph as the learner's lowering sees it (plain values only)."""

    name: str
    op: str  # placeholder, constant, call, output
    target: str  # "aten::addmm" for a call ("" otherwise)
    args: tuple[Any, ...]  # earlier nodes as Ref; the output node's args are its values
    kwargs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str
    value: np.ndarray | None = None  # a constant's (a frozen weight's) value


class LowerKit:
    """What 31.5 hands out: the IR of lab 13 and the passes and fusion of lab 14."""

    Ref = Ref

    def graph(self) -> Any:
        """A new, empty course IR graph (``placeholder``, ``constant``, ``op``, ``outputs``)."""
        from minitorch.compiler.ir import Graph

        return Graph()

    def optimize(self, graph: Any) -> Any:
        """Constant folding, simplification, CSE and DCE run to a fixed point."""
        from minitorch.compiler.passes import PassManager, cse, dce, fold_constants, simplify

        return PassManager([fold_constants, simplify, cse, dce]).run(graph)[0]

    def fuse(self, graph: Any) -> Any:
        """Elementwise chains and matmul epilogues fused into one kernel each."""
        from minitorch.compiler import fusion

        return fusion.fuse(graph)

    def __repr__(self) -> str:
        return "<LowerKit: graph(), optimize(graph), fuse(graph), Ref>"


def kernels_per_call(graph: Any) -> int:
    """31.5: a lowered graph's launches per call: every node but inputs and constants."""
    return sum(n.op not in ("placeholder", "constant") for n in graph.nodes)


def launch_budget(gm: Any, example: list[Any]) -> int:
    """31.5's budget: the launches of the reference pipeline (lower, optimize, fuse)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from minitorch.chip.compile_backend import _frozen, optimize
    from minitorch.chip.lower import lower

    with torch._guards.tracing(None):
        aten = make_fx(gm, tracing_mode="fake")(*example)
    return int(optimize(lower(aten, _frozen(gm, example))[0])[2].kernels_after)


def run_graph(graph: Any, ins: list[np.ndarray]) -> list[np.ndarray]:
    """31.5: the grader's interpreter on a rebuilt graph (fusion registers the fused op)."""
    from minitorch.compiler import fusion, interp

    return interp.run(graph, *ins) if fusion else []
