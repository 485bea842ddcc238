"""Blocking by default: the graders' ground truth, whole modules, handouts, case labels."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import a2s.checks.lab00 as lab00
from a2s.checks import guard
from a2s.checks.cases import Case, run_cases
from a2s.checks.core import (
    CheckFailure,
    ReferenceCalledError,
    StudentError,
    grader,
    guarded,
)
from a2s.checks.lab01 import summation
from a2s.checks.profiler import forbidden_message


def test_the_graders_truth_is_blocked_for_the_student_only(capsys) -> None:
    def cheat(m, n, k):  # the grader's own counted loop
        return lab00._counted_flops(m, n, k) if m < 100 else 2 * m * n * k

    with pytest.raises(ReferenceCalledError, match=r"lab00\._counted_flops"):
        lab00.check_matmul_flops(cheat)

    def through_a_helper(x):  # through a checks helper: still the student's call
        from a2s.checks.compare import call

        return call(summation._kahan_loop, x)

    with pytest.raises(ReferenceCalledError, match="_kahan_loop"):
        guarded(through_a_helper, "01.4", ())(np.ones(3, np.float32))
    lab00.check_matmul_flops(lambda m, n, k: 2 * m * n * k)  # the grader calls it freely
    assert "passed" in capsys.readouterr().out
    assert lab00._counted_flops(2, 3, 4) == 48  # and outside a check it is callable
    assert summation._kahan_loop.__code__.co_name == "_kahan_loop"  # restored


def test_another_labs_truth_is_blocked_too() -> None:
    # lab 01's grader loaded beside lab 00's: its truth answers nothing of lab 00, but another
    # lab's helper may answer some exercise (lab 09's attention answered lab 12's), so every
    # loaded lab package is blocked, not the exercise's own alone
    def from_another_lab(x):
        return summation._kahan_loop(x)

    with pytest.raises(ReferenceCalledError, match="_kahan_loop"):
        guarded(from_another_lab, "00.1", ())(np.ones(3, np.float32))
    assert summation._kahan_loop.__code__.co_name == "_kahan_loop"  # restored


def test_what_the_grader_hands_over_stays_callable() -> None:
    # a grader-module function passed as an argument is a handout; an instance's methods too
    def student(f, twin):
        return f(2, 3, 4) + twin.elements()

    class Twin:  # stands for a grader class handed to the student
        def elements(self):
            return 1

    Twin.__module__ = "a2s.checks.lab00"
    assert guarded(student, "00.1", ())(lab00._counted_flops, Twin()) == 49

    def keeps_it(f):
        return lab00._counted_flops(1, 1, 1)  # not the function it was handed

    with pytest.raises(ReferenceCalledError):
        guarded(keeps_it, "00.1", ())(lab00._triple)


def test_handout_is_for_the_defining_module_only() -> None:
    with pytest.raises(TypeError, match="only the module that defines"):
        guard.handout(lab00._counted_flops)
    module = types.ModuleType("a2s.checks.lab99")
    sys.modules[module.__name__] = module
    try:
        exec(
            "from a2s.checks.guard import handout\n"
            "@handout\n"
            "class Device:\n"
            "    def load(self, i):\n"
            "        return _secret(i)\n"
            "def _secret(i):\n"
            "    return i + 1\n"
            "def make():\n"
            "    return Device()\n",
            module.__dict__,
        )

        def student(make_device):
            return make_device().load(1)  # a handout returned by a handout

        assert guarded(student, "99.1", ())(module.make) == 2

        def cheat(make_device):
            return module._secret(1)

        with pytest.raises(ReferenceCalledError, match=r"lab99\._secret"):
            guarded(cheat, "99.1", ())(module.make)
    finally:
        del sys.modules[module.__name__]


def test_a_module_target_blocks_every_public_name_but_the_allowed() -> None:
    from minitorch.numerics import summation as ref

    @grader("01.4", blocks=("minitorch.numerics.summation",), allow=("pairwise_sum", "naive_sum"))
    def check(student) -> str:
        return str(student())

    with pytest.raises(ReferenceCalledError, match="kahan_sum"):
        check(lambda: ref.kahan_sum(np.ones(3, np.float32)))
    check(lambda: ref.pairwise_sum(np.ones(3, np.float32)))  # allowed by name
    assert check.allow == ("pairwise_sum", "naive_sum")


def test_an_error_of_the_students_code_names_the_case() -> None:
    cases = [Case("n=3, first", (3,), 3), Case("n=0, empty", (0,), 0)]
    with pytest.raises(StudentError, match=r"Exercise 00.1 \[n=0, empty\]: your function raised"):
        run_cases(guarded(lambda n: n // n * n, "00.1", ()), cases, message=lambda *a: "x")


def test_a_forbidden_import_is_named_as_an_import() -> None:
    message = forbidden_message("import torch.distributed")
    assert message.startswith("your code imported `torch.distributed`, which this exercise")
    assert "_add_docstr" not in message
    assert forbidden_message("math:fsum").startswith("your code called `math:fsum`")
    assert isinstance(ReferenceCalledError("x"), CheckFailure)


def test_importing_a_forbidden_module_is_reported_as_the_import() -> None:
    sys.modules.pop("email.mime.audio", None)

    def student():
        import email.mime.audio  # noqa: F401 - its module body runs now, inside the check

        return 1

    with pytest.raises(CheckFailure, match=r"your code imported `email\.mime\.audio`"):
        guarded(student, "99.1", (), forbid=("email.mime",))()


def test_a_hint_can_be_chosen_by_matching_the_answer() -> None:
    from a2s.checks.values import assert_close

    def doubled(got, want):
        return "You doubled it." if np.allclose(got, 2 * want) else ""

    want = np.array([1.0, 2.0])
    with pytest.raises(CheckFailure, match="You doubled it"):
        assert_close(2 * want, want, case="c", hint=doubled)
    with pytest.raises(CheckFailure) as caught:
        assert_close(want + 1, want, case="c", hint=doubled)
    assert "doubled" not in str(caught.value)  # another mistake: no hint by default


def test_a_grader_function_named_like_the_stub_is_blocked_too() -> None:
    """A grader's own ``_truth`` (the name the guard's stub has) is swapped like any other."""
    from a2s.checks.lab09 import positions

    x = np.arange(8.0).reshape(2, 4)

    def cheat(x):
        return positions._truth(x)

    with pytest.raises(ReferenceCalledError, match=r"positions\._truth"):
        guarded(cheat, "09.3", ())(x)
    assert positions._truth.__code__.co_name == "_truth"  # restored, callable outside


def _on_thread(fn, *args):  # the learner's own helper: runs fn on a Thread, returns its value
    import threading

    box: list = []
    thread = threading.Thread(target=lambda: box.append(fn(*args)))
    thread.start()
    thread.join()
    return box[0]


def _via_pool(x):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lab00._counted_flops, x, x, x).result()


def _via_thread(x):
    import threading

    thread = threading.Thread(target=lab00._counted_flops, args=(x, x, x))
    thread.start()
    thread.join()
    raise RuntimeError("no value")  # a Thread returns nothing: the truth's raise counts


def _via_timer(x):
    import threading

    timer = threading.Timer(0.0, lab00._counted_flops, args=(x, x, x))
    timer.start()
    timer.join()
    raise RuntimeError("no value")


def _via_nested(x):  # a pool's worker submits to a pool; a Thread submits to a pool
    import threading
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as inner, ThreadPoolExecutor(1) as outer:
        future = outer.submit(inner.submit, lab00._counted_flops, x, x, x).result()
        if future.exception() is None:
            return future.result()
        thread = threading.Thread(target=inner.submit, args=(lab00._counted_flops, x, x, x))
        thread.start()
        thread.join()
    raise RuntimeError("no value")


def _via_initializer(x):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, initializer=lab00._counted_flops, initargs=(x, x, x)) as pool:
        return pool.submit(int, x).result()


def _via_low_level_thread(x):  # no Thread object, no Python frame below the truth
    import _thread
    import time
    from itertools import chain

    from a2s.checks import guard

    box: list = []
    refused = len(guard._CALLS)
    calls = map(lab00._counted_flops, [x], [x], [x])  # called from C: the truth has no caller
    _thread.start_new_thread(box.extend, (chain(calls, ["done"]),))
    for _ in range(2000):  # until the thread's call returned or was refused
        if box or len(guard._CALLS) > refused:
            break
        time.sleep(0.001)
    if box:
        return box[0]
    raise RuntimeError("no value")


def _via_forged_record(x):  # writes "made by the grader" for its own thread
    import threading

    from a2s.checks import truth_threads

    thread = threading.Thread(target=lab00._counted_flops, args=(x, x, x))
    truth_threads._KEEP.send((thread, None))
    thread.start()
    thread.join()
    raise RuntimeError("no value")


def _via_recording_off(x):  # turns the record off, then starts a thread
    from a2s.checks import truth_threads

    truth_threads.stop()
    try:
        return _on_thread(lab00._counted_flops, x, x, x)
    finally:
        truth_threads._OFF[0] = False


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize(
    "cheat",
    [
        _via_pool,
        _via_thread,
        _via_timer,
        _via_nested,
        _via_initializer,
        _via_low_level_thread,
        _via_forged_record,
        _via_recording_off,
    ],
)
def test_a_truth_handed_to_a_thread_is_still_the_learners_call(cheat) -> None:
    with pytest.raises(ReferenceCalledError, match=r"lab00\._counted_flops"):
        guarded(cheat, "00.1", ())(2)
    assert lab00._counted_flops(2, 3, 4) == 48  # restored, callable outside


def test_threads_of_the_grader_and_honest_threads_pass() -> None:
    from concurrent.futures import ThreadPoolExecutor

    module = types.ModuleType("a2s.checks.lab99")
    sys.modules[module.__name__] = module
    try:
        exec(
            "import threading\n"
            "from concurrent.futures import ThreadPoolExecutor\n"
            "def _secret(i):\n"
            "    return i + 1\n"
            "def pooled(i):\n"
            "    with ThreadPoolExecutor(2) as pool:\n"
            "        return pool.submit(_secret, i).result()\n"
            "def threaded(i):\n"
            "    box = []\n"
            "    t = threading.Thread(target=lambda: box.append(_secret(i)))\n"
            "    t.start(); t.join()\n"
            "    return box[0]\n",
            module.__dict__,
        )

        def student(pooled, threaded):  # the grader's handouts use threads; so may the student
            with ThreadPoolExecutor(2) as pool:
                mine = pool.submit(lambda i: i * 10, 4).result()
                handed = pool.submit(pooled, 1).result()
            return mine + handed + threaded(2) + _on_thread(threaded, 3) + _on_thread(abs, -5)

        assert guarded(student, "99.1", ())(module.pooled, module.threaded) == 40 + 2 + 3 + 4 + 5
    finally:
        del sys.modules[module.__name__]
