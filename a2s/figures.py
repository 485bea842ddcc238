"""How ``a2s bench`` prints a figure: the header, one line per figure, a missed target flagged.

print(BENCH_HEADER)
print_figure("21", Figure("gloo / ring bus bandwidth, 4 MiB", 1.8, "x", "target <= 1.5"))
# [21] gloo / ring bus bandwidth, 4 MiB   1.8 x   vs target <= 1.5   ✘ misses the target
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["BENCH_HEADER", "missed_target", "print_figure"]

BENCH_HEADER = (
    "lab  figure (one thread)                                         value unit       vs what "
    "it is read against\n     a ratio 'A / B' divides A's figure by B's: for times, above 1 "
    "means A is slower"
)
_TARGET = re.compile(r"(?:target\s*)?(<=|>=|<|>|≤|≥)\s*([0-9.]+(?:e[-+]?\d+)?)")


def missed_target(value: float, anchor: str) -> bool:
    """True when ``anchor`` states a target (``target <= 2.0``, ``>= 0.67``) ``value`` misses."""
    match = _TARGET.search(anchor)
    if match is None:
        return False
    op, bound = match.group(1).replace("≤", "<=").replace("≥", ">="), float(match.group(2))
    ok = {"<=": value <= bound, "<": value < bound, ">=": value >= bound, ">": value > bound}
    return not ok[op]


def print_figure(lab: str, fig: Any) -> None:
    miss = "   ✘ misses the target" if missed_target(fig.value, fig.anchor) else ""
    print(f"[{lab}] {fig.name:<52} {fig.value:>12.4g} {fig.unit:<10} vs {fig.anchor}{miss}")
