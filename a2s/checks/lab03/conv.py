"""Graders of exercises 03.3 (im2col conv2d forward) and 03.4 (col2im, conv2d backward).

Ground truth: ``F.unfold`` is exactly im2col (same (C, kh, kw) row order), ``F.fold`` is
col2im (it sums overlapping windows), ``F.conv2d`` and its autograd give the forward and
every gradient; all in float64, on named cases (overlap, padding, a stride that leaves the
last rows unused, 1x1 and whole-image kernels, an empty batch) and seeded random layers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import CheckFailure, assert_true, fmt_bytes, fresh_rng, grader, plain, rng
from a2s.checks.spies import helper_products
from a2s.checks.vjp import ENGINE, out_shape, torch_vjp

__all__ = ["check_conv2d_backward", "check_conv2d_forward"]

_C = "minitorch.autograd.ops_conv"
_NN = "minitorch.nn.layers"
# (label, x shape (N, C, H, W), kh, kw, stride, pad)
Case = tuple[str, tuple[int, int, int, int], int, int, int, int]
_NAMED: list[Case] = [
    ("one 4x4 image, 3x3 kernel", (1, 1, 4, 4), 3, 3, 1, 0),
    ("channels, non-square kernel", (2, 3, 5, 6), 2, 3, 1, 0),
    ("stride 2", (1, 2, 7, 7), 3, 3, 2, 0),
    ("padding 1", (2, 2, 5, 5), 3, 3, 1, 1),
    ("stride 2 + padding 1 on 6x6", (1, 1, 6, 6), 3, 3, 2, 1),
    ("stride 2 leaves the last row unused", (1, 1, 6, 6), 3, 3, 2, 0),
    ("no overlap: stride = kernel", (1, 2, 4, 4), 2, 2, 2, 0),
    ("1x1 kernel", (2, 4, 3, 3), 1, 1, 1, 0),
    ("kernel covers the whole image", (1, 2, 3, 3), 3, 3, 1, 0),
    ("empty batch", (0, 2, 5, 5), 3, 3, 1, 1),
]
_LAYOUT = (
    "Rows must be ordered (c, i, j) -- channel slowest, kernel column fastest -- exactly as "
    "w.reshape(O, -1) flattens a (O, C, kh, kw) weight; columns are output pixels in "
    "row-major (ho, wo) order."
)
_SHAPE = (
    "im2col returns (N, C*kh*kw, Ho*Wo): one column per output pixel, Ho = (H + 2p - kh) // s + 1."
)
_FLIP = (
    "Deep learning's 'convolution' is cross-correlation: the kernel is not flipped "
    "(y[o, h, w] = sum x[c, h*s + i - p, w*s + j - p] * W[o, c, i, j])."
)
_ADD = (
    "Overlapping windows must *add* (+=), not overwrite: a pixel read by several windows "
    "collects a gradient from each of them."
)


def _random_cases(seed: int, n: int, exercise: str) -> list[Case]:
    """``n`` seeded random layers, then 5 drawn fresh for ``exercise`` (new every run)."""
    return _draw(rng(seed), n, str) + _draw(fresh_rng(exercise), 5, fresh)


def _draw(gen: np.random.Generator, n: int, mark: Callable[[str], str]) -> list[Case]:
    cases = []
    for i in range(n):
        kh, kw = (int(v) for v in gen.integers(1, 4, 2))
        s, p = int(gen.integers(1, 3)), int(gen.integers(0, 2))
        h, w = (int(v) for v in gen.integers(max(kh, kw), 9, 2))
        shape = (int(gen.integers(1, 4)), int(gen.integers(1, 4)), h, w)
        cases.append(
            (mark(f"random case {i}: x {shape}, k {kh}x{kw}, s {s}, p {p}"), shape, kh, kw, s, p)
        )
    return cases


def _unfold(x: np.ndarray, kh: int, kw: int, s: int, p: int) -> np.ndarray:
    return F.unfold(torch.from_numpy(x), (kh, kw), padding=p, stride=s).numpy()


def _im2col_hint(got: np.ndarray, want: np.ndarray, c: int, kh: int, kw: int) -> str:
    if got.shape != want.shape:
        return _SHAPE
    n, _, ll = want.shape
    channel_last = want.reshape(n, c, kh * kw, ll).transpose(0, 2, 1, 3).reshape(want.shape)
    return _LAYOUT + (" (Yours looks channel-last.)" if looks_like(got, channel_last) else "")


_ONE_MATMUL = (
    "conv2d_forward is one matmul over your columns: y = w.reshape(O, -1) @ im2col(x, ...), "
    "(O, C*kh*kw) @ (N, C*kh*kw, L) broadcasting over the batch (not a loop of products, "
    "not a multiply-and-sum)."
)


_NO_MATMUL = "did not multiply the columns with a matmul (@, np.matmul, np.einsum)"


def _conv(conv2d_forward: Callable[..., object], x, w, bias, s: int, p: int, case: str) -> object:
    """Run conv2d_forward once, requiring one call of im2col and one matmul over its columns."""
    with helper_products(conv2d_forward, "im2col") as tally:
        got = call_pure(conv2d_forward, x, w, bias, s, p, case=case)
    calls, products = tally
    if calls == 0:
        raise CheckFailure(f"[{case}] conv2d_forward did not call your im2col. {_ONE_MATMUL}")
    if products != 1:
        done = f"multiplied the columns {products} times" if products else _NO_MATMUL
        raise CheckFailure(f"[{case}] conv2d_forward {done}. {_ONE_MATMUL}")
    return got


@grader(
    "03.3",
    blocks=(
        f"{_C}:im2col",
        f"{_C}:_windows",
        f"{_C}:conv2d",
        f"{_C}:conv2d_backward",
        f"{_C}:col2im",
        f"{_NN}:Conv2d",
        *ENGINE,
    ),
    hand="parts",
)
def check_conv2d_forward(
    im2col: Callable[..., object], conv2d_forward: Callable[..., object]
) -> str:
    """Exercise 03.3: im2col matches F.unfold; im2col + one GEMM matches F.conv2d."""
    gen, worst = rng(303), 0.0
    for case, shape, kh, kw, s, p in _NAMED + _random_cases(313, 25, "03.3"):
        x = gen.standard_normal(shape)
        got = np.asarray(call_pure(im2col, x, kh, kw, s, p, case=case))
        want = _unfold(x, kh, kw, s, p)
        hint = _im2col_hint(got, want, shape[1], kh, kw)
        worst = max(worst, close(got, want, case=case, what="im2col(x)", hint=hint))
    for case, shape, kh, kw, s, p in _NAMED + _random_cases(323, 25, "03.3 layer"):
        x, o = gen.standard_normal(shape), int(gen.integers(1, 5))
        w, b = gen.standard_normal((o, shape[1], kh, kw)), gen.standard_normal(o)
        bias = None if "1x1" in case else b
        got = np.asarray(_conv(conv2d_forward, x, w, bias, s, p, case))
        want = F.conv2d(
            *(torch.from_numpy(a) if a is not None else None for a in (x, w, bias)),
            stride=s,
            padding=p,
        ).numpy()
        flipped = F.conv2d(
            torch.from_numpy(x),
            torch.from_numpy(w[:, :, ::-1, ::-1].copy()),
            None if bias is None else torch.from_numpy(bias),
            stride=s,
            padding=p,
        ).numpy()
        hint = _FLIP if kh * kw > 1 and looks_like(got, flipped) else _SHAPE
        worst = max(worst, close(got, want, case=case, what="conv2d_forward(x, w, b)", hint=hint))
    x = gen.standard_normal((8, 16, 32, 32))
    cols = np.asarray(plain(im2col(x, 3, 3, 1, 1), what="im2col(x)"))
    blowup = (
        f"a 3x3 conv on {fmt_bytes(x.nbytes)} of input builds {fmt_bytes(cols.nbytes)} of columns"
    )
    n = len(_NAMED) + 30
    return (
        f"{n} im2col + {n} conv2d cases (5 fresh each) match torch, each conv2d one matmul "
        f"(max error {worst:.1e}); {blowup}"
    )


# --------------------------------------------------------------------------- 03.4 backward
def _fold(cols: np.ndarray, hw: tuple[int, int], kh: int, kw: int, s: int, p: int) -> np.ndarray:
    return F.fold(torch.from_numpy(cols), hw, (kh, kw), padding=p, stride=s).numpy()


def _overwrite(
    cols: np.ndarray, shape: tuple[int, ...], kh: int, kw: int, s: int, p: int
) -> np.ndarray:
    """col2im with '=' instead of '+=' (the realistic mistake), to recognise it."""
    n, c, h, w = shape
    ho, wo = out_shape(h, kh, s, p), out_shape(w, kw, s, p)
    win = cols.reshape(n, c, kh, kw, ho, wo)
    out = np.zeros((n, c, h + 2 * p, w + 2 * p))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i : i + s * ho : s, j : j + s * wo : s] = win[:, :, i, j]
    return out[:, :, p : p + h, p : p + w]


def _check_col2im(col2im: Callable[..., object], gen: np.random.Generator) -> float:
    worst = 0.0
    for case, shape, kh, kw, s, p in _NAMED + _random_cases(314, 25, "03.4"):
        n, c, h, w = shape
        ll = out_shape(h, kh, s, p) * out_shape(w, kw, s, p)
        cols = gen.standard_normal((n, c * kh * kw, ll))
        got = np.asarray(call_pure(col2im, cols, shape, kh, kw, s, p, case=case))
        want = _fold(cols, (h, w), kh, kw, s, p)
        hint = _ADD if looks_like(got, _overwrite(cols, shape, kh, kw, s, p)) else _LAYOUT
        worst = max(worst, close(got, want, case=case, what=f"col2im -> {shape}", hint=hint))
    return worst


_GW = "dL/dW = sum over images of dY_n @ cols_n^T, (O, L) @ (L, C*kh*kw), reshaped to W's shape."
_GB = "dL/db sums g over the batch and both spatial axes: one number per output channel."
_GX = "dL/dx = col2im(W_flat^T @ dY): (C*kh*kw, O) @ (O, L) per image, then scatter-add."


def _check_grads(
    student: Callable[..., object], x: np.ndarray, w: np.ndarray, s: int, p: int, case: str
) -> float:
    def conv(tx: torch.Tensor, tw: torch.Tensor, tb: torch.Tensor) -> torch.Tensor:
        return F.conv2d(tx, tw, tb, stride=s, padding=p)

    (n, _, h, wd), (o, _, kh, kw) = x.shape, w.shape
    b = np.zeros(o)
    g = rng(len(case)).standard_normal((n, o, out_shape(h, kh, s, p), out_shape(wd, kw, s, p)))
    _, (gx, gw, gb) = torch_vjp(conv, [x, w, b], g)
    got = call_pure(student, x, w, g, s, p, case=case)
    assert_true(
        isinstance(got, (tuple, list)) and len(got) == 3,
        f"[{case}] return the triple (grad_x, grad_w, grad_b).",
    )
    hint_w = _GW + (" Yours has a batch axis: sum it." if np.ndim(got[1]) == 5 else "")
    err = close(got[1], gw, case=case, what=f"grad_w {w.shape}", hint=hint_w)
    err = max(err, close(got[2], gb, case=case, what=f"grad_b ({w.shape[0]},)", hint=_GB))

    def hint_x(got_x: np.ndarray, _want: np.ndarray) -> str:  # run only on a mismatch
        cols = np.einsum("ok,nol->nkl", w.reshape(o, -1), g.reshape(n, o, g.shape[2] * g.shape[3]))
        return _ADD if looks_like(got_x, _overwrite(cols, x.shape, kh, kw, s, p)) else _GX

    return max(err, close(got[0], gx, case=case, what=f"grad_x {x.shape}", hint=hint_x))


@grader(
    "03.4",
    blocks=(
        f"{_C}:col2im",
        f"{_C}:_scatter_windows",
        f"{_C}:conv2d",
        f"{_C}:conv2d_backward",
        f"{_NN}:Conv2d",
        *ENGINE,
    ),
    uses=(("03.3", "im2col", f"{_C}:im2col"),),
    hand="parts",
)
def check_conv2d_backward(
    col2im: Callable[..., object], conv2d_backward: Callable[..., object]
) -> str:
    """Exercise 03.4: col2im matches F.fold; conv2d gradients match torch autograd."""
    gen = rng(304)
    worst = _check_col2im(col2im, gen)
    for case, shape, kh, kw, s, p in _NAMED + _random_cases(324, 25, "03.4 layer"):
        x = gen.standard_normal(shape)
        w = gen.standard_normal((int(gen.integers(1, 5)), shape[1], kh, kw))
        worst = max(worst, _check_grads(conv2d_backward, x, w, s, p, case))
    n = len(_NAMED) + 30
    return (
        f"{n} col2im + {n} conv2d backward cases (5 fresh each) match F.fold and torch "
        f"(max error {worst:.1e})"
    )
