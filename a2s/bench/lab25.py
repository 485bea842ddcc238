"""Lab 25 experiments: measured bubbles against the formulas, memory, and what pipelining
costs in one process.

1. Bubble of GPipe, 1F1B and interleaved 1F1B (v = 2) run on SimWorld with real messages
   (p = 4, m = 8, forward 1, backward 2 per stage) divided by the closed forms
   (p-1)/(m+p-1) and (p-1)/(vm+p-1): exactly 1 when the simulation and the papers agree.
2. Peak stashed activations of stage 0, GPipe over 1F1B: m / p.
3. Wall time of one training step of the tiny GPT (float64) split in 2 stages with 1F1B on
   SimWorld (4 microbatches, two threads taking turns) against the same step in one process
   on the whole batch: the price of microbatching and hand-offs when nothing runs in
   parallel (on real devices the stages overlap instead).

Lab: 25_pipeline_parallel
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.comm.simworld import SimWorld
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT
from minitorch.parallel import pipeline as P
from minitorch.parallel import pipeline_exec as E
from minitorch.parallel.pipeline_stage import split_gpt


@register
def bubble_vs_formula() -> list[Figure]:
    p, m, v = 4, 8, 2
    runs = {
        "GPipe": (E.simulate_on_world(P.gpipe(p, m), 1.0, 2.0), P.bubble_formula(p, m)),
        "1F1B": (E.simulate_on_world(P.one_f_one_b(p, m), 1.0, 2.0), P.bubble_formula(p, m)),
        "interleaved v=2": (
            E.simulate_on_world(P.interleaved(p, m, v), 1.0 / v, 2.0 / v),
            P.bubble_formula(p, m, v),
        ),
    }
    out = [
        Figure(f"{name} bubble, SimWorld / formula (p=4, m=8)", got[1] / want, "x", "1.0: exact")
        for name, (got, want) in runs.items()
    ]
    g, f = runs["GPipe"][0][2][0], runs["1F1B"][0][2][0]
    out.append(Figure("stage 0 peak activations, GPipe / 1F1B (p=4, m=8)", g / f, "x", "m/p = 2"))
    return out


@register
def pipeline_step_vs_one_process() -> list[Figure]:
    cfg = GPTConfig(
        vocab_size=16, block_size=16, n_layer=2, n_head=2, n_kv_head=2, d_model=32, tie_head=False
    )
    x = np.random.default_rng(0).integers(0, 16, (8, 16))
    y = np.roll(x, -1, axis=1)
    whole = GPT(cfg, seed=0, dtype=np.float64)
    stages, m = split_gpt(GPT(cfg, seed=0, dtype=np.float64), 2), 4
    sched = P.one_f_one_b(2, m)
    xs, ys = np.split(x, m), np.split(y, m)

    def piped() -> None:
        SimWorld(2).run(lambda c: E.pipeline_train_step(c, stages[c.rank], sched[c.rank], xs, ys))

    def single() -> None:
        whole.loss(x, y).backward()

    with one_thread():
        a, b = alternate(piped, single, repeats=7)
    return [
        Figure("GPT step, 2-stage 1F1B on SimWorld / one process", a / b, "x", "one process = 1.0")
    ]
