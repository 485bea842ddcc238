"""Run one notebook under pytest + nbval in a sandbox and collect cell records and verdicts.

The notebook is written to a fresh temporary folder (the submission itself is never touched)
beside a fresh copy of the course package. pytest, nbval and the kernel run inside the OS
sandbox of :mod:`a2s.sandbox`; the kernel is the sealed one of
:mod:`a2s.sealed` (memory cap, tamper hook, signed verdicts), configured through a
file it deletes before any notebook code runs. :mod:`a2s.nbval_plugin` writes one
JSON line per cell (timeouts, crashes, output: diagnostics only; scores come from the signed
verdicts). A run that outlives ``timeout`` is killed with everything it started.
"""

from __future__ import annotations

import os
import shutil
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

from a2s.notebook import dumps
from a2s.records import CellRecord
from a2s.sandbox import course_copy, isolation_level, sandboxed
from a2s.syllabus import repo_root
from a2s.verdicts import Verdicts, new_seal, read_verdicts

__all__ = ["RunOptions", "RunResult", "run_notebook"]

_SEAL_ENV = "A2S_SEAL"
# the reference subpackages (numpy only, fast to import); missing ones are skipped
REFERENCE_PACKAGES = (
    "numerics",
    "hardware",
    "data",
    "autograd",
    "nn",
    "optim",
    "kernels",
    "model",
    "compiler",
    "runtime",
    "comm",
    "parallel",
    "driver",
    "cpu",
    "rl",
    "elastic",
    "chip",  # its __init__ imports nothing (its modules import torch)
)


@dataclass(slots=True)
class RunOptions:
    """Limits of one grading run."""

    cell_timeout: float = 60.0  # seconds per cell
    timeout: float = 900.0  # seconds for the whole notebook, reruns included
    memory_limit_mb: int = 4096  # kernel address-space cap; torch alone takes ~0.8 GB
    seed: int | None = None  # the fresh cases' seed ($A2S_SEED in the kernel); None: random
    hide: tuple[str, ...] = ()  # more files and folders the kernel must not see (the batch)
    extra_checks: str | None = None  # an instructor's folder of hidden checks (labNN.py)
    every_cell: bool = False  # also run the cells that score nothing (a2s.unscored)
    unscored_last: bool = False  # run those after every other cell (the course's own tests)


@dataclass(slots=True)
class RunResult:
    records: dict[str, CellRecord] = field(default_factory=dict)  # cell id -> record
    order: list[str] = field(default_factory=list)  # cell ids in execution order
    timed_out: bool = False  # the whole run hit RunOptions.timeout
    returncode: int | None = None
    log: str = ""
    verdicts: Verdicts = field(default_factory=Verdicts)
    isolation: str = "none"
    seed: int = 0


def _preload(nb: NotebookNode, extra: bool) -> list[str]:
    """Modules the sealed kernel imports before the snapshot: numpy, the lab's graders."""
    lab = str(nb.metadata.get("a2s", {}).get("lab", ""))
    # the reference package too: a module imported after the snapshot would be unprotected
    base = ["numpy", *(f"minitorch.{name}" for name in REFERENCE_PACKAGES)]
    if not lab.isdigit():
        return base
    return [*base, f"a2s.checks.lab{lab}", *([f"a2s_extra.lab{lab}"] if extra else [])]


def _copy_extra(folder: Path, course: Path) -> bool:
    """Put the instructor's hidden checks beside the course copy as package ``a2s_extra``."""
    if not folder.is_dir():
        return False
    target = course / "a2s_extra"
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    (target / "__init__.py").touch()
    return True


def _seal_cells(nb: NotebookNode) -> tuple[NotebookNode, dict[str, str]]:
    """Course cells become ``__a2s_cell__("id")``: the sealed kernel runs their code itself."""
    out = nbformat.from_dict(nb)
    cells = {}
    for cell in out.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code" and "exercise" not in tags and cell.source.strip():
            cells[cell["id"]] = cell.source
            cell.source = f"__a2s_cell__({cell['id']!r})"
    return out, cells


def _hidden(extra: tuple[str, ...]) -> list[Path]:
    """What the kernel must not see: the checkout's solutions, labs, tests, package, history."""
    try:
        root = repo_root()
    except FileNotFoundError:
        root = None
    names = ("solutions", "labs", "tests", "minitorch", "a2s", ".git", "grades")
    paths = [root / n for n in names] if root else []
    return paths + [Path(p) for p in extra]


def _command(nb_path: Path, ini: Path, opts: RunOptions) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        str(nb_path),
        "-c",
        str(ini),
        "--rootdir",
        str(ini.parent),
        "-p",
        "a2s.nbval_plugin",
        "-p",
        "nbval.plugin",
        "-p",
        "no:cacheprovider",
        "--assert=plain",
        "--nbval-lax",
        "--nbval-current-env",
        f"--nbval-cell-timeout={opts.cell_timeout:g}",
        "--nbval-kernel-startup-timeout=60",
        "-q",
        "--no-header",
        "-rN",
        "--tb=no",
    ]


def _read_records(path: Path) -> list[CellRecord]:
    if not path.exists():
        return []
    rows = (CellRecord.from_json(ln) for ln in path.read_text(encoding="utf-8").splitlines())
    return [r for r in rows if r is not None]  # a line cut short by a kill is skipped


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
    """Execute ``nb`` in the sandbox and sealed kernel; return cell records and verdicts.

    ``progress(n)`` is called with the number of cells finished so far.
    """
    result = RunResult(isolation=isolation_level())
    result.seed = opts.seed if opts.seed is not None else int.from_bytes(os.urandom(3), "little")
    with tempfile.TemporaryDirectory(prefix="a2s-grade-") as tmp:
        folder = Path(tmp)
        nb_path = folder / "submission.ipynb"
        sealed_nb, cells = _seal_cells(nb)
        nb_path.write_text(dumps(sealed_nb), encoding="utf-8")
        ini = folder / "pytest.ini"
        ini.write_text("[pytest]\naddopts =\n", encoding="utf-8")
        results = folder / "cells.jsonl"
        course = course_copy(folder)
        extra = _copy_extra(Path(opts.extra_checks), course) if opts.extra_checks else False
        seal = new_seal(folder, opts.memory_limit_mb, _preload(nb, extra), cells)
        env = {
            **os.environ,
            "A2S_RESULTS": str(results),
            "MPLBACKEND": "Agg",
            _SEAL_ENV: str(seal.config),
            "A2S_SEED": str(result.seed),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(course), os.getenv("PYTHONPATH")])),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        env.pop("PYTEST_ADDOPTS", None)
        # only nbval and the course's plugin: another installed pytest plugin neither changes a
        # grade nor costs its start-up (hypothesis's alone, assertion-rewritten, took 1.5 s)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        command = sandboxed(
            _command(nb_path, ini, opts), folder, course, _hidden(opts.hide), result.isolation
        )
        log = folder / "pytest.log"
        with log.open("w") as log_fh:
            proc = subprocess.Popen(
                command,
                cwd=folder,
                env=env,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + opts.timeout
            seen = -1
            try:
                while proc.poll() is None:
                    if time.monotonic() > deadline:
                        result.timed_out = True
                        break
                    if progress is not None:
                        n = len(_read_records(results))
                        if n != seen:
                            seen = n
                            progress(n)
                    time.sleep(0.2)
            finally:  # a timeout, Ctrl+C or an error here: nothing the run started survives
                if proc.poll() is None:
                    _kill(proc)
        result.returncode = proc.returncode
        for row in _read_records(results):
            result.records[row.id] = row
            result.order.append(row.id)
        if progress is not None:
            progress(len(result.order))
        result.verdicts = read_verdicts(seal)
        result.log = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    return result
