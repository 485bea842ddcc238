"""What the forbidden-call watch costs: every check of the solutions, watched and unwatched.

``a2s bench --watch`` runs each lab's solution code in one namespace (setup, demos and
exercise cells; experiments skipped), then times every check cell with the watch
active and with it replaced by a no-op, alternated, one thread, best of ``repeats``. The
ratio is the watch's overhead on that check; the course keeps it under 2x (docs/trust.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2s.checks import watch

__all__ = ["CheckCost", "watch_overhead"]


@dataclass(frozen=True, slots=True)
class CheckCost:
    cell: str
    unwatched: float  # seconds, best of the repeats
    watched: float

    @property
    def ratio(self) -> float:
        return self.watched / self.unwatched if self.unwatched else 1.0


def _cells(path: Path) -> list[tuple[str, list[str], str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (c.get("id", ""), c.get("metadata", {}).get("tags", []), "".join(c["source"]))
        for c in nb["cells"]
        if c["cell_type"] == "code"
    ]


def _quiet_exec(source: str, name: str, namespace: dict[str, Any]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        exec(compile(source, name, "exec"), namespace)


def watch_overhead(solution: Path, repeats: int = 3) -> list[CheckCost]:
    """Time every check cell of ``solution`` watched and unwatched (see module docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    checks = []
    for cid, tags, source in _cells(solution):
        if "check" in tags:
            checks.append((cid, source))
        elif "experiment" not in tags and not cid.startswith("exp"):
            _quiet_exec(source, cid, namespace)
    real = watch.Watch.active
    costs = []
    try:
        for cid, source in checks:
            best = {True: float("inf"), False: float("inf")}
            for _ in range(repeats):
                for watched in (True, False):
                    off = lambda self: contextlib.nullcontext()  # noqa: E731
                    setattr(watch.Watch, "active", real if watched else off)  # noqa: B010
                    t0 = time.perf_counter()
                    _quiet_exec(source, cid, namespace)
                    best[watched] = min(best[watched], time.perf_counter() - t0)
            costs.append(CheckCost(cid, best[False], best[True]))
    finally:
        setattr(watch.Watch, "active", real)  # noqa: B010
    return costs
