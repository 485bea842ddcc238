"""mypy over ``minitorch/`` and ``a2s/``, configured in pyproject.toml (``[tool.mypy]``, lenient).

Skipped where mypy is not installed; the ``dev`` extra installs it, so CI runs it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from a2s.syllabus import repo_root


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy not installed (pip install -e '.[dev]')"
)
def test_mypy_is_clean(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "minitorch", "a2s"],
        cwd=repo_root(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
