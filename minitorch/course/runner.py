"""Run one notebook under pytest + nbval in a subprocess and collect per-cell records.

The notebook is written to a fresh temporary folder (the submission itself is never touched),
a preamble cell caps the kernel's address space (``RLIMIT_AS``), and
:mod:`minitorch.course.nbval_plugin` writes one JSON line per cell. A run that outlives
``timeout`` is killed with its whole process group; the records written so far are kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from minitorch.course.notebook import dumps

__all__ = ["RunOptions", "RunResult", "run_notebook"]

PREAMBLE_ID = "a2s-grader-preamble"
_PREAMBLE = """\
# added by the a2s grader: cap the kernel's memory (address space)
import resource as _a2s_resource
_a2s_resource.setrlimit(_a2s_resource.RLIMIT_AS, ({limit}, {limit}))
del _a2s_resource
"""


@dataclass(slots=True)
class RunOptions:
    """Limits of one grading run."""

    cell_timeout: float = 60.0  # seconds per cell
    timeout: float = 900.0  # seconds for the whole notebook, reruns included
    memory_limit_mb: int = 4096  # kernel address-space cap; torch alone takes ~0.8 GB


@dataclass(slots=True)
class RunResult:
    records: dict[str, dict] = field(default_factory=dict)  # cell id -> record
    order: list[str] = field(default_factory=list)  # cell ids in execution order
    timed_out: bool = False  # the whole run hit RunOptions.timeout
    returncode: int | None = None
    log: str = ""


def with_preamble(nb: NotebookNode, memory_limit_mb: int) -> NotebookNode:
    limit = int(memory_limit_mb) * 1024 * 1024
    cell = nbformat.v4.new_code_cell(_PREAMBLE.format(limit=limit))
    cell["id"] = PREAMBLE_ID
    out = nbformat.from_dict(nb)
    out.cells = [cell, *out.cells]
    return out


def _command(nb_path: Path, ini: Path, opts: RunOptions) -> list[str]:
    return [
        sys.executable, "-m", "pytest", str(nb_path), "-c", str(ini), "--rootdir", str(ini.parent),
        "-p", "minitorch.course.nbval_plugin", "-p", "no:cacheprovider",
        "--nbval-lax", "--nbval-current-env", f"--nbval-cell-timeout={opts.cell_timeout:g}",
        "--nbval-kernel-startup-timeout=60", "-q", "--no-header", "-rN", "--tb=no",
    ]  # fmt: skip


def _read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return rows


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_notebook(
    nb: NotebookNode,
    opts: RunOptions,
    progress: Callable[[int], None] | None = None,
) -> RunResult:
    """Execute ``nb`` (with the preamble) and return each cell's record by id.

    ``progress(n)`` is called with the number of cells finished so far.
    """
    with tempfile.TemporaryDirectory(prefix="a2s-grade-") as tmp:
        folder = Path(tmp)
        nb_path = folder / "submission.ipynb"
        nb_path.write_text(dumps(with_preamble(nb, opts.memory_limit_mb)), encoding="utf-8")
        ini = folder / "pytest.ini"
        ini.write_text("[pytest]\naddopts =\n", encoding="utf-8")
        results = folder / "cells.jsonl"
        env = {**os.environ, "A2S_RESULTS": str(results), "MPLBACKEND": "Agg"}
        env.pop("PYTEST_ADDOPTS", None)
        log = folder / "pytest.log"
        with log.open("w") as log_fh:
            proc = subprocess.Popen(
                _command(nb_path, ini, opts), cwd=folder, env=env, stdout=log_fh,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            result = RunResult()
            deadline = time.monotonic() + opts.timeout
            seen = -1
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    result.timed_out = True
                    _kill(proc)
                    break
                if progress is not None:
                    n = len(_read_records(results))
                    if n != seen:
                        seen = n
                        progress(max(0, n - 1))  # minus the preamble
                time.sleep(0.2)
        result.returncode = proc.returncode
        for row in _read_records(results):
            if row.get("id") == PREAMBLE_ID:
                continue
            result.records[row["id"]] = row
            result.order.append(row["id"])
        if progress is not None:
            progress(len(result.order))  # the preamble is not in order
        result.log = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    return result
