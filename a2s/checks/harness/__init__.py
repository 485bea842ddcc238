"""The process boundary: learner code runs in a forked child, trusted state stays here.

A check that runs learner code against something it counts (a communicator, a device, a
store) keeps that something in *this* process (the grader's, the notebook kernel's) and runs
the learner's function in a child made by ``os.fork``. The child gets proxies that can only
send requests; this process serves them and records what was asked. Whatever the learner's
code does to the objects it can reach in the child (rewrite a counter through ``__closure__``,
``__self__``, ``gc``, ``vars``, a module global) changes the child's copy only.

API
---
``run_apart(fn, *args, serve={}, timeout=60.0, **kwargs)``
    Fork; the child runs ``fn(*args, **kwargs)`` (usually a grader's ``_Guarded`` student
    wrapper, so the reference blocks and the forbidden-call watch run in the child); this
    process serves the child's requests, ``serve[name](*args)``, until it answers; returns
    the child's result as plain values. Inputs travel by fork (no serialisation); results
    and request arguments/results travel through :func:`encode`/:func:`decode`.
    In the child, an exception that is a :class:`CheckFailure` (and its subclasses
    ``ReferenceCalledError``, ``ForbiddenCallError``) or a :class:`StudentError` comes back
    as the same class with the same message; any other exception as a ``StudentError``
    naming its type and message. A child that dies, exits without answering, or runs past
    ``timeout`` seconds (it is killed) is a :class:`CheckFailure` that says so. What the
    child prints reaches this process's ``sys.stdout``/``sys.stderr`` (so a notebook shows
    it): the child's ``sys.stdout``/``sys.stderr`` are replaced by relays before ``fn``
    runs, so ipykernel's OutStream (whose thread does not exist in the child) is never
    touched there. The child ends with ``os._exit``: no atexit handler, no kernel code.
``request(name, *args, **kwargs)``
    Child side: ask the parent to run ``serve[name](*args, **kwargs)``; returns its plain
    result, or raises what it raised (a ``CheckFailure`` as such; ``ValueError``,
    ``TypeError``, ``IndexError``, ``KeyError`` as such; anything else as ``RuntimeError``).
``remote(obj, methods, name) -> (proxy, serve_entries)``
    A proxy whose listed methods only send requests ``"<name>.<method>"`` (its class has
    ``__slots__ = ()``; its methods close over strings only: no path leads from it to
    ``obj``), and the entries to merge into ``serve``.
``run_ranks(fn, world, rank_args, *, timeout=60.0, check=None) -> RankRun``
    Rank programs on the simulated world (labs 20-21, and the simulated runs of 23-26):
    one forked child per rank, each with a protocol-only communicator (``rank``,
    ``world_size``, ``send``, ``recv``, ``isend``, ``irecv``, ``barrier``; handles with
    ``wait`` only) whose calls are requests to a router here that holds the
    :class:`~minitorch.comm.simworld.SimWorld`. Each child gets only its own arguments
    (``rank_args[r]``). See :class:`RankRun` for what is recorded, :func:`run_ranks` for the
    schedule (the SimWorld's baton order, so its clock and message schedule are unchanged).

Where trusted state lives
-------------------------
Trusted objects (a world, a counter, the expected values) live in the parent as *locals of
the grader function*, never as module globals: after the fork the child holds a copy of
the parent's memory, and a copy kept in a module global would be one ``import`` away from
the learner's code (useless to the grade, which is computed from the parent's original, but
it would leak the expected values). A copy held only by grader frames is reachable in the
child by frame or ``gc`` introspection alone, which the sealed kernel vetoes during a guarded
call (:mod:`a2s.sealed`); in a plain kernel nothing stops it, as nothing stops
any in-process reflection there. The message that ends the child (its result or error)
carries an HMAC keyed with a secret made for that run and held by a local of the harness's
frames: learner code that writes to the channel's file descriptor directly cannot forge
the answer (that would skip the forbidden-call check that runs after ``fn`` returns).

The codec
---------
Plain values only, by exact type (as :func:`~a2s.checks.values.plain`): ``None``,
``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``; ``tuple``, ``list``, ``dict``
of them (an exact ``Counter``/``OrderedDict``/``defaultdict`` reads as a dict); numpy arrays
and numpy's own scalars of numeric, string or bytes dtype, as dtype + shape + bytes.
Nothing is unpickled; anything else (an ``int`` subclass whose ``==`` lies, an object
array, a pickle) is refused with a ``CheckFailure`` naming it.

Measured costs (2 shared cores, 7 other jobs, torch imported; medians of 20): fork + exit
of a child 16 ms quiet, 54 ms under load; one request round trip 47-89 us; ``run_apart`` of
a function returning a 1,000-float array 17-64 ms; a ring all-reduce on 8 simulated ranks
(8 children, 112 messages) 0.36 s.
"""

from __future__ import annotations

from a2s.checks.harness.apart import run_apart
from a2s.checks.harness.codec import decode, encode
from a2s.checks.harness.router import run_ranks
from a2s.checks.harness.wire import _CHILD as _CHILD
from a2s.checks.harness.wire import _write as _write
from a2s.checks.harness.wire import request
from a2s.checks.harness.world import RankRun, remote

__all__ = [
    "RankRun",
    "decode",
    "encode",
    "remote",
    "request",
    "run_apart",
    "run_ranks",
]
