"""The hosted-runner workflow (.github/workflows/ci.yml) and the smoke script it runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
_CHECK = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(_CHECK is None, reason="check-jsonschema not installed (pip install -e .[dev])")
def test_the_workflow_is_valid_against_githubs_schema() -> None:
    cmd = [str(_CHECK), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_it_runs_the_suite_on_311_and_the_smoke_test_on_312_313_and_macos() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    suite, smoke = doc["jobs"]["suite"], doc["jobs"]["smoke"]
    steps = "\n".join(str(s.get("run", "")) for s in suite["steps"])
    assert "--index-url https://download.pytorch.org/whl/cpu" in steps
    assert "python -m pytest" in steps
    assert suite["steps"][1]["with"]["python-version"] == "3.11"
    runs = {(m["os"], m["python"]) for m in smoke["strategy"]["matrix"]["include"]}
    assert runs == {("ubuntu-latest", "3.12"), ("ubuntu-latest", "3.13"), ("macos-latest", "3.11")}
    assert "scripts/smoke.sh" in smoke["steps"][-1]["run"]


def test_the_smoke_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "smoke.sh")]).returncode == 0
