"""Root pytest configuration.

* Loads the course's nbval plugin for every run: it skips cells tagged ``gpu`` and tests marked
  ``gpu`` when CUDA is absent, and lets a dead kernel fail its cell at once.
* Marks every test with its lab (``-m lab01``): grader tests ``tests/checks/test_lab01*.py``,
  a solution notebook run directly (``pytest solutions/01_*.ipynb``), and notebook self-tests
  whose id names it. The lab markers come from the syllabus registry, one per lab.
* Seeds ``random``, numpy's global generator and torch before every test, so a test's
  randomness does not depend on which tests ran before it.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from a2s.syllabus import LABS

pytest_plugins = ["a2s.nbval_plugin"]

_LAB = re.compile(r"(?:test_lab|solutions/|\[)(\d\d)(?:_|\.py|\b)")
SEED = 0


def pytest_configure(config: pytest.Config) -> None:
    for lab in LABS:
        config.addinivalue_line("markers", f"lab{lab.number}: tests of lab {lab.number}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    numbers = {lab.number for lab in LABS}
    for item in items:
        match = _LAB.search(item.nodeid)
        if match and match.group(1) in numbers:
            item.add_marker(getattr(pytest.mark, f"lab{match.group(1)}"))


@pytest.fixture(autouse=True)
def _seeded() -> None:
    """Every test starts from the same seeds (``SEED``) in random, numpy and torch."""
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
