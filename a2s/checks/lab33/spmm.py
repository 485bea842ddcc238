"""Grader of exercise 33.2: the 2:4 sparse matmul, its bytes and multiplies counted here.

``sparse24_matmul(hbm, mul, n, out, cols)`` computes ``y = x @ W.T`` from the compressed weight
(``values``, ``meta``) held in a counted HBM and stores ``y``. ``hbm.load(name, start, stop)``
returns rows ``start:stop`` of ``x``, ``values``, ``meta`` (or ``w``, the dense masked weight a
dense kernel would read) and counts their bytes; ``hbm.store(start, block)`` writes columns
``start:start + k`` of ``y``; ``mul(a, b)`` is the multiplier, counting one multiply per
element of the broadcast product. The learner's function runs in a forked child
(:func:`~a2s.checks.harness.run_apart`); the HBM, its counters and the multiply count live in
this process, so rewriting a counter in the child changes nothing here. Truth: a loop over
the kept weights (``_truth.sparse_product_loop``) and the closed-form budget
(``_truth.sparse_budget``): x, the values and the index bytes read once, y written once,
``n out in / 2`` multiplies. The sum of every product ``mul`` returned must equal the sum of
``y`` (each product ends in ``y`` once), and the operands ``mul`` multiplied must be, as a
multiset of pairs, every kept value times the activation its index names: a ``y`` computed
without ``mul``, the count and the sum made up with other products, is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import close
from a2s.checks.core import CheckFailure, fresh_rng, grader, rng
from a2s.checks.harness import remote, run_apart
from a2s.checks.lab33._truth import (
    compress_loop,
    decompress_loop,
    positions_loop,
    sparse_budget,
    sparse_product_loop,
)
from a2s.checks.values import plain

__all__ = ["ROWS", "check_sparse24_matmul"]

_S = "minitorch.model.sparse24"
_IO = "minitorch.kernels.io_model"
ROWS = 16  # rows of the compressed weight one load may bring into SRAM
_KEEP = 1 << 20  # operands of at most this many multiplies are kept for the pairs check


class _Memory:
    """The grader's HBM: the arrays, the bytes read per name, y and its writes."""

    def __init__(self, x: np.ndarray, values: np.ndarray, meta: np.ndarray, w: np.ndarray):
        self.arrays = {"x": x, "values": values, "meta": meta, "w": w}
        self.reads = dict.fromkeys(self.arrays, 0)
        self.y = np.zeros((x.shape[0], values.shape[0]), dtype=x.dtype)
        self.written = np.zeros(values.shape[0], dtype=np.int64)
        self.writes, self.multiplies, self.problem = 0, 0, ""
        self.product_sum, self.product_abs = 0.0, 0.0  # of every product mul handed out
        self.operands: list[tuple[np.ndarray, np.ndarray]] = []  # every (a, b) mul multiplied

    def _fail(self, text: str) -> None:
        self.problem = self.problem or text
        raise CheckFailure(text)

    def load(self, name: Any, start: Any = 0, stop: Any = None) -> np.ndarray:
        if name not in self.arrays:
            self._fail(f"hbm.load({name!r}): HBM holds {sorted(self.arrays)}.")
        a = self.arrays[str(name)]
        try:
            lo, hi = int(start), a.shape[0] if stop is None else min(int(stop), a.shape[0])
        except (TypeError, ValueError):
            self._fail("hbm.load(name, start, stop): start and stop are row numbers.")
        if not 0 <= lo < hi <= a.shape[0]:
            self._fail(f"hbm.load({name!r}, {start}, {stop}): rows 0..{a.shape[0]} only.")
        if name in ("values", "meta", "w") and hi - lo > ROWS:
            self._fail(
                f"hbm.load({name!r}, {lo}, {hi}): SRAM holds {ROWS} weight rows at a time; "
                "stream the weight in blocks of at most 16 rows."
            )
        block = a[lo:hi].copy()
        self.reads[str(name)] += block.nbytes
        return block

    def store(self, start: Any, block: Any) -> None:
        b = np.asarray(block)
        try:
            lo = int(start)
        except (TypeError, ValueError):
            self._fail("hbm.store(start, block): start is the first column of y.")
        n, out = self.y.shape
        if b.ndim != 2 or b.shape[0] != n or not 0 <= lo < lo + b.shape[1] <= out:
            self._fail(
                f"hbm.store({start}, block of shape {b.shape}): block is (n, k) = ({n}, k), "
                f"columns start..start + k of y ({out} columns)."
            )
        self.y[:, lo : lo + b.shape[1]] = b
        self.written[lo : lo + b.shape[1]] += 1
        self.writes += b.shape[0] * b.shape[1] * self.y.itemsize

    def mul(self, a: Any, b: Any) -> np.ndarray:
        try:
            prod = np.multiply(np.asarray(a, dtype=self.y.dtype), np.asarray(b, self.y.dtype))
        except (TypeError, ValueError):
            self._fail("mul(a, b) multiplies two arrays of numbers (broadcast).")
        self.multiplies += int(prod.size)
        if self.multiplies <= _KEEP:  # past that the count fails anyway
            a2, b2 = np.broadcast_arrays(np.asarray(a, self.y.dtype), np.asarray(b, self.y.dtype))
            self.operands.append((a2.ravel().copy(), b2.ravel().copy()))
        self.product_sum += float(prod.sum(dtype=np.float64))
        self.product_abs += float(np.abs(prod).sum(dtype=np.float64))
        return prod


def _case(g: np.random.Generator, n: int, out: int, cols: int, dtype: Any) -> tuple[Any, ...]:
    x = g.standard_normal((n, cols)).astype(dtype)
    values, meta = compress_loop(g.standard_normal((out, cols)).astype(dtype))
    return x, values, meta


def _cases() -> list[tuple[str, tuple[Any, ...]]]:
    g, f = rng(3302), fresh_rng("33.2")
    n, out = int(f.integers(1, 6)), int(f.integers(17, 40))
    return [
        ("n 4, 8 x 16 float64", _case(g, 4, 8, 16, np.float64)),
        ("n 3, 20 x 32 float32: a short last block", _case(g, 3, 20, 32, np.float32)),
        ("one row of x, 16 x 8", _case(g, 1, 16, 8, np.float64)),
        (fresh(f"n {n}, {out} x 24 float32"), _case(f, n, out, 24, np.float32)),
    ]


def _budget_problem(mem: _Memory, want: dict[str, int]) -> str:
    if mem.reads["w"]:
        return (
            f"you read {mem.reads['w']} bytes of the dense weight w: a 2:4 kernel reads only "
            "the kept values and their 2-bit indices."
        )
    for name in ("x", "values", "meta"):
        if mem.reads[name] > want[name]:
            return (
                f"{name} read {mem.reads[name]} bytes, {want[name]} is the budget: load each of "
                "x, values and meta once (x stays in SRAM for every weight block)."
            )
        if mem.reads[name] < want[name]:
            return f"{name}: only {mem.reads[name]} of its {want[name]} bytes were loaded."
    if mem.multiplies > want["multiplies"]:
        extra = " (the dense count)" if mem.multiplies == 2 * want["multiplies"] else ""
        return (
            f"{mem.multiplies} multiplies{extra}, the 2:4 kernel needs "
            f"{want['multiplies']} = n out in / 2: gather the one activation each kept value's "
            "index names, and never multiply the pruned zeros."
        )
    if mem.multiplies < want["multiplies"]:
        return (
            f"mul counted {mem.multiplies} multiplies, {want['multiplies']} are needed: every "
            "multiply of the kernel goes through mul (n out in / 2 of them)."
        )
    if np.any(mem.written != 1):
        return "every column of y is stored exactly once (hbm.store(start, block))."
    total = float(mem.y.sum(dtype=np.float64))
    if abs(total - mem.product_sum) > 1e-5 * max(mem.product_abs, 1.0):
        return (
            f"the entries of y sum to {total:.6g}, the products mul returned to "
            f"{mem.product_sum:.6g}: y is the sum of the products your kernel asked mul for, "
            "each product summed into y once (every multiply goes through mul)."
        )
    return ""


def _pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The (smaller, larger) operand pairs of products, sorted: a multiset to compare."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((hi, lo))
    return np.stack([lo[order], hi[order]])


def _operands_problem(mem: _Memory, x: np.ndarray, values: np.ndarray, meta: np.ndarray) -> str:
    """Every product mul computed must be one kept weight times the activation it names."""
    pos = positions_loop(meta)
    slots = np.arange(values.shape[1])
    col = 4 * (slots // 2)[None, :] + pos  # (out, in/2): the column each kept value multiplies
    want = _pairs(
        np.broadcast_to(x[:, col], (x.shape[0], *col.shape)).ravel(),
        np.broadcast_to(values[None], (x.shape[0], *col.shape)).ravel(),
    )
    a = np.concatenate([p[0] for p in mem.operands]) if mem.operands else np.zeros(0)
    b = np.concatenate([p[1] for p in mem.operands]) if mem.operands else np.zeros(0)
    got = _pairs(a.astype(x.dtype), b.astype(x.dtype))
    if got.shape == want.shape and np.array_equal(got, want):
        return ""
    return (
        "mul was asked for other products than the kernel's: each kept value values[o, s] "
        "times the activation x[:, 4 (s // 2) + index] its index names, for every row of x, "
        "once each (a y computed outside mul, with made-up products to match the count and "
        "the sum, is refused)."
    )


def _drive(student: Callable[..., Any], hbm: Any, mul: Any, shape: tuple[int, ...]) -> None:
    student(hbm, mul, *shape)


@grader("33.2", blocks=(_S, _IO), hand="budget")
def check_sparse24_matmul(sparse24_matmul: Callable[..., Any]) -> str:
    """Exercise 33.2: sparse24_matmul(hbm, mul, n, out, cols) stores y = x @ W.T."""
    for label, (x, values, meta) in _cases():
        cols = x.shape[1]
        w = decompress_loop(values, meta, cols).astype(x.dtype)
        mem = _Memory(x, values, meta, w)
        hbm, entries = remote(mem, ["load", "store"], "hbm")
        mul, more = remote(mem, ["mul"], "sram")
        shape = (x.shape[0], values.shape[0], cols)
        try:
            run_apart(_drive, sparse24_matmul, hbm, mul.mul, shape, serve={**entries, **more})
        except CheckFailure:
            if not mem.problem:
                raise
            raise CheckFailure(f"[{label}] {mem.problem}") from None
        if mem.problem:
            raise CheckFailure(f"[{label}] {mem.problem}")
        want = sparse_budget(*shape, x.itemsize)
        problem = _budget_problem(mem, want)
        if problem:
            raise CheckFailure(f"[{label}] {problem}")
        close(
            plain(mem.y.astype(np.float64)),
            sparse_product_loop(x, values, meta),
            case=label,
            what="y",
            rtol=1e-5 if x.dtype == np.float32 else 1e-10,
            hint="The kept value at slot s of a row sits in column 4 (s // 2) + index: "
            "unpack the 2-bit indices of meta as you packed them in 33.1.",
        )
        problem = _operands_problem(mem, x, values, meta)
        if problem:
            raise CheckFailure(f"[{label}] {problem}")
    b = sparse_budget(16, 4096, 4096, 2)
    dense = 16 * 4096 * 4096
    weight = b["values"] + b["meta"]
    return (
        f"4 shapes (1 fresh): y equals the product of the masked weight, with x, values and "
        f"indices read once and exactly n out in / 2 multiplies; at 4096 x 4096 FP16 the "
        f"kernel reads {weight / 2**20:.2f} MiB of weight (dense 32 MiB) and does "
        f"{b['multiplies'] / dense:.2g} of the dense multiplies"
    )
