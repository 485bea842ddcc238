"""The grader machinery: guards that cannot be dodged, teaching messages, the success line."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.checks.core import (
    CheckFailure,
    ReferenceCalledError,
    StudentError,
    assert_bits_equal,
    assert_close,
    blocked,
    grader,
)
from minitorch.hardware import costs
from minitorch.hardware.costs import matmul_flops as imported_early

BLOCK = ("minitorch.hardware.costs:matmul_flops",)


@grader("99.1", blocks=BLOCK)
def check_double(student) -> str:
    assert_close(student(3), 6, case="three")
    return "1 case, 0 bytes"


def test_correct_code_passes_and_prints_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    check_double(lambda x: 2 * x)
    assert capsys.readouterr().out == "✔ Exercise 99.1 passed: 1 case, 0 bytes\n"


def test_wrong_answer_is_a_check_failure_with_the_case() -> None:
    with pytest.raises(CheckFailure, match=r"\[three\].*got 9"):
        check_double(lambda x: 3 * x)


@pytest.mark.parametrize(
    "cheat",
    [
        lambda x: costs.matmul_flops(x, 1, 1),  # through the module
        lambda x: imported_early(x, 1, 1),  # bound before the guard existed
    ],
)
def test_calling_the_reference_is_rejected_however_imported(cheat) -> None:
    with pytest.raises(ReferenceCalledError, match="matmul_flops"):
        check_double(cheat)


def test_swallowing_the_guard_does_not_help() -> None:
    def sneaky(x: int) -> int:
        try:
            return imported_early(x, 1, 1)
        except Exception:
            return 2 * x

    with pytest.raises(ReferenceCalledError):
        check_double(sneaky)


def test_guard_restores_the_reference() -> None:
    with blocked(BLOCK):
        with pytest.raises(ReferenceCalledError):
            costs.matmul_flops(1, 1, 1)
    assert costs.matmul_flops(2, 3, 4) == 48


def test_classes_are_blocked_method_by_method() -> None:
    from minitorch.hardware.machine import MachineInfo

    with blocked(("minitorch.hardware.machine:MachineInfo",)):
        info = object.__new__(MachineInfo)
        with pytest.raises(ReferenceCalledError):
            info.lines()


def test_student_exceptions_become_student_errors() -> None:
    with pytest.raises(StudentError, match="ZeroDivisionError"):
        check_double(lambda x: x / 0)


def test_stub_is_reported_as_not_implemented() -> None:
    def stub(x: int) -> int:
        raise NotImplementedError("Exercise 99.1: double x")

    with pytest.raises(CheckFailure, match="not implemented yet"):
        check_double(stub)


@pytest.mark.parametrize("bad", [None, 3, "f"])
def test_not_a_function_gets_a_clear_message(bad: object) -> None:
    with pytest.raises(CheckFailure, match="expected your function"):
        check_double(bad)


def test_assert_close_reports_shape_and_first_mismatch() -> None:
    with pytest.raises(CheckFailure, match=r"shape \(2,\), expected \(3,\)"):
        assert_close(np.zeros(2), np.zeros(3), case="c")
    with pytest.raises(CheckFailure, match=r"first at \[1\]"):
        assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5]), case="c")
    assert assert_close(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), case="c") == 0


def test_assert_bits_equal_shows_hex() -> None:
    with pytest.raises(CheckFailure, match="got 0x3f80, expected 0x3f81"):
        assert_bits_equal(np.array([0x3F80], np.uint16), np.array([0x3F81], np.uint16), case="c")
