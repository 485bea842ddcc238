"""Root pytest configuration.

* Loads the course's nbval plugin for every run: it skips cells tagged ``gpu`` and tests marked
  ``gpu`` when CUDA is absent, and lets a dead kernel fail its cell at once.
* Marks every test with its lab (``-m lab01``): grader tests ``tests/checks/test_lab01*.py``,
  the solution notebook ``solutions/01_*.ipynb``, and notebook self-tests whose id names it.
"""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["minitorch.course.nbval_plugin"]

_LAB = re.compile(r"(?:test_lab|solutions/|\[)(\d\d)(?:_|\.py|\b)")


def pytest_configure(config: pytest.Config) -> None:
    for n in range(29):
        config.addinivalue_line("markers", f"lab{n:02d}: tests of lab {n:02d}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        match = _LAB.search(item.nodeid)
        if match:
            item.add_marker(getattr(pytest.mark, f"lab{match.group(1)}"))
