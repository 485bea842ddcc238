"""The quantized serving glue against plain loops and lab 11's contiguous INT8 KV cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a2s.checks.lab28._truth import direct_generate, no_cache_work
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.quant_kv import Int8KVCache
from minitorch.runtime.engine import CostModel
from minitorch.runtime.paged_attention import paged_attention
from minitorch.runtime.quant_serving import (
    LAB_SERVING,
    Int8PagedKVCache,
    baseline_work,
    capstone_report,
    capstone_workload,
    kv_bytes_per_token,
    kv_usage,
    quant_engine,
    quantize_kv,
    served_work,
)

pytestmark = pytest.mark.lab28


@pytest.fixture(scope="module")
def model():
    return load_pretrained()


def test_quantize_kv_matches_lab11_cache_and_half_step_error():
    x = np.random.default_rng(0).standard_normal((5, 2, 16)).astype(np.float32)
    q, s = quantize_kv(x)
    ref = Int8KVCache(2, 16, 5)
    for t in range(5):
        ref.append(x[t], x[t])
    np.testing.assert_array_equal(q, ref.k[:5])
    np.testing.assert_array_equal(s, ref.k_scale[:5])
    assert np.all(np.abs(q * s[..., None] - x) <= s[..., None] / 2 + 1e-7)


def test_int8_paged_cache_reads_back_through_block_tables():
    g = np.random.default_rng(1)
    cache = Int8PagedKVCache(n_layer=2, num_blocks=6, block_size=4, n_kv_head=2, head_dim=8)
    k, v = g.standard_normal((2, 7, 2, 8)).astype(np.float32)
    table = [5, 2]
    slots = np.array([table[p // 4] * 4 + p % 4 for p in range(7)])
    cache.write(1, slots, k, v)
    kq, ks = quantize_kv(k)
    got = cache.k[1].reshape(-1, 2, 8)[slots]
    np.testing.assert_allclose(got, kq * ks[..., None], rtol=0, atol=1e-7)
    assert cache.nbytes() == 2 * (2 * 6 * 4 * 2 * 8) + 2 * (2 * 6 * 4 * 2 * 4)
    cache.copy_block(5, 0)
    np.testing.assert_array_equal(cache.k_q[:, 0], cache.k_q[:, 5])


def test_paged_attention_over_int8_cache_equals_sdpa_on_dequantized_kv():
    g = np.random.default_rng(2)
    cache = Int8PagedKVCache(1, 8, 4, 2, 16)
    k, v = g.standard_normal((2, 10, 2, 16)).astype(np.float32)
    q = g.standard_normal((3, 4, 16)).astype(np.float32)
    table = [7, 1, 4]
    cache.write(0, np.array([table[p // 4] * 4 + p % 4 for p in range(10)]), k, v)
    out = paged_attention(q, cache.k[0], cache.v[0], table, 10)
    (kq, ks), (vq, vs) = quantize_kv(k), quantize_kv(v)
    kd = torch.tensor(kq * ks[..., None]).repeat_interleave(2, 1).permute(1, 0, 2)
    vd = torch.tensor(vq * vs[..., None]).repeat_interleave(2, 1).permute(1, 0, 2)
    qt = torch.tensor(q).permute(1, 0, 2)
    mask = torch.arange(10)[None, :] <= torch.arange(7, 10)[:, None]
    want = torch.nn.functional.scaled_dot_product_attention(qt, kd, vd, attn_mask=mask)
    np.testing.assert_allclose(out, want.permute(1, 0, 2).numpy(), rtol=1e-5, atol=1e-5)


def test_quant_engine_equals_direct_int8_generation(model):
    reqs, _ = capstone_workload(6, float("inf"), seed=3)
    engine = quant_engine(model, num_blocks=12, block_size=4, token_budget=8, max_num_seqs=4)
    result = engine.run(reqs)
    state = engine.runner.model.state_dict()
    for req, out in zip(reqs, result.outputs, strict=True):
        tokens, _ = direct_generate(state, model.config, list(req.prompt), req.max_new_tokens)
        assert out == tokens


def test_work_counts_against_token_by_token_loops(model):
    reqs, _ = capstone_workload(10, 100.0, seed=1)
    p, o = [len(r.prompt) for r in reqs], [r.max_new_tokens for r in reqs]
    assert baseline_work(reqs) == no_cache_work(p, o)
    result = quant_engine(model, cost=CostModel(), **LAB_SERVING).run(reqs)
    passes, tokens = served_work(result)
    assert passes == len(result.steps)
    # no preemption here: each prompt once, each output but the last fed back once
    assert result.preemptions == 0 and tokens == sum(p) + sum(o) - len(reqs)


def test_kv_usage_within_paging_bound_and_bytes(model):
    reqs, _ = capstone_workload(12, float("inf"), seed=2)
    engine = quant_engine(model, num_blocks=20, block_size=8, token_budget=16, max_num_seqs=8)
    inner, seen = engine.step_fn, []

    def step(runner, work):
        seen.append(kv_usage(engine))
        return inner(runner, work)

    engine.step_fn = step
    engine.run(reqs)
    per_token = kv_bytes_per_token(model.config)
    assert per_token == 2 * 2 * 2 * (16 + 4)
    assert kv_bytes_per_token(model.config, int8=False) == 2 * 2 * 2 * 16 * 4
    for u in seen:
        assert u["held"] <= u["bound"] <= u["reserved"]
        assert u["bytes"] == u["held"] * 8 * per_token


def test_capstone_workload_lengths_and_answers():
    reqs, answers = capstone_workload(50, 10.0, seed=0)
    arrivals = [r.arrival for r in reqs]
    assert arrivals == sorted(arrivals) and arrivals[0] > 0
    for r, a in zip(reqs, answers, strict=True):
        assert len(a) <= r.max_new_tokens <= len(a) + 10
        assert len(r.prompt) + r.max_new_tokens <= 32


def test_capstone_report_is_reproducible_and_beats_the_baseline(model):
    a, b = capstone_report(model, 5), capstone_report(model, 5)
    assert a == b
    assert a["pass_speedup"] >= 3 and a["token_speedup"] >= 3
    assert a["kv_peak_blocks"] <= a["kv_reserved_blocks"]
    assert a["ttft_p50"] <= a["ttft_p99"] and a["tpot_p50"] <= a["tpot_p99"]
    assert a["accuracy_served"] >= 0.9 and abs(a["loss_int8"] - a["loss_fp32"]) < 0.01
