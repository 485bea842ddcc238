"""The chip as a platform plugin, found by entry point, and a small serving loop that picks it.

    available()                       # {"chip": EntryPoint(...), ...} from installed packages
    platform = load("chip")           # imports the entry point and builds the platform
    out, rep = serve(model, prompts, platform="chip", new_tokens=4)

A serving engine should not import every backend it might run on. Backends announce
themselves in their package metadata instead: an entry point in a named group (here
``a2s.platforms``, declared in this repository's ``pyproject.toml`` as
``chip = "minitorch.chip.plugin:ChipPlatform"``), which
``importlib.metadata.entry_points(group=...)`` lists for every installed distribution without
importing any of them. The engine loads the one the user names. vLLM finds its out-of-tree
platforms this way (the ``vllm.platform_plugins`` group) and torch its autoloaded device
extensions (``torch.backends``). :data:`BUILTIN` holds the CPU platform, always there.

:func:`serve` is greedy decoding without a KV cache: each step runs the model on the whole
context and appends the argmax of the last position; the chip's fallback report and link
counters of the run come back with the tokens.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import torch

from minitorch.chip import fallback
from minitorch.chip.device import Chip
from minitorch.chip.tensor import move_module, to_chip, to_cpu

__all__ = ["BUILTIN", "GROUP", "ChipPlatform", "CpuPlatform", "available", "load", "serve"]

GROUP = "a2s.platforms"


@dataclass
class CpuPlatform:
    """The host itself: tensors stay where they are."""

    name: str = "cpu"

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model ready to run on this platform."""
        return model

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        """An input tensor on this platform."""
        return t

    def host(self, t: torch.Tensor) -> torch.Tensor:
        """A result back on the host."""
        return t


@dataclass
class ChipPlatform:
    """The course chip: parameters and inputs uploaded, results downloaded, all counted."""

    name: str = "chip"
    chip: Chip = field(default_factory=lambda: Chip("chip-serve"))

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model's parameters and buffers moved onto the chip (in place)."""
        return move_module(model, self.chip)

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        """An input uploaded to the chip."""
        return to_chip(t, self.chip)

    def host(self, t: torch.Tensor) -> torch.Tensor:
        """A result downloaded from the chip."""
        return to_cpu(t)


BUILTIN: dict[str, type] = {"cpu": CpuPlatform}


def available(group: str = GROUP) -> dict[str, Any]:
    """The platforms installed packages declare in ``group`` (name -> entry point)."""
    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def load(name: str, group: str = GROUP) -> Any:
    """The platform called ``name``: a built-in one, else the entry point of that name."""
    if name in BUILTIN:
        return BUILTIN[name]()
    found = available(group)
    if name not in found:
        names = sorted(set(found) | set(BUILTIN))
        raise LookupError(f"no platform {name!r} in group {group!r}; installed: {names}")
    return found[name].load()()


@torch.no_grad()
def serve(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    platform: str = "chip",
    new_tokens: int = 4,
    group: str = GROUP,
) -> tuple[list[list[int]], fallback.Report]:
    """Greedy continuations of ``prompts`` on the named platform, and its op report."""
    plat = load(platform, group)
    model = plat.prepare(model)
    outs = []
    with fallback.recording() as rep:
        for prompt in prompts:
            seq = list(prompt)
            for _ in range(new_tokens):
                idx = plat.tensor(torch.tensor([seq], dtype=torch.int64))
                logits = plat.host(model(idx))
                seq.append(int(logits[0, -1].argmax()))
            outs.append(seq)
    return outs, rep
