"""Grader of exercise 05.1: FLOPs and bytes of GEMV, softmax, layer norm and attention.

Ground truth is a plain-loop counter: each op is run element by element in Python on a small
shape, adding one to a counter per floating-point operation it performs, and the bytes are
tallied operand by operand (each input read once, each output written once).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import CheckFailure, grader, plain
from a2s.checks.table import Table

__all__ = ["check_op_costs"]

_REF = "minitorch.hardware.intensity"
BLOCKS = tuple(
    f"{_REF}:{name}"
    for name in (
        "gemv_cost",
        "softmax_cost",
        "layernorm_cost",
        "attention_cost",
        "OpCost",
        "gemm_cost",
    )
)  # gemm_cost(m, 1, n) is a GEMV
# the grader's own loop counters are ground truth: blocked like the reference while students run
# (a module ``forbid`` would switch on the profile hook, whose code keys confuse every
# dataclass ``__init__`` with the blocked ``OpCost.__init__``)
TRUTH_BLOCKS = tuple(
    f"{__name__}:{name}"
    for name in ("_gemv", "_softmax_row", "_softmax", "_layernorm", "_attention")
)


# --------------------------------------------------------------------------- loop counters
def _gemv(m: int, n: int, s: int) -> tuple[int, int]:
    flops = 0
    for _ in range(m):
        for _ in range(n):
            flops += 2  # acc += a[i, j] * x[j]
    return flops, s * (m * n) + s * n + s * m  # read A, read x, write y


def _softmax_row(c: int) -> int:
    flops = 0
    for _ in range(c):
        flops += 1  # running max: one comparison
    for _ in range(c):
        flops += 3  # e = exp(x - max): subtract, exp; total += e: add
    for _ in range(c):
        flops += 1  # y = e / total
    return flops


def _softmax(r: int, c: int, s: int) -> tuple[int, int]:
    flops = sum(_softmax_row(c) for _ in range(r))
    return flops, s * r * c + s * r * c  # read x, write y


def _layernorm(r: int, c: int, s: int) -> tuple[int, int]:
    flops = 0
    for _ in range(r):
        for _ in range(c):
            flops += 1  # total += x
        flops += 1  # mean = total / c
        for _ in range(c):
            flops += 3  # d = x - mean; sq += d * d
        flops += 1  # var = sq / c
        flops += 3  # rstd = 1 / sqrt(var + eps)
        for _ in range(c):
            flops += 4  # (x - mean) * rstd * gamma + beta
    return flops, s * r * c + s * c + s * c + s * r * c  # x, gamma, beta in; y out


def _attention(n: int, d: int, s: int, materialized: bool) -> tuple[int, int]:
    flops = 0
    for _ in range(n):  # S = Q K^T
        for _ in range(n):
            for _ in range(d):
                flops += 2
    flops += sum(_softmax_row(n) for _ in range(n))  # P = softmax(S), row by row
    for _ in range(n):  # O = P V
        for _ in range(d):
            for _ in range(n):
                flops += 2
    moved = 3 * n * d * s + n * d * s  # read Q, K, V; write O
    if materialized:
        moved += 2 * n * n * s + 2 * n * n * s  # S written, read back; P written, read back
    return flops, moved


# --------------------------------------------------------------------------- mistakes
def _flops_is(f: Callable[..., int]) -> Callable[..., bool]:
    return lambda got, *args: got[0] == f(*args)


def _bytes_is(f: Callable[..., int]) -> Callable[..., bool]:
    return lambda got, *args: got[1] == f(*args)


_MISTAKES: dict[str, tuple[Mistake, ...]] = {
    "gemv": (
        Mistake(
            "count the add as well as the multiply of each step of the dot product.",
            when=_flops_is(lambda m, n, s: m * n),
        ),
        Mistake(
            "the matrix is not all: the kernel also reads x and writes y.",
            when=_bytes_is(lambda m, n, s: s * m * n),
        ),
    ),
    "softmax": (
        Mistake(
            "a stable softmax also finds each row's max (one compare per element).",
            when=lambda got, r, c, s: got[0] in (3 * r * c, 4 * r * c),
        ),
        Mistake(
            "count the write of the output too, not only the read of the input.",
            when=_bytes_is(lambda r, c, s: s * r * c),
        ),
    ),
    "layernorm": (
        Mistake(
            "count the per-row scalar ops too: two divides and 1/sqrt(var + eps).",
            when=_flops_is(lambda r, c, s: 8 * r * c),
        ),
        Mistake(
            "gamma and beta are read from memory too (c elements each).",
            when=_bytes_is(lambda r, c, s: 2 * s * r * c),
        ),
    ),
    "attention": (
        Mistake(
            "the softmax of the n x n scores costs FLOPs too (5 per score).",
            when=_flops_is(lambda n, d, s, m: 4 * n * n * d),
        ),
        Mistake(
            "fused, S and P never leave on-chip memory: only Q, K, V in and O out.",
            when=lambda got, n, d, s, m: not m and got[1] == s * (4 * n * d + 4 * n * n),
        ),
        Mistake(
            "each of S and P is written once and read back once: 4 n^2 elements.",
            when=lambda got, n, d, s, m: m and got[1] == s * (4 * n * d + 2 * n * n),
        ),
    ),
}


def _message(op: str) -> Callable[[Case, Any, Any, str], str]:
    def message(c: Case, got: Any, want: tuple[int, int], hint: str) -> str:
        if not hint:
            hint = (
                f"the loop counts {want[0]:,} FLOPs, you returned {got[0]!r}."
                if got[0] != want[0]
                else f"the kernel moves {want[1]:,} bytes, you returned {got[1]!r}."
            )
        said = f"{op}_cost returned (flops, bytes) = {got!r}"
        return f"[{c.label}] {said}, the loop counts {want}. {hint}"

    return message


def _pair(got: Any, label: str) -> tuple[Any, Any]:
    if hasattr(got, "flops") and hasattr(got, "bytes"):  # an OpCost-like object
        return plain(got.flops, case=label), plain(got.bytes, case=label)
    got = plain(got, case=label)
    if isinstance(got, np.ndarray) and got.shape == (2,):  # np.array([flops, bytes]) is a pair
        got = tuple(got.tolist())
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(f"[{label}] return a pair (flops, bytes), got {got!r}.")
    for v in got:
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise CheckFailure(
                f"[{label}] return the counts as Python ints, got {type(v).__name__} {v!r}: "
                "FLOPs and bytes are whole numbers (2 * m * n, not 2.0 * m * n or a / b)."
            )
    return got[0], got[1]


def _draw(op: str) -> Callable[[Any, int], tuple[str, tuple[Any, ...]]]:
    """One random case of ``op``; every op's draw takes the same numbers from the generator."""

    def draw(g: Any, i: int) -> tuple[str, tuple[Any, ...]]:
        a, b = (int(v) for v in g.integers(1, 14, size=2))
        s = int(g.choice([1, 2, 4, 8]))
        fused = bool(g.integers(2))  # drawn for every op, used by attention's
        args = (a, b, s, fused) if op == "attention" else (a, b, s)
        return f"{op}{args}", args

    return draw


_TEACHING = [
    ("gemv", (4, 3, 4)),
    ("gemv", (1, 1, 2)),
    ("softmax", (2, 5, 4)),
    ("softmax", (1, 1, 1)),
    ("layernorm", (3, 4, 4)),
    ("layernorm", (1, 1, 2)),
    ("attention", (4, 2, 4, False)),
    ("attention", (4, 2, 4, True)),
    ("attention", (1, 1, 2, False)),
]
_TRUTH: dict[str, Callable[..., tuple[int, int]]] = {
    "gemv": _gemv,
    "softmax": _softmax,
    "layernorm": _layernorm,
    "attention": _attention,
}


def _attention_call(student: Callable[..., Any]) -> Callable[..., Any]:
    return lambda n, d, s, materialized: student(n, d, s, materialized=materialized)


OPS = {
    op: Table(
        "05.1",
        truth=_TRUTH[op],
        named=[(f"{o}{a}", a) for o, a in _TEACHING if o == op],
        draw=_draw(op),
        seeded=3,
        fresh=2,
        mistakes=_MISTAKES[op],
        read=_pair,
        message=_message(op),
        seed=5,
        prepare=_attention_call if op == "attention" else None,
    )
    for op in _TRUTH
}


@grader("05.1", blocks=(*BLOCKS, *TRUTH_BLOCKS))
def check_op_costs(gemv_cost, softmax_cost, layernorm_cost, attention_cost) -> str:
    students = (gemv_cost, softmax_cost, layernorm_cost, attention_cost)
    count = sum(table.grade(f) for table, f in zip(OPS.values(), students, strict=True))
    fused = _pair(attention_cost(4096, 128, 2, materialized=False), "attention")
    naive = _pair(attention_cost(4096, 128, 2, materialized=True), "attention")
    i_f, i_n = fused[0] / fused[1], naive[0] / naive[1]
    return (
        f"{count} shapes match the loop counters; attention n=4096, d=128 in bf16: "
        f"{i_f:,.0f} FLOP/byte fused vs {i_n:,.0f} materialised ({math.floor(i_f / i_n)}x)"
    )
