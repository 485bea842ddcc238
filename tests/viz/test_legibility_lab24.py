"""Lab 24's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import tensor_parallel
from minitorch.parallel.sequence import korthikanti_bytes
from tests.viz.test_legibility import assert_legible


def test_activation_memory_plot_is_legible() -> None:
    ts = [1, 2, 4]
    formula = {
        m: [korthikanti_bytes(8, 2, 8, 4, t, m) / 128 for t in ts]
        for m in ("tp", "sp", "recompute")
    }
    big_ts = [1, 2, 4, 8]
    big = {
        m: [korthikanti_bytes(2048, 1, 12288, 96, t, m) / 2**30 for t in big_ts]
        for m in ("tp", "sp", "recompute")
    }
    fig = tensor_parallel.plot_activation_memory(ts, formula, formula, big_ts, big)
    assert_legible(Path(__file__).stem, lambda: fig)
