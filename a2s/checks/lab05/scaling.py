"""Graders of 05.4 (Amdahl and Gustafson) and 05.5 (the serial fraction fitted from times).

Ground truth: the closed forms of Amdahl 1967 and Gustafson 1988, and, for the fit, the least
squares line ``T = a + b/p`` solved here from its 2 x 2 normal equations by hand.
"""

from __future__ import annotations

from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import grader
from a2s.checks.table import Table

__all__ = ["check_serial_fraction", "check_speedups"]

_REF = "minitorch.hardware.scaling"
_TRUTH = (f"{__name__}:_amdahl", f"{__name__}:_gustafson")  # the grader's own closed forms


def _amdahl(f: float, p: float) -> float:
    return 1.0 / (f + (1.0 - f) / p)


def _gustafson(f: float, p: float) -> float:
    return f + p * (1.0 - f)


def _near(a: Any, b: float, tol: float = 1e-9) -> bool:
    try:
        return abs(float(a) - b) <= tol * max(abs(b), 1.0)
    except (TypeError, ValueError):
        return False


_AMDAHL_MISTAKES = (
    Mistake(
        " That is the time fraction left, T(p)/T(1); the speedup is its inverse.",
        answer=lambda f, p: f + (1 - f) / p,
    ),
    Mistake(
        " f is the *serial* fraction: it is the part that does not divide by p.",
        answer=lambda f, p: 1 / ((1 - f) + f / p),
    ),
    Mistake(
        " That is Gustafson's scaled speedup; Amdahl keeps the problem size fixed.",
        answer=_gustafson,
    ),
)
_GUSTAFSON_MISTAKES = (
    Mistake(
        " The serial part still counts once in the scaled work: f + p (1 - f).",
        answer=lambda f, p: p * (1 - f),
    ),
    Mistake(
        " That is Amdahl's fixed-size speedup; Gustafson grows the problem with p.", answer=_amdahl
    ),
    Mistake(
        " f is the *serial* fraction: the parallel part (1 - f) is what grows with p.",
        answer=lambda f, p: (1 - f) + p * f,
    ),
)

_NAMED = [(0.0, 8.0), (1.0, 8.0), (0.1, 1.0), (0.05, 16.0), (0.25, 4.0), (0.01, 1024.0)]


def _pair(g: Any, i: int) -> tuple[str, tuple[float, float]]:
    f, p = float(g.uniform(0, 1)), float(g.integers(2, 257))
    return f"f={f:.4f}, p={p:g}", (f, p)


def _speedup(name: str, truth: Any, mistakes: tuple[Mistake, ...]) -> Table:
    return Table(
        "05.4",
        truth=truth,
        named=[(f"f={f}, p={p:g}", (f, p)) for f, p in _NAMED],
        draw=_pair,
        seeded=5,
        fresh=3,
        mistakes=mistakes,
        same=lambda got, want: _near(got, want),
        what=name,
        message=f"[{{label}}] {name} returned {{got!r}}, expected {{want:.9g}}.{{hint}}",
        seed=54,
    )


AMDAHL = _speedup("amdahl", _amdahl, _AMDAHL_MISTAKES)
GUSTAFSON = _speedup("gustafson", _gustafson, _GUSTAFSON_MISTAKES)


@grader("05.4", blocks=(f"{_REF}:amdahl_speedup", f"{_REF}:gustafson_speedup", *_TRUTH))
def check_speedups(amdahl, gustafson) -> str:
    n = AMDAHL.grade(amdahl) + GUSTAFSON.grade(gustafson)
    f = 0.05
    return (
        f"{n} cases on the closed forms; at f = 5 % on 1024 workers: Amdahl "
        f"{_amdahl(f, 1024):.1f}x (cap {1 / f:.0f}x), Gustafson {_gustafson(f, 1024):.0f}x"
    )


# --------------------------------------------------------------------------- 05.5
def _line(p: list[float], t: list[float]) -> tuple[float, float]:
    """Fit t = a + b x with x = 1/p by the normal equations; return (a, b)."""
    x = [1.0 / v for v in p]
    n, sx, sy = len(x), sum(x), sum(t)
    sxx = sum(v * v for v in x)
    sxy = sum(u * v for u, v in zip(x, t, strict=True))
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def _least_squares(p: list[float], t: list[float]) -> float:
    """The serial fraction a / (a + b) of the least-squares line."""
    a, b = _line(p, t)
    return a / (a + b)


def _times(g: Any, noise: float) -> tuple[list[float], list[float], float]:
    f, t1 = float(g.uniform(0.02, 0.6)), float(g.uniform(0.5, 20.0))
    p = [1.0, 2.0, 4.0, 8.0, 16.0][: int(g.integers(3, 6))]
    t = [t1 * (f + (1 - f) / q) * (1 + noise * float(g.normal())) for q in p]
    return p, t, f


def _last_repeat(p: list[float], t: list[float]) -> float:
    last = dict(zip(p, t, strict=True))
    return _least_squares(list(last), list(last.values()))


def _mean_repeats(p: list[float], t: list[float]) -> float:
    groups: dict[float, list[float]] = {}
    for q, s in zip(p, t, strict=True):
        groups.setdefault(q, []).append(s)
    return _least_squares(list(groups), [sum(v) / len(v) for v in groups.values()])


def _over_measured_t1(p: list[float], t: list[float]) -> float:
    return _line(p, t)[0] / t[p.index(1.0)]


_FIT_MISTAKES = (
    Mistake(
        " That is the parallel fraction; f is the serial part, a / (a + b).",
        answer=lambda p, t: 1 - _least_squares(p, t),
    ),
    Mistake(
        " Use every measurement (least squares over all p), not only the first and last.",
        answer=lambda p, t: _least_squares([p[0], p[-1]], [t[0], t[-1]]),
    ),
    Mistake(
        " The intercept a is f x T(1) in seconds: divide by T(1) = a + b to get a fraction.",
        answer=lambda p, t: _least_squares(p, t) * (t[0] if p[0] == 1 else 1),
    ),
    Mistake(
        " Every measurement counts: repeats at the same p are separate points of the fit, "
        "not one time kept per p.",
        answer=_last_repeat,
    ),
    Mistake(
        " Fit the repeats themselves: averaging them first weighs a p measured once like "
        "one measured three times.",
        answer=_mean_repeats,
    ),
    Mistake(
        " Divide a by the fitted a + b, not by the measured T(1): the fit averages out "
        "the noise of that one run.",
        answer=_over_measured_t1,
    ),
)


_FIT_TRUTH = tuple(
    f"{__name__}:{n}"
    for n in ("_line", "_least_squares", "_last_repeat", "_mean_repeats", "_over_measured_t1")
)


def _fit_drawn(noisy: bool) -> Any:
    def draw(g: Any, k: int) -> tuple[str, tuple[list[float], list[float]]]:
        p, t, f = _times(g, 0.02 if noisy or k >= 2 else 0.0)
        return f"p={p}, f={f:.3f}", (p, t)

    return draw


FIT = Table(
    "05.5",
    truth=_least_squares,
    named=[
        ("exact, f=0.25, T1=4 s", ([1.0, 2.0, 4.0], [4.0, 2.5, 1.75]), None, 0.25),
        ("exact, no serial part", ([1.0, 2.0, 8.0], [3.0, 1.5, 0.375]), None, 0.0),
        ("2 cores, noisy", ([1.0, 2.0, 1.0, 2.0], [2.0, 1.3, 2.1, 1.2])),
        ("unequal repeats", ([1.0, 1.0, 1.0, 2.0, 4.0], [3.9, 4.2, 4.0, 2.4, 1.8])),
    ],
    draw=_fit_drawn(noisy=False),
    draw_fresh=_fit_drawn(noisy=True),
    seeded=5,
    fresh=3,
    mistakes=_FIT_MISTAKES,
    same=lambda got, want: _near(got, want, 1e-7),
    what="fit_serial_fraction",
    message="[{label}] fitted f = {got!r}, least squares on T = a + b/p gives {want:.6g}.{hint}",
    seed=55,
)


@grader("05.5", blocks=(f"{_REF}:fit_serial_fraction", *_FIT_TRUTH, *_TRUTH))
def check_serial_fraction(fit_serial_fraction) -> str:
    n = FIT.grade(fit_serial_fraction)
    return f"{n} fits match least squares on T(p) = a + b/p, to 1e-7"
