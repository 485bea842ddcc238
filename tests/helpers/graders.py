"""Shared by the grader tests (``tests/checks/test_labNN.py``).

    rejects(lab01.check_decode, wrong, match="subnormal")     # a wrong answer fails
    rejects(lab03.check_pool_backward, f, g, match="col2im", error=ReferenceCalledError)
    unblocked = unblocked_in("minitorch.numerics")             # a reference clone runs freely

``always_equal(value)`` makes the value-that-decides-its-own-equality of the "values are values"
tests: an ``int``, ``float`` or ``ndarray`` subclass whose ``==`` always says yes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from a2s.checks.core import CheckFailure
from tests.helpers.unblocked import unblocked

__all__ = ["always_equal", "rejects", "unblocked_in"]


def rejects(
    check: Callable[..., None], *fns: Any, match: str, error: type[Exception] = CheckFailure
) -> None:
    """``check(*fns)`` raises ``error`` with a message matching ``match`` (a regex)."""
    with pytest.raises(error, match=match):
        check(*fns)


def unblocked_in(package: str) -> Callable[[Any], Any]:
    """``unblocked`` bound to one package: clones of its reference functions run freely."""
    return lambda fn: unblocked(fn, package)


class _EqInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class _EqFloat(float):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = float.__hash__


class _EqArray(np.ndarray):
    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return np.ones(np.broadcast(self, other).shape, bool)


def always_equal(value: Any) -> Any:
    """``value`` as an instance of a subclass whose ``==`` always says yes."""
    if isinstance(value, np.ndarray):
        return value.view(_EqArray)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("bool cannot be subclassed")
    if isinstance(value, (int, np.integer)):
        return _EqInt(value)
    return _EqFloat(value)
