"""The engine: batched, chunked, preempted serving of the tiny GPT gives exactly the tokens of
one-at-a-time generation; seeded sampling does not depend on batching; the cost-model mode
replays a workload and its step counts follow list scheduling."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from minitorch.model.checkpoint import load_pretrained
from minitorch.runtime.engine import CostModel, Engine
from minitorch.runtime.workload import Request, poisson_workload, tiny_workload


@pytest.fixture(scope="module")
def model():
    return load_pretrained()


@pytest.mark.parametrize(
    "config",
    [
        dict(num_blocks=64, token_budget=5),
        dict(num_blocks=12, token_budget=16),
        dict(num_blocks=64, token_budget=32, chunked_prefill=False),
        dict(
            num_blocks=64, token_budget=64, max_num_seqs=3, chunked_prefill=False, policy="static"
        ),
    ],
)
def test_greedy_serving_equals_one_at_a_time_generation(model, config) -> None:
    reqs = tiny_workload(10, rate=float("inf"), seed=3)
    result = Engine(model, block_size=4, cost=CostModel(), **config).run(reqs)
    for req, out in zip(reqs, result.outputs, strict=True):
        assert model.generate(np.array([req.prompt]), req.max_new_tokens)[0].tolist() == (
            list(req.prompt) + out
        )
    if config["num_blocks"] == 12:
        assert result.preemptions > 0


def test_seeded_sampling_does_not_depend_on_batching(model) -> None:
    reqs = tiny_workload(6, rate=float("inf"), seed=1)
    kw = dict(greedy=False, temperature=1.5, seed=7, cost=CostModel())
    together = Engine(model, num_blocks=64, max_num_seqs=6, **kw).run(reqs).outputs
    alone = Engine(model, num_blocks=64, max_num_seqs=1, token_budget=3, **kw).run(reqs).outputs
    assert together == alone


def test_cost_model_steps_follow_list_scheduling() -> None:
    lens = [5, 1, 7, 2, 2, 9, 3]
    reqs = [Request((1, 2, 3), n, 0.0) for n in lens]
    cont = Engine(None, num_blocks=64, max_num_seqs=3, cost=CostModel()).run(reqs)
    static = Engine(None, num_blocks=64, max_num_seqs=3, cost=CostModel(), policy="static").run(
        reqs
    )
    slots, end = [0, 0, 0], 0
    for n in lens:
        start = heapq.heappop(slots)
        end = max(end, start + n)
        heapq.heappush(slots, start + n)
    assert len(cont.steps) == end
    assert len(static.steps) == 7 + 9 + 3
    assert [len(o) for o in cont.outputs] == lens


def test_continuous_batching_beats_static_on_a_poisson_workload() -> None:
    reqs = poisson_workload(120, rate=50.0, seed=0)
    kw = dict(num_blocks=4000, block_size=16, max_num_seqs=16, cost=CostModel())
    static = Engine(None, token_budget=4096, chunked_prefill=False, policy="static", **kw)
    cont = Engine(None, token_budget=4096, **kw)
    s, c = static.run(reqs).metrics(), cont.run(reqs).metrics()
    assert c["throughput"] > 1.5 * s["throughput"] and c["ttft"] < s["ttft"]


def test_workloads_are_poisson_and_fit_the_tiny_model() -> None:
    reqs = poisson_workload(2000, rate=10.0, seed=0)
    gaps = np.diff([0.0] + [r.arrival for r in reqs])
    assert abs(gaps.mean() - 0.1) < 0.01 and all(
        len(r.prompt) + r.max_new_tokens <= 2048 for r in reqs
    )
    assert all(len(r.prompt) + r.max_new_tokens <= 32 for r in tiny_workload(50, math.inf))
