"""Graders of lab 28: the reference passes; realistic wrong answers and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.runtime.quant_serving as qs
from a2s.checks import lab28
from a2s.checks.core import ReferenceCalledError
from minitorch.model.quant_model import map_linear_weights, quantized_model
from minitorch.runtime.engine import Engine
from minitorch.runtime.paged_model import PagedGPT
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.runtime")
ref_engine = unblocked(qs.quant_engine)
ref_counts = unblocked(qs.work_counts)
ref_usage = unblocked(qs.kv_usage)
ref_report = unblocked(qs.capstone_report)


# --------------------------------------------------------------------------- 28.1 server
def build_server(
    model,
    num_blocks,
    block_size,
    token_budget,
    max_num_seqs,
    cost=None,
    *,
    weights="int8",
    int8_cache=True,
):
    if weights == "int8":
        q = quantized_model(model, "int8")
    elif weights == "tensor":  # one scale for the whole matrix
        q = map_linear_weights(
            model, lambda n, w: np.round(w / (np.abs(w).max() / 127)) * (np.abs(w).max() / 127)
        )
    else:
        q = model
    engine = Engine(q, num_blocks, block_size, token_budget, max_num_seqs, cost=cost)
    if int8_cache:
        c = q.config
        cache = qs.Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
        engine.runner = PagedGPT(q, cache)
    return engine


def test_server_reference_and_solution_pass(capsys):
    lab28.check_server(ref_engine)
    lab28.check_server(build_server)
    assert "✔ Exercise 28.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(weights="fp32"), "FP32 weight"),
        (dict(weights="tensor"), "per-channel"),
        (dict(int8_cache=False), "Int8PagedKVCache"),
    ],
)
def test_server_rejects_wrong_answers(kwargs, match):
    rejects(lab28.check_server, lambda *a, **k: build_server(*a, **k, **kwargs), match=match)


def test_server_rejects_the_reference():
    rejects(
        lab28.check_server,
        lambda *a, **k: qs.quant_engine(*a, **k),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 28.2 work
def work_counts(requests, result, *, mistake=None):
    out = dict(ref_counts(requests, result))
    if mistake == "cached baseline":
        out["baseline_tokens"] = sum(len(r.prompt) + r.max_new_tokens for r in requests)
    elif mistake == "passes per token":
        out["served_passes"] = sum(r.max_new_tokens for r in requests)
    elif mistake == "one pass per request":
        out["baseline_passes"] = len(requests)
    return out


def test_work_counts_reference_and_solution_pass(capsys):
    lab28.check_work_counts(ref_counts)
    lab28.check_work_counts(work_counts)
    assert "✔ Exercise 28.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mistake", "match"),
    [
        ("cached baseline", "WITH a KV cache"),
        ("passes per token", "count the engine's steps"),
        ("one pass per request", "its own forward pass"),
    ],
)
def test_work_counts_rejects_wrong_answers(mistake, match):
    rejects(lab28.check_work_counts, lambda q, r: work_counts(q, r, mistake=mistake), match=match)


def test_work_counts_rejects_the_reference():
    rejects(
        lab28.check_work_counts,
        lambda q, r: qs.served_work(r),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 28.3 KV usage
def kv_usage(engine, *, mistake=None):
    out = dict(ref_usage(engine))
    bs, cfg = engine.blocks.block_size, engine.runner.cfg
    if mistake == "floor":
        out["bound"] = sum(len(s.tokens) // bs for s in engine.scheduler.running)
    elif mistake == "fp32 bytes":
        out["bytes"] = out["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * 4
    elif mistake == "no scales":
        out["bytes"] = out["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim
    elif mistake == "max length":  # the values of a max-length reservation: over the bound
        out["held"] = out["reserved"]
    return out


def test_kv_usage_reference_and_solution_pass(capsys):
    lab28.check_kv_usage(ref_usage)
    lab28.check_kv_usage(kv_usage)
    assert "✔ Exercise 28.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mistake", "match"),
    [
        ("floor", "paging bound|not floor"),
        ("fp32 bytes", "FP32 bytes"),
        ("no scales", "Add the scales"),
        ("max length", "reserved at max length"),
    ],
)
def test_kv_usage_rejects_wrong_answers(mistake, match):
    rejects(lab28.check_kv_usage, lambda e: kv_usage(e, mistake=mistake), match=match)


def test_kv_usage_rejects_the_reference():
    rejects(
        lab28.check_kv_usage,
        lambda e: qs.kv_usage(e),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 28.4 report
def test_report_reference_passes(capsys):
    lab28.check_report(ref_report)
    assert "✔ Exercise 28.4 passed" in capsys.readouterr().out


def _typed(model, seed):  # figures copied from an earlier run of seed 0
    return dict(TYPED)


TYPED: dict = {}


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda m, s: {**ref_report(m, s), "loss_int8": ref_report(m, s)["loss_fp32"]}, "FP32"),
        (
            lambda m, s: {**ref_report(m, s), "ttft_p99": ref_report(m, s)["ttft_p50"]},
            "Percentiles",
        ),
        (
            lambda m, s: {**(r := ref_report(m, s)), "kv_peak_blocks": r["kv_reserved_blocks"]},
            "max-length reservation",
        ),
        (_typed, "typed in"),
    ],
)
def test_report_rejects_wrong_answers(wrong, match):
    if not TYPED:
        from minitorch.model.checkpoint import load_pretrained

        TYPED.update(ref_report(load_pretrained(), 0))
    rejects(lab28.check_report, wrong, match=match)


def test_report_rejects_the_reference():
    rejects(
        lab28.check_report,
        lambda m, s: qs.capstone_report(m, s),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- graders' truth
def test_graders_ground_truth_is_blocked():
    from a2s.checks.lab28 import _truth, kv, work

    def counts(q, r):
        p, t = _truth.no_cache_work([len(x.prompt) for x in q], [x.max_new_tokens for x in q])
        s = [st.tokens for st in r.steps]
        return dict(
            baseline_passes=p, baseline_tokens=t, served_passes=len(s), served_tokens=sum(s)
        )

    for check, cheat in [
        (lab28.check_work_counts, counts),
        (lab28.check_work_counts, lambda q, r: work._truth(q, r)),
        (lab28.check_kv_usage, lambda e: kv._truth(e)),
    ]:
        rejects(check, cheat, match="reference", error=ReferenceCalledError)


def _rows_f32(name, w):  # a correct INT8 rounding in float32 (a near-tie may round the other way)
    w = np.asarray(w, np.float32)
    s = np.abs(w).max(axis=1, keepdims=True) / np.float32(127)
    return (np.round(w * (np.float32(1) / s)) * s).astype(np.float32)


def _server_with(quantize):
    def build(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
        q = map_linear_weights(model, quantize)
        engine = Engine(model, num_blocks, block_size, token_budget, max_num_seqs, cost=cost)
        c = q.config
        cache = qs.Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
        engine.runner = PagedGPT(q, cache)
        return engine

    return build


def test_server_accepts_float32_rounding(capsys):
    lab28.check_server(_server_with(_rows_f32))
    assert "✔ Exercise 28.1 passed" in capsys.readouterr().out


def test_server_rejects_fp32_mlp_only():
    rejects(
        lab28.check_server,
        _server_with(lambda n, w: w if ".mlp." in n else _rows_f32(n, w)),
        match="mlp.w1.weight is the FP32 weight",
    )


# --------------------------------------------------------------------------- issue 18: edges
@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("server_default_budget", "over the token budget"),
        ("server_default_seats", "over max_num_seqs"),
        ("server_wall_clock", "cost model passed"),
    ],
)
def test_server_holds_budget_seats_and_clock(name, match):
    from tests.checks import test_lab28_attacks as attacks

    rejects(lab28.check_server, getattr(attacks, name), match=match)


def test_server_runs_no_learner_code_unguarded():
    from tests.checks.test_lab28_attacks import server_layer_calls_the_reference, server_subclass

    rejects(lab28.check_server, server_subclass, match="not lab 19's Engine")
    rejects(
        lab28.check_server,
        server_layer_calls_the_reference,
        match="reference",
        error=ReferenceCalledError,
    )


def test_kv_usage_rejects_held_equal_to_the_bound():
    from tests.checks.test_lab28_attacks import kv_held_is_bound

    rejects(lab28.check_kv_usage, kv_held_is_bound, match="That is the paging bound")


def test_work_counts_bar_is_enforced(monkeypatch):
    """Served one request at a time, the lab's workload misses the 3x bar, and the check says so."""
    from a2s.checks.lab28 import work

    monkeypatch.setattr(work, "LAB_SERVING", dict(qs.LAB_SERVING, max_num_seqs=1))
    rejects(lab28.check_work_counts, ref_counts, match="the bar is 3x")


# every must, only, budget and invariant of the prose -> the test that fails when it breaks
MUSTS = [
    (
        "28.1",
        "Exercise code may not call torch, nor the `minitorch.runtime.quant_serving`",
        "test_server_rejects_the_reference",
    ),
    (
        "28.1",
        "the served model's weights must be the INT8 rounding of the FP32 ones and its "
        "logits those of an INT8 KV cache",
        "test_server_rejects_wrong_answers",
    ),
    (
        "28.1",
        "an engine that keeps FP32 weights or an FP32 cache fails",
        "test_server_rejects_wrong_answers",
    ),
    ("28.1", "served tokens are identical to it", "test_server_rejects_wrong_answers"),
    (
        "28.1",
        "each step computes at most `token_budget` tokens for at most `max_num_seqs` "
        "sequences, the engine's clock is the given `cost`",
        "test_server_holds_budget_seats_and_clock",
    ),
    (
        "28.1",
        "the schedule is lab 19's `Engine` with exactly this configuration",
        "test_server_holds_budget_seats_and_clock",
    ),
    (
        "28.1",
        "Return the course's classes themselves (`Engine`, `PagedGPT`, `Int8PagedKVCache`, "
        "no subclasses, the Engine's own step function)",
        "test_server_runs_no_learner_code_unguarded",
    ),
    (
        "28.2",
        "the served run must need at least 3x fewer forward passes and token positions "
        "than no-cache decoding",
        "test_work_counts_bar_is_enforced",
    ),
    (
        "28.2",
        "**bar: at least 3x fewer passes and 3x fewer token positions than the baseline.**",
        "test_work_counts_bar_is_enforced",
    ),
    ("28.2", "from the formula above", "test_work_counts_rejects_wrong_answers"),
    (
        "28.3",
        "the KV blocks held must stay within the paging bound at every step",
        "test_kv_usage_rejects_wrong_answers",
    ),
    ("28.3", "**Budget:** at every step `held <= bound`.", "test_kv_usage_rejects_wrong_answers"),
    ("28.3", "read it from the block manager", "test_kv_usage_rejects_held_equal_to_the_bound"),
    (
        "28.3",
        "`head_dim` int8 entries plus one float32 scale",
        "test_kv_usage_rejects_wrong_answers",
    ),
    (
        "28.4",
        "every figure of the report is recomputed from the same seed (a number typed in "
        "fails the fresh seed)",
        "test_report_rejects_wrong_answers",
    ),
    ("28.4", "a number copied from an earlier run fails", "test_report_rejects_wrong_answers"),
    (
        "28.4",
        "`np.percentile` of the per-request `s.ttft`, `s.tpot`",
        "test_report_rejects_wrong_answers",
    ),
]
