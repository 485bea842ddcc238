"""Order and group the suite for its workers (``-n auto``; docs/authoring.md, "Test suite").

The longest tests start first, so no worker is left with a two-minute test at the end; the
modules whose tests share one expensive module fixture (a graded batch) run on one worker,
so the batch is graded once.
"""

from __future__ import annotations

import pytest

# nodeid prefixes, most expensive first (seconds on a quiet 2-core machine, December 2026)
_FIRST = (
    "tests/course/test_attacks.py",  # ~50 attack notebooks, graded in one batch
    "tests/course/test_honest.py",  # 39 honest patterns, both kernels
    "tests/course/test_e2e_attacks.py",  # labs 05-28, one graded notebook each
    "tests/course/test_grade_robustness.py",
    "tests/test_notebooks.py::test_solution_gets_full_points",  # 8-30 s each
    "tests/test_notebooks.py::test_stub_lab_fails_every_check",
    "tests/course/",
)
# modules whose tests share a module-scoped fixture worth grading once
_ONE_WORKER = (
    "tests/course/test_honest.py",
    "tests/course/test_grade_robustness.py",
    "tests/course/test_release.py",
    "tests/runtime/test_engine.py",
    "tests/runtime/test_quant_serving.py",
    "tests/parallel/test_sequence.py",
)


def _rank(item: pytest.Item) -> int:
    return next((i for i, p in enumerate(_FIRST) if item.nodeid.startswith(p)), len(_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order within a rank is the collection order


try:  # xdist's own grouping (--dist loadgroup) reads a nodeid suffix that pytest 9 drops
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pragma: no cover - the suite then runs in one process
    pass
else:

    class _Scheduling(LoadScopeScheduling):
        """Each test its own unit of work, but a module of ``_ONE_WORKER`` goes whole."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in _ONE_WORKER else nodeid

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> _Scheduling:
        return _Scheduling(config, log)  # type: ignore[arg-type]
