"""Grader of exercise 26.3: expert-parallel MoE on SimWorld equals one process, same drops.

The learner's ``expert_parallel_moe(comm, x, w_router, local_experts, k, capacity_factor)``
returns ``(y, dropped)`` for this rank's tokens. Ground truth: a token-by-token loop over the
WHOLE batch with lab 10's rules (top-k, every first choice before any second choice, capacity
ceil(k N / E * cf)). The budget, enforced: each rank's float payload is exactly d x 8 bytes
per kept row it dispatches to another rank's expert plus per row it returns (combine) for
rows it received: dropped rows never travel, nothing is padded to the capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import fresh_rng, grader, guarded, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from a2s.checks.lab26.workers import _route, moe_loop
from minitorch.comm.protocol import Communicator
from minitorch.comm.simworld import SimWorld

__all__ = ["check_expert_parallel", "moe_case"]

REFERENCE = (
    "minitorch.parallel.expert:expert_parallel_moe",
    "minitorch.parallel.expert:global_positions",
    "minitorch.parallel.expert:expert_mlp",
    "a2s.checks.lab26.workers:moe_loop",  # the grader's own ground truth
    "a2s.checks.lab26.expert:_remote_rows",
)


def moe_case(seed: int, p: int, per: int, n_r: int, d: int, k: int, cf: float, label: str) -> dict:
    """Tokens, a router skewed towards expert 0 (so capacity bites) and E = p per experts."""
    gen = np.random.default_rng(seed)
    e, hid = p * per, d + 2
    w_router = gen.standard_normal((d, e))
    w_router[:, 0] += 0.8
    experts = [
        (
            gen.standard_normal((d, hid)),
            gen.standard_normal(hid) * 0.1,
            gen.standard_normal((hid, d)),
            gen.standard_normal(d) * 0.1,
        )
        for _ in range(e)
    ]
    x = gen.standard_normal((p * n_r, d))
    return {
        "x": x,
        "w_router": w_router,
        "experts": experts,
        "k": k,
        "cf": cf,
        "p": p,
        "label": label,
    }


def _remote_rows(case: dict) -> list[int]:
    """Rows each rank sends: kept assignments of its tokens bound for another rank's expert
    (dispatch) plus those it received for its own experts (combine); the grader's own loop."""
    x, ws, k, cf, p = case["x"], case["experts"], case["k"], case["cf"], case["p"]
    n, e = x.shape[0], len(ws)
    experts, _ = _route(x, case["w_router"], k)
    cap, filled, per = int(np.ceil(k * n * cf / e)), [0] * e, e // p
    rows = [0] * p
    for j in range(k):
        for t in range(n):
            ex = int(experts[t, j])
            if filled[ex] < cap:
                filled[ex] += 1
                src, dst = t // (n // p), ex // per
                if src != dst:
                    rows[src] += 1
                    rows[dst] += 1
    return rows


def _program(comm: Communicator, fn: Callable[..., Any], case: dict) -> dict:
    """One rank (its own forked process): its tokens and experts; the router counts bytes."""
    p, r = comm.world_size, comm.rank
    per = len(case["experts"]) // p
    x = np.split(case["x"], p)[r].copy()
    local = [tuple(a.copy() for a in w) for w in case["experts"][r * per : (r + 1) * per]]
    got = plain(
        fn(comm, x, case["w_router"].copy(), local, case["k"], case["cf"]), case=case["label"]
    )
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(f"[{case['label']}] return a pair (y, dropped).")
    y, dropped = got
    y = np.asarray(y, np.float64)
    return {"y": y, "dropped": int(dropped)}


@grader("26.3", blocks=REFERENCE, hand="ranks")
def check_expert_parallel(expert_parallel_moe: Callable[..., Any]) -> str:
    """Exercise 26.3: EP MoE equals the single-process MoE with the same drops; bytes exact."""
    cases = [
        moe_case(1, 2, 1, 4, 3, 1, 1.0, "p=2, E=2, top-1, cf=1"),
        moe_case(2, 2, 2, 5, 3, 1, 1.0, "p=2, E=4, top-1, cf=1"),
        moe_case(3, 4, 1, 3, 2, 2, 1.0, "p=4, E=4, top-2, cf=1"),
        moe_case(4, 3, 2, 4, 3, 2, 0.75, "p=3, E=6, top-2, cf=0.75"),
    ]
    gen = fresh_rng("26.3")
    for _ in range(2):
        p, per, k = int(gen.integers(2, 5)), int(gen.integers(1, 3)), int(gen.integers(1, 3))
        cf = float(gen.choice([0.75, 1.0, 1.25]))
        cases.append(
            moe_case(
                int(gen.integers(2**31)),
                p,
                per,
                int(gen.integers(2, 6)),
                3,
                k,
                cf,
                fresh(f"p={p}, E={p * per}, top-{k}, cf={cf}"),
            )
        )
    raw = getattr(expert_parallel_moe, "fn", expert_parallel_moe)
    student = guarded(raw, "26.3", REFERENCE)
    drops = sent = 0
    for case in cases:
        p, d, tag = case["p"], case["x"].shape[1], f"[{case['label']}]"
        try:
            run = run_ranks(_program, SimWorld(p), [(student, case)] * p)
        except (StudentError, CheckFailure) as exc:
            exc.args = (f"{tag} {exc}",)
            raise
        outs = [dict(o, float=run.float_bytes(r)) for r, o in enumerate(run.results)]
        want, want_dropped = moe_loop(case)
        got = (
            np.concatenate([o["y"] for o in outs])
            if all(o["y"].shape == (case["x"].shape[0] // p, d) for o in outs)
            else None
        )
        if got is None or not np.allclose(got, want, rtol=0, atol=1e-10):
            local, _ = moe_loop(case, p_local=p)
            no_drop, _ = moe_loop(dict(case, cf=1e9))
            token_major, _ = moe_loop(case, token_major=True)
            if got is not None and np.allclose(got, token_major, rtol=0, atol=1e-10):
                hint = (
                    "your drops follow token order, each token's k choices together. One process "
                    "fills the experts with every token's FIRST choice (rank 0's tokens first) "
                    "before any SECOND choice: a second choice never takes a slot from a later "
                    "token's first choice."
                )
            elif got is not None and np.allclose(got, local, rtol=0, atol=1e-10):
                hint = (
                    "you decided the drops per rank (local capacity, local order). One process "
                    "ranks every first choice of the WHOLE batch, in token order (rank 0's "
                    "tokens first), before any second choice, with capacity ceil(k N / E cf) "
                    "for the global N: all-gather each rank's (k, E) counts to agree on it."
                )
            elif got is not None and np.allclose(got, no_drop, rtol=0, atol=1e-10):
                hint = (
                    "no assignment was dropped: an expert takes at most "
                    "capacity = ceil(k N / E * cf) rows."
                )
            elif (
                got is not None
                and case["k"] > 1
                and np.allclose(got, moe_loop(case, raw_gates=True)[0], rtol=0, atol=1e-10)
            ):
                hint = (
                    "the top-k gates were used as the softmax gave them: renormalize them over "
                    "the k chosen experts so they sum to 1 (lab 10's top_k_gating does)."
                )
            else:
                err = float(np.max(np.abs(got - want))) if got is not None else float("nan")
                hint = (
                    f"off by up to {err:.2e}. Check that each output row returns to the token "
                    "(and rank) it came from, weighted by its gate, and which assignments are "
                    "dropped (capacity ceil(k N / E cf) for the global N)."
                )
            raise CheckFailure(f"{tag} y differs from the single-process MoE: {hint}")
        got_dropped = sum(o["dropped"] for o in outs)
        if got_dropped != want_dropped:
            raise CheckFailure(
                f"{tag} right y but you report {got_dropped} drops in all, one process "
                f"drops {want_dropped}."
            )
        rows = _remote_rows(case)
        for r, o in enumerate(outs):
            budget = rows[r] * d * 8
            if o["float"] != budget:
                raise CheckFailure(
                    f"{tag} right values, but rank {r} sent {o['float']} float bytes where expert "
                    f"parallelism needs {budget} = {rows[r]} rows x {d} x 8: the kept rows it "
                    "dispatches to other ranks' experts plus the outputs it returns for rows it "
                    "received. "
                    + (
                        "Dropped rows must not travel, nothing is padded to the capacity, and "
                        "counts and expert ids are free only as integer arrays (a float array "
                        "counts as payload)."
                        if o["float"] > budget
                        else "Every kept row must go to its expert's rank."
                    )
                )
            sent += o["float"]
        drops += want_dropped
    return (
        f"{len(cases)} cases (p = 2..4) equal the single-process MoE to 1e-10 with the same "
        f"{drops} drops; {sent} float bytes, exactly the kept rows"
    )
