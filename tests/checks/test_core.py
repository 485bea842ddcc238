"""The grader machinery: guards that cannot be dodged, teaching messages, the success line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from a2s.checks.core import (
    CheckFailure,
    ForbiddenCallError,
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


# --------------------------------------------------------------------------- forbidden calls
def _torch_direct(x: int) -> int:
    import torch

    return int(torch.tensor(x) * 2)


def _torch_aliased(x: int) -> int:
    t = __import__("torch")
    mul = t.mul
    return int(mul(t.tensor(x), 2))


def _torch_method(x: int) -> int:
    import numpy
    import torch

    return int(torch.from_numpy(numpy.array([x])).sum().item() * 2)


def _torch_in_helper(x: int) -> int:
    def helper(v: int) -> int:
        import torch.nn.functional as F

        return int(F.relu(__import__("torch").tensor(float(v)))) * 2

    return helper(x)


def _torch_swallowed(x: int) -> int:
    try:
        return _torch_direct(x)
    except Exception:
        return 2 * x


def _torch_in_thread(x: int) -> int:
    import threading

    out: list[int] = []
    worker = threading.Thread(target=lambda: out.append(_torch_swallowed(x)))
    worker.start()
    worker.join()
    return out[0]


@pytest.mark.parametrize(
    "cheat",
    [
        _torch_direct,
        _torch_aliased,
        _torch_method,
        _torch_in_helper,
        _torch_swallowed,
        _torch_in_thread,
    ],
)
def test_torch_is_forbidden_anywhere_in_the_call_tree(cheat) -> None:
    with pytest.raises(ForbiddenCallError, match=r"`torch\."):
        check_double(cheat)


def test_a_cloned_reference_is_caught_by_its_file_and_name() -> None:
    import types

    fn = costs.matmul_flops
    clone = types.FunctionType(fn.__code__, fn.__globals__, "innocent")
    with pytest.raises(ReferenceCalledError, match="matmul_flops"):
        check_double(lambda x: clone(x, 1, 1))


def test_a_second_import_of_the_reference_file_is_caught() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("my_costs", costs.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    with pytest.raises(ReferenceCalledError, match="a second import"):
        check_double(lambda x: copy.matmul_flops(x, 1, 1))


def test_forbidden_numpy_routines_are_named_but_numpy_internals_are_not() -> None:
    @grader("99.3", forbid=("numpy:convolve", "math:fsum"))
    def check_sum(student) -> str:
        assert_close(student([1.0, 2.0]), 3.0, case="two")
        return "ok"

    with pytest.raises(ForbiddenCallError, match="numpy:convolve"):
        check_sum(lambda xs: float(np.convolve(xs, [1.0])[0] + np.convolve(xs, [1.0])[1]))
    with pytest.raises(ForbiddenCallError, match="math:fsum"):
        check_sum(lambda xs: __import__("math").fsum(xs))
    check_sum(lambda xs: float(np.sum(np.asarray(xs))))  # allowed routines work


def test_a_check_may_allow_torch() -> None:
    @grader("99.4", forbid=())
    def check_free(student) -> str:
        assert_close(student(2), 4, case="two")
        return "ok"

    check_free(_torch_direct)


# --------------------------------------------------------------------------- values, cascades
class _AlwaysEqual(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


def test_a_value_that_decides_its_own_equality_fails() -> None:
    from a2s.checks.core import plain

    with pytest.raises(CheckFailure, match="subclass of int"):
        plain(_AlwaysEqual(3))
    with pytest.raises(CheckFailure, match="subclass of int"):
        check_double(lambda x: _AlwaysEqual(0))
    assert plain([1, (2.5, "a"), {"k": np.float32(1)}]) == [1, (2.5, "a"), {"k": np.float32(1)}]


def test_an_earlier_failed_exercise_is_replaced_by_the_reference(capsys) -> None:
    from a2s.checks import core

    @grader("99.5", uses=(("99.1", "matmul_flops", "minitorch.hardware.costs:matmul_flops"),))
    def check_uses(student) -> str:
        assert_close(student(2), 16, case="two")  # 2 * matmul_flops(2, 2, 2) / 2
        return "ok"

    namespace = {"matmul_flops": lambda m, n, k: 0}  # the student's broken 99.1
    exec("def intensity(m):\n    return matmul_flops(m, m, m) // 1", namespace)
    core._PASSED["99.1"] = False
    check_uses(namespace["intensity"])
    assert "checked with the reference `matmul_flops`, since yours failed 99.1" in (
        capsys.readouterr().out
    )
    assert namespace["matmul_flops"](1, 1, 1) == 0  # the student's own function is restored
    core._PASSED["99.1"] = True
    with pytest.raises(CheckFailure, match="got 0"):
        check_uses(namespace["intensity"])


def test_every_verdict_is_an_audit_event() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(a) if e == 'a2s.verdict' else None)\n"
        "from a2s.checks import lab00\n"
        "lab00.check_matmul_flops(lambda m, n, k: 2 * m * n * k)\n"
        "try:\n    lab00.check_matmul_flops(lambda m, n, k: m * n * k)\nexcept AssertionError:\n"
        "    pass\n"
        "print([(e, s) for e, s, _ in seen])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[('00.1', 'passed'), ('00.1', 'failed')]" in out.stdout


def test_a_failure_renders_in_a_few_lines_and_the_student_error_names_the_input() -> None:
    try:
        check_double(lambda x: 3 * x)
    except CheckFailure as exc:
        lines = exc._render_traceback_()
    assert 2 <= len(lines) <= 6 and "three" in lines[1]
    with pytest.raises(StudentError, match=r"called with 3\)") as info:
        check_double(lambda x: [][x])
    assert "in your code, line" in "\n".join(info.value._render_traceback_())


class _AlwaysEqualF32(np.float32):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = np.float32.__hash__


def test_a_numpy_scalar_subclass_fails_and_numpy_scalars_pass() -> None:
    from a2s.checks.core import plain

    with pytest.raises(
        CheckFailure, match=r"\[c\] result is a _AlwaysEqualF32, a subclass of float32"
    ):
        plain(_AlwaysEqualF32(1.0), case="c")
    with pytest.raises(CheckFailure, match="subclass of float32"):
        plain([np.float32(1), (_AlwaysEqualF32(0.0),)])

    class Disguised(np.int64):  # claims numpy's module and name, still not numpy's own type
        __module__, __qualname__ = "numpy", "int64"

    Disguised.__name__ = "int64"
    with pytest.raises(CheckFailure, match="subclass of int64"):
        plain(Disguised(3))
    for x in (np.float32(1.5), np.float64(2), np.int64(3), np.uint8(4), np.bool_(True)):
        assert type(plain(x)) is type(x) and plain(x) == x
    assert type(plain(np.str_("a"))) is np.str_


def test_the_watch_overhead_bench_times_every_check_of_a_lab() -> None:
    from a2s.overhead import watch_overhead
    from a2s.syllabus import repo_root

    costs = watch_overhead(repo_root() / "solutions" / "00_orientation.ipynb", repeats=1)
    assert [c.cell for c in costs] == ["check-00-1", "check-00-2"]
    assert all(c.watched > 0 and c.unwatched > 0 for c in costs)  # figures, never asserted


def test_measured_code_may_use_only_the_public_api() -> None:
    from a2s.checks.hygiene import assert_public_api

    alias = getattr

    def public(ctx: object, a: np.ndarray) -> np.ndarray:
        return np.add(a, 1)

    def private(ctx: object) -> None:
        ctx._stats = 0  # type: ignore[attr-defined]

    def helper(ctx: object) -> None:
        setattr(ctx, "x", 1)  # noqa: B010

    def via_helper(ctx: object) -> None:
        helper(ctx)

    def aliased(ctx: object) -> object:
        return alias(ctx, "_stats")

    assert_public_api(public, what="your kernel", api="ctx")
    for bad, shown in ((private, "._stats"), (via_helper, "setattr"), (aliased, "alias")):
        with pytest.raises(CheckFailure, match=f"uses `{re.escape(shown)}"):
            assert_public_api(bad, what="your kernel", api="ctx")


def test_stdlib_dicts_read_as_plain_dicts_and_their_subclasses_fail() -> None:
    import collections

    from a2s.checks.core import plain

    assert plain(collections.Counter(a=2)) == {"a": 2}
    assert type(plain(collections.OrderedDict(a=1))) is dict
    assert plain(collections.defaultdict(int, {1: 2})) == {1: 2}

    class Sneaky(collections.Counter):
        def __eq__(self, other: object) -> bool:
            return True

    with pytest.raises(CheckFailure, match="subclass of dict"):
        plain(Sneaky(a=1))


def test_own_dataclass_is_not_the_blocked_one(capsys: pytest.CaptureFixture[str]) -> None:
    """Generated __init__s share ("<string>", name): the watch must not confuse them."""
    from dataclasses import dataclass

    @grader("99.6", blocks=("minitorch.hardware.intensity:OpCost",), forbid=("math:fsum",))
    def check_pair(student) -> str:
        got = student(2, 3)
        assert_close(float(got.flops), 2.0, case="pair")
        return "1 case"

    @dataclass
    class Mine:
        flops: float
        bytes: float

    check_pair(lambda f, b: Mine(f, b))
    assert "passed" in capsys.readouterr().out

    from minitorch.hardware.intensity import OpCost

    with pytest.raises(ReferenceCalledError):
        check_pair(lambda f, b: OpCost(f, b))


def test_watches_ending_out_of_order_leave_no_thread_hook() -> None:
    """One watch per simulated rank thread: they end in any order, threading ends clean."""
    import threading

    from a2s.checks.watch import Watch

    before = threading.getprofile()
    first, second = Watch(forbid=("torch",), blocks=()), Watch(forbid=("torch",), blocks=())
    a, b = first.active(), second.active()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)  # the first to start ends first
    assert threading.getprofile() is not before  # the second watch still covers new threads
    b.__exit__(None, None, None)
    assert threading.getprofile() is before


def test_several_substituted_references_make_one_short_clause(capsys) -> None:
    from a2s.checks import core

    uses = (
        ("99.1", "matmul_flops", "minitorch.hardware.costs:matmul_flops"),
        ("99.2", "matmul_bytes", "minitorch.hardware.costs:matmul_bytes"),
    )

    @grader("99.6", uses=uses)
    def check_both(student) -> str:
        assert_close(student(2), 16, case="two")
        return "ok"

    namespace = {"matmul_flops": lambda m, n, k: 0, "matmul_bytes": lambda *a: 0}
    exec("def f(m):\n    return matmul_flops(m, m, m) + 0 * matmul_bytes(m, m, m, 4)", namespace)
    core._PASSED["99.1"] = core._PASSED["99.2"] = False
    check_both(namespace["f"])
    out = capsys.readouterr().out
    assert out.count("checked with the reference") == 1
    assert "the reference `matmul_flops`, `matmul_bytes`, since yours failed 99.1, 99.2" in out
    core._PASSED["99.1"] = core._PASSED["99.2"] = True


def test_bit_exact_compares_bits_not_values() -> None:
    from a2s.checks.values import assert_bits_equal

    want = np.array([0, 0, 1], np.float32)
    with pytest.raises(CheckFailure, match="differ in 1 of 3"):
        assert_bits_equal(np.array([0.0, -0.0, 1.0], np.float32), want, case="relu")
    with pytest.raises(CheckFailure, match="differ in 1 of 3"):  # widths differ: signs count
        assert_bits_equal(np.array([0.0, -0.0, 1.0]), want, case="relu")
    nan = np.array([np.nan, 1.0], np.float32)
    assert_bits_equal(np.array([-np.nan, 1.0], np.float32), nan, case="nan payloads and signs")
    assert_bits_equal(np.arange(3), np.arange(3), case="ints")
