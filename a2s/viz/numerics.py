"""Plots of lab 01: where each floating-point format has values, and how much rounding costs.

Lab: 01_numerics
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from minitorch.numerics.bfloat16 import round_to_bf16, round_to_fp16
from minitorch.numerics.formats import (
    BF16,
    FP8_E4M3,
    FP8_E5M2,
    FP16,
    FP32,
    FloatFormat,
    all_values,
    decode,
    encode,
)
from minitorch.numerics.summation import pairwise_depth

__all__ = ["plot_format_grid", "plot_relative_error", "plot_summation_error"]

Rounder = Callable[[np.ndarray], np.ndarray]


def _positive_finite(fmt: FloatFormat) -> np.ndarray:
    v = all_values(fmt)
    return np.unique(v[np.isfinite(v) & (v > 0)])


def plot_format_grid(
    formats: Sequence[FloatFormat] = (FP8_E4M3, FP8_E5M2, FP16, BF16, FP32),
    linear_max: float = 16.0,
) -> Figure:
    """Draw each format's positive range on a log axis, and the FP8 grids on a linear one.

    Top: subnormal range (light) and normal range (dark) of every format, labelled with its
    smallest and largest value and its values per binade (a binade is [2^e, 2^(e+1))). The
    8-bit formats have too few values to see on a 300-binade axis as anything but a smudge,
    so their individual values are drawn below. Bottom: E4M3 and E5M2 values on
    [0, linear_max]: the spacing doubles at every power of two, so relative precision stays
    constant.
    """
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.5, 6), height_ratios=(3, 2))
    for row, fmt in enumerate(formats):
        color = f"C{row}"
        top.hlines(row, fmt.min_subnormal, fmt.min_normal, color=color, lw=8, alpha=0.3)
        top.hlines(row, fmt.min_normal, fmt.max_normal, color=color, lw=8)
        top.annotate(
            f"{fmt.min_subnormal:.2g} .. {fmt.max_normal:.4g}, {2**fmt.man_bits:,} values/binade",
            (fmt.min_subnormal, row),
            xytext=(0, 7),
            textcoords="offset points",
            fontsize=9,
        )
    top.set_xscale("log", base=2)
    top.set_xlim(2.0**-160, 2.0**140)
    top.set_xticks([2.0**p for p in range(-144, 129, 48)])
    top.xaxis.set_minor_locator(NullLocator())
    top.set_ylim(len(formats) - 0.5, -0.9)
    top.set_yticks(range(len(formats)), [f"{f.name} (E{f.exp_bits}M{f.man_bits})" for f in formats])
    top.set_xlabel("magnitude (log2 scale); light: subnormals, dark: normals")
    top.set_title("Positive representable range of each format")
    top.grid(True, axis="x", alpha=0.3)

    for row, fmt in enumerate((FP8_E4M3, FP8_E5M2)):
        vals = _positive_finite(fmt)
        vals = np.concatenate([[0.0], vals[vals <= linear_max]])
        bottom.plot(vals, np.full(vals.size, row), "|", color=f"C{row}", ms=16, mew=1.2)
    for p in range(-2, int(np.log2(linear_max)) + 1):
        bottom.axvline(2.0**p, color="gray", lw=0.5, ls=":")
    bottom.set_yticks([0, 1], ["fp8_e4m3", "fp8_e5m2"])
    bottom.set_ylim(-0.7, 1.7)
    bottom.set_xlim(-0.2, linear_max + 0.2)
    bottom.set_xlabel("value (linear scale); dotted lines: powers of two")
    bottom.set_title(f"FP8 values on [0, {linear_max:g}]: the spacing doubles every binade")
    fig.tight_layout()
    return fig


def _default_rounders() -> dict[FloatFormat, Rounder]:
    return {
        BF16: round_to_bf16,
        FP16: round_to_fp16,
        FP8_E4M3: lambda x: decode(encode(x, FP8_E4M3, saturate=True), FP8_E4M3),
    }


def plot_relative_error(
    rounders: Mapping[FloatFormat, Rounder] | None = None,
    lo: float = 2.0**-30,
    hi: float = 2.0**20,
    n: int = 3000,
    seed: int = 0,
) -> Figure:
    """Scatter the relative rounding error |r(x) - x| / |x| against |x|, one panel per format.

    ``rounders`` maps a format to a function rounding float32 values onto it (returning
    values, not codes); by default BF16, FP16 and saturating E4M3 from ``minitorch.numerics``.
    Each panel draws the unit roundoff u = 2^-(M+1) (the bound for normal numbers) and shades
    the subnormal range (error grows as values lose precision) and the overflow range.
    """
    rounders = dict(rounders) if rounders is not None else _default_rounders()
    g = np.random.default_rng(seed)
    x = np.exp2(g.uniform(np.log2(lo), np.log2(hi), n)).astype(np.float32)
    fig, axes = plt.subplots(1, len(rounders), figsize=(2.9 * len(rounders), 3.4), sharey=True)
    axes = np.atleast_1d(axes)
    floor = 2.0**-30  # exact results (error 0) are drawn at the bottom of the log axis
    for ax, (fmt, rounder) in zip(axes, rounders.items(), strict=True):
        r = np.asarray(rounder(x), dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            rel = np.abs(r - x) / x
        rel = np.clip(np.nan_to_num(rel, nan=1.0, posinf=1.0), floor, 1.0)
        ax.scatter(x, rel, s=1.5, color="C0", linewidths=0)
        ax.axhline(fmt.unit_roundoff, color="C3", ls="--", label="unit roundoff u = 2^-(M+1)")
        if fmt.min_normal > lo:
            ax.axvspan(lo, min(fmt.min_normal, hi), color="C1", alpha=0.12, label="subnormal")
        if fmt.max_normal < hi:
            ax.axvspan(fmt.max_normal, hi, color="C2", alpha=0.12, label="beyond max")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(lo, hi)
        ax.set_xticks([2.0**p for p in range(-20, 20, 10) if lo < 2.0**p < hi])  # ends unlabelled
        ax.set_title(f"{fmt.name}: M = {fmt.man_bits}, u = 2^-{fmt.man_bits + 1}", fontsize=10)
        ax.set_xlabel("|x| (log2 scale)")
    axes[0].set_ylabel("|round(x) - x| / |x|")
    handles: dict[str, Artist] = {}  # one legend for all panels, each entry once
    for ax in axes:
        artists, names = ax.get_legend_handles_labels()
        handles.update(zip(names, artists, strict=True))
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=len(handles),
        fontsize=9,
        frameon=False,
    )
    fig.suptitle(f"Rounding {n:,} log-uniform float32 values: error <= u in the normal range")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_summation_error(
    sizes: Sequence[int], errors: Mapping[str, Sequence[float]], floor: float = 1e-3
) -> Figure:
    """Plot measured summation errors (in units of u * sum|x|) against n, with worst cases.

    ``errors`` maps a method name to one error per size. Dashed lines are the worst-case
    bounds: n - 1 (naive), the pairwise tree depth d (blocks of 8) and 2 (Kahan). Errors of 0
    (an exactly rounded sum) are drawn at ``floor``.
    """
    n = np.asarray(sizes, dtype=np.float64)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (name, errs) in enumerate(errors.items()):
        ax.loglog(
            n,
            np.maximum(np.asarray(errs, dtype=np.float64), floor),
            "o-",
            color=f"C{i}",
            label=name,
        )
    ax.loglog(n, n - 1, "--", color="gray", label="naive bound, n - 1")
    ax.loglog(
        n,
        [pairwise_depth(int(k)) for k in sizes],
        ":",
        color="k",
        label="pairwise bound, tree depth d",
    )
    ax.axhline(2.0, color="C3", ls="-.", lw=1, label="Kahan bound, 2")
    ax.set_xlabel("n, number of float32 values summed")
    ax.set_ylabel("|computed - exact| / (u * sum|x|)")
    ax.set_title("Summation error vs n (u = 2^-24), measured and worst case")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
