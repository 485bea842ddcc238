"""Graders of exercises 23.4 (ZeRO memory per rank) and 23.5 (ZeRO-3 gather-on-use).

23.4: the learner's ``zero_bytes(psi, n, stage)`` against the closed forms written here, the
paper's Fig. 1 (7.5B parameters, N_d = 64: 120, 31.4, 16.6, 1.9 GB) and the bytes a
:class:`~minitorch.parallel.zero.ZeroRank` actually holds after a step on SimWorld.

23.5: the learner's ``zero3_forward(store, x)`` runs on 4 simulated ranks of ZeRO-3; the
output must equal the unsharded forward, every rank's PEAK bytes must stay within its shards
plus two full layers (gather a layer, use it, free it), and each rank must send exactly one
all-gather's worth of every layer (Ψ (N-1)/N fp16 elements). Each rank runs in its own
forked process (:func:`a2s.checks.harness.run_ranks`): the bytes are the router's
record in the grader's process. On two 16-layer cases every allocation of the rank's
forward is measured with tracemalloc in that process (the shards are built before it
starts; the learner's code may not call tracemalloc): at most 12 fp16 layers' worth beyond
the shards (three float64 working copies of one layer), so a copy of every gathered layer
fails whatever the store's own counter says.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, guarded, plain
from a2s.checks.errors import CheckFailure, StudentError
from a2s.checks.harness import run_ranks
from minitorch.comm.simworld import SimWorld
from minitorch.parallel.zero import ZeroRank, zero3_train_step

__all__ = ["check_zero3_forward", "check_zero_bytes", "measured_bytes"]

K = 12


def _formula(psi: float, n: int, stage: int) -> float:
    per = [(4 + K) * psi, 4 * psi + K * psi / n, 2 * psi + (2 + K) * psi / n, (4 + K) * psi / n]
    return per[stage]


def measured_bytes(n: int, stage: int, shapes: list[tuple[int, int]]) -> int:
    """Bytes rank 0 of ``n`` holds after one ZeRO step of a tanh MLP (run on SimWorld)."""
    gen = np.random.default_rng(23)
    params = [gen.standard_normal(s) * 0.3 for s in shapes]
    x = gen.standard_normal((2 * n, shapes[0][0]))
    y = gen.standard_normal((2 * n, shapes[-1][1]))

    def rank(comm: Any) -> int:
        store = ZeroRank(comm, params, stage)
        rows = np.array_split(np.arange(len(x)), n)[comm.rank]
        zero3_train_step(store, x[rows], y[rows])
        return store.memory_bytes()

    return int(SimWorld(n).run(rank)[0])


_HINTS = {
    0: "Stage 0 is plain DDP: 2 (fp16 weights) + 2 (fp16 grads) + K bytes per parameter.",
    1: "Stage 1 shards only the K bytes of optimizer state: 4 Ψ + K Ψ / N.",
    2: "Stage 2 also shards the fp16 gradients: 2 Ψ + (2 + K) Ψ / N.",
    3: "Stage 3 shards everything: (2 + 2 + K) Ψ / N.",
}


@grader(
    "23.4",
    blocks=(
        "minitorch.parallel.zero:zero_bytes",
        "minitorch.parallel.zero:ZeroRank.memory_bytes",
        "a2s.checks.lab23.memory:_formula",  # the grader's own closed forms
        "a2s.checks.lab23.memory:measured_bytes",
    ),
    hand="measure",
)
def check_zero_bytes(zero_bytes: Callable[..., Any]) -> str:
    """Exercise 23.4: model-state bytes per rank of ZeRO stage 0-3 (K = 12)."""
    fig1 = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
    for stage, gb in fig1.items():
        got = plain(zero_bytes(7.5e9, 64, stage), what="bytes", case=f"Fig. 1 stage {stage}")
        assert_true(
            isinstance(got, (int, float)) and round(got / 1e9, 1) == gb,
            f"[ZeRO paper Fig. 1, Ψ=7.5B, N=64, stage {stage}] got {got!r} bytes, the paper "
            f"shows {gb} GB. {_HINTS[stage]}",
        )
    shapes = [(8, 16), (16, 16), (16, 8)]
    psi = sum(a * b for a, b in shapes)
    cases = [(n, s, f"measured on SimWorld, N={n}") for n in (4, 8) for s in range(4)]
    gen = fresh_rng("23.4")
    for _ in range(6):
        psi_f, n, s = (
            int(gen.integers(1, 10**12)),
            int(gen.integers(1, 1025)),
            int(gen.integers(0, 4)),
        )
        cases.append((n, s, fresh(f"Ψ={psi_f}, N={n}")))
        got = plain(zero_bytes(psi_f, n, s), what="bytes", case=cases[-1][2])
        want = _formula(psi_f, n, s)
        assert_true(
            isinstance(got, (int, float)) and abs(got - want) <= 1e-9 * want,
            f"[{cases[-1][2]}, stage {s}] got {got!r}, expected {want!r}. {_HINTS[s]}",
        )
    for n, s, label in cases[:8]:
        held = measured_bytes(n, s, shapes)
        got = plain(zero_bytes(psi, n, s), what="bytes", case=label)
        assert_true(
            isinstance(got, (int, float)) and got == held == _formula(psi, n, s),
            f"[{label}, Ψ={psi}, stage {s}] you predict {got!r} bytes; a rank holds {held}. "
            f"{_HINTS[s]}",
        )
    return (
        "Fig. 1 reproduced (120 / 31.4 / 16.6 / 1.9 GB); 8 SimWorld runs hold exactly the "
        f"formula (N=8, stage 3: {measured_bytes(8, 3, shapes)} B of {_formula(psi, 1, 0):.0f})"
    )


_NEVER_FREED = (
    "Your rank held {held} gathered layers at once: gather a layer just before its matmul "
    "and store.free(i) right after, so only about one full layer is ever resident."
)


_BLOCKS = ("minitorch.parallel.zero:zero3_forward", "minitorch.parallel.zero:zero3_train_step")


def _layers_only(store: ZeroRank) -> Any:
    """What the learner's forward gets: ``shapes``, ``gather(i)``, ``free(i)``; the rank's
    shards, communicator and memory counters stay out of reach (a peak cannot be reset)."""

    class Store:
        __slots__ = ()
        shapes = tuple(store.shapes)

        def gather(self, i: int) -> np.ndarray:
            return store.gather(i)

        def free(self, i: int) -> None:
            store.free(i)

        def __repr__(self) -> str:
            return f"<ZeRO-3 store: {len(store.shapes)} layers, rank {store.comm.rank}>"

    return Store()


_COPIES = (
    "a rank allocated {held} full fp16 layers' worth beyond its shards at once (every "
    "allocation measured with tracemalloc in the rank's process; the budget is {limit}): a "
    "copy of every gathered "
    "layer, in any dtype, defeats ZeRO-3 even when store.free(i) is called. Compute each "
    "layer from store.gather(i) and let the copy go before the next one."
)
_DEEP = 16  # layers of the measured cases: a copy of each is far above the budget
_ALLOC_LAYERS = (
    12  # fp16 layers per rank (measured: gather-use-free 3.6, float64 5.7, a copy of each 34)
)


class _Shape:
    """What ZeroRank reads of its communicator at construction (rank and world size)."""

    def __init__(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size


def _measured(student: Any, stores: list[ZeroRank], x: np.ndarray) -> Callable[..., dict]:
    """The rank program: the learner's forward on this rank's store, every allocation it makes
    measured with tracemalloc in the rank's own process (the shards exist before it starts;
    the learner's code may not call tracemalloc: the watch forbids it)."""

    def rank(comm: Any) -> dict:
        import tracemalloc

        store = stores[comm.rank]
        store.comm = comm
        view = _layers_only(store)
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = student(view, x)
        allocated = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.stop()
        base = sum(a.nbytes for a in (*store.p16, *store.g16, *store.master, *store.m, *store.v))
        return {"out": out, "allocated": allocated, "peak": store.peak_bytes, "base": base}

    return rank


@grader("23.5", blocks=_BLOCKS, hand="ranks")
def check_zero3_forward(zero3_forward: Callable[..., Any]) -> str:
    """Exercise 23.5: ZeRO-3 forward that gathers each layer on use and frees it."""
    specs = [("4 layers of 16x16, N=4", [16, 16, 16, 16, 16], 4, 0)]
    specs.append(("widths 8-24-24-24-8, N=2", [8, 24, 24, 24, 8], 2, 1))
    specs += [(f"{_DEEP} layers of 256x256, N={n}", [256] * (_DEEP + 1), n, 7 + n) for n in (2, 4)]
    gen = fresh_rng("23.5")
    for _ in range(2):
        w = [4 * int(v) for v in gen.integers(2, 7, 5)]
        n = int(gen.choice([2, 4]))
        specs.append((fresh(f"widths={w}, N={n}"), w, n, int(gen.integers(0, 2**31))))
    raw = getattr(zero3_forward, "fn", zero3_forward)
    worst = 0.0
    for label, widths, n, seed in specs:
        g = np.random.default_rng(seed)
        params = [g.standard_normal((a, b)) / np.sqrt(a) for a, b in itertools.pairwise(widths)]
        x = g.standard_normal((3, widths[0]))
        # the shards exist before the measured run: only what the forward allocates counts
        shapes: list[Any] = [_Shape(r, n) for r in range(n)]  # ZeroRank reads rank and size only
        stores = [ZeroRank(s, params, 3) for s in shapes]
        student = guarded(raw, "23.5", _BLOCKS, forbid=("torch", "tracemalloc"))
        try:
            run = run_ranks(_measured(student, stores, x), SimWorld(n), [()] * n)
        except (StudentError, CheckFailure) as exc:  # name the case
            exc.args = (f"[{label}] {exc}",)
            raise
        world, recs = run.world, run.results
        outs = [rec["out"] for rec in recs]
        want = np.asarray(x, np.float32)
        for p in params:
            want = np.tanh(want @ p.astype(np.float32).astype(np.float16).astype(np.float32))
        for r, out in enumerate(outs):
            got = plain(out, what="output", case=label)
            if isinstance(got, (list, tuple)):
                try:
                    got = np.asarray(got, dtype=np.float64)
                except (TypeError, ValueError):
                    pass
            if not (
                isinstance(got, np.ndarray)
                and got.shape == want.shape
                and np.allclose(got, want, rtol=1e-5, atol=1e-6)
            ):
                raise CheckFailure(
                    f"[{label}] rank {r}: output differs from the unsharded forward "
                    "tanh(... tanh(x @ W0) ... @ W_last) with the fp16 weights of store.gather."
                )
        layer = max(p.size for p in params) * 2
        for rec in recs:
            extra = rec["peak"] - rec["base"]
            if extra > 2 * layer:
                raise CheckFailure(
                    f"[{label}] peak memory {rec['peak']} B, budget {rec['base'] + 2 * layer} B. "
                    + _NEVER_FREED.format(held=round(extra / layer, 1))
                )
            worst = max(worst, extra / layer)
        most = max(rec["allocated"] for rec in recs)
        if len(params) == _DEEP and most > _ALLOC_LAYERS * layer:
            raise CheckFailure(
                f"[{label}] right output, but "
                + _COPIES.format(held=round(most / layer, 1), limit=_ALLOC_LAYERS)
            )
        want_sent = [sum(2 * (p.size - p.size // n) for p in params)] * n
        sent = list(world.bytes_sent)
        if sent != want_sent:
            raise CheckFailure(
                f"[{label}] right output, but the ranks sent {sent} bytes where gathering each "
                f"layer once sends {want_sent}. Gather every layer exactly once in the forward."
            )
    return (
        f"{len(specs)} ZeRO-3 forwards (2 fresh) equal the unsharded one; peak at most "
        f"{worst:.1f} full layer(s) above the shards, every allocation measured on the "
        f"{_DEEP}-layer cases; one all-gather per layer"
    )
