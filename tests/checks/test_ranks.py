"""The grader library's rank tools: protocol-only view, exact counting, the torch seal."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks.ranks import PROTOCOL, CountingComm, protocol_only
from minitorch.comm.simworld import SimWorld


def _reachable(obj: object) -> list[object]:
    """Everything reachable from ``obj`` through attributes (not closures)."""
    seen, out, todo = set(), [], [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        out.append(o)
        for name in dir(o):
            if name.startswith("__") and name not in ("__dict__", "__class__"):
                continue
            try:
                todo.append(getattr(o, name))
            except Exception:
                pass
    return out


def test_view_exposes_only_the_protocol():
    def program(comm):
        view = protocol_only(comm)
        public = sorted(n for n in dir(view) if not n.startswith("_"))
        assert public == sorted(PROTOCOL)
        assert not hasattr(view, "__dict__")
        with pytest.raises(AttributeError):
            view.inner = comm
        other = 1 - view.rank
        h = view.isend(np.arange(3) + view.rank, other)
        r = view.irecv(other)
        for handle in (h, r):
            assert [n for n in dir(handle) if not n.startswith("_")] == ["wait"]
            assert not hasattr(handle, "__dict__")
        # no attribute path leads back to the real communicator or the world
        for o in _reachable(view) + _reachable(h) + _reachable(r):
            assert o is not comm and not isinstance(o, SimWorld)
        got = r.wait()
        h.wait()
        view.barrier()
        return got, view.world_size, repr(view)

    outs = SimWorld(2).run(program)
    assert [o[0].tolist() for o in outs] == [[1, 2, 3], [0, 1, 2]]
    assert outs[0][1] == 2 and outs[1][2] == "<Communicator rank 1 of 2>"


def test_counting_is_exact():
    def program(comm):
        c = CountingComm(comm)
        view = protocol_only(c)
        other = 1 - view.rank
        if view.rank == 0:
            view.send(np.zeros(3, np.float64), other)  # 24 bytes
            view.isend(np.arange(5, dtype=np.int32), other).wait()  # 20 bytes
            view.recv(other)
            handle = view.irecv(other)
            events_before_wait = list(c.events)
            handle.wait()
        else:
            view.recv(other)
            view.recv(other)
            view.send(np.ones(2, np.float32), other)  # 8 bytes
            view.send(np.ones(1, np.float32), other)  # 4 bytes
            events_before_wait = list(c.events)
        return {
            "messages": c.messages,
            "bytes": c.bytes,
            "to": dict(c.to),
            "dtypes": dict(c.dtypes),
            "float": c.float_bytes,
            "int": c.int_bytes,
            "events": list(c.events),
            "before": events_before_wait,
        }

    r0, r1 = SimWorld(2).run(program)
    assert r0["messages"] == 2 and r0["bytes"] == 44 and r0["to"] == {1: 44}
    assert r0["dtypes"] == {"float64": 24, "int32": 20}
    assert (r0["float"], r0["int"]) == (24, 20)
    assert r0["events"] == [("S", 1), ("S", 1), ("R", 1), ("R", 1)]
    assert r0["before"] == [("S", 1), ("S", 1), ("R", 1)]  # an irecv counts when waited for
    assert r1["messages"] == 2 and r1["bytes"] == 12 and r1["dtypes"] == {"float32": 12}
    assert r1["events"] == [("R", 0), ("R", 0), ("S", 0), ("S", 0)]


def test_counting_payload_hook():
    def refuse_none(x):
        if x is None:
            raise TypeError("comm.send got None")
        return x

    world = SimWorld(2)

    def program(comm):
        c = CountingComm(comm, refuse_none)
        if comm.rank == 0:
            with pytest.raises(TypeError, match="got None"):
                c.send(None, 1)
        return c.messages, c.bytes, c.events

    assert world.run(program) == [(0, 0, []), (0, 0, [])]


# --------------------------------------------------------------------------- the one seal
_ATTACKS = {  # what a learner's function might do on a gloo rank -> how the rank refuses it
    "import torch.distributed.distributed_c10d as c\n    c.all_reduce(x)": "Forbidden.*torch",
    "import torch\n    return torch.ones(3).numpy()": "Forbidden.*torch",
    "import torch.distributed as d\n    pg = d.distributed_c10d._get_default_group()\n"
    "    pg._get_backend(None)": "Forbidden.*torch",
    "import torch.distributed as d\n    d.ProcessGroupGloo.allreduce(None, [])": "Forbidden.*torch",
    "import torch.distributed._functional_collectives as f\n    f.all_reduce(x, 'sum', [0])": (
        "Forbidden.*torch"
    ),
    "from minitorch.comm.torchdist import TorchDistComm as T\n    T()": "Forbidden.*torch",
    "try:\n        import torch\n        torch.zeros(1)\n    except Exception:\n        pass\n"
    "    return x": "Forbidden.*torch",
    "import sys\n    sys._getframe(1)": "sys._getframe",
    "import inspect\n    inspect.stack()": "object.__getattr__|_getframe",
    "import gc\n    gc.get_objects()": "gc.get_objects",
    "import sys\n    sys.setprofile(None)": "sys.setprofile",
    "open('/tmp/a2s-seal-probe', 'w')": r"\(open\)",
    "import threading\n    threading.Thread(target=print).start()": "thread",
    "exec('y = 1')": "compile|exec",
    "import socket\n    socket.socket().connect(('127.0.0.1', 9))": "socket",
    "import subprocess\n    subprocess.run(['true'])": "subprocess.Popen",
    "import os\n    os.fork()": "os.fork",
    "import ctypes\n    ctypes.string_at(id(x), 8)": "ctypes",
}
_HONEST = [
    "import math\n    return np.array([math.ceil(v) for v in x]) + sum(range(3))",
    "import fractions, itertools, functools\n    @functools.lru_cache\n    def g(k):\n"
    "        return k * 2\n    return np.array([g(int(v)) for v in x], dtype=float)",
    "import dataclasses\n    @dataclasses.dataclass\n    class P:\n        a: int\n"
    "    return np.asarray([P(1).a] * 3)",
    "from collections import namedtuple\n    P = namedtuple('P', 'a b')\n"
    "    return np.array(P(1, 2))",
    "try:\n        return np.asarray(x) * 2\n    except ValueError:\n        return None",
]


def test_the_seal_refuses_what_a_rank_must_not_do_and_lets_honest_code_run():
    """Each attempt in a sealed, forked child of this process (torch imported here once)."""
    import re

    import torch  # noqa: F401

    from a2s.checks.errors import CheckFailure, StudentError
    from a2s.checks.harness import run_apart
    from a2s.checks.ranks import _sealed_child, learner_source

    def attempt(body):
        make = learner_source(f"def probe(comm, x):\n    {body}\n", "probe")
        try:
            return "ok", run_apart(_sealed_child, make, "99.9", (), 0, 1, (np.arange(3.0),))
        except (CheckFailure, StudentError) as exc:
            return type(exc).__name__, str(exc)

    for body, why in _ATTACKS.items():
        kind, text = attempt(body)
        assert kind in ("ForbiddenCallError", "CheckFailure"), (body, kind, text)
        assert re.search(why, f"{kind} {text}"), (body, text)
        if kind == "ForbiddenCallError":
            assert "which this exercise forbids: torch is the grader's ground truth" in text
    for body in _HONEST:
        kind, text = attempt(body)
        assert kind == "ok", (body, text)
