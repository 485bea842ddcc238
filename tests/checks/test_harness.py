"""The process-boundary harness: trusted state in the parent, learner code in a forked child."""

from __future__ import annotations

import gc
import operator
import os
import pickle
import sys
import time

import numpy as np
import pytest

from a2s.checks import harness
from a2s.checks.core import guarded
from a2s.checks.errors import (
    CheckFailure,
    ForbiddenCallError,
    ReferenceCalledError,
    StudentError,
)
from a2s.checks.harness import decode, encode, remote, request, run_apart, run_ranks
from minitorch.comm.simworld import SimWorld
from tests.helpers.graders import always_equal


class Counter:
    """A trusted counter of the kind a grader keeps (messages, loads, bytes)."""

    def __init__(self) -> None:
        self.n = 0

    def add(self, k: int) -> int:
        self.n += int(k)
        return self.n


GLOBAL_COUNTER = Counter()  # a module global: a fork copy in the child, never the parent's


def _rewrite_everything(proxy) -> list[str]:
    """Every route a learner would try from the proxy to the counter; rewrite what is found."""
    reached = []
    method = proxy.add
    for cell in getattr(method.__func__, "__closure__", None) or ():
        if isinstance(cell.cell_contents, Counter):
            cell.cell_contents.n = 10**6
            reached.append("__closure__")
    if isinstance(getattr(method, "__self__", None), Counter):
        reached.append("__self__")
    for name in ("_obj", "obj", "inner", "_inner", "__wrapped__"):
        try:
            found = operator.attrgetter(name)(proxy)
        except AttributeError:
            continue
        if isinstance(found, Counter):
            found.n = 10**6
            reached.append("attrgetter")
    try:
        vars(proxy)
        reached.append("vars")
    except TypeError:
        pass
    for obj in gc.get_objects():  # the child's fork copy of the parent's counter is here
        if type(obj) is Counter:
            obj.n = 10**6
    GLOBAL_COUNTER.n = 10**6
    sys.modules[__name__].GLOBAL_COUNTER.add(10**6)
    proxy.add(1)
    return reached


def test_a_counter_rewritten_in_the_child_leaves_the_parents_count():
    counter = Counter()  # a grader local
    proxy, serve = remote(counter, ["add"], "count")
    assert type(proxy).__slots__ == ()
    reached = run_apart(_rewrite_everything, proxy, serve=serve)
    assert reached == []
    assert counter.n == 1  # the one request, whatever the child did to its copies
    assert GLOBAL_COUNTER.n == 0


def test_the_proxy_holds_nothing_of_the_object():
    counter = Counter()
    proxy, serve = remote(counter, ["add"], "count")
    seen = [proxy.add.__func__, *(c.cell_contents for c in proxy.add.__func__.__closure__ or ())]
    seen += [type(proxy).add, *vars(type(proxy)).values()]
    assert all(x is not counter and not isinstance(x, Counter) for x in seen)
    assert not any(isinstance(x, Counter) for x in gc.get_referents(proxy, type(proxy)))
    assert set(serve) == {"count.add"}


def test_results_are_plain_values():
    got = run_apart(
        lambda a, b=0: (
            a + b,
            [1.5, None, True],
            {"k": b"x"},
            np.arange(3, dtype=np.int32),
            np.float32(2.5),
            3 + 4j,
            "é",
        ),
        2,
        b=5,
    )
    assert got[:4] == (7, [1.5, None, True], {"k": b"x"}, got[3])
    assert got[3].dtype == np.int32 and list(got[3]) == [0, 1, 2]
    assert type(got[4]) is np.float32 and got[5:] == (3 + 4j, "é")


class _Odd:
    pass


@pytest.mark.parametrize(
    "value",
    [
        always_equal(3),
        always_equal(2.0),
        _Odd(),
        np.array([object()]),
        np.zeros(2, dtype=[("a", "f8")]),
        lambda: 1,
        {1, 2},
        type("L", (list,), {})(),
    ],
    ids=[
        "int-subclass",
        "float-subclass",
        "object",
        "object-array",
        "structured",
        "function",
        "set",
        "list-subclass",
    ],
)
def test_the_codec_refuses_what_is_not_plain(value):
    with pytest.raises(CheckFailure, match=r"plain values|dtype|only"):
        encode(value)
    with pytest.raises(CheckFailure):
        run_apart(lambda: value)


def test_the_codec_never_unpickles():
    class Boom:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    for data in (pickle.dumps(Boom()), pickle.dumps([1, 2]), b"", b"I\x05", b"Z"):
        with pytest.raises(CheckFailure, match="malformed"):
            decode(data)
    assert decode(encode([1, (2.0, "x")])) == [1, (2.0, "x")]


def test_exceptions_come_back_as_the_course_class_with_the_message():
    def raise_(exc):
        raise exc

    for cls in (CheckFailure, ReferenceCalledError, ForbiddenCallError, StudentError):
        with pytest.raises(cls, match="exactly this") as info:
            run_apart(raise_, cls("exactly this"))
        assert type(info.value) is cls
    with pytest.raises(StudentError, match="IndexError: list index out of range"):
        run_apart(lambda: [][1])
    with pytest.raises(StudentError, match="exit"):
        run_apart(lambda: sys.exit(3))


def test_the_guarded_watch_runs_in_the_child():
    def uses_torch(x):
        import torch

        return float(torch.tensor(x).sum())

    with pytest.raises(ForbiddenCallError, match="torch"):
        run_apart(guarded(uses_torch, "99.1", ()), [1.0, 2.0])


def test_a_child_that_hangs_or_exits_is_reported():
    with pytest.raises(CheckFailure, match=r"did not finish within 0\.3 s"):
        run_apart(time.sleep, 30, timeout=0.3)
    with pytest.raises(CheckFailure, match="exited with status 0 without answering"):
        run_apart(os._exit, 0)
    with pytest.raises(CheckFailure, match="killed by SIGKILL"):
        run_apart(lambda: os.kill(os.getpid(), 9))


def test_an_answer_written_to_the_channel_directly_is_not_taken():
    def forge():
        fd = harness._CHILD[0]
        harness._write(fd, b"R" + encode(("ok", 42)) + b"\0" * 32)
        os._exit(0)

    with pytest.raises(CheckFailure, match="unsigned"):
        run_apart(forge)


def test_requests_are_served_in_the_parent_and_errors_relayed():
    seen = []

    def serve_add(a, b=0):
        seen.append((a, b))
        return a + b

    def child():
        out = request("add", 2, b=3)
        try:
            request("missing")
        except ValueError as exc:
            return out, str(exc)
        return out, ""

    assert run_apart(child, serve={"add": serve_add}) == (5, "no such request 'missing'")
    assert seen == [(2, 3)]
    with pytest.raises(RuntimeError, match="only inside a child"):
        request("add", 1)


def test_prints_reach_the_parent(capfd):
    def talk():
        print("hello from the child")
        print("to stderr", file=sys.stderr)
        return 1

    assert run_apart(talk) == 1
    out, err = capfd.readouterr()
    assert "hello from the child" in out and "to stderr" in err


def test_run_ranks_matches_the_simulated_world():
    from minitorch.comm.allreduce import ring_all_reduce

    xs = [np.arange(10.0) * (r + 1) for r in range(4)]
    ref = SimWorld(4)
    want = ref.run(ring_all_reduce, xs, per_rank=True)
    world = SimWorld(4)
    run = run_ranks(ring_all_reduce, world, [(x,) for x in xs])
    assert all(np.array_equal(a, b) for a, b in zip(run.results, want, strict=True))
    assert world.bytes_sent == ref.bytes_sent and world.msgs_sent == ref.msgs_sent
    assert dict(world.link_bytes) == dict(ref.link_bytes) and world.clock == ref.clock
    assert run.bytes == ref.bytes_sent and run.messages == [6] * 4
    assert run.events[0][:2] == [("S", 1), ("R", 3)]


def _rewrite_comm(comm, x):
    """A rank that tries to reach the world or its counters, then sends once."""
    for cell in comm.send.__func__.__closure__ or ():
        assert not isinstance(cell.cell_contents, SimWorld)
    assert not hasattr(comm, "_world") and not hasattr(comm, "__dict__")
    for obj in gc.get_objects():
        if type(obj) is SimWorld:
            obj.bytes_sent[:] = [0] * len(obj.bytes_sent)
    if comm.rank == 0:
        comm.send(x, 1)
        return None
    return comm.recv(0)


def test_a_rank_cannot_rewrite_the_worlds_counters():
    world = SimWorld(2)
    run = run_ranks(_rewrite_comm, world, [(np.ones(4),), (np.zeros(4),)])
    assert world.bytes_sent == [32, 0] and run.to == [{1: 32}, {}]
    assert list(run.results[1]) == [1.0] * 4


def test_each_rank_gets_only_its_own_arguments():
    def program(comm, x):
        return int(x)

    assert run_ranks(program, 3, [(10,), (11,), (12,)]).results == [10, 11, 12]


def test_deadlock_names_who_waits_for_whom():
    def ring_of_recvs(comm):
        return comm.recv((comm.rank + 1) % comm.world_size)

    with pytest.raises(CheckFailure, match="rank 0 waits for a message from rank 1; rank 1"):
        run_ranks(ring_of_recvs, 3, [()] * 3)


def test_a_ranks_own_error_is_what_comes_back():
    def program(comm):
        if comm.rank == 2:
            return [][1]
        return comm.recv(2)

    with pytest.raises(StudentError, match="rank 2: your code raised IndexError"):
        run_ranks(program, 3, [()] * 3)


def test_the_router_refuses_a_rank_outside_the_world():
    def program(comm):
        comm.send(np.ones(1), 5)

    with pytest.raises(StudentError, match="ValueError: rank 5 is outside the world of size 2"):
        run_ranks(program, 2, [()] * 2)


def test_prints_in_a_jupyter_kernel_reach_the_notebook(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from a2s.checks.harness import run_apart\n"
            "def f():\n    print('from the child')\n    return 41\n"
            "print(run_apart(f) + 1)"
        )
    ]
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert "from the child" in text and "42" in text
