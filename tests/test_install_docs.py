"""The install line a newcomer pastes: a virtual environment, CPU torch wheels, the course.

The README, the student guide and the grading image install torch the same way and with the
same requirement as pyproject.toml (the CPU index can't be reached from CI, so the line is
checked as text; `.ci/run` installs from the package index it has).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def _torch_requirement() -> str:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(d for d in deps if re.match(r"torch\b", d))


def _first_bash_block(text: str, after: str) -> list[str]:
    block = text.split(after, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return block.strip().splitlines()


def test_readme_and_student_guide_give_the_same_two_commands():
    readme = _first_bash_block((ROOT / "README.md").read_text(), "## Quickstart")
    guide = _first_bash_block((ROOT / "docs/student_guide.md").read_text(), "## Install")
    assert readme == guide and len(readme) == 2
    install, test = readme
    steps = [s.strip() for s in install.split("&&")]
    assert steps[0] == "python3 -m venv .venv" and steps[1] == ". .venv/bin/activate"
    assert steps[2] == f'pip install "{_torch_requirement()}" {CPU_INDEX}'
    assert steps[3] == 'pip install -e ".[dev]"'
    assert steps[4].startswith("jupyter lab --notebook-dir=. labs/00_orientation.ipynb")
    assert test.startswith(". .venv/bin/activate && python -m pytest -m lab00")


def test_the_grading_image_installs_the_same_torch():
    docker = (ROOT / "Dockerfile").read_text()
    assert f'pip install "{_torch_requirement()}" {CPU_INDEX}' in docker


def test_what_the_readme_tells_a_learner_to_write_is_ignored_by_git():
    import subprocess

    readme = (ROOT / "README.md").read_text()
    written = sorted(set(re.findall(r"--(?:json|png|junit) ([\w./-]+)", readme)))
    assert written, "the README names no output file"
    for path in written:
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert ignored.returncode == 0, f"{path} would land untracked in the checkout"
