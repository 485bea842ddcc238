"""Weight synchronisation: after each update the engine must serve the trainer's new weights.

    moved = sync_in_place(trainer_model, engine.model)       # copy into the engine's arrays
    engine, moved = reload(trainer_model, temperature=2.0)   # or rebuild the engine from bytes
    moved = sync_in_place(trainer_model, engine.model, lora_only=True)   # adapters only

In place: every parameter is copied into the array the engine already holds (``np.copyto``),
so the engine's KV cache, block tables and scheduler survive and nothing is reallocated; the
bytes moved are the parameters' bytes. Reload: the weights are serialised (a checkpoint in
memory, ``.npz``), a new model and a new engine are built from them: more bytes (the file),
and everything the engine had (its cache, its allocations) is thrown away and built again.
With LoRA (lab 12) only the adapters train, so only they need to move: r (d_in + d_out)
numbers per adapted layer instead of the whole model (S-LoRA-style serving keeps the base).

Versions: :class:`VersionedSync` stamps the engine with the policy version it serves and
never changes the weights while the engine is running (``engine.busy``): a push that arrives
mid-run is held and applied when the run ends, so every token of a rollout comes from one
policy. :func:`unsafe_push_at_step` does the wrong thing on purpose (an update applied between
two engine steps): the rollouts then mix versions, and :attr:`Rollout.version` raises.

Lab: 35_rl_systems
Paper: Sheng et al. 2024, "HybridFlow" (arXiv:2409.19256; weights moved between the trainer
and the generation engine); Hu et al. 2021 (LoRA); Sheng et al. 2023, "S-LoRA"
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np

from minitorch.model.gpt import GPT
from minitorch.nn import Module
from minitorch.rl.rollout import RolloutEngine

__all__ = [
    "VersionedSync",
    "param_bytes",
    "reload",
    "sync_in_place",
    "unsafe_push_at_step",
]


def _selected(model: Module, lora_only: bool) -> dict[str, np.ndarray]:
    return {
        name: p.data
        for name, p in model.named_parameters()
        if not lora_only or ".lora_A" in name or ".lora_B" in name
    }


def param_bytes(model: Module, lora_only: bool = False) -> int:
    """Bytes a sync moves: every parameter, or the LoRA adapters only."""
    return sum(a.nbytes for a in _selected(model, lora_only).values())


def sync_in_place(src: Module, dst: Module, lora_only: bool = False) -> int:
    """Copy ``src``'s parameters into ``dst``'s own arrays; returns the bytes moved."""
    s, d = _selected(src, lora_only), _selected(dst, lora_only)
    if s.keys() != d.keys():
        raise KeyError(f"parameters differ: {sorted(s.keys() ^ d.keys())[:4]}")
    if not s:
        raise ValueError("nothing to sync (lora_only on a model without adapters?)")
    for name, value in s.items():
        if value.shape != d[name].shape:
            raise ValueError(f"{name}: shape {value.shape} != {d[name].shape}")
        np.copyto(d[name], value)
    return sum(v.nbytes for v in s.values())


def reload(src: GPT, **engine_kw: object) -> tuple[RolloutEngine, int]:
    """A new engine built from ``src``'s weights serialised to bytes; (engine, bytes)."""
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **src.state_dict())
    data = buf.getvalue()
    model = GPT(src.config, seed=0)
    with np.load(io.BytesIO(data)) as f:
        model.load_state_dict({k: f[k] for k in f.files})
    return RolloutEngine(model, **engine_kw), len(data)  # type: ignore[arg-type]


@dataclass
class VersionedSync:
    """Pushes trainer weights into an engine between runs, never during one."""

    engine: RolloutEngine
    lora_only: bool = False
    pushes: int = 0
    deferred: int = 0
    bytes_moved: list[int] = field(default_factory=list)
    _pending: tuple[Module, int] | None = None

    def push(self, src: Module, version: int) -> bool:
        """Serve ``version`` (``src``'s weights) next; True if applied now, False if held."""
        if version <= self.engine.version:
            raise ValueError(f"version {version} is not newer than {self.engine.version}")
        if self.engine.busy:
            self._pending = (src, version)
            self.deferred += 1
            return False
        self._apply(src, version)
        return True

    def flush(self) -> None:
        """Apply a held push (call when the engine's run has ended)."""
        if self._pending is not None and not self.engine.busy:
            src, version = self._pending
            self._pending = None
            self._apply(src, version)

    def _apply(self, src: Module, version: int) -> None:
        assert self.engine.model is not None
        self.bytes_moved.append(sync_in_place(src, self.engine.model, self.lora_only))
        self.engine.version = version
        self.pushes += 1


def unsafe_push_at_step(engine: RolloutEngine, src: Module, step: int, version: int) -> None:
    """The bug on purpose: overwrite the engine's weights before its ``step``-th forward of
    the next run, whatever is in flight (tokens after it come from another policy)."""
    start = engine.steps_run

    def hook(e: RolloutEngine) -> None:
        if e.steps_run - start == step:
            assert e.model is not None
            sync_in_place(src, e.model)
            e.version = version

    engine.on_step = hook
