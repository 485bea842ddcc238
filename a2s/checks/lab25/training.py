"""Grader of exercise 25.5: one pipeline training step of the tiny GPT, on 2 real processes.

The learner's ``pipeline_train_step(comm, stage, ops, inputs, targets)`` runs this rank's
ops: a forward receives the previous stage's activation (stage 0 reads its token ids),
stashes what backward needs and sends its output on (the last stage computes the
microbatch's loss divided by m); a backward receives the gradient of its output, runs the
stage's backward and sends the gradient of its input back. The check trains the float64
GPT (one block per stage, untied head) for a few SGD steps under GPipe and 1F1B, on
SimWorld (2-3 stages, each in its own forked process: messages, bytes, dtypes and the
order of sends and receives are the router's record in the grader's process) and then once
on 2 gloo processes, and compares every weight and loss
with ONE process training the whole model on the whole batch, to 1e-10.
Budget: exactly one message per microbatch per stage boundary and direction, holding the
activation (or its gradient) and nothing else (bytes counted), sent and received in the
order of the stage's ops (a step that ignores the schedule fails). The learner's function
gets the Communicator protocol only (:func:`~a2s.checks.lab25.workers.protocol_only`);
on the gloo ranks torch.distributed's own calls raise while it runs.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, guarded
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from a2s.checks.lab25.workers import (
    REFERENCE,
    op_events,
    single_process,
    stage_ops,
    train_stage,
)
from minitorch.comm.simworld import SimWorld

__all__ = ["check_pipeline_train"]

_GLOO = (
    "[2 gloo processes] Your function passed on the simulated world, but {why}. On a rank it "
    "is defined from its own source text in a fresh process where only np, numpy, Tensor and "
    "cross_entropy are defined (keep it self-contained: imports and helpers inside the "
    "function), and it may not call torch."
)

_TEACHING: list[dict[str, Any]] = [
    {"seed": 1, "p": 2, "m": 4, "batch": 4, "schedule": "1f1b", "steps": 2, "lr": 0.5},
    {"seed": 2, "p": 2, "m": 2, "batch": 4, "schedule": "gpipe", "steps": 2, "lr": 0.5},
    {"seed": 3, "p": 3, "m": 3, "batch": 6, "schedule": "1f1b", "steps": 2, "lr": 0.5},
]


def _label(c: dict[str, Any]) -> str:
    return f"{c['schedule']}, p={c['p']}, m={c['m']}, batch={c['batch']}"


def _is_float(v: Any) -> bool:
    """A plain float, numpy float scalar or 0-d float array (not a subclass that compares)."""
    if type(v) is float or (isinstance(v, np.floating) and type(v).__module__ == "numpy"):
        return True
    return type(v) is np.ndarray and v.shape == () and v.dtype.kind == "f"


def _relabel(exc: StudentError, where: str) -> StudentError:
    """The student's exception, labelled with the case it ran on (the call has no arguments)."""
    out = StudentError(f"[{where}] " + str(exc).replace(" (called with )", ""))
    out.__cause__ = exc.__cause__
    return out


def _order(case: dict[str, Any], outs: list[dict], label: str) -> None:
    """Each stage's sends and receives must come in the order of its op list."""
    p = case["p"]
    for s, out in enumerate(outs):
        ops = stage_ops(case["schedule"], p, case["m"], s)
        want = op_events(ops, s, p) * case["steps"]
        got = [tuple(e) for e in out.get("events", want)]
        if got == want:
            continue
        k = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), None)
        if k is None:  # one list is a prefix of the other: the message count check says more
            continue
        said = {"S": "a send to", "R": "a receive from"}
        raise CheckFailure(
            f"[{label}] right weights, but stage {s} did not run its ops in order: its message "
            f"{k + 1} was {said[got[k][0]]} stage {got[k][1]}, where running its op list "
            f"({' '.join(f'{o[0]}{o[1]}' for o in ops)}) in order gives {said[want[k][0]]} "
            f"stage {want[k][1]}. The order IS the schedule: doing every forward first is "
            "GPipe, holding m microbatches' activations instead of 1F1B's p - s."
        )


def _compare(case: dict[str, Any], outs: list[dict], where: str) -> None:
    label = f"{case['label']}, {where}"
    for out in outs:
        if "error" in out:
            raise CheckFailure(f"[{label}] {out['error']}: every stage must run its backwards.")
    got = [a for out in outs for a in out["params"]]
    want, losses = single_process(case)
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=False)):
        raise CheckFailure(f"[{label}] the stages' parameters changed shape.")
    err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want, strict=True))
    if err > 1e-10:
        m = case["m"]
        narrow = sorted({d for out in outs for d in out.get("dtypes", ())} - {"float64"})
        if narrow:
            raise CheckFailure(
                f"[{label}] weights differ from one process by {err:.2e} (tolerance 1e-10), "
                f"and the stages sent {', '.join(narrow)} arrays: send the float64 activations "
                "and gradients as they are (out.data, x.grad), without casting them."
            )
        scaled, _ = single_process(case, scale=m)
        if all(np.allclose(g, w, rtol=0, atol=1e-10) for g, w in zip(got, scaled, strict=True)):
            raise CheckFailure(
                f"[{label}] the weights moved {m}x too far: each microbatch's loss is a mean "
                f"over its own rows, so the batch's loss is their MEAN: divide each by m={m}."
            )
        raise CheckFailure(
            f"[{label}] weights differ from one process on the whole batch by {err:.2e} "
            "(tolerance 1e-10). A received activation must be a leaf that requires grad, the "
            "backward must be seeded with the received gradient of the stage's OUTPUT, and "
            "what goes back is the gradient of the stage's INPUT."
        )
    last = outs[-1]["losses"]
    if any(
        not _is_float(v) or abs(float(v) - w) > 1e-10 for v, w in zip(last, losses, strict=True)
    ):
        raise CheckFailure(
            f"[{label}] right weights, but the last stage returned losses {last}, want "
            f"{[round(v, 6) for v in losses]}: the sum of the microbatches' loss / m."
        )
    p, m = case["p"], case["m"]
    act = case["batch"] // m * 8 * 16 * 8  # one microbatch's (b, T, C) float64 activation
    for r, out in enumerate(outs):
        links = (r > 0) + (r < p - 1)
        msgs, nbytes = case["steps"] * m * links, case["steps"] * m * links * act
        if (out["messages"], out["bytes"]) != (msgs, nbytes):
            raise CheckFailure(
                f"[{label}] right weights, but stage {r} sent {out['messages']} messages, "
                f"{out['bytes']:,} bytes; the budget is one message per microbatch per "
                f"neighbour and step: {msgs} messages of one activation or gradient, "
                f"{nbytes:,} bytes. Send only the arrays the next (or previous) stage needs."
            )
    _order(case, outs, label)


@grader("25.5", blocks=REFERENCE, hand="ranks")
def check_pipeline_train(pipeline_train_step: Callable[..., Any], real: bool = True) -> str:
    """Exercise 25.5: pipelined training equals one process; SimWorld, then 2 gloo ranks."""
    cases = [dict(c, label=_label(c)) for c in _TEACHING]
    gen = fresh_rng("25.5")
    m = int(gen.choice([2, 4]))
    c = {
        "seed": int(gen.integers(0, 2**31)),
        "p": 2,
        "m": m,
        "batch": 2 * m,
        "steps": 2,
        "schedule": str(gen.choice(["gpipe", "1f1b"])),
        "lr": 0.5,
    }
    cases.append(dict(c, label=fresh(_label(c))))
    raw = getattr(pipeline_train_step, "fn", pipeline_train_step)

    for case in cases:
        p, where = case["p"], f"{case['label']}, simulated world"
        try:  # each stage in its own process; messages, bytes and order are the router's
            run = run_ranks(guarded(train_stage, "25.5", REFERENCE), SimWorld(p), [(raw, case)] * p)
        except StudentError as exc:
            raise _relabel(exc, where) from exc.__cause__
        except CheckFailure as exc:
            if not str(exc).startswith("deadlock"):
                exc.args = (f"[{where}] {exc}",)
                raise
            raise CheckFailure(
                f"[{where}] the stages deadlock ({exc}) A recv waits for a message nobody "
                "sends: sender and receiver must compute the same tag for the same message "
                "(say 2j forward, 2j + 1 backward)."
            ) from None
        outs = [
            dict(
                o,
                messages=run.messages[r],
                bytes=run.bytes[r],
                dtypes=sorted(run.dtypes[r]),
                events=run.events[r],
            )
            for r, o in enumerate(run.results)
        ]
        _compare(case, outs, "simulated world")
    if not real:
        return f"{len(cases)} simulated pipelined trainings equal one process to 1e-10"
    gloo = [cases[0], cases[-1]]
    try:
        source = textwrap.dedent(inspect.getsource(raw))
    except (OSError, TypeError):
        raise CheckFailure(
            "[2 gloo processes] the check sends your function's source text to the ranks: "
            "define pipeline_train_step with a plain `def` in a notebook cell."
        ) from None
    from a2s.checks.ranks import launch_learner

    runs = launch_learner(
        "a2s.checks.lab25.workers:train_gloo",
        2,
        source,
        raw.__name__,
        gloo,
        advice=_GLOO,
        timeout=120.0,
    )
    for k, case in enumerate(gloo):
        _compare(case, [runs[0][k], runs[1][k]], "2 gloo processes")
    steps = sum(c["steps"] for c in cases + gloo)
    return (
        f"{len(cases)} simulated and {len(gloo)} real (2 gloo processes) pipelined trainings "
        f"of the tiny GPT, {steps} steps, equal one process to 1e-10; one message per "
        "microbatch per boundary"
    )
