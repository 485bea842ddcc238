"""Describe the machine a lab runs on: cores, memory, BLAS, Python and torch versions.

Everything is read from the standard library and ``/proc``; optional packages (numpy's
BLAS through threadpoolctl, torch) are reported when importable and skipped otherwise.

Lab: 00_orientation
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from dataclasses import dataclass

__all__ = ["MachineInfo", "machine_info"]


@dataclass(slots=True)
class MachineInfo:
    """What a lab needs to know about this computer."""

    python: str
    platform: str
    cpu: str
    cores: int
    memory_gib: float | None
    blas: str
    torch: str | None

    def lines(self) -> list[str]:
        mem = f"{self.memory_gib:.1f} GiB" if self.memory_gib is not None else "unknown"
        return [
            f"python  {self.python} on {self.platform}",
            f"cpu     {self.cpu}, {self.cores} cores available",
            f"memory  {mem}",
            f"blas    {self.blas}",
            f"torch   {self.torch or 'not installed'}",
        ]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _blas() -> str:
    try:
        import numpy  # noqa: F401 - loads the BLAS so threadpoolctl can see it
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (numpy or threadpoolctl missing)"
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return "none found"
    p = pools[0]
    arch, threads = p.get("architecture"), p.get("num_threads")
    return f"{p.get('internal_api')} {p.get('version')} ({arch}, {threads} threads)"


def _torch() -> str | None:
    """Torch's installed version, read from package metadata (importing torch takes seconds)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> MachineInfo:
    """Collect a :class:`MachineInfo` for this process's machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return MachineInfo(
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        cpu=_cpu_name(),
        cores=int(cores or 1),
        memory_gib=_memory_gib(),
        blas=_blas(),
        torch=_torch(),
    )
