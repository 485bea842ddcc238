"""Rank programs of the lab 25 checks (importable, so spawned gloo ranks can run them).

:func:`train_stage` builds the case's tiny GPT (float64, untied head), keeps this rank's
stage of :func:`minitorch.parallel.pipeline_stage.split_gpt`, and trains it for a few SGD
steps with the learner's ``pipeline_train_step(comm, stage, ops, inputs, targets)`` on the
simulated world, where each stage is its own forked process (``harness.run_ranks``: the
router's record of messages, bytes, dtypes and order is what the check reads; a view in
the child runs :func:`payload` on each send, for its teaching errors only).
:func:`train_gloo` does the same on real gloo ranks, each call of the learner's function in
a sealed forked child of the rank (``ranks.on_gloo_rank``: torch is a forbidden call; the
rank counts). :func:`single_process` is the ground truth: the whole
model trained on the whole batch in one process.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.ranks import LEARNER, on_gloo_rank
from minitorch.autograd import Tensor, cross_entropy
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT
from minitorch.parallel.pipeline_stage import split_gpt

__all__ = [
    "REFERENCE",
    "case_data",
    "op_events",
    "payload",
    "single_process",
    "stage_ops",
    "train_gloo",
    "train_stage",
]

REFERENCE = (
    "minitorch.parallel.pipeline_exec:pipeline_train_step",
    "minitorch.parallel.pipeline_exec:run_stage",
)


def payload(x: Any) -> Any:
    """``x`` if it is numbers a communicator can carry; a teaching TypeError otherwise."""
    if x is None:
        raise TypeError(
            "comm.send got None. Is it x.grad? A received activation gets a gradient only "
            "when it is wrapped as Tensor(x, requires_grad=True) before the stage runs on it."
        )
    if isinstance(x, Tensor):
        raise TypeError("comm.send got a Tensor: send its numpy array (out.data, x.grad).")
    if np.asarray(x).dtype.kind not in "biuf":
        raise TypeError(f"comm.send carries numeric numpy arrays, not {type(x).__name__}.")
    return x


def case_data(case: dict[str, Any]) -> tuple[GPT, np.ndarray, np.ndarray]:
    """The case's float64 GPT (one block per stage, untied head), token ids and targets."""
    cfg = GPTConfig(
        vocab_size=16,
        block_size=8,
        n_layer=case["p"],
        n_head=2,
        n_kv_head=2,
        d_model=16,
        tie_head=False,
    )
    gen = np.random.default_rng(case["seed"])
    x = gen.integers(0, 16, (case["batch"], 8))
    return GPT(cfg, seed=case["seed"], dtype=np.float64), x, np.roll(x, -1, axis=1)


def stage_ops(kind: str, p: int, m: int, s: int) -> list[tuple[str, int, int]]:
    """The grader's own GPipe or 1F1B op list of stage ``s``."""
    f = [("F", j, 0) for j in range(m)]
    b = [("B", j, 0) for j in range(m)]
    if kind == "gpipe":
        return f + b
    w = min(p - s - 1, m)
    ops = f[:w]
    for j in range(m - w):
        ops += [f[w + j], b[j]]
    return ops + b[m - w :]


def op_events(ops: list[tuple[str, int, int]], s: int, p: int) -> list[tuple[str, int]]:
    """The messages stage ``s`` sends and receives, in order, when it runs ``ops`` in order."""
    out: list[tuple[str, int]] = []
    for kind, _, _ in ops:
        if kind == "F":
            out += ([("R", s - 1)] if s > 0 else []) + ([("S", s + 1)] if s < p - 1 else [])
        else:
            out += ([("R", s + 1)] if s < p - 1 else []) + ([("S", s - 1)] if s > 0 else [])
    return out


def _sgd(params: list[Any], lr: float) -> None:
    for t in params:
        t.data = t.data - lr * t.grad
        t.grad = None


def single_process(case: dict[str, Any], scale: float = 1.0) -> tuple[list[np.ndarray], list]:
    """Ground truth: the whole model, the whole batch, ``case["steps"]`` SGD steps."""
    model, x, y = case_data(case)
    params = list(model.parameters())
    losses = []
    for _ in range(case["steps"]):
        loss = cross_entropy(model(x), y) * scale
        loss.backward()
        losses.append(float(loss.data) / scale)
        _sgd(params, case["lr"])
    return [np.array(t.data) for t in params], losses


def _checked(comm: Any) -> Any:
    """The rank's communicator with :func:`payload`'s teaching errors on every send (the
    router counts; this view only explains a None or a Tensor sent)."""

    class View:
        __slots__ = ()
        rank = property(lambda self: comm.rank)
        world_size = property(lambda self: comm.world_size)

        def send(self, x: Any, dst: int, tag: int = 0) -> None:
            comm.send(payload(x), dst, tag)

        def isend(self, x: Any, dst: int, tag: int = 0) -> Any:
            return comm.isend(payload(x), dst, tag)

        def recv(self, src: int, tag: int = 0) -> Any:
            return comm.recv(src, tag)

        def irecv(self, src: int, tag: int = 0) -> Any:
            return comm.irecv(src, tag)

        def barrier(self) -> None:
            comm.barrier()

        def __repr__(self) -> str:
            return f"<Communicator rank {comm.rank} of {comm.world_size}>"

    return View()


def train_stage(comm: Any, fn: Callable[..., Any], case: dict[str, Any]) -> dict[str, Any]:
    """This rank's stage trained with the learner's step; its weights, losses and counts."""
    model, x, y = case_data(case)
    stage = split_gpt(model, comm.world_size)[comm.rank]
    m = case["m"]
    inputs, targets = np.split(x, m), np.split(y, m)
    ops = stage_ops(case["schedule"], comm.world_size, m, comm.rank)
    params = list(stage.parameters())
    losses = []
    view = _checked(comm)
    for _ in range(case["steps"]):
        losses.append(fn(view, stage, list(ops), list(inputs), list(targets)))
        missing = [i for i, t in enumerate(params) if t.grad is None]
        if missing:
            return {"error": f"stage {comm.rank}: {len(missing)} parameters got no gradient"}
        _sgd(params, case["lr"])
    return {
        "params": [np.array(t.data) for t in params],
        "losses": losses,
    }


def _maker(source: str, name: str) -> Callable[[], Callable[..., Any]]:
    """The learner's ``name`` (compiled here as the learner's, defined only in the sealed
    child, with np, numpy, Tensor and cross_entropy in scope), wrapped so that the child
    returns what the rank process needs back: the loss and every parameter's gradient."""
    code = compile(source, f"{LEARNER}{name}>", "exec")

    def make() -> Callable[..., Any]:
        module = types.ModuleType("__a2s_rank__")
        module.__dict__.update(np=np, numpy=np, Tensor=Tensor, cross_entropy=cross_entropy)
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)
        fn = module.__dict__[name]

        def step(comm: Any, stage: Any, ops: list, inputs: list, targets: list) -> Any:
            loss = fn(comm, stage, ops, inputs, targets)
            grads = [None if t.grad is None else np.array(t.grad) for t in stage.parameters()]
            return loss, grads

        return step

    return make


def train_gloo(comm: Any, source: str, name: str, cases: list[dict[str, Any]]) -> list:
    """On a gloo rank: every case's steps, each call of the learner's ``name`` in a sealed
    forked child of this rank (:func:`~a2s.checks.ranks.on_gloo_rank`: torch is a
    forbidden call there); the messages, bytes, dtypes and order are this rank's count."""
    make = _maker(source, name)
    out: list[dict[str, Any]] = []
    for case in cases:
        model, x, y = case_data(case)
        stage = split_gpt(model, comm.world_size)[comm.rank]
        m = case["m"]
        inputs, targets = np.split(x, m), np.split(y, m)
        ops = stage_ops(case["schedule"], comm.world_size, m, comm.rank)
        params = list(stage.parameters())
        rec: dict[str, Any] = {
            "losses": [],
            "messages": 0,
            "bytes": 0,
            "dtypes": set(),
            "events": [],
        }
        comm.barrier()
        for _ in range(case["steps"]):
            (loss, grads), log = on_gloo_rank(
                comm,
                make,
                stage,
                list(ops),
                list(inputs),
                list(targets),
                exercise="25.5",
                blocks=REFERENCE,
                payload=payload,
            )
            comm.flush()
            rec["losses"].append(loss)
            for key in ("messages", "bytes"):
                rec[key] += log[key]
            rec["dtypes"] |= set(log["dtypes"])
            rec["events"] += log["events"]
            if any(g is None for g in grads):
                rec["error"] = f"stage {comm.rank}: {sum(g is None for g in grads)} parameters got "
                rec["error"] += "no gradient"
                break
            for t, g in zip(params, grads, strict=True):
                t.grad = np.asarray(g)
            _sgd(params, case["lr"])
        rec["params"] = [np.array(t.data) for t in params]
        rec["dtypes"] = sorted(rec["dtypes"])
        out.append(rec)
    return out
