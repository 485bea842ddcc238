"""Grader of exercise 23.2: DDP's gradient averaging, on the simulated world and on 2 gloo ranks.

The learner's ``ddp_sync(comm, grads, buckets)`` averages the gradients with one flat
all-reduce per bucket. The check trains a float64 tanh MLP for a few SGD steps, each rank on
its shard of the batch, and compares the weights with ONE process training on the whole
batch (a plain numpy forward/backward written here) to 1e-10. First on SimWorld (2-4 ranks,
each in its own forked process, :func:`a2s.checks.harness.run_ranks`: the message
count is the router's record in the grader's process), then once on 2 real gloo processes
(one spawn for the whole batch).
Budget: exactly one all-reduce per bucket (messages counted: lab 20's naive all-reduce
sends 2(p-1) messages per call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, guarded
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from a2s.checks.lab23.workers import REFERENCE, ddp_train, mlp_data, plain_buckets
from minitorch.comm.simworld import SimWorld

__all__ = ["check_ddp_sync", "single_process"]

_SUM = (
    "Your weights moved {p}x too far: you SUMMED the gradients. Each rank's loss is a mean over "
    "its shard, so the whole batch's gradient is the AVERAGE over ranks: divide by world_size."
)


_SOURCE = (
    "[2 gloo processes] Your function passed on the simulated world, but {why}. On a real rank "
    "it is defined from its own source text alone, with only np and lab 20's all_reduce, "
    "reduce_scatter and all_gather in scope: keep it self-contained (no helpers or globals "
    "from other cells)."
)


def single_process(case: dict[str, Any], scale: float = 1.0) -> list[np.ndarray]:
    """The ground truth: plain numpy training on the whole batch (``scale`` x the gradient)."""
    params, x, y = mlp_data(case)
    for _ in range(case["steps"]):
        acts = [x]
        for k in range(0, len(params), 2):
            z = acts[-1] @ params[k] + params[k + 1]
            acts.append(np.tanh(z) if k + 2 < len(params) else z)
        g = 2 * (acts[-1] - y) / y.size
        grads: list[np.ndarray] = [np.empty(0)] * len(params)
        for k in range(len(params) - 2, -1, -2):
            grads[k], grads[k + 1] = acts[k // 2].T @ g, g.sum(axis=0)
            g = g @ params[k].T
            if k:
                g = g * (1 - acts[k // 2] ** 2)
        params = [p - case["lr"] * scale * d for p, d in zip(params, grads, strict=True)]
    return params


def _cases(
    gen: np.random.Generator, count: int, mark: Callable[[str], str]
) -> list[dict[str, Any]]:
    out = []
    for _ in range(count):
        widths = [int(v) for v in gen.integers(2, 9, int(gen.integers(3, 5)))]
        p = int(gen.integers(2, 5))
        out.append(
            {
                "seed": int(gen.integers(0, 2**31)),
                "widths": widths,
                "batch": 4 * p,
                "steps": 3,
                "lr": 0.2,
                "bucket_bytes": int(gen.integers(8, 400)),
                "p": p,
                "label": mark(f"widths={widths}, p={p}"),
            }
        )
    return out


_TEACHING: list[dict[str, Any]] = [
    {
        "seed": 1,
        "widths": [3, 4, 2],
        "batch": 8,
        "steps": 3,
        "lr": 0.3,
        "bucket_bytes": 100,
        "p": 2,
    },
    {
        "seed": 2,
        "widths": [4, 8, 8, 3],
        "batch": 12,
        "steps": 3,
        "lr": 0.2,
        "bucket_bytes": 600,
        "p": 3,
    },
    {"seed": 3, "widths": [5, 6, 2], "batch": 16, "steps": 2, "lr": 0.2, "bucket_bytes": 1, "p": 4},
]


def _compare(case: dict, outs: list[dict], where: str) -> None:
    p = len(outs)
    want = single_process(case)
    for r, out in enumerate(outs):
        got = out["params"]
        if all(np.allclose(g, w, rtol=0, atol=1e-10) for g, w in zip(got, want, strict=True)):
            continue
        summed = single_process(case, scale=p)
        if all(np.allclose(g, w, rtol=0, atol=1e-10) for g, w in zip(got, summed, strict=True)):
            raise CheckFailure(f"[{case['label']}, {where}] rank {r}: " + _SUM.format(p=p))
        short = single_process(case, scale=1 / p)
        if all(np.allclose(g, w, rtol=0, atol=1e-10) for g, w in zip(got, short, strict=True)):
            raise CheckFailure(
                f"[{case['label']}, {where}] rank {r}: your weights moved {p}x too little: "
                "the gradients were divided by world_size twice (or before and after the "
                "all-reduce). Sum with one all-reduce, then divide once."
            )
        err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want, strict=True))
        raise CheckFailure(
            f"[{case['label']}, {where}] rank {r}: weights differ from one process on the whole "
            f"batch by {err:.2e} (tolerance 1e-10). Every rank must end with the same averaged "
            "gradient, in each parameter's shape and place."
        )
    params, _, _ = mlp_data(case)
    buckets = plain_buckets([q.nbytes for q in params], case["bucket_bytes"])
    want_msgs = [case["steps"] * len(buckets) * (p - 1 if r == 0 else 1) for r in range(p)]
    got_msgs = [out["messages"] for out in outs]
    if got_msgs != want_msgs:
        per_param = [case["steps"] * len(params) * (p - 1 if r == 0 else 1) for r in range(p)]
        if got_msgs == per_param:
            why = (
                f"that is one all-reduce per PARAMETER ({len(params)}). Concatenate each "
                "bucket's gradients into one flat array and all-reduce it once."
            )
        elif not any(got_msgs[1:]):
            why = (
                "no gradient went through comm. Move data only with the communicator you are "
                "given (lab 20's all_reduce on it); torch.distributed is not allowed."
            )
        elif sum(got_msgs) < sum(want_msgs):
            why = (
                "fewer than one all-reduce per bucket: you all-reduced several buckets (or the "
                "whole model) at once, which waits for the end of backward. All-reduce each "
                "bucket on its own, in the order given."
            )
        else:
            why = "Concatenate each bucket's gradients into one flat array and all-reduce it once."
        raise CheckFailure(
            f"[{case['label']}, {where}] right weights, but the ranks sent {got_msgs} messages "
            f"where one all-reduce per bucket ({len(buckets)} buckets x {case['steps']} steps, "
            f"lab 20's all_reduce) sends {want_msgs}: {why}"
        )


def _launch(raw: Callable[..., Any], gloo: list[dict[str, Any]]) -> list:
    """The learner's source on 2 gloo ranks, one launch; a rank's failure is the learner's."""
    import inspect
    import textwrap

    from a2s.checks.ranks import launch_learner

    try:
        source = textwrap.dedent(inspect.getsource(raw))
    except (OSError, TypeError):
        raise CheckFailure(_SOURCE.format(why="its source code cannot be read")) from None
    target = "a2s.checks.lab23.workers:ddp_gloo"
    return launch_learner(target, 2, source, raw.__name__, gloo, advice=_SOURCE)


@grader("23.2", blocks=REFERENCE, hand="ranks")
def check_ddp_sync(ddp_sync: Callable[..., Any], real: bool = True) -> str:
    """Exercise 23.2: averaged gradients, one all-reduce per bucket; SimWorld then gloo."""
    cases = [dict(c, label=f"widths={c['widths']}, p={c['p']}") for c in _TEACHING]
    cases += _cases(fresh_rng("23.2"), 3, fresh)
    raw = getattr(ddp_sync, "fn", ddp_sync)
    for case in cases:
        p = case["p"]
        try:  # each rank in its own process; the counts are the router's, in this process
            run = run_ranks(guarded(ddp_train, "23.2", REFERENCE), SimWorld(p), [(raw, case)] * p)
        except (StudentError, CheckFailure) as exc:
            exc.args = (f"[{case['label']}, simulated world] {exc}",)
            raise
        outs = [dict(o, messages=run.messages[r]) for r, o in enumerate(run.results)]
        _compare(case, outs, "simulated world")
    if not real:
        return f"{len(cases)} simulated trainings equal one process to 1e-10"
    gloo = [dict(c, p=2) for c in cases[:1] + cases[-1:]]
    runs = _launch(raw, gloo)
    for k, case in enumerate(gloo):
        _compare(case, [runs[0][k], runs[1][k]], "2 gloo processes")
    steps = sum(c["steps"] for c in cases + gloo)
    return (
        f"{len(cases)} simulated and {len(gloo)} real (2 gloo processes) trainings, {steps} "
        "steps, equal one process on the whole batch to 1e-10, one all-reduce per bucket"
    )
