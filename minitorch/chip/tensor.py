"""A torch tensor whose data lives on the chip: a wrapper subclass and ``__torch_dispatch__``.

    x = to_chip(torch.randn(4, 8))        # uploaded: the data is a chip buffer
    y = (x @ w_chip).relu()               # aten::mm, aten::relu run as numpy kernels on the chip
    y.cpu()                               # aten::_to_copy to the host: a counted download
    move_module(model)                    # every parameter and buffer onto the chip

``torch.Tensor._make_wrapper_subclass`` makes a tensor that has a shape, strides, a dtype and
``requires_grad`` but no storage of its own: the data is wherever the subclass keeps it, here
a :class:`~minitorch.chip.device.Storage` (a chip handle) and a numpy view into it. Every ATen
call with such a tensor among its arguments reaches :meth:`ChipTensor.__torch_dispatch__`
*below* autograd, so autograd records the graph and its backward formulas come back as more
ATen calls: one op table serves forward and backward. The dispatch looks the overload up in
:data:`~minitorch.chip.kernels.OPS`; a miss goes to
:func:`~minitorch.chip.fallback.run_on_cpu`. A plain CPU tensor met by a chip op (a mask made
inside the model) is uploaded and counted. This is the Python route to a new device; the C++
route registers kernels for the PrivateUse1 dispatch key (renamed for the device).

Lab: 31_pytorch_backend
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils._pytree import tree_map

from minitorch.chip import fallback
from minitorch.chip.device import Chip, Storage, default_chip
from minitorch.chip.kernels import INPLACE, OPS

__all__ = ["ChipTensor", "is_chip", "move_module", "to_chip", "to_cpu"]

_TO_NP = {
    torch.float16: np.float16,
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.int8: np.int8,
    torch.uint8: np.uint8,
    torch.int32: np.int32,
    torch.int64: np.int64,
    torch.bool: np.bool_,
    torch.complex64: np.complex64,
    torch.complex128: np.complex128,
}
_TO_TORCH = {np.dtype(v): k for k, v in _TO_NP.items()}
_DROP = ("layout", "device", "pin_memory", "memory_format", "non_blocking")
_BINARY = {"add", "sub", "rsub", "mul", "div", "pow", "maximum", "where", "masked_fill"}


class ChipTensor(torch.Tensor):
    """A tensor backed by a chip buffer (``storage``) seen through a numpy view (``array``)."""

    _chip_storage: Storage
    _chip_array: np.ndarray
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, storage: Storage, array: np.ndarray, requires_grad: bool = False) -> Any:
        item = array.itemsize
        strides = array.strides
        ok = all(s >= 0 and s % item == 0 for s in strides)
        t = torch.Tensor._make_wrapper_subclass(
            cls,
            array.shape,
            strides=tuple(s // item for s in strides) if ok else None,
            dtype=_TO_TORCH[array.dtype],
            device="cpu",
            requires_grad=requires_grad,
        )
        t._chip_storage, t._chip_array = storage, array
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        chip = self._chip_storage.chip.name
        return f"ChipTensor({chip}, shape={tuple(self.shape)}, dtype={self.dtype})"

    @property
    def chip(self) -> Chip:
        """The chip the data lives on."""
        return self._chip_storage.chip

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.name().removesuffix(".default")
        chip = _chip_of(args, kwargs)
        if name == "aten::_to_copy" and str(kwargs.get("device", "")) == "cpu":
            return to_cpu(args[0]).to(kwargs.get("dtype") or args[0].dtype)
        if name == "aten::_to_copy":
            kwargs = {"dtype": kwargs.get("dtype") or args[0].dtype}
            name, kernel = name, lambda x, dtype: x.astype(dtype)
        else:
            kernel = OPS.get(name)  # type: ignore[assignment]
        if kernel is None:
            return fallback.run_on_cpu(
                func, args, kwargs, is_chip, to_cpu, lambda t: to_chip(t, chip), _write_back
            )
        for rep in fallback.active():
            rep.on_chip[name] += 1
        temps: list[Storage] = []  # host operands uploaded for this call, freed after it
        arrays = tree_map(lambda x: _operand(x, chip, name, temps), args)
        kw = {k: _np_dtype(v) for k, v in kwargs.items() if k not in _DROP}
        out = kernel(*arrays, **kw)
        if name in INPLACE:
            return args[0]
        if not isinstance(out, (tuple, list)):
            out = _promote(np.asarray(out), name, args)
        return tree_map(lambda a: _wrap(a, chip, args), out)


def is_chip(x: Any) -> bool:
    """Whether ``x`` is a chip tensor."""
    return isinstance(x, ChipTensor)


def _write_back(t: ChipTensor, host: torch.Tensor) -> None:
    """A host result copied into the chip buffer of ``t`` (counted host -> chip)."""
    t._chip_array[...] = host.numpy()
    t.chip.h2d_bytes += host.numel() * host.element_size()
    t.chip.h2d_copies += 1


def _chip_of(args: Any, kwargs: Any) -> Chip:
    found: list[Chip] = []
    tree_map(lambda x: found.append(x.chip) if is_chip(x) else None, (args, kwargs))
    return found[0] if found else default_chip()


def _np_dtype(v: Any) -> Any:
    return _TO_NP[v] if isinstance(v, torch.dtype) else v


def _operand(x: Any, chip: Chip, name: str, temps: list[Storage]) -> Any:
    if is_chip(x):
        return x._chip_array
    if isinstance(x, torch.Tensor):  # a host tensor met by a chip op: upload it (counted)
        host = x.detach().numpy()
        temps.append(Storage(chip, chip.upload(host)))
        for rep in fallback.active():
            rep.host_inputs[name] += host.nbytes
        return temps[-1].array
    return x


def _promote(out: np.ndarray, name: str, args: Any) -> np.ndarray:
    """Cast a binary op's result to torch's promoted dtype (numpy's rules differ for ints)."""
    if name.split("::")[1].split(".")[0] not in _BINARY or out.dtype == np.bool_:
        return out
    metas = [
        torch.empty(tuple(a.shape), dtype=a.dtype, device="meta")
        if isinstance(a, torch.Tensor)
        else a
        for a in args
        if isinstance(a, (torch.Tensor, int, float, bool))
    ]
    want = torch.result_type(*metas[:2]) if len(metas) >= 2 else None
    return out.astype(_TO_NP[want]) if want in _TO_NP and _TO_NP[want] != out.dtype else out


def _wrap(a: Any, chip: Chip, args: Any) -> Any:
    """A kernel's result as a chip tensor: a view of an operand shares that operand's buffer."""
    if not isinstance(a, np.ndarray):
        return a
    owners: list[Storage] = []
    tree_map(
        lambda x: (
            owners.append(x._chip_storage)
            if is_chip(x) and np.may_share_memory(a, x._chip_array)
            else None
        ),
        args,
    )
    if owners:
        return ChipTensor(owners[0], a)
    handle = chip.adopt(a)
    return ChipTensor(Storage(chip, handle), chip.array(handle))


def to_chip(t: torch.Tensor, chip: Chip | None = None) -> ChipTensor:
    """Upload a CPU tensor (counted host -> chip); ``requires_grad`` kept, as a new leaf."""
    chip = chip or default_chip()
    handle = chip.upload(t.detach().cpu().numpy())
    return ChipTensor(Storage(chip, handle), chip.array(handle), t.requires_grad)


def to_cpu(t: Any) -> torch.Tensor:
    """Download a chip tensor to a fresh CPU tensor (counted chip -> host)."""
    if not is_chip(t):
        return t
    host = t.chip.download(t._chip_storage.handle, t._chip_array)
    return torch.from_numpy(host)


def move_module(module: torch.nn.Module, chip: Chip | None = None) -> torch.nn.Module:
    """Every parameter and buffer of ``module`` uploaded to the chip, in place."""
    for mod in module.modules():
        for key, p in list(mod._parameters.items()):
            if p is not None and not is_chip(p):
                mod._parameters[key] = torch.nn.Parameter(to_chip(p, chip), p.requires_grad)
        for key, b in list(mod._buffers.items()):
            if b is not None and not is_chip(b):
                mod._buffers[key] = to_chip(b, chip)
    return module
