"""The notebook runner: per-cell records keyed by id, GPU cells skipped, the preamble's cap."""

from __future__ import annotations

import nbformat
import pytest

from minitorch.course.runner import RunOptions, run_notebook

pytestmark = pytest.mark.grader


def _nb(*cells: tuple[str, str, list[str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for cid, src, tags in cells:
        cell = nbformat.v4.new_code_cell(src)
        cell["id"] = cid
        cell.metadata = {"tags": tags}
        nb.cells.append(cell)
    return nb


def test_records_outcomes_by_cell_id_and_skips_gpu_cells() -> None:
    nb = _nb(
        ("ok", "print('hi')", []),
        ("boom", "raise ValueError('bad input')", []),
        ("cuda", "import torch\nassert torch.cuda.is_available()", ["gpu"]),
        ("after", "x = 1", []),
        ("hog", "import numpy as np\nnp.ones(10**10)", []),
    )
    run = run_notebook(nb, RunOptions(cell_timeout=30, timeout=120, memory_limit_mb=2048))
    recs = run.records
    assert recs["ok"]["outcome"] == "passed" and "hi" in recs["ok"]["stdout"]
    assert recs["boom"]["ename"] == "ValueError" and recs["boom"]["evalue"] == "bad input"
    assert recs.get("cuda", {"outcome": "skipped"})["outcome"] == "skipped"
    assert recs["after"]["outcome"] == "passed"
    assert recs["hog"]["ename"] == "MemoryError"  # 80 GB against a 2 GB cap
    assert "a2s-grader-preamble" not in recs
