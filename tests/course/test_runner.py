"""The notebook runner: per-cell records keyed by id, GPU cells skipped, the preamble's cap."""

from __future__ import annotations

import nbformat
import pytest

from a2s.runner import RunOptions, run_notebook

pytestmark = pytest.mark.grader


def _nb(*cells: tuple[str, str, list[str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for cid, src, tags in cells:
        cell = nbformat.v4.new_code_cell(src)
        cell["id"] = cid
        cell.metadata = {"tags": tags}
        nb.cells.append(cell)
    return nb


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def test_records_outcomes_by_cell_id_and_skips_gpu_cells() -> None:
    nb = _nb(
        ("ok", "print('hi')", []),
        ("boom", "raise ValueError('bad input')", []),
        ("cuda", "import torch\nassert torch.cuda.is_available()\nran_gpu = True", ["gpu"]),
        ("after", "print('gpu cell ran:', 'ran_gpu' in globals())", []),
        ("hog", "import numpy as np\nnp.ones(10**10)", []),
    )
    run = run_notebook(nb, RunOptions(cell_timeout=30, timeout=120, memory_limit_mb=2048))
    recs = run.records
    assert not run.timed_out
    assert recs["ok"].outcome == "passed" and "hi" in recs["ok"].stdout
    assert recs["boom"].outcome == "failed"
    assert recs["boom"].ename == "ValueError" and recs["boom"].evalue == "bad input"
    assert recs["after"].outcome == "passed"  # a failed cell does not stop the run
    if _cuda():
        assert recs["cuda"].outcome == "passed"
        assert "gpu cell ran: True" in recs["after"].stdout
    else:  # skipped: never executed (no record, or a "skipped" one)
        assert "cuda" not in recs or recs["cuda"].outcome == "skipped"
        assert "gpu cell ran: False" in recs["after"].stdout
    assert recs["hog"].outcome == "failed"
    assert recs["hog"].ename == "MemoryError"  # 80 GB against a 2 GB cap
    assert "a2s-grader-preamble" not in recs
    expected = ["ok", "boom", *(["cuda"] if _cuda() else []), "after", "hog"]
    assert [c for c in run.order if recs[c].outcome != "skipped"] == expected
