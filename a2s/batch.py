"""Helpers of batch grading: who and what was graded (audit), and a stoppable thread pool."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

__all__ = ["course_identity", "file_sha256", "run_each"]


def file_sha256(path: str) -> str | None:
    """The SHA-256 of a file's bytes, or None if it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def course_identity(root: Path) -> tuple[str | None, str | None]:
    """``(version, commit)`` of the course doing the grading; None where unknown.

    The commit comes from ``A2S_COURSE_COMMIT`` (set in the container image, which has no
    ``.git``), else from git in ``root``, with ``-dirty`` when tracked files were edited.
    """
    try:
        version = metadata.version("algo2silicon")
    except metadata.PackageNotFoundError:
        version = None
    commit = os.environ.get("A2S_COURSE_COMMIT") or None
    if commit is None:
        try:
            git = ["git", "-C", str(root)]
            head = subprocess.run(
                [*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            dirty = subprocess.run(
                [*git, "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
            commit = head + ("-dirty" if dirty else "") if head else None
        except (OSError, subprocess.SubprocessError):
            commit = None
    return version, commit


def run_each(n: int, jobs: int, work: Callable[[int], None]) -> None:
    """Call ``work(i)`` for i < n on up to ``jobs`` threads; Ctrl+C gets through at once.

    Daemon threads joined with a timeout, not a thread pool: a pool's exit handler would wait
    for every running grading before Ctrl+C could end the command.
    """
    if jobs <= 1 or n <= 1:
        for i in range(n):
            work(i)
        return
    todo, lock = iter(range(n)), threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            work(i)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(jobs, n))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)
