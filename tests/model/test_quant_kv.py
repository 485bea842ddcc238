"""The INT8 KV cache: half a step of error per vector, half the bytes of FP16."""

from __future__ import annotations

import numpy as np

from minitorch.model.quant_kv import Int8KVCache


def test_round_trip_and_bytes():
    g = np.random.default_rng(0)
    cache = Int8KVCache(heads=4, dim=64, capacity=16)
    ks, vs = g.standard_normal((10, 4, 64)), g.standard_normal((10, 4, 64)) * 3
    for k, v in zip(ks, vs, strict=True):
        cache.append(k, v)
    for got, want in ((cache.keys(), ks), (cache.values(), vs)):
        step = np.abs(want).max(-1, keepdims=True) / 127
        assert np.all(np.abs(got - want) <= step / 2 * (1 + 1e-5))
    fp16 = 2 * ks.size * 2
    assert cache.nbytes() < 0.55 * fp16
