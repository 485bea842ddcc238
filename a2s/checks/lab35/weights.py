"""Grader of exercise 35.4: a versioned weight sync from the trainer into the engine.

``WeightSync(engine, lora_only)`` is the learner's class, with ``push(params, version)`` (the
trainer's parameters, a dict name -> array, to be served as ``version``) and ``flush()`` (called
when a run of the engine has ended). ``engine`` is a handle whose every method is a request to
this process (the learner's object lives in a forked child, :func:`run_apart`): ``busy()``,
``load(name, array)`` (copies one parameter into the engine's own array, here; its bytes are
counted here) and ``set_version(v)``. The grader owns the engine's arrays and its version and
plays a script: pushes while the engine is idle, two pushes during a run, the run's end and a
flush, a flush with nothing held. After every step the engine must hold exactly the newest
weights it should serve, under the right version; nothing may change while the engine runs
(a rollout in flight would mix two policies); each sync moves each parameter once; with
``lora_only`` only the LoRA adapters move.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from a2s.checks.core import CheckFailure, fresh_rng, grader, guarded, plain
from a2s.checks.guard import handout
from a2s.checks.harness import request, run_apart

__all__ = ["check_weight_sync"]

BLOCKS = ("minitorch.rl.sync", "minitorch.rl.trainer", "minitorch.rl.actors")


def _is_adapter(name: str) -> bool:
    return ".lora_A" in name or ".lora_B" in name


@cache
def _names_and_shapes(lora: bool) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The engine's parameters: the tiny GPT's, with rank-4 adapters on every Linear (lora)."""
    from minitorch.model.checkpoint import load_pretrained
    from minitorch.model.lora import apply_lora

    model: Any = load_pretrained()
    if lora:
        model = apply_lora(model, r=4, alpha=8, rng=np.random.default_rng(0))
    return tuple((n, p.data.shape) for n, p in model.named_parameters())


@handout
class _Engine:
    """The handle the learner's class gets: each method asks the grader's process."""

    def busy(self) -> Any:
        return request("busy")

    def load(self, name: Any, array: Any) -> Any:
        return request("load", name, array)

    def set_version(self, version: Any) -> Any:
        return request("version", version)


def _drive(student: Callable[..., Any], lora_only: bool) -> int:
    """Child side: build the learner's object, then run each job the grader hands out."""
    sync = student(_Engine(), lora_only)
    jobs = 0
    while (job := request("next")) is not None:
        kind, args = job
        method = getattr(sync, kind, None)
        if not callable(method):
            raise CheckFailure(f"WeightSync has no method {kind}(): write push and flush.")
        guarded(method, "35.4", BLOCKS)(*args)
        jobs += 1
        request("done")
    return jobs


class _Side:
    """The grader's engine: its arrays, version, busy flag, the script and the record."""

    def __init__(self, lora_only: bool, seed: int) -> None:
        g = np.random.default_rng(seed)
        shapes = _names_and_shapes(lora_only)
        self.lora_only = lora_only
        self.arrays = {n: g.standard_normal(s).astype(np.float32) for n, s in shapes}
        self.version, self.running, self.moved, self.problem = 0, False, 0, ""
        self.step, self.label, self.open = 0, "", False
        base = copy.deepcopy(self.arrays)

        def params(v: int) -> dict[str, np.ndarray]:
            out = copy.deepcopy(base)
            for n, a in out.items():  # the trainer changed the trained parameters only
                if _is_adapter(n) or not lora_only:
                    a += np.float32(0.01 * v) * g.standard_normal(a.shape).astype(np.float32)
            return out

        self.params = {v: params(v) for v in range(1, 5)}
        moved = sum(a.nbytes for n, a in base.items() if _is_adapter(n) or not lora_only)
        # (label, busy during the job, job, the version served after it, bytes it moves)
        self.script: list[tuple[str, bool, tuple[str, tuple[Any, ...]], int, int]] = [
            ("push v1 while the engine is idle", False, ("push", (self.params[1], 1)), 1, moved),
            ("push v2 during a run", True, ("push", (self.params[2], 2)), 1, 0),
            ("push v3 during the same run", True, ("push", (self.params[3], 3)), 1, 0),
            ("flush after the run ended", False, ("flush", ()), 3, moved),
            ("flush with nothing held", False, ("flush", ()), 3, 0),
            ("push v4 while idle", False, ("push", (self.params[4], 4)), 4, moved),
        ]
        self.sync_bytes = moved

    def fail(self, text: str) -> None:
        self.problem = self.problem or f"[{self.label}] {text}"

    def next(self) -> Any:
        if self.open:
            self.fail("a new step began before the last one ended (only the grader asks).")
        if self.problem or self.step >= len(self.script):
            return None
        self.open = True
        self.label, self.running, job, _, _ = self.script[self.step]
        self.moved_before = self.moved
        return copy.deepcopy(job)

    def done(self) -> None:
        if not self.open:
            self.fail("a step ended that had not begun (only the grader asks).")
            return
        self.open = False
        _, _, _, version, moved = self.script[self.step]
        self.step += 1
        served = self.params.get(version)
        if self.problem:
            return
        if self.version != version:
            self.fail(
                f"the engine serves version {self.version}, expected {version}: a push while "
                "idle applies at once; a push during a run is held, only the newest, and "
                "applied by flush() once the run has ended."
            )
        elif served is not None and not all(
            np.array_equal(self.arrays[n], a) for n, a in served.items()
        ):
            self.fail(
                f"the engine's weights are not version {version}'s: load every parameter that "
                "changed (the trainer's arrays, by name) before set_version."
            )
        elif self.moved - self.moved_before > moved:
            self.fail(
                f"this step moved {self.moved - self.moved_before:,} bytes, more than the "
                f"{moved:,} needed (counted by the grader): "
                + (
                    "with lora_only only the adapters train, so load only the parameters "
                    "whose name contains .lora_A or .lora_B."
                    if self.lora_only and moved
                    else "apply only the newest held push, each parameter once."
                )
            )

    def busy(self) -> bool:
        return self.running

    def load(self, name: Any, array: Any) -> None:
        if self.running:
            self.fail(
                f"load({name!r}) while the engine runs: the rollouts in flight would mix two "
                "policies. Hold the push while engine.busy() and apply it in flush()."
            )
            return
        key = plain(name, what="load's name") if isinstance(name, str) else None
        if key not in self.arrays:
            self.fail(f"load(name, array): {name!r} is not a parameter of the engine.")
            return
        arr = np.asarray(plain(array, what="load's array"))
        if arr.shape != self.arrays[key].shape or arr.dtype.kind != "f":
            self.fail(
                f"load({key!r}, array): expected a float array of shape "
                f"{self.arrays[key].shape}, got {arr.dtype} {arr.shape}."
            )
            return
        np.copyto(self.arrays[key], arr, casting="same_kind")
        self.moved += int(arr.nbytes)

    def set_version(self, version: Any) -> None:
        if self.running:
            self.fail("set_version() while the engine runs: a run serves one version.")
            return
        self.version = int(plain(version, what="the version"))


@grader("35.4", blocks=BLOCKS, hand="object")
def check_weight_sync(WeightSync: Callable[..., Any]) -> str:
    """Exercise 35.4: WeightSync(engine, lora_only) with push(params, version), flush()."""
    seed = int(fresh_rng("35.4").integers(1 << 30))
    moved = {}
    for lora_only in (False, True):
        side = _Side(lora_only, seed + lora_only)
        serve: dict[str, Callable[..., Any]] = {"next": side.next, "done": side.done}
        serve |= {"busy": side.busy, "load": side.load, "version": side.set_version}
        run_apart(_drive, WeightSync, lora_only, serve=serve, timeout=30.0)
        if side.problem:
            raise CheckFailure(side.problem)
        if side.step < len(side.script):
            raise CheckFailure(f"the script stopped at step {side.step + 1} of 6.")
        moved[lora_only] = side.sync_bytes
    return (
        f"6 steps twice: no change during a run, newest push applied at flush; "
        f"{moved[False]:,} bytes per full sync, {moved[True]:,} with LoRA (counted here)"
    )
