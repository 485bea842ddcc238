"""Lab 28 tried as a class of students would: honest variants, realistic mistakes, cheats.

The capstone's checks serve whole workloads, so the battery reuses work: the honest pieces are
written once and the wrong reports are honest ones (memoised per seed, on the student's side)
with one figure broken.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from a2s.checks import lab28
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from minitorch.autograd import no_grad
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.quant_model import map_linear_weights, quantized_model
from minitorch.model.tokenizer import CharTokenizer
from minitorch.runtime.engine import CostModel, Engine
from minitorch.runtime.paged_attention import PagedKVCache
from minitorch.runtime.paged_model import PagedGPT
from minitorch.runtime.quant_serving import LAB_SERVING, Int8PagedKVCache, capstone_workload
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

REF, FORBID = ReferenceCalledError, ForbiddenCallError


# --------------------------------------------------------------------------- 28.1 server
def build_server(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    q = quantized_model(model, "int8")
    engine = Engine(
        q,
        num_blocks=num_blocks,
        block_size=block_size,
        token_budget=token_budget,
        max_num_seqs=max_num_seqs,
        cost=cost,
    )
    c = q.config
    engine.runner = PagedGPT(
        q, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def build_server_own_rounding(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """Rounds the weights itself (one scale per output row), positional Engine arguments."""
    import numpy  # an import inside the function

    def int8(name, w):
        scale = numpy.abs(w).max(axis=1, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        return numpy.round(w / scale) * scale

    q = map_linear_weights(model, int8)
    engine = Engine(q, num_blocks, block_size, token_budget, max_num_seqs, True, "continuous", cost)
    cfg = q.config
    cache = Int8PagedKVCache(
        n_layer=cfg.n_layer,
        num_blocks=num_blocks,
        block_size=block_size,
        n_kv_head=cfg.n_kv_head,
        head_dim=cfg.head_dim,
    )
    engine.runner = PagedGPT(q, cache)
    return engine


def server_fp32_weights(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    engine = Engine(
        model,
        num_blocks=num_blocks,
        block_size=block_size,
        token_budget=token_budget,
        max_num_seqs=max_num_seqs,
        cost=cost,
    )
    c = model.config
    engine.runner = PagedGPT(
        model, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def server_fp32_cache(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """Quantizes the weights but keeps the Engine's FP32 PagedKVCache."""
    q = quantized_model(model, "int8")
    return Engine(
        q,
        num_blocks=num_blocks,
        block_size=block_size,
        token_budget=token_budget,
        max_num_seqs=max_num_seqs,
        cost=cost,
    )


def server_default_budget(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    q = quantized_model(model, "int8")
    engine = Engine(
        q, num_blocks=num_blocks, block_size=block_size, max_num_seqs=max_num_seqs, cost=cost
    )
    c = q.config
    engine.runner = PagedGPT(
        q, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def server_default_seats(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    q = quantized_model(model, "int8")
    engine = Engine(
        q, num_blocks=num_blocks, block_size=block_size, token_budget=token_budget, cost=cost
    )
    c = q.config
    engine.runner = PagedGPT(
        q, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def server_wall_clock(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """Forgets to pass the cost model: the engine times itself by the wall clock."""
    return build_server(model, num_blocks, block_size, token_budget, max_num_seqs)


def server_via_reference(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    from minitorch.runtime.quant_serving import quant_engine

    return quant_engine(
        model,
        num_blocks=num_blocks,
        block_size=block_size,
        token_budget=token_budget,
        max_num_seqs=max_num_seqs,
        cost=cost,
    )


def server_via_truth(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """Rounds the weights with the grader's own int8_rows."""
    from a2s.checks.lab28 import _truth

    q = map_linear_weights(model, lambda n, w: _truth.int8_rows(w).astype(w.dtype))
    engine = Engine(q, num_blocks, block_size, token_budget, max_num_seqs, cost=cost)
    c = q.config
    engine.runner = PagedGPT(
        q, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def server_torch(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    import torch

    def int8(name, w):
        t = torch.tensor(w)
        s = t.abs().amax(dim=1, keepdim=True) / 127
        return (torch.round(t / s) * s).numpy()

    q = map_linear_weights(model, int8)
    engine = Engine(q, num_blocks, block_size, token_budget, max_num_seqs, cost=cost)
    c = q.config
    engine.runner = PagedGPT(
        q, Int8PagedKVCache(c.n_layer, num_blocks, block_size, c.n_kv_head, c.head_dim)
    )
    return engine


def server_truth_cache(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """Serves with an FP32 cache, and hands the grader an engine whose runner claims INT8."""
    engine = server_fp32_cache(model, num_blocks, block_size, token_budget, max_num_seqs, cost)
    engine.runner.cache.__class__ = type("Int8PagedKVCache", (PagedKVCache,), {})
    return engine


def server_subclass(model, num_blocks, block_size, token_budget, max_num_seqs, cost=None):
    """An Engine subclass whose run() would execute outside the check's guard."""
    from minitorch.runtime.quant_serving import quant_engine

    class Served(Engine):
        def run(self, requests):
            return quant_engine(
                model,
                num_blocks=num_blocks,
                block_size=block_size,
                token_budget=token_budget,
                max_num_seqs=max_num_seqs,
                cost=cost,
            ).run(requests)

    engine = Served(model, num_blocks, block_size, token_budget, max_num_seqs, cost=cost)
    engine.runner = build_server(model, num_blocks, block_size, token_budget, max_num_seqs).runner
    return engine


def server_layer_calls_the_reference(
    model, num_blocks, block_size, token_budget, max_num_seqs, cost=None
):
    """The course's classes, but one layer of the served model runs code of the learner's
    while serving: it builds the reference server, once per call (a probe of the guard)."""
    engine = build_server(model, num_blocks, block_size, token_budget, max_num_seqs, cost)
    layer = engine.runner.model.blocks[0].attn.q_proj
    base = type(layer)

    class Probe(base):
        def forward(self, x):
            from minitorch.runtime.quant_serving import quant_engine

            quant_engine(model, num_blocks=4, block_size=4, token_budget=4, max_num_seqs=1)
            return base.forward(self, x)

    layer.__class__ = Probe
    return engine


# --------------------------------------------------------------------------- 28.2 work
def work_counts(requests, result):
    base_p = sum(r.max_new_tokens for r in requests)
    base_t = sum(
        len(r.prompt) * r.max_new_tokens + r.max_new_tokens * (r.max_new_tokens - 1) // 2
        for r in requests
    )
    steps = result.steps
    return {
        "baseline_passes": base_p,
        "baseline_tokens": base_t,
        "served_passes": len(steps),
        "served_tokens": sum(s.tokens for s in steps),
    }


def work_counts_loop(requests, result):
    """Counted token by token, as the no-cache server would run; numpy ints allowed."""
    passes = tokens = 0
    for r in requests:
        for i in range(r.max_new_tokens):
            passes += 1
            tokens += len(r.prompt) + i
    steps = np.array([s.tokens for s in result.steps])
    return dict(
        baseline_passes=passes,
        baseline_tokens=tokens,
        served_passes=np.int64(steps.size),
        served_tokens=steps.sum(),
    )


def work_cached_baseline(requests, result):
    return {
        **work_counts(requests, result),
        "baseline_tokens": sum(len(r.prompt) + r.max_new_tokens for r in requests),
    }


def work_pass_per_request(requests, result):
    return {**work_counts(requests, result), "baseline_passes": len(requests)}


def work_served_per_token(requests, result):
    return {
        **work_counts(requests, result),
        "served_passes": sum(r.max_new_tokens for r in requests),
    }


def work_served_outputs_only(requests, result):
    return {
        **work_counts(requests, result),
        "served_tokens": sum(r.max_new_tokens for r in requests),
    }


def work_via_reference(requests, result):
    from minitorch.runtime.quant_serving import work_counts as ref

    return ref(requests, result)


def work_via_baseline_work(requests, result):
    from minitorch.runtime.quant_serving import baseline_work

    passes, tokens = baseline_work(requests)
    out = work_counts(requests, result)
    return {**out, "baseline_passes": passes, "baseline_tokens": tokens}


def work_via_truth(requests, result):
    from a2s.checks.lab28._truth import no_cache_work

    passes, tokens = no_cache_work(
        [len(r.prompt) for r in requests], [r.max_new_tokens for r in requests]
    )
    return {**work_counts(requests, result), "baseline_passes": passes, "baseline_tokens": tokens}


def work_torch(requests, result):
    import torch

    steps = torch.tensor([s.tokens for s in result.steps])
    return {**work_counts(requests, result), "served_tokens": int(steps.sum())}


def work_always_equal(requests, result):
    return {k: always_equal(1) for k in work_counts(requests, result)}


# --------------------------------------------------------------------------- 28.3 KV usage
def kv_usage(engine):
    bs, cfg = engine.blocks.block_size, engine.runner.cfg
    held = engine.blocks.num_used_blocks()
    running = engine.scheduler.running
    return {
        "held": held,
        "bound": sum(-(-len(s.tokens) // bs) for s in running),
        "reserved": sum(-(-(len(s.prompt) + s.max_new_tokens) // bs) for s in running),
        "bytes": held * bs * 2 * cfg.n_layer * cfg.n_kv_head * (cfg.head_dim + 4),
    }


def kv_usage_tables(engine):
    """Blocks counted from the tables themselves, math.ceil, bytes from the cache's dtypes."""
    bm, cfg = engine.blocks, engine.runner.cfg
    held = len({b for table in bm.tables.values() for b in table})
    per_slot = (
        2
        * cfg.n_layer
        * cfg.n_kv_head
        * (cfg.head_dim * np.dtype(np.int8).itemsize + np.dtype(np.float32).itemsize)
    )
    ceil = lambda n: math.ceil(n / bm.block_size)  # noqa: E731
    running = engine.scheduler.running
    return dict(
        held=held,
        bound=sum(ceil(len(s.tokens)) for s in running),
        reserved=sum(ceil(len(s.prompt) + s.max_new_tokens) for s in running),
        bytes=held * bm.block_size * per_slot,
    )


def kv_held_is_bound(engine):
    out = kv_usage(engine)
    return {
        **out,
        "held": out["bound"],
        "bytes": out["bytes"] // max(out["held"], 1) * out["bound"],
    }


def kv_max_length(engine):
    out = kv_usage(engine)
    return {**out, "held": out["reserved"]}


def kv_floor(engine):
    bs = engine.blocks.block_size
    return {**kv_usage(engine), "bound": sum(len(s.tokens) // bs for s in engine.scheduler.running)}


def kv_fp32_bytes(engine):
    out, bs, cfg = kv_usage(engine), engine.blocks.block_size, engine.runner.cfg
    return {**out, "bytes": out["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * 4}


def kv_no_scales(engine):
    out, bs, cfg = kv_usage(engine), engine.blocks.block_size, engine.runner.cfg
    return {**out, "bytes": out["held"] * bs * 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim}


def kv_via_reference(engine):
    from minitorch.runtime.quant_serving import kv_usage as ref

    return ref(engine)


def kv_via_bytes_per_token(engine):
    from minitorch.runtime.quant_serving import kv_bytes_per_token

    out = kv_usage(engine)
    return {
        **out,
        "bytes": out["held"] * engine.blocks.block_size * kv_bytes_per_token(engine.runner.cfg),
    }


def kv_via_truth(engine):
    from a2s.checks.lab28 import kv

    return kv._truth(engine)


def kv_torch(engine):
    import torch

    out = kv_usage(engine)
    return {**out, "held": int(torch.tensor(out["held"]))}


def kv_forged_bound(engine):
    """Keeps within the bound by reporting one block more of it than there is."""
    out = kv_usage(engine)
    return {**out, "bound": max(out["bound"], out["held"]) + 1}


def kv_clears_the_engine(engine):
    """Answers once, then frees every sequence: every later call reads an empty engine."""
    out = kv_usage(engine)
    for seq in list(engine.scheduler.running):
        engine.blocks.free(seq.seq_id)
    engine.scheduler.running.clear()
    engine.scheduler.waiting.clear()
    return out


# --------------------------------------------------------------------------- 28.4 report
_TOK = CharTokenizer()


def report(model, seed):
    reqs, answers = capstone_workload(24, 100.0, seed)
    engine = build_server(model, cost=CostModel(), **LAB_SERVING)
    peak, inner = {"held": 0, "reserved": 0, "bytes": 0}, engine.step_fn

    def step(runner, work):
        usage = kv_usage(engine)
        for key in peak:
            peak[key] = max(peak[key], usage[key])
        return inner(runner, work)

    engine.step_fn = step
    result = engine.run(reqs)
    counts = work_counts(reqs, result)
    alone = [
        model.generate(np.array([r.prompt]), r.max_new_tokens)[0, len(r.prompt) :] for r in reqs
    ]
    x, y = task_batch(("reverse", "sort"), 64, seed)
    with no_grad():
        loss_fp32 = float(model.loss(x, y, ignore=IGNORE).item())
        loss_int8 = float(engine.runner.model.loss(x, y, ignore=IGNORE).item())
    ttft = np.percentile([s.ttft for s in result.seqs], [50, 99])
    tpot = np.percentile([s.tpot for s in result.seqs], [50, 99])

    def accuracy(outs):
        return float(
            np.mean([_TOK.decode(o).startswith(a) for o, a in zip(outs, answers, strict=True)])
        )

    return {
        "throughput": result.metrics()["throughput"],
        "ttft_p50": ttft[0],
        "ttft_p99": ttft[1],
        "tpot_p50": tpot[0],
        "tpot_p99": tpot[1],
        "pass_speedup": counts["baseline_passes"] / counts["served_passes"],
        "token_speedup": counts["baseline_tokens"] / counts["served_tokens"],
        "kv_peak_blocks": peak["held"],
        "kv_peak_bytes": peak["bytes"],
        "kv_reserved_blocks": peak["reserved"],
        "loss_fp32": loss_fp32,
        "loss_int8": loss_int8,
        "accuracy_fp32": accuracy(alone),
        "accuracy_served": accuracy(result.outputs),
    }


def report_quantiles(model, seed):
    """The same run, but every percentile with np.quantile and a running peak list."""
    reqs, answers = capstone_workload(24, 100.0, seed)
    engine = build_server_own_rounding(model, cost=CostModel(), **LAB_SERVING)
    log, inner = [], engine.step_fn

    def step(runner, work):
        log.append(kv_usage_tables(engine))
        return inner(runner, work)

    engine.step_fn = step
    result = engine.run(reqs)
    counts = work_counts_loop(reqs, result)
    hits = served = 0
    for r, out, ans in zip(reqs, result.outputs, answers, strict=True):
        alone = model.generate(np.array([r.prompt]), r.max_new_tokens)[0, len(r.prompt) :]
        hits += _TOK.decode(alone).startswith(ans)
        served += _TOK.decode(out).startswith(ans)
    x, y = task_batch(("reverse", "sort"), 64, seed)
    with no_grad():
        losses = [float(m.loss(x, y, ignore=IGNORE).item()) for m in (model, engine.runner.model)]
    q = lambda vals, p: float(np.quantile(vals, p))  # noqa: E731
    ttft, tpot = [s.ttft for s in result.seqs], [s.tpot for s in result.seqs]
    return {
        "throughput": float(result.metrics()["throughput"]),
        "ttft_p50": q(ttft, 0.5),
        "ttft_p99": q(ttft, 0.99),
        "tpot_p50": q(tpot, 0.5),
        "tpot_p99": q(tpot, 0.99),
        "pass_speedup": float(counts["baseline_passes"] / counts["served_passes"]),
        "token_speedup": float(counts["baseline_tokens"] / counts["served_tokens"]),
        "kv_peak_blocks": max(u["held"] for u in log),
        "kv_peak_bytes": max(u["bytes"] for u in log),
        "kv_reserved_blocks": max(u["reserved"] for u in log),
        "loss_fp32": losses[0],
        "loss_int8": losses[1],
        "accuracy_fp32": hits / len(reqs),
        "accuracy_served": served / len(reqs),
    }


_DONE: dict[int, dict] = {}


def _honest(model, seed):
    """The honest report, memoised per seed (the wrong reports below each break one figure)."""
    if seed not in _DONE:
        _DONE[seed] = report(model, seed)
    return dict(_DONE[seed])


def report_fp32_loss(model, seed):
    out = _honest(model, seed)
    return {**out, "loss_int8": out["loss_fp32"]}


def report_means(model, seed):
    reqs, _ = capstone_workload(24, 100.0, seed)
    out = _honest(model, seed)
    engine = build_server(model, cost=CostModel(), **LAB_SERVING)
    seqs = engine.run(reqs).seqs
    return {**out, "ttft_p99": float(np.mean([s.ttft for s in seqs]))}


def report_reserved_peak(model, seed):
    out = _honest(model, seed)
    return {**out, "kv_peak_blocks": out["kv_reserved_blocks"]}


def report_via_reference(model, seed):
    from minitorch.runtime.quant_serving import capstone_report

    return capstone_report(model, seed)


def report_typed(model, seed):
    """Every figure typed in from an earlier run of seed 0."""
    return dict(_honest(model, 0))


def report_via_truth(model, seed):
    """Counts the baseline with the grader's own no_cache_work."""
    from a2s.checks.lab28._truth import no_cache_work

    reqs, _ = capstone_workload(24, 100.0, seed)
    no_cache_work([len(r.prompt) for r in reqs], [r.max_new_tokens for r in reqs])
    return _honest(model, seed)


def report_torch(model, seed):
    import torch

    out = _honest(model, seed)
    return {**out, "throughput": float(torch.tensor(out["throughput"]))}


def report_always_equal(model, seed):
    return {k: always_equal(float(v)) for k, v in _honest(model, seed).items()}


# --------------------------------------------------------------------------- the battery
S, W, K, R = lab28.check_server, lab28.check_work_counts, lab28.check_kv_usage, lab28.check_report

ATTEMPTS = [
    honest("28.1", "quantized_model and a new runner", lambda: S(build_server)),
    honest("28.1", "its own rounding, positional arguments", lambda: S(build_server_own_rounding)),
    wrong("28.1", "FP32 weights", lambda: S(server_fp32_weights), "FP32 weight"),
    wrong("28.1", "the Engine's FP32 cache", lambda: S(server_fp32_cache), "Int8PagedKVCache"),
    wrong(
        "28.1", "token budget left at its default", lambda: S(server_default_budget), "token budget"
    ),
    wrong("28.1", "seats left at their default", lambda: S(server_default_seats), "max_num_seqs"),
    wrong("28.1", "cost model not passed", lambda: S(server_wall_clock), "cost model passed"),
    cheat("28.1", "calls quant_engine", lambda: S(server_via_reference), "reference", REF),
    cheat("28.1", "the grader's int8_rows", lambda: S(server_via_truth), "reference", REF),
    cheat("28.1", "torch rounding", lambda: S(server_torch), "torch", FORBID),
    cheat(
        "28.1",
        "an Engine subclass serving the reference",
        lambda: S(server_subclass),
        "not lab 19's Engine",
    ),
    cheat(
        "28.1",
        "a served layer calls quant_engine",
        lambda: S(server_layer_calls_the_reference),
        "reference",
        REF,
    ),
    cheat(
        "28.1",
        "an FP32 cache renamed",
        lambda: S(server_truth_cache),
        "not lab 19's Int8PagedKVCache",
    ),
    honest("28.2", "closed forms", lambda: W(work_counts)),
    honest("28.2", "a token-by-token loop, numpy ints", lambda: W(work_counts_loop)),
    wrong("28.2", "baseline with a cache", lambda: W(work_cached_baseline), "WITH a KV cache"),
    wrong("28.2", "one pass per request", lambda: W(work_pass_per_request), "its own forward pass"),
    wrong("28.2", "a served pass per token", lambda: W(work_served_per_token), "engine's steps"),
    wrong(
        "28.2", "served outputs only", lambda: W(work_served_outputs_only), "include the prompts"
    ),
    cheat("28.2", "calls work_counts", lambda: W(work_via_reference), "reference", REF),
    cheat("28.2", "calls baseline_work", lambda: W(work_via_baseline_work), "reference", REF),
    cheat("28.2", "the grader's no_cache_work", lambda: W(work_via_truth), "reference", REF),
    cheat("28.2", "torch", lambda: W(work_torch), "torch", FORBID),
    cheat("28.2", "counts whose == says yes", lambda: W(work_always_equal), "plain value"),
    honest("28.3", "the block manager's count", lambda: K(kv_usage)),
    honest("28.3", "the tables, math.ceil, dtype sizes", lambda: K(kv_usage_tables)),
    wrong("28.3", "held is the bound", lambda: K(kv_held_is_bound), "That is the paging bound"),
    wrong("28.3", "held at max length", lambda: K(kv_max_length), "reserved at max length"),
    wrong("28.3", "floor for the bound", lambda: K(kv_floor), "not floor"),
    wrong("28.3", "FP32 bytes", lambda: K(kv_fp32_bytes), "FP32 bytes"),
    wrong("28.3", "bytes without scales", lambda: K(kv_no_scales), "Add the scales"),
    cheat("28.3", "calls kv_usage", lambda: K(kv_via_reference), "reference", REF),
    cheat("28.3", "calls kv_bytes_per_token", lambda: K(kv_via_bytes_per_token), "reference", REF),
    cheat("28.3", "the grader's _truth", lambda: K(kv_via_truth), "reference", REF),
    cheat("28.3", "torch", lambda: K(kv_torch), "torch", FORBID),
    cheat(
        "28.3",
        "empties the engine after one answer",
        lambda: K(kv_clears_the_engine),
        "never change it",
    ),
    cheat("28.3", "a bound forged upwards", lambda: K(kv_forged_bound), "bound = "),
    honest("28.4", "the lab's pipeline", lambda: R(report)),
    honest("28.4", "np.quantile, a usage log, its own pieces", lambda: R(report_quantiles)),
    wrong("28.4", "the FP32 loss as INT8's", lambda: R(report_fp32_loss), "That is the FP32 loss"),
    wrong("28.4", "a mean for the p99", lambda: R(report_means), "Percentiles"),
    wrong("28.4", "the reserved peak", lambda: R(report_reserved_peak), "max-length reservation"),
    cheat("28.4", "calls capstone_report", lambda: R(report_via_reference), "reference", REF),
    cheat("28.4", "figures typed in", lambda: R(report_typed), "matched on seed 0"),
    cheat("28.4", "the grader's no_cache_work", lambda: R(report_via_truth), "reference", REF),
    cheat("28.4", "torch", lambda: R(report_torch), "torch", FORBID),
    cheat("28.4", "figures whose == says yes", lambda: R(report_always_equal), "plain value"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
