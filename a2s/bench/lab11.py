"""Lab 11 experiments: what INT4 weights cost in time on a CPU, and what GPTQ costs to run.

1. Dequantizing matmul: ``x @ W^T`` with W stored as packed INT4 (unpack, dequantize by
   blocks of rows, multiply) against the FP32 matmul, for a decode-sized batch of 8 tokens
   and a 1024 x 1024 layer. In numpy the unpacking is extra work, so INT4 is slower here; on
   a GPU decode is memory-bound and reading 8x fewer bytes is what makes it faster.
2. Quantization time: GPTQ (one column at a time, with error feedback) against
   round-to-nearest on a 256 x 256 layer with 512 calibration rows.

Lab: 11_quantization
"""

from __future__ import annotations

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.model.quant import Quantized, dequant_matmul, pack_int4, quantize, rtn, unpack_int4
from minitorch.model.quant_gptq import gptq


@register
def int4_dequant_matmul() -> list[Figure]:
    g = np.random.default_rng(0)
    w = g.standard_normal((1024, 1024)).astype(np.float32)
    x = g.standard_normal((8, 1024)).astype(np.float32)
    qt = quantize(w, 4, granularity=128)
    packed = pack_int4(qt.q)

    def fp32() -> None:
        x @ w.T

    def int4() -> None:
        q = unpack_int4(packed, signed=False)
        dequant_matmul(x, Quantized(q, qt.scale, qt.zero, 4, 128))

    with one_thread():
        a, b = alternate(int4, fp32, repeats=10, warmup=2)
    return [
        Figure("INT4 dequant matmul / FP32 matmul (8 x 1024 x 1024)", a / b, "x", "FP32 = 1.0"),
        Figure("weight bytes, FP32 / packed INT4 + scales", w.nbytes / qt.nbytes(), "x", "bytes"),
    ]


@register
def gptq_vs_rtn_time() -> list[Figure]:
    g = np.random.default_rng(1)
    w = g.standard_normal((256, 256))
    x = g.standard_normal((512, 256))

    def run_gptq() -> None:
        gptq(w, x, 4, 64)

    def run_rtn() -> None:
        rtn(w, 4, granularity=64)

    with one_thread():
        a, b = alternate(run_gptq, run_rtn, repeats=5, warmup=1)
    return [Figure("GPTQ / RTN quantization time (256 x 256, 512 rows)", a / b, "x", "RTN = 1.0")]
