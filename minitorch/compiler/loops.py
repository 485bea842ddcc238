"""A loop-nest IR with schedule primitives, lowered to Python/numpy source and run with ``exec``.

A :class:`Kernel` is one statement ``lhs op rhs`` over iterators with extents, every array
index an iterator plus a constant (``A[i + 1, j - 1]``). A :class:`Nest` is a kernel under a
schedule: its loops (outermost first) and, for each original iterator, an expression of the
loop variables that gives its value. The primitives return new nests and never change the
arithmetic, only the order of the iterations (Halide's algorithm / schedule split):

* ``split(i, f)``: ``i = io * f + ii`` with ``ii < f`` (a guard when ``f`` does not divide);
* ``reorder(...)``: permute the named loops among the places they hold;
* ``tile(i, j, fi, fj)``: split both, then order ``io, jo, ii, ji``;
* ``fuse(a, b)``: one loop ``a_b`` of ``ext(a) * ext(b)``, ``a = a_b // ext(b)``;
* ``unroll(v)``: the body written out once per value of ``v``;
* ``vectorize(v)``: the innermost loop becomes a numpy slice (``C[i, j0:j1] += ...``).

Lab: 15_loop_optimization_autotuning
Paper: Ragan-Kelley et al. 2013, *Halide*; Chen et al. 2018, *TVM* (schedule primitives).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

__all__ = [
    "Access",
    "Kernel",
    "Loop",
    "Nest",
    "compile_nest",
    "fuse",
    "iteration_order",
    "lower",
    "matmul",
    "nest",
    "reorder",
    "split",
    "stencil",
    "tile",
    "trace",
    "unroll",
    "vectorize",
]


@dataclass(frozen=True, slots=True)
class Access:
    """``array[index]``, each dimension one iterator plus a constant: ``(("i", 1), ("j", -1))``."""

    array: str
    index: tuple[tuple[str, int], ...]

    def render(self, at: Callable[[str, int], str]) -> str:
        return f"{self.array}[{', '.join(at(v, c) for v, c in self.index)}]"


@dataclass(frozen=True, slots=True)
class Kernel:
    """``lhs op rhs``: ``rhs`` a template on the reads (``"{0} * {1}"``), ``op`` ``=`` or ``+=``."""

    name: str
    dims: tuple[tuple[str, int], ...]  # original iterators and extents, in source order
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # arrays (argument order, memory layout)
    lhs: Access
    op: str
    reads: tuple[Access, ...]
    rhs: str

    @property
    def extents(self) -> dict[str, int]:
        return dict(self.dims)


@dataclass(frozen=True, slots=True)
class Loop:
    """One loop of a nest: ``kind`` is ``serial``, ``unroll`` or ``vector``."""

    var: str
    extent: int
    kind: str = "serial"


@dataclass(frozen=True, slots=True)
class Nest:
    """A kernel under a schedule: loops outermost first, each original iterator's expression."""

    kernel: Kernel
    loops: tuple[Loop, ...]
    bind: tuple[tuple[str, str], ...]
    guarded: frozenset[str] = frozenset()  # original iterators that may run past their extent

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(loop.var for loop in self.loops)

    def loop(self, var: str) -> Loop:
        for loop in self.loops:
            if loop.var == var:
                return loop
        raise KeyError(f"no loop {var!r} in {self.order}")


def matmul(n: int, m: int, p: int) -> Kernel:
    """``C[i, j] += A[i, k] * B[k, j]`` for ``A: (n, p)``, ``B: (p, m)``, ``C: (n, m)``."""
    return Kernel(
        "matmul",
        (("i", n), ("j", m), ("k", p)),
        (("A", (n, p)), ("B", (p, m)), ("C", (n, m))),
        Access("C", (("i", 0), ("j", 0))),
        "+=",
        (Access("A", (("i", 0), ("k", 0))), Access("B", (("k", 0), ("j", 0)))),
        "{0} * {1}",
    )


def stencil(n: int, m: int, offsets: Sequence[tuple[int, int]]) -> Kernel:
    """In place on ``A: (n, m)``: ``A[i+1, j+1] = mean of A[i+1+di, j+1+dj]`` over ``offsets``."""
    reads = tuple(Access("A", (("i", 1 + di), ("j", 1 + dj))) for di, dj in offsets)
    terms = " + ".join(f"{{{r}}}" for r in range(len(reads)))
    return Kernel(
        "stencil",
        (("i", n - 2), ("j", m - 2)),
        (("A", (n, m)),),
        Access("A", (("i", 1), ("j", 1))),
        "=",
        reads,
        f"({terms}) * {1 / len(reads)!r}",
    )


def nest(kernel: Kernel) -> Nest:
    """The unscheduled nest: one loop per iterator, in source order."""
    return Nest(
        kernel, tuple(Loop(v, e) for v, e in kernel.dims), tuple((v, v) for v, _ in kernel.dims)
    )


def _subst(s: Nest, var: str, expr: str) -> tuple[tuple[str, str], ...]:
    pattern = re.compile(rf"\b{re.escape(var)}\b")
    return tuple((v, pattern.sub(expr, e)) for v, e in s.bind)


def _users(s: Nest, var: str) -> frozenset[str]:
    return frozenset(v for v, e in s.bind if re.search(rf"\b{re.escape(var)}\b", e))


def split(s: Nest, var: str, factor: int) -> Nest:
    """``var -> (var + 'o', var + 'i')`` with ``var = varo * factor + vari``."""
    loop = s.loop(var)
    if factor < 1:
        raise ValueError("split factor must be >= 1")
    outer, inner = Loop(var + "o", -(-loop.extent // factor)), Loop(var + "i", factor)
    at = s.loops.index(loop)
    guarded = s.guarded | (_users(s, var) if loop.extent % factor else frozenset())
    return replace(
        s,
        loops=(*s.loops[:at], outer, inner, *s.loops[at + 1 :]),
        bind=_subst(s, var, f"({outer.var} * {factor} + {inner.var})"),
        guarded=guarded,
    )


def reorder(s: Nest, *order: str) -> Nest:
    """Put the named loops in ``order`` at the places they occupy; other loops stay."""
    places = sorted(s.order.index(v) for v in order)
    loops = list(s.loops)
    for place, var in zip(places, order, strict=True):
        loops[place] = s.loop(var)
    return replace(s, loops=tuple(loops))


def tile(s: Nest, x: str, y: str, fx: int, fy: int) -> Nest:
    """Split ``x`` and ``y`` and order the four loops ``xo, yo, xi, yi``."""
    s = split(split(s, x, fx), y, fy)
    return reorder(s, x + "o", y + "o", x + "i", y + "i")


def fuse(s: Nest, outer: str, inner: str) -> Nest:
    """Fuse two adjacent loops into ``outer_inner`` (outer = f // ext(inner), inner = f % ...)."""
    a, b = s.order.index(outer), s.order.index(inner)
    if b != a + 1:
        raise ValueError(f"fuse needs adjacent loops, outer first: {s.order}")
    ext = s.loops[b].extent
    fused = Loop(f"{outer}_{inner}", s.loops[a].extent * ext)
    s2 = replace(s, bind=_subst(s, outer, f"({fused.var} // {ext})"))
    s2 = replace(s2, bind=_subst(s2, inner, f"({fused.var} % {ext})"))
    return replace(s2, loops=(*s.loops[:a], fused, *s.loops[b + 1 :]))


def unroll(s: Nest, var: str) -> Nest:
    """Write the body out once per value of ``var`` (extent at most 16)."""
    if s.loop(var).extent > 16:
        raise ValueError("unroll only short loops (extent <= 16)")
    return replace(
        s, loops=tuple(replace(lp, kind="unroll") if lp.var == var else lp for lp in s.loops)
    )


def vectorize(s: Nest, var: str) -> Nest:
    """Make the innermost loop ``var`` a numpy slice (it must step one iterator by 1).

    A slice reads all its elements before writing any: legal only when ``var`` carries no
    dependence (matmul's ``j``, not an in-place stencil's inner loop).
    """
    if s.order[-1] != var:
        raise ValueError(f"vectorize the innermost loop, not {var!r} of {s.order}")
    users = [e for _, e in s.bind if re.search(rf"\b{var}\b", e)]
    if len(users) != 1 or not (users[0] == var or users[0].endswith(f" + {var})")):
        raise ValueError(f"{var!r} must be the unit-stride part of one iterator")
    return replace(s, loops=(*s.loops[:-1], replace(s.loops[-1], kind="vector")))


def lower(s: Nest) -> str:
    """Python/numpy source of ``def kernel(<arrays>)`` running the nest in place."""
    k, ext = s.kernel, s.kernel.extents
    vec = s.loops[-1].var if s.loops[-1].kind == "vector" else None
    sliced = {v for v, e in s.bind if vec and re.search(rf"\b{vec}\b", e)}
    lines = [f"def kernel({', '.join(a for a, _ in k.shapes)}):"]

    def body(depth: int) -> list[str]:
        pad = "    " * depth
        out = []
        for v, e in s.bind:
            if v in sliced:
                start = re.sub(rf"\b{vec}\b", "0", e)
                out += [
                    f"{pad}{v}0 = {start}",
                    f"{pad}{v}1 = min({v}0 + {s.loops[-1].extent}, {ext[v]})",
                ]
            elif e != v:
                out.append(f"{pad}{v} = {e}")
        guards = [f"{v} < {ext[v]}" for v in sorted(s.guarded - sliced)]
        if guards:
            out.append(f"{pad}if {' and '.join(guards)}:")
            pad += "    "

        def at(v: str, c: int) -> str:
            off = f" + {c}" if c > 0 else (f" - {-c}" if c < 0 else "")
            return f"{v}0{off}:{v}1{off}" if v in sliced else f"{v}{off}"

        rhs = k.rhs.format(*(r.render(at) for r in k.reads))
        reduced = sliced - {v for v, _ in k.lhs.index}
        out.append(f"{pad}{k.lhs.render(at)} {k.op} {f'np.sum({rhs})' if reduced else rhs}")
        return out

    def emit(level: int, depth: int) -> list[str]:
        if level == len(s.loops) or s.loops[level].kind == "vector":
            return body(depth)
        lp, pad = s.loops[level], "    " * depth
        if lp.kind == "unroll":
            return [
                ln
                for c in range(lp.extent)
                for ln in [f"{pad}{lp.var} = {c}", *emit(level + 1, depth)]
            ]
        return [f"{pad}for {lp.var} in range({lp.extent}):", *emit(level + 1, depth + 1)]

    return "\n".join(lines + emit(0, 1)) + "\n"


def compile_nest(s: Nest) -> Callable[..., None]:
    """Compile :func:`lower`'s source with ``exec``; call it on the arrays (in place)."""
    namespace: dict[str, object] = {"np": np}
    exec(compile(lower(s), f"<{s.kernel.name}: {' '.join(s.order)}>", "exec"), namespace)
    return namespace["kernel"]  # type: ignore[return-value]


def iteration_order(s: Nest) -> np.ndarray:
    """(P, d) int64: the original iteration points in execution order (guards applied)."""
    counters = np.indices([lp.extent for lp in s.loops], dtype=np.int64).reshape(len(s.loops), -1)
    env = {lp.var: c for lp, c in zip(s.loops, counters, strict=True)}
    points = np.stack([np.broadcast_to(eval(e, {}, env), counters.shape[1:]) for _, e in s.bind], 1)
    ext = np.array([e for _, e in s.kernel.dims])
    return points[(points < ext).all(axis=1)]


def trace(s: Nest, elem: int = 8) -> np.ndarray:
    """Byte addresses, per iteration the reads then the write; arrays laid out one after another."""
    k, pts = s.kernel, iteration_order(s)
    col = {v: pts[:, t] for t, (v, _) in enumerate(k.dims)}
    base, offset = {}, 0
    for name, shape in k.shapes:
        base[name], offset = offset, offset + int(np.prod(shape)) * elem
    shapes = dict(k.shapes)
    addrs = []
    for acc in (*k.reads, k.lhs):
        flat = np.ravel_multi_index([col[v] + c for v, c in acc.index], shapes[acc.array])
        addrs.append(base[acc.array] + flat * elem)
    return np.stack(addrs, axis=1).ravel()
