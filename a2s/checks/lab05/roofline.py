"""Graders of 05.2 (the roofline bound) and 05.3 (predict the time and the bound, then measure).

Ground truth is the closed form ``min(peak, I x bandwidth)`` with the side decided by the
ridge point ``peak / bandwidth``, and ``max(flops / peak, bytes / bandwidth)`` for the time;
the ops' FLOPs and bytes in 05.3 are written out here from the counting convention of 05.1.
"""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, assert_true, grader, plain
from a2s.checks.table import Table

__all__ = ["PREDICT_OPS", "check_prediction", "check_roofline"]

_REF = "minitorch.hardware.roofline"
_ROOF_BLOCKS = tuple(
    f"{_REF}:{n}"
    for n in ("roofline_bound", "attainable", "bound", "Roofline", "predicted_seconds")
) + tuple(f"{__name__}:{n}" for n in ("_truth", "_seconds"))  # the grader's own ground truth


def _truth(i: float, peak: float, bw: float) -> tuple[float, str]:
    slanted = i * bw
    if slanted < peak:
        return slanted, "memory"
    return peak, "compute"


def _same(got: Any, want: tuple[float, str]) -> bool:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return False
    value, side = got
    return isinstance(side, str) and side == want[1] and abs(value - want[0]) <= 1e-9 * want[0]


def _used_max(got: Any, i: float, p: float, b: float) -> bool:
    return _near(got[0], max(p, i * b)) and not _near(got[0], min(p, i * b))


def _divided(got: Any, i: float, p: float, b: float) -> bool:
    return _near(got[0], min(p, i / b)) or _near(got[0], min(p, b / i))


def _wrong_side(got: Any, i: float, p: float, b: float) -> bool:
    side_ok = got[1] in ("memory", "compute") and got[1] == _truth(i, p, b)[1]
    return not side_ok and got[1] in ("memory", "compute") and _near(got[0], min(p, i * b))


_ROOF_MISTAKES = (
    Mistake(" The roof is the *lower* of the two limits: min, not max.", when=_used_max),
    Mistake(
        " Bandwidth is bytes/s and intensity FLOP/byte: their product is FLOP/s (multiply).",
        when=_divided,
    ),
    Mistake(
        " Left of the ridge point (I < peak / bandwidth) the slanted, memory roof binds.",
        when=_wrong_side,
    ),
    Mistake(
        " Return the side as the string 'memory' or 'compute'.",
        when=lambda got, i, p, b: got[1] not in ("memory", "compute"),
    ),
)


def _near(a: Any, b: float) -> bool:
    try:
        return abs(float(a) - b) <= 1e-9 * abs(b)
    except (TypeError, ValueError):
        return False


def _roof_case(g: Any) -> tuple[float, float, float]:
    peak = float(10 ** g.uniform(10, 15.5))
    bw = float(10 ** g.uniform(9.5, 12.7))
    return float(peak / bw * 2 ** g.uniform(-6, 6)), peak, bw


def _roof_drawn(g: Any, i: int) -> tuple[str, tuple[float, float, float]]:
    a = _roof_case(g)
    return f"I={a[0]:.4g}, peak={a[1]:.3g}, bw={a[2]:.3g}", a


ROOF = Table(
    "05.2",
    truth=_truth,
    named=[
        ("GEMV on a CPU", (0.5, 1e11, 4e10)),
        ("GEMM on a CPU", (170.0, 1e11, 4e10)),
        ("exactly at the ridge", (2.5, 1e11, 4e10)),
        ("H100 bf16, attention materialised", (63.0, 989.5e12, 3.35e12)),
        ("H100 bf16, attention fused", (2070.0, 989.5e12, 3.35e12)),
    ],
    draw=_roof_drawn,
    seeded=6,
    fresh=4,
    mistakes=_ROOF_MISTAKES,
    same=_same,
    what="roofline_bound",
    message="[{label}] got {got!r}, expected ({want[0]:.6g}, {want[1]!r}).{hint}",
    seed=52,
)


@grader("05.2", blocks=_ROOF_BLOCKS)
def check_roofline(roofline_bound) -> str:
    n = ROOF.grade(roofline_bound)
    return (
        f"{n} cases on the closed form; the H100's bf16 ridge point is {989.5 / 3.35:.0f} FLOP/byte"
    )


# --------------------------------------------------------------------------- 05.3
# name -> (flops, bytes) in float32, written out from 05.1's counting convention
PREDICT_OPS: dict[str, tuple[int, int]] = {
    "gemm 1024x1024x1024": (2 * 1024**3, 4 * 3 * 1024**2),
    "gemv 4096x4096": (2 * 4096**2, 4 * (4096**2 + 2 * 4096)),
    "softmax 4096x1024": (5 * 4096 * 1024, 8 * 4096 * 1024),
    "layernorm 4096x1024": (8 * 4096 * 1024 + 5 * 4096, 4 * (2 * 4096 * 1024 + 2 * 1024)),
    "attention n=2048 d=64, fused": (4 * 2048**2 * 64 + 5 * 2048**2, 4 * 4 * 2048 * 64),
    "attention n=2048 d=64, materialised": (
        4 * 2048**2 * 64 + 5 * 2048**2,
        4 * (4 * 2048 * 64 + 4 * 2048**2),
    ),
}

_TIME_MISTAKES = (
    Mistake(
        " That is compute time plus memory time: the roofline assumes the two overlap, "
        "so the slower one alone sets the time (max).",
        answer=lambda f, b, p, w: f / p + b / w,
    ),
    Mistake(
        " The faster of the two cannot finish first: take the max of the two times.",
        answer=lambda f, b, p, w: min(f / p, b / w),
    ),
)


def _seconds(f: float, b: float, p: float, w: float) -> float:
    return max(f / p, b / w)


def _time_drawn(g: Any, peak: float, bandwidth: float) -> tuple[str, tuple[float, ...]]:
    f, b = 10 ** g.uniform(3, 12, size=2)
    return f"{f:.3g} FLOP, {b:.3g} B", (f, b, peak, bandwidth)


TIME = Table(
    "05.3",
    truth=_seconds,
    named=[(name, (*fb, 1e11, 4e10)) for name, fb in PREDICT_OPS.items()],
    draw=lambda g, i: _time_drawn(g, 1e11, 4e10),
    draw_fresh=lambda g, i: _time_drawn(g, 5e12, 2e12),
    seeded=4,
    fresh=3,
    mistakes=_TIME_MISTAKES,
    same=lambda got, want: _near(got, want),
    what="predicted_seconds",
    message="[{label}] got {got!r}, expected {want:.6g} s.{hint}",
    seed=53,
)


@grader("05.3", blocks=_ROOF_BLOCKS, uses=(("05.2", "roofline_bound", f"{_REF}:roofline_bound"),))
def check_prediction(predicted_seconds, my_bounds, *, peak: float, bandwidth: float) -> str:
    named = [(name, (*fb, peak, bandwidth)) for name, fb in PREDICT_OPS.items()]
    n = TIME.grade(predicted_seconds, named=named)
    guess = plain(my_bounds(), what="my_bounds")
    assert_true(
        isinstance(guess, dict), f"my_bounds() must return a dict, got {type(guess).__name__}."
    )
    missing = sorted(set(PREDICT_OPS) - set(guess))
    assert_true(not missing, f"my_bounds() has no prediction for {missing}.")
    ridge = peak / bandwidth
    for name, (f, b) in PREDICT_OPS.items():
        want = _truth(f / b, peak, bandwidth)[1]
        if guess[name] != want:
            raise CheckFailure(
                f"[{name}] you predicted {guess[name]!r}; its intensity is {f / b:.3g} FLOP/byte "
                f"and this machine's ridge point is {ridge:.3g} FLOP/byte, so it is "
                f"{want}-bound here. Intensity below the ridge: memory-bound."
            )
    mem = sum(_truth(f / b, peak, bandwidth)[1] == "memory" for f, b in PREDICT_OPS.values())
    return (
        f"{n} times match max(FLOPs/peak, bytes/bandwidth); {mem} of {len(PREDICT_OPS)} "
        f"ops predicted memory-bound at this machine's ridge {ridge:.2f} FLOP/byte"
    )
