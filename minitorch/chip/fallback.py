"""CPU fallback: an op the chip has no kernel for runs on the host, and is counted.

    with recording() as rep:
        model(x_on_chip)
    rep.fallbacks        # {"aten::polar": Fallback(count=2, to_cpu=..., to_chip=...)}
    print(rep.table())   # op, calls, bytes chip -> host, bytes host -> chip

A backend that covers only part of ATen still runs a whole model when the missing ops fall
back to the CPU: copy every chip operand to the host, call torch's CPU kernel, copy the
results back. It is correct and slow, and the cost is the copies, so a port keeps count of
which operators fell back, how often and what they moved, and its work list is the top of
that table (PyTorch's own MPS backend falls back this way when ``PYTORCH_ENABLE_MPS_FALLBACK``
is set, with a warning naming the operator). :class:`Report` records, per op,
the fallbacks, the bytes each way, the ops that ran on the chip, and the host tensors a chip
op had to upload (a CPU tensor created inside the model, such as a causal mask).

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_map

__all__ = ["Fallback", "NoKernel", "Report", "active", "recording", "run_on_cpu"]


@dataclass
class Fallback:
    """One op's fallbacks: how many calls, bytes copied to the host and back to the chip."""

    count: int = 0
    to_cpu: int = 0
    to_chip: int = 0

    @property
    def bytes(self) -> int:
        """Bytes across the link both ways."""
        return self.to_cpu + self.to_chip


@dataclass(eq=False)
class Report:
    """What a run did on the chip, what fell back, and what had to be uploaded."""

    on_chip: Counter[str] = field(default_factory=Counter)
    fallbacks: dict[str, Fallback] = field(default_factory=dict)
    host_inputs: Counter[str] = field(default_factory=Counter)  # op -> bytes uploaded
    forbid: bool = False  # raise instead of falling back (a coverage test)

    @property
    def n_fallbacks(self) -> int:
        """Fallback calls, every op together."""
        return sum(f.count for f in self.fallbacks.values())

    @property
    def fallback_bytes(self) -> int:
        """Bytes the fallbacks copied, both directions."""
        return sum(f.bytes for f in self.fallbacks.values())

    def ops(self) -> list[str]:
        """Every ATen op the run needed (on the chip or not), sorted."""
        return sorted(set(self.on_chip) | set(self.fallbacks))

    def table(self) -> str:
        """The fallback report, most bytes first."""
        rows = sorted(self.fallbacks.items(), key=lambda kv: (-kv[1].bytes, kv[0]))
        lines = [f"{'op':<36}{'calls':>6}{'to cpu B':>10}{'to chip B':>10}"]
        lines += [f"{k:<36}{f.count:>6}{f.to_cpu:>10}{f.to_chip:>10}" for k, f in rows]
        lines.append(
            f"{len(self.on_chip)} ops on the chip ({sum(self.on_chip.values())} calls), "
            f"{self.n_fallbacks} fallbacks, {self.fallback_bytes} bytes"
        )
        return "\n".join(lines)


_ACTIVE: list[Report] = []


def active() -> list[Report]:
    """The reports being recorded now (innermost last)."""
    return _ACTIVE


@contextlib.contextmanager
def recording(forbid: bool = False) -> Iterator[Report]:
    """Record every chip op, fallback and upload inside the block into a fresh report."""
    rep = Report(forbid=forbid)
    _ACTIVE.append(rep)
    try:
        yield rep
    finally:
        _ACTIVE.remove(rep)


class NoKernel(NotImplementedError):
    """The chip has no kernel for an op and fallback is forbidden in this block."""


def run_on_cpu(
    func: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    is_chip: Callable[[Any], bool],
    download: Callable[[Any], torch.Tensor],
    upload: Callable[[torch.Tensor], Any],
    write_back: Callable[[Any, torch.Tensor], None],
) -> Any:
    """Run ``func`` with torch's CPU kernel: chip operands copied down, results copied up.

    An argument the op's schema marks as written (``Tensor(a!)``: an in-place or ``out=`` op)
    is copied back into its chip buffer, and a result that is that argument is the chip tensor
    itself, so ``x.exp_()`` on the chip mutates ``x`` as it would on the CPU."""
    name = func.name()
    if any(r.forbid for r in _ACTIVE):
        raise NoKernel(f"{name} has no chip kernel (fallback forbidden here)")
    moved = {"down": 0, "up": 0}

    def down(x: Any) -> Any:
        if is_chip(x):
            host = download(x)
            moved["down"] += host.numel() * host.element_size()
            return host
        return x

    def up(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and not is_chip(x):
            moved["up"] += x.numel() * x.element_size()
            return upload(x)
        return x

    host_args, host_kwargs = tree_map(down, args), tree_map(down, kwargs)
    out = func(*host_args, **host_kwargs)
    pairs = []  # (chip tensor, its host copy) for every argument the op writes
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        chip_arg = args[i] if i < len(args) else kwargs.get(arg.name)
        host_arg = host_args[i] if i < len(args) else host_kwargs.get(arg.name)
        if is_chip(chip_arg):
            write_back(chip_arg, host_arg)
            moved["up"] += host_arg.numel() * host_arg.element_size()
            pairs.append((chip_arg, host_arg))

    def back(x: Any) -> Any:
        mine = next((c for c, h in pairs if x is h), None)
        return mine if mine is not None else up(x)

    result = tree_map(back, out)
    for rep in _ACTIVE:
        entry = rep.fallbacks.setdefault(name, Fallback())
        entry.count += 1
        entry.to_cpu += moved["down"]
        entry.to_chip += moved["up"]
    return result
