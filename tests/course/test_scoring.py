"""Exercise statuses from hand-made cell records: every status, no kernel.

``exercise_status`` is where a grade is decided, so each branch has a case here that fails
when the branch changes (forcing every status to "passed" fails most of them).
"""

from __future__ import annotations

import pytest

from a2s.notebook import Exercise
from a2s.records import CellRecord
from a2s.scoring import exercise_status

EX = Exercise(
    id="02.3",
    title="Backward",
    task="backpropagate",
    points=2.0,
    cell_id="ex-02-3",
    check_cell_id="check-02-3",
    subject="frameworks",
    dimension="hands-on",
)


def rec(
    cid: str, outcome: str = "passed", ename: str | None = None, evalue: str | None = None, **extra
) -> CellRecord:
    """One cell record as ``a2s.nbval_plugin`` writes it."""
    return CellRecord(cid, outcome=outcome, ename=ename, evalue=evalue, **extra)


def status(
    ex_rec: CellRecord | None,
    check_rec: CellRecord | None,
    *,
    missing=(),
    fixed=None,
    timed_out: bool = False,
) -> tuple[str, str]:
    """``exercise_status`` without signed verdicts (records alone decide)."""
    records = {r.id: r for r in (ex_rec, check_rec) if r is not None}
    return exercise_status(EX, records, set(missing), fixed or {}, timed_out)


def ok_exercise() -> CellRecord:
    return rec("ex-02-3")


def failed_check(ename: str | None, evalue: str | None = "", **extra) -> CellRecord:
    return rec("check-02-3", "failed", ename, evalue, **extra)


def test_passed_reports_the_checks_last_tick_line() -> None:
    check = rec("check-02-3", stdout="warming up\n✔ 02.3 step\n✔ 02.3 passed: 40 graphs\n")
    assert status(ok_exercise(), check) == ("passed", "✔ 02.3 passed: 40 graphs")
    assert status(ok_exercise(), rec("check-02-3")) == ("passed", "passed")


@pytest.mark.parametrize(
    ("ename", "evalue", "want"),
    [
        ("CheckFailure", "case 'diamond': grad of a is 1, expected 2", "case 'diamond'"),
        ("AssertionError", "shapes differ", "shapes differ"),
        ("ReferenceCalledError", "you called minitorch.autograd.backward", "you called"),
        ("CheckFailure", None, "check failed"),
    ],
)
def test_a_failed_check_is_failed_with_its_message(ename, evalue, want) -> None:
    got, message = status(ok_exercise(), failed_check(ename, evalue))
    assert got == "failed" and want in message


def test_a_stub_is_failed_as_not_implemented() -> None:
    stub = rec("ex-02-3", "failed", "NotImplementedError", "Exercise 02.3: backpropagate")
    check = failed_check("NameError", "name 'backward' is not defined")
    assert status(stub, check) == ("failed", "not implemented yet: Exercise 02.3: backpropagate")


def test_a_stub_of_an_earlier_exercise_is_named() -> None:
    check = failed_check("CheckFailure", "not implemented yet: Exercise 02.1: local rules")
    got, message = status(ok_exercise(), check)
    assert got == "failed" and message.startswith("this exercise uses your Exercise 02.1")
    own = failed_check("CheckFailure", "not implemented yet: Exercise 02.3: backpropagate")
    assert status(ok_exercise(), own)[1] == "not implemented yet: Exercise 02.3: backpropagate"


def test_a_missing_function_is_failed() -> None:
    got, message = status(ok_exercise(), failed_check("NameError", "name 'backward' is not def"))
    assert got == "failed" and "could not find your function" in message


@pytest.mark.parametrize(
    ("ex_rec", "check", "want"),
    [
        (
            rec("ex-02-3", "failed", "SyntaxError", "invalid syntax"),
            failed_check("NameError"),
            "your exercise cell raised SyntaxError: invalid syntax",
        ),
        (rec("ex-02-3", "failed", "MemoryError", ""), failed_check("NameError"), "MemoryError"),
        (
            ok_exercise(),
            failed_check("StudentError", "your backward raised KeyError: 3"),
            "your backward raised KeyError: 3",
        ),
        (
            ok_exercise(),
            failed_check("ZeroDivisionError", "division by zero"),
            "ZeroDivisionError: division by zero",
        ),
        (ok_exercise(), failed_check(None, None, message="Kernel died"), "Kernel died"),
    ],
)
def test_crashes_are_errors_with_their_cause(ex_rec, check, want) -> None:
    got, message = status(ex_rec, check)
    assert got == "error" and want in message


def test_memory_errors_explain_the_cap() -> None:
    ex_rec = rec("ex-02-3", "failed", "MemoryError", "")
    assert "--memory-limit" in status(ex_rec, failed_check("NameError"))[1]


@pytest.mark.parametrize("which", ["exercise", "check"])
def test_a_cell_over_its_time_limit_is_a_timeout(which: str) -> None:
    ex_rec, check = ok_exercise(), rec("check-02-3")
    slow = ex_rec if which == "exercise" else check
    slow.outcome, slow.timeout, slow.ename = "failed", True, "KeyboardInterrupt"
    got, message = status(ex_rec, check)
    assert got == "timeout" and "--cell-timeout" in message


def test_a_check_that_never_ran() -> None:
    assert status(ok_exercise(), None) == ("error", "its check did not run")
    assert status(None, None, timed_out=True) == ("timeout", "the run stopped before this exercise")


def test_a_missing_exercise_cell_wins_over_any_record() -> None:
    got, message = status(ok_exercise(), rec("check-02-3"), missing={"02.3"})
    assert got == "missing" and "'ex-02-3'" in message and "labs/" in message


def test_a_verdict_fixed_by_a_rerun_wins() -> None:
    fixed = {"02.3": ("timeout", "could not be interrupted")}
    assert status(ok_exercise(), rec("check-02-3"), fixed=fixed) == fixed["02.3"]


FAILING_CHECKS = [
    failed_check(name, "x")
    for name in (
        "CheckFailure",
        "AssertionError",
        "ReferenceCalledError",
        "NameError",
        "StudentError",
        "TypeError",
        None,
    )
]


@pytest.mark.parametrize("check", FAILING_CHECKS, ids=lambda r: str(r.ename))
def test_no_failed_check_ever_scores(check: CellRecord) -> None:
    """Whatever the exercise cell did, a check cell that failed never gives points."""
    for ex_rec in (ok_exercise(), rec("ex-02-3", "failed", "ValueError", "bad")):
        assert status(ex_rec, check)[0] != "passed"
