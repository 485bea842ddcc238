"""``a2s doctor``: what works on this machine for the course, and how to fix what does not."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = ["Finding", "diagnose"]


@dataclass(slots=True)
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""


_REINSTALL = (
    'pip install -e ".[dev]" in the course clone; in an assignment repository, reinstall the '
    "course package as its README says"
)


def _version(module: str) -> Finding:
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # any import failure is a finding, not a crash
        return Finding(module, False, f"{type(exc).__name__}: {exc}", _REINSTALL)
    return Finding(module, True, str(getattr(mod, "__version__", "installed")))


TORCH = "torch>=2.4,<2.14"  # pyproject.toml's requirement
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TESTED_PYTHON = (3, 11)
SMOKE_TESTED = ((3, 12), (3, 13))  # pyproject.toml's classifiers say the same


def _python() -> Finding:
    version = sys.version.split()[0]
    if sys.version_info[:2] < TESTED_PYTHON:
        return Finding("python", False, version, "install Python 3.11")
    if sys.version_info[:2] in SMOKE_TESTED:
        return Finding(
            "python",
            True,
            f"{version} (the full suite runs on 3.11; this one passes "
            "the smoke test, scripts/smoke.sh)",
        )
    if sys.version_info[:2] > TESTED_PYTHON:
        return Finding("python", True, f"{version} (untested: the course runs on 3.11-3.13)")
    return Finding("python", True, version)


def _torch_threads() -> Finding:
    try:
        import torch
    except ImportError:
        fix = f'pip install "{TORCH}" --index-url {CPU_INDEX}'
        return Finding("torch", False, "not importable", fix)
    gpu = torch.cuda.is_available()
    cuda = "CUDA available" if gpu else "CPU only (GPU cells will be skipped)"
    detail = f"{torch.__version__}, {torch.get_num_threads()} threads, {cuda}"
    if torch.version.cuda and not gpu:  # a +cuXXX wheel where no GPU can use it
        return Finding(
            "torch",
            False,
            f"{detail}; this is the CUDA build ({torch.version.cuda}) on a machine without a GPU: "
            "several GB of NVIDIA libraries the course never uses, and importing it inside a "
            "graded exercise can fail under the grader's memory cap",
            f'pip install --force-reinstall "{TORCH}" --index-url {CPU_INDEX}',
        )
    return Finding("torch", True, detail)


def _checkout() -> Finding:
    """Which course a2s works with: a checkout (every command) or an assignment repository."""
    from a2s.syllabus import LABS, is_template, repo_root, template_problems

    try:
        root = repo_root()
    except FileNotFoundError as exc:
        return Finding(
            "course",
            False,
            str(exc).split(";")[0],
            "run a2s inside your assignment repository (labs/ and .a2s/) or the course clone",
        )
    if not is_template(root):
        return Finding("course", True, f"checkout {root} (solutions/: every command works)")
    labs = ", ".join(lab.number for lab in LABS if lab.solution_path(root).is_file())
    bad = template_problems(root)
    detail = (
        f"assignment repository {root} (labs {labs or 'none'}; check, list and grade work with "
        "the installed package's graders; build, execute and release need the course checkout)"
    )
    if bad:
        return Finding("course", False, f"{detail}: {bad[0]}", "git checkout -- .a2s")
    return Finding("course", True, detail)


def _gloo() -> Finding:
    try:
        import torch.distributed as dist
    except ImportError:
        return Finding(
            "gloo", False, "torch.distributed missing", "install a torch build with distributed"
        )
    ok = dist.is_available() and dist.is_gloo_available()
    return Finding(
        "gloo",
        ok,
        "available" if ok else "not available",
        "" if ok else "use a torch build with gloo",
    )


def _machine() -> list[Finding]:
    from minitorch.hardware import machine_info

    info = machine_info()
    mem = "unknown" if info.memory_gib is None else f"{info.memory_gib:.1f} GiB"
    return [
        Finding(
            "cpu",
            info.cores >= 2,
            f"{info.cpu}, {info.cores} cores",
            "labs assume 2 cores; 1 works, slower",
        ),
        Finding(
            "memory",
            info.memory_gib is None or info.memory_gib >= 4,
            mem,
            "4 GiB or more recommended",
        ),
        Finding("blas", "none" not in info.blas, info.blas, "reinstall numpy from PyPI"),
    ]


def _toolchain() -> Finding:
    """Lab 37's tools: g++ and binutils required, valgrind for exercise 37.6 (cachegrind)."""
    from minitorch.native.toolchain import report

    tools = {t.name: t for t in report()}
    need = [n for n in ("g++", "nm", "objdump") if tools[n].path is None]
    found = [
        f"{n} {(tools[n].version.split() or ['?'])[-1].removeprefix('valgrind-')}"
        for n in ("g++", "valgrind")
        if tools[n].path
    ]
    detail = ", ".join(found) or "no g++"
    if tools["valgrind"].path is None:
        detail += (
            "; no valgrind (exercise 37.6 cannot be graded, the cachegrind experiment is skipped)"
        )
    fix = f"lab 37 needs {', '.join(need)}: apt-get install g++ binutils (valgrind optional)"
    return Finding("toolchain", not need, detail, fix if need else "")


def _kernel() -> Finding:
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError as exc:
        return Finding("jupyter kernel", False, str(exc), _REINSTALL)
    t0 = time.perf_counter()
    try:
        km, kc = start_new_kernel(
            kernel_name="python3", startup_timeout=60, stderr=subprocess.DEVNULL
        )
    except Exception as exc:
        return Finding(
            "jupyter kernel",
            False,
            f"{type(exc).__name__}: {exc}",
            "python -m ipykernel install --user",
        )
    try:
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    return Finding(
        "jupyter kernel", True, f"python3 kernel starts in {time.perf_counter() - t0:.1f} s"
    )


def diagnose(start_kernel: bool = True) -> list[Finding]:
    """Run every probe; the kernel probe (about a second) can be skipped."""
    found = [_python(), _checkout(), _torch_threads(), _gloo()]
    found += [_version(m) for m in ("numpy", "matplotlib", "nbval", "nbformat", "tqdm")]
    found += _machine()
    found.append(_toolchain())
    if start_kernel:
        found.append(_kernel())
    return found
