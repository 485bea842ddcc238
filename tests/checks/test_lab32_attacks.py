"""Lab 32 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`); 32.5 runs the
learner's ``save_checkpoint`` in a forked child whose ``disk`` is a proxy of the grader's
``Disk``. What was tried:

* 32.1: a ``pathlib`` loader with a class, a recursion over the entries behind a decorator;
  no check at all, the size only, the last manifest entry, the folder trusted over the
  manifest; the reference ``load_latest``, the grader's truth (``newest_in``, the table's
  ``_truth``, a closure the guard could not stub until it was made a plain function), a
  lookup of the public folders (fallbacks: bytes unchecked, size only: drawn folders often
  lack the damage that shows them, so the fresh ones now hold it by turns), a step whose
  ``==`` says yes, the grader's ``_intact`` rebound mid-check;
* 32.2: the closed form expanded, a class with ``math`` imported inside; Young's, the − δ
  left out, the cap left out; the reference, the grader's truth, a lookup (fallback Young's),
  a float whose ``==`` says yes, the table's truth rebound;
* 32.3: an event walk with ``bisect``, numpy behind a decorator; ``>=``, future beats peeked
  at, silent ranks skipped; the reference monitor, the grader's truth, a lookup of the public
  jobs (fallbacks: peeking, ``>=``: the fresh jobs now always hold a stall-then-beat rank and
  a rank beating every deadline), a dict whose ``==`` says yes;
* 32.4: ``statistics.median``, numpy with imports inside; means, the rank itself in the
  baseline, ``>=``; the reference, the grader's truth and its ``median``, a lookup, a list
  whose ``==`` says yes;
* 32.5: a class with a helper per file, a save that rewrites only the newest entry; the
  manifest in place, no fsync, no commit, the data file in place without fsync, a manifest
  sha of other bytes; the reference's ``sha256``, requests the server does not serve, a
  non-bytes write, the child's copy of the ``Disk`` rewritten through ``gc``, the manifest
  written in place padded to twice its length (a crash "tore" it to its own first half, whole:
  now an unsynced write is also replayed lost), the previous checkpoint moved away.

* 32.6: lists without numpy (two elements a read), a class with ``bisect`` and numpy imported
  inside, the notebook's loop behind a decorator; the remainder to the last rank, whole
  shards, an inclusive end, the global index as the offset (no named hint); the reference,
  ``sharded.load_full``, the table's ``_truth`` (a ``_counted`` closure: it passed; now a
  plain function in the blocks, with the grader's ``_loop``), one huge read per shard (counted:
  the reads' returned elements), the child's ``Shard`` copies through ``gc``, reads cached in a
  file across cases, a lookup of the public cases, ``_same`` rebound in the child, an ndarray
  subclass whose ``==`` says yes;
* 32.7: a Condition and a deque with ``deepcopy``, a dataclass with a thread per save chained
  (it failed: a writer woken inside ``save`` raced the save's return, the hold released any
  write once the loop was blocked 0.12 s; now the write of the save in progress is held 0.6 s),
  the notebook's class; no copy, synchronous, a bounded queue, a save that joins, a wait that
  does not, only some names copied (no named hint); the reference, loop events and writes sent
  with ``request`` (they passed in principle: the disk carried the loop's ``_ask`` and hold
  state as attributes; now the disk has ``write`` only and every request is signed and
  sequenced with a key made in the grader's process), a deferred synchronous write sent by
  request, the disk's hooks rewritten by attribute, the loop's ``ask`` rewritten through a
  closure cell (the truth guard stubs it), the judge rebound in the child, a snapshot whose
  ``==`` says yes. Kept as a strict xfail (``GAPS``): a copy made before the slot is taken.

Reading the grader's frame (32.1's spec in ``_on_disk``, 32.2's ``want``) passes in a plain
kernel: the sealed kernel (``a2s grade``) vetoes it (docs/trust.md), kept as ``PENDING``.
"""

from __future__ import annotations

import bisect
import functools
import gc
import hashlib
import json
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from a2s.checks import lab32
from a2s.checks.core import CheckFailure, ReferenceCalledError, StudentError
from a2s.checks.lab32 import _truth, checkpoint, interval
from a2s.checks.lab32 import reshard as reshard_mod
from tests.checks.test_lab32 import AsyncSaver
from tests.checks.test_lab32 import checkpoint_interval as ci_ref
from tests.checks.test_lab32 import failed_ranks as fr_ref
from tests.checks.test_lab32 import find_stragglers as fs_ref
from tests.checks.test_lab32 import load_latest as ll_ref
from tests.checks.test_lab32 import reshard as rs_ref
from tests.checks.test_lab32 import save_checkpoint as sc_ref
from tests.helpers.attacks import attempt_id, cheat, honest, judge, replay_public, wrong
from tests.helpers.graders import always_equal

REF = "reference"


def _restoring(run, *where):
    saved = [(obj, name, getattr(obj, name)) for obj, name in where]

    def attempt():
        try:
            return run()
        finally:
            for obj, name, value in saved:
                object.__setattr__(obj, name, value)

    return attempt


def _public(table, key=repr):
    return {key(c.args): c.want() for c in table.cases() if "fresh" not in c.label}


# --------------------------------------------------------------------------- 32.1
class Loader:
    """pathlib, one method per rule."""

    def __call__(self, folder):
        self.root = Path(folder)
        man = self.root / "manifest.json"
        rows = json.loads(man.read_text())["checkpoints"] if man.exists() else []
        for e in sorted(rows, key=lambda e: e["step"], reverse=True):
            data = self.bytes_of(e)
            if data is not None:
                return e["step"], data
        return None, None

    def bytes_of(self, e):
        f = self.root / e["file"]
        if not f.is_file():
            return None
        data = f.read_bytes()
        ok = len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"]
        return data if ok else None


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@_logged
def ll_recursive(folder):
    import hashlib as h

    try:
        with open(os.path.join(folder, "manifest.json")) as f:
            rows = json.load(f)["checkpoints"]
    except FileNotFoundError:
        rows = []

    def best(rest):
        if not rest:
            return None, None
        e, *more = rest
        step, data = best(more)
        try:
            with open(os.path.join(folder, e["file"]), "rb") as f:
                mine = f.read()
        except OSError:
            return step, data
        good = len(mine) == e["bytes"] and h.sha256(mine).hexdigest() == e["sha256"]
        return (e["step"], mine) if good and (step is None or e["step"] > step) else (step, data)

    return best(rows)


def _files(folder):
    out = {}
    for n in os.listdir(folder):
        with open(os.path.join(folder, n), "rb") as f:
            out[n] = f.read()
    return out


def _folder_key(folder):
    return repr(sorted(_files(folder).items()))


def _key_of(args):
    with tempfile.TemporaryDirectory() as d:
        _truth.write_folder(d, *args)
        return _folder_key(d)


def ll_lookup(fallback):
    known = {}

    def answer(folder):
        key = _folder_key(folder)
        return known[key] if key in known else fallback(folder)

    def run():
        known.update(_public(lab32.LATEST, key=_key_of))
        return lab32.check_load_latest(answer)

    return run


def ll_files_first(folder):
    """The newest ckpt-* file in the folder, checked against the manifest when listed."""
    rows = []
    path = os.path.join(folder, "manifest.json")
    if os.path.exists(path):
        with open(path) as f:
            rows = json.load(f)["checkpoints"]
    listed = {e["file"]: e for e in rows}
    for name in sorted((n for n in os.listdir(folder) if n.startswith("ckpt-")), reverse=True):
        data = Path(folder, name).read_bytes()
        e = listed.get(name)
        if e is None or hashlib.sha256(data).hexdigest() == e["sha256"]:
            return int(name[5:13]), data
    return None, None


def ll_newest_in(folder):
    return _truth.newest_in(_files(folder))


def ll_intact_rebound(folder):
    checkpoint._intact = lambda data, e: True
    return ll_ref(folder, bug="no check")


def ll(fn):
    return lambda: lab32.check_load_latest(fn)


LATEST = [
    honest("32.1", "pathlib and a class", ll(Loader())),
    honest("32.1", "a recursion behind a decorator", ll(ll_recursive)),
    wrong("32.1", "no check", ll(lambda f: ll_ref(f, bug="no check")), match="killed mid-write"),
    wrong("32.1", "size only", ll(lambda f: ll_ref(f, bug="size only")), match="flipped bit"),
    wrong("32.1", "the last entry", ll(lambda f: ll_ref(f, bug="last entry")), match="highest"),
    wrong("32.1", "files over manifest", ll(ll_files_first), match="commit point"),
    cheat(
        "32.1",
        "the reference",
        ll(lambda f: __import__("minitorch.elastic.checkpoint").elastic.checkpoint.load_latest(f)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("32.1", "the truth's newest_in", ll(ll_newest_in), match=REF, error=ReferenceCalledError),
    cheat(
        "32.1", "the table's _truth", ll(checkpoint._truth), match=REF, error=ReferenceCalledError
    ),
    cheat(
        "32.1",
        "the table's _truth, wrapped",
        ll(lambda folder: checkpoint._truth(folder)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("32.1", "lookup, unchecked fallback", ll_lookup(lambda f: ll_ref(f, "no check"))),
    cheat("32.1", "lookup, size-only fallback", ll_lookup(lambda f: ll_ref(f, "size only"))),
    cheat("32.1", "lookup, files-first fallback", ll_lookup(ll_files_first)),
    cheat(
        "32.1",
        "a step whose == says yes",
        ll(lambda f: (always_equal(1), b"")),
        match="plain value",
    ),
    cheat(
        "32.1",
        "the grader's _intact rebound",
        _restoring(ll(ll_intact_rebound), (checkpoint, "_intact")),
    ),
]


# --------------------------------------------------------------------------- 32.2
def ci_expanded(cost, mtbf):
    if cost >= 2 * mtbf:
        return mtbf
    r = cost / (2 * mtbf)
    root = (2 * cost * mtbf) ** 0.5
    return root + root * r**0.5 / 3 + root * r / 9 - cost


@dataclass
class Daly:
    cap: float = 2.0

    def __call__(self, cost, mtbf):
        import math

        if cost >= self.cap * mtbf:
            return float(mtbf)
        x = math.sqrt(cost / (2 * mtbf))
        return math.sqrt(2 * cost * mtbf) * (1 + x / 3 + x * x / 9) - cost


def ci_truth_rebound(cost, mtbf):
    """The first (public) case answered from a lookup, the table's truth rebound in place so
    that every later case expects 0.0."""
    object.__setattr__(lab32.INTERVAL, "truth", lambda c, m: 0.0)
    first = lab32.INTERVAL.named[0]
    return 7001.388888888888 if (cost, mtbf) == first[1] else 0.0


def ci_other_truth(cost, mtbf):
    """32.4's truth rewritten in place (a frozen Table, through object.__setattr__) from 32.2:
    lab_intact kept only the module's names, not the fields of its tables."""
    object.__setattr__(lab32.STRAGGLERS, "truth", lambda c, f: [])
    return ci_ref(cost, mtbf)


def _then_stragglers(run):
    def attempt():
        try:
            run()
        finally:  # and 32.4 answered [] must still fail: its truth was put back
            try:
                lab32.check_find_stragglers(lambda c, f: [])
            except CheckFailure:
                pass
            else:
                raise AssertionError("32.4 passed under a truth rewritten from 32.2")

    return attempt


def ci(fn):
    return lambda: lab32.check_checkpoint_interval(fn)


INTERVAL = [
    honest("32.2", "the closed form expanded", ci(ci_expanded)),
    honest("32.2", "a dataclass, math inside", ci(Daly())),
    wrong("32.2", "Young's", ci(lambda c, m: ci_ref(c, m, bug="young")), match="Young's"),
    wrong("32.2", "no minus", ci(lambda c, m: ci_ref(c, m, bug="no minus")), match="subtract"),
    wrong("32.2", "no cap", ci(lambda c, m: ci_ref(c, m, bug="no cap")), match="M itself"),
    cheat(
        "32.2",
        "the reference",
        ci(
            lambda c, m: __import__("minitorch.elastic.interval").elastic.interval.daly_interval(
                c, m
            )
        ),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("32.2", "the grader's truth", ci(_truth.daly), match=REF, error=ReferenceCalledError),
    cheat(
        "32.2",
        "the grader's _uncapped",
        ci(lambda c, m: float(m) if c >= 2 * m else interval._uncapped(c, m)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.2",
        "lookup, Young's fallback",
        ci(replay_public(lab32.INTERVAL, lambda c, m: ci_ref(c, m, bug="young"))),
    ),
    cheat("32.2", "a float whose == says yes", ci(lambda c, m: always_equal(1.0))),
    cheat(
        "32.2",
        "the table's truth rebound",
        _restoring(
            ci(ci_truth_rebound),
            (lab32.INTERVAL, "truth"),
        ),
        match="Daly's optimum",
    ),
    cheat(
        "32.2",
        "32.4's table truth rewritten, then 32.4 answered []",
        _restoring(_then_stragglers(ci(ci_other_truth)), (lab32.STRAGGLERS, "truth")),
        match="changed the grader's own tables .*STRAGGLERS.truth",
    ),
]


# --------------------------------------------------------------------------- 32.3
def fr_bisect(beats, deadline, poll, horizon):
    out = {}
    for rank, times in enumerate(beats):
        times = sorted(times)
        for k in range(1, int(horizon // poll) + 1):
            t = k * poll
            i = bisect.bisect_right(times, t)
            if t - (times[i - 1] if i else 0.0) > deadline:
                out[rank] = t
                break
    return out


@_logged
def fr_numpy(beats, deadline, poll, horizon):
    import numpy

    polls = poll * numpy.arange(1, int(horizon // poll) + 1)
    out = {}
    for rank, times in enumerate(beats):
        b = numpy.sort(numpy.asarray([0.0, *times]))
        last = b[numpy.searchsorted(b, polls, side="right") - 1]
        late = numpy.nonzero(polls - last > deadline)[0]
        if late.size:
            out[rank] = float(polls[late[0]])
    return out


def fr(fn):
    return lambda: lab32.check_failed_ranks(fn)


def _bug(ref, bug):
    return lambda *a: ref(*a, bug=bug)


DETECT = [
    honest("32.3", "bisect", fr(fr_bisect)),
    honest("32.3", "numpy searchsorted behind a decorator", fr(fr_numpy)),
    wrong("32.3", ">=", fr(_bug(fr_ref, ">=")), match="exactly the deadline"),
    wrong("32.3", "future beats", fr(_bug(fr_ref, "future")), match="at or before t"),
    wrong("32.3", "silent ranks skipped", fr(_bug(fr_ref, "skip silent")), match="never beat"),
    cheat(
        "32.3",
        "the reference monitor",
        fr(
            lambda b, d, p, h: (
                __import__("minitorch.elastic.detect").elastic.detect.HeartbeatMonitor(len(b), d)
                and {}
            )
        ),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("32.3", "the grader's truth", fr(_truth.declared), match=REF, error=ReferenceCalledError),
    cheat(
        "32.3", "lookup, peeking fallback", fr(replay_public(lab32.DETECT, _bug(fr_ref, "future")))
    ),
    cheat("32.3", "lookup, >= fallback", fr(replay_public(lab32.DETECT, _bug(fr_ref, ">=")))),
    cheat(
        "32.3",
        "lookup, silent skipped",
        fr(replay_public(lab32.DETECT, _bug(fr_ref, "skip silent"))),
    ),
    cheat(
        "32.3",
        "a dict whose == says yes",
        fr(lambda *a: type("D", (dict,), {"__eq__": lambda s, o: True})()),
    ),
]


# --------------------------------------------------------------------------- 32.4
def fs_statistics(compute, factor):
    import statistics

    med = [statistics.median(col) for col in zip(*compute, strict=True)]
    return [r for r, m in enumerate(med) if m > factor * statistics.median(med[:r] + med[r + 1 :])]


@_logged
def fs_numpy(compute, factor):
    import numpy

    med = numpy.median(numpy.asarray(compute), axis=0)
    keep = ~numpy.eye(len(med), dtype=bool)
    base = numpy.array([numpy.median(med[row]) for row in keep])
    return numpy.nonzero(med > factor * base)[0].tolist()


def fs(fn):
    return lambda: lab32.check_find_stragglers(fn)


STRAGGLERS = [
    honest("32.4", "statistics.median", fs(fs_statistics)),
    honest("32.4", "numpy masks behind a decorator", fs(fs_numpy)),
    wrong("32.4", "means", fs(lambda c, f: fs_ref(c, f, bug="mean")), match="noisy step"),
    wrong("32.4", "itself in", fs(lambda c, f: fs_ref(c, f, bug="itself")), match="other"),
    wrong("32.4", ">=", fs(lambda c, f: fs_ref(c, f, bug=">=")), match="exactly the factor"),
    cheat(
        "32.4",
        "the reference",
        fs(
            lambda c, f: __import__(
                "minitorch.elastic.stragglers"
            ).elastic.stragglers.find_stragglers(np.asarray(c), f)
        ),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.4", "the grader's truth", fs(_truth.slow_ranks), match=REF, error=ReferenceCalledError
    ),
    cheat(
        "32.4",
        "the grader's median",
        fs(lambda c, f: [_truth.median([1.0])] and []),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.4",
        "lookup, mean fallback",
        fs(replay_public(lab32.STRAGGLERS, lambda c, f: fs_ref(c, f, "mean"))),
    ),
    cheat(
        "32.4",
        "a list whose == says yes",
        fs(lambda c, f: type("L", (list,), {"__eq__": lambda s, o: True})()),
    ),
]


# --------------------------------------------------------------------------- 32.5
class Saver:
    """One helper per file: stage, sync, swap."""

    def __call__(self, disk, step, data):
        self.disk = disk
        name = f"ckpt-{step:08d}.bin"
        self.put(name, data)
        old = disk.read("manifest.json")
        rows = json.loads(old) if old else {"checkpoints": []}
        rows["checkpoints"].append(
            {
                "step": step,
                "file": name,
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
        )
        self.put("manifest.json", json.dumps(rows).encode())

    def put(self, name, data):
        tmp = name + ".partial"
        self.disk.write(tmp, data)
        self.disk.fsync(tmp)
        self.disk.replace(tmp, name)


def sc_only_newest(disk, step, data):
    """The manifest lists only the new checkpoint (older files kept, no longer committed)."""
    name = f"ckpt-{step:08d}.bin"
    for n, payload in ((name, data), ("manifest.json", None)):
        if payload is None:
            row = {"step": step, "file": name, "sha256": hashlib.sha256(data).hexdigest()}
            payload = json.dumps({"checkpoints": [{**row, "bytes": len(data)}]}).encode()
        disk.write("tmp", payload)
        disk.fsync("tmp")
        disk.replace("tmp", n)


def _manifest(disk, step, data, sha=None):
    old = disk.read("manifest.json")
    rows = json.loads(old.decode())["checkpoints"] if old else []
    sha = sha or hashlib.sha256(data).hexdigest()
    rows.append({"step": step, "file": f"ckpt-{step:08d}.bin", "sha256": sha, "bytes": len(data)})
    return json.dumps({"checkpoints": rows}).encode()


def _safe(disk, name, blob):
    disk.write(".t", blob)
    disk.fsync(".t")
    disk.replace(".t", name)


def sc_data_in_place(disk, step, data):
    disk.write(f"ckpt-{step:08d}.bin", data)
    _safe(disk, "manifest.json", _manifest(disk, step, data))


def sc_other_sha(disk, step, data):
    _safe(disk, f"ckpt-{step:08d}.bin", data)
    _safe(disk, "manifest.json", _manifest(disk, step, data, sha=hashlib.sha1(data).hexdigest()))


def sc_padded(disk, step, data):
    """The manifest written in place, padded to twice its length: half a write is all of it."""
    _safe(disk, f"ckpt-{step:08d}.bin", data)
    blob = _manifest(disk, step, data)
    disk.write("manifest.json", blob + b" " * len(blob))


def sc_unserved(disk, step, data):
    from a2s.checks.harness import request

    request("disk.ops")
    sc_ref(disk, step, data)


def sc_gc(disk, step, data):
    """The child's copy of the grader's Disk, through gc: the new files marked durable there."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "Disk":
            obj.files[f"ckpt-{step:08d}.bin"] = (data, True)
            obj.files["manifest.json"] = (_manifest(disk, step, data), True)


def sc_moves_old(disk, step, data):
    """The previous checkpoint moved away before the new one is committed."""
    for name in disk.listdir():
        if name.startswith("ckpt-"):
            disk.replace(name, "old-" + name)
    sc_ref(disk, step, data)


def sc(fn):
    return lambda: lab32.check_save_checkpoint(fn)


SAVE = [
    honest("32.5", "a class, a helper per file", sc(Saver())),
    honest("32.5", "only the newest committed", sc(sc_only_newest)),
    wrong(
        "32.5",
        "manifest in place",
        sc(lambda *a: sc_ref(*a, bug="manifest in place")),
        match="temporary name",
    ),
    wrong("32.5", "no fsync", sc(lambda *a: sc_ref(*a, bug="no fsync")), match="fsync each one"),
    wrong("32.5", "no commit", sc(lambda *a: sc_ref(*a, bug="no commit")), match="commit it"),
    wrong("32.5", "data in place, no fsync", sc(sc_data_in_place), match="fsync each one"),
    wrong("32.5", "the sha of other bytes", sc(sc_other_sha), match="commit it in the manifest"),
    cheat(
        "32.5",
        "the reference's sha256",
        sc(lambda *a: sc_ref(*a, bug="reference")),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.5",
        "a request not served",
        sc(sc_unserved),
        match="no such request",
        error=StudentError,
    ),
    cheat(
        "32.5",
        "a write of a str",
        sc(lambda disk, step, data: disk.write("manifest.json", "{}")),
        match="must be bytes",
        error=StudentError,
    ),
    cheat("32.5", "the child's Disk rewritten through gc", sc(sc_gc), match="commit it"),
    cheat("32.5", "the manifest in place, padded", sc(sc_padded), match="fsync each one"),
    cheat("32.5", "the old checkpoint moved away", sc(sc_moves_old), match="no intact checkpoint"),
]


# --------------------------------------------------------------------------- 32.6
def _bounds(n, w):
    e = [0]
    for k in range(w):
        e.append(e[-1] + n // w + (1 if k < n % w else 0))
    return e


def rs_lists(shards, numel, new_world, rank):
    """No numpy: lists, each intersection read two elements at a time."""
    old, new = _bounds(numel, len(shards)), _bounds(numel, new_world)
    out = []
    for k, shard in enumerate(shards):
        lo, hi = max(new[rank], old[k]), min(new[rank + 1], old[k + 1])
        for i in range(lo, hi, 2):
            out += [float(v) for v in shard.read(i - old[k], min(i + 2, hi) - old[k])]
    return out


class Resharder:
    """A class; the owner of each old rank found by a bisect over the old edges."""

    def __call__(self, shards, numel, new_world, rank):
        import numpy

        old, new = _bounds(numel, len(shards)), _bounds(numel, new_world)
        a, b, parts = new[rank], new[rank + 1], []
        k = max(bisect.bisect_right(old, a) - 1, 0)
        while a < b:
            k = bisect.bisect_right(old, a) - 1
            e = min(b, old[k + 1])
            parts.append(shards[k].read(a - old[k], e - old[k]))
            a = e
        return numpy.concatenate(parts) if parts else numpy.zeros(0, numpy.float32)


def rs_offset(shards, numel, new_world, rank):
    """The global index used as the offset inside the old shard (no - lo_k)."""
    old, new = _bounds(numel, len(shards)), _bounds(numel, new_world)
    parts = [np.zeros(0, np.float32)]
    for k in range(len(shards)):
        lo, hi = max(new[rank], old[k]), min(new[rank + 1], old[k + 1])
        if lo < hi:
            parts.append(shards[k].read(lo, hi))
    return np.concatenate(parts)


def rs_huge(shards, numel, new_world, rank):
    """Every shard read with one huge range, then sliced: the reads return whole shards."""
    new = _bounds(numel, new_world)
    full = np.concatenate([s.read(0, 10**9) for s in shards])
    return full[new[rank] : new[rank + 1]]


def rs_gc(shards, numel, new_world, rank):
    """The child's copies of the grader's Shard objects through gc: no reads at all."""
    datas = [o.data for o in gc.get_objects() if type(o).__name__ == "Shard"]
    full = np.concatenate(datas[-len(shards) :]) if datas else np.zeros(0)
    return np.array_split(full, new_world)[rank]


def rs_cache(path):
    """Reads cached in a file across cases (keyed by old rank and range): later cases of the
    same layout reuse old values and pad the count with reads of their own."""

    def answer(shards, numel, new_world, rank):
        cache = json.loads(Path(path).read_text()) if os.path.exists(path) else {}
        old, new = _bounds(numel, len(shards)), _bounds(numel, new_world)
        out = []
        for k, shard in enumerate(shards):
            lo, hi = max(new[rank], old[k]), min(new[rank + 1], old[k + 1])
            if lo < hi:
                key = f"{len(shards)}:{k}:{lo - old[k]}:{hi - old[k]}"
                if key not in cache:
                    cache[key] = [float(v) for v in shard.read(lo - old[k], hi - old[k])]
                else:
                    shard.read(lo - old[k], hi - old[k])
                out += cache[key][: hi - lo]
        Path(path).write_text(json.dumps(cache))
        return out

    return answer


def rs_cached():
    with tempfile.TemporaryDirectory() as d:
        return lab32.check_reshard(rs_cache(os.path.join(d, "cache.json")))


def rs_rebinds(shards, numel, new_world, rank):
    """The grader's comparison rebound in the child: the parent's copy decides."""
    from a2s.checks.lab32 import reshard as grader

    grader._same = lambda got, want: True
    return np.zeros(0, np.float32)


class _Yes(np.ndarray):
    def __eq__(self, other):
        return True


def rs(fn):
    return lambda: lab32.check_reshard(fn)


RESHARD = [
    honest("32.6", "lists, two elements a read", rs(rs_lists)),
    honest("32.6", "a class with bisect, numpy imported inside", rs(Resharder())),
    honest("32.6", "the notebook's loop behind a decorator", rs(_logged(rs_ref))),
    wrong(
        "32.6",
        "the remainder to the last rank",
        rs(lambda *a: rs_ref(*a, bug="last")),
        match="remainder to the first ranks",
    ),
    wrong(
        "32.6",
        "every shard read whole",
        rs(lambda *a: rs_ref(*a, bug="whole")),
        match="read every old shard whole",
    ),
    wrong(
        "32.6",
        "an inclusive end",
        rs(lambda *a: rs_ref(*a, bug="inclusive")),
        match="one element past the end",
    ),
    wrong(
        "32.6",
        "the global index as the offset (no named mistake)",
        rs(rs_offset),
        match=r"^(?!.*(remainder|past the end|whole)).*Rank r of M owns",
    ),
    cheat(
        "32.6",
        "the reference",
        rs(lambda *a: __import__("minitorch.elastic.reshard").elastic.reshard.reshard(*a)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.6",
        "sharded.load_full",
        rs(lambda *a: __import__("minitorch.elastic.sharded").elastic.sharded.load_full(".", 1)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.6", "the table's _truth", rs(reshard_mod._truth), match=REF, error=ReferenceCalledError
    ),
    cheat(
        "32.6",
        "the grader's loop, wrapped",
        rs(lambda *a: reshard_mod._loop(*a)),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat("32.6", "one huge read per shard, sliced", rs(rs_huge), match="the values are right"),
    cheat("32.6", "the child's Shards through gc", rs(rs_gc)),
    cheat("32.6", "reads cached in a file across cases", rs_cached),
    cheat(
        "32.6",
        "lookup of the public cases, whole fallback",
        rs(replay_public(lab32.RESHARD, lambda *a: rs_ref(*a, bug="whole"))),
    ),
    cheat("32.6", "the grader's _same rebound in the child", rs(rs_rebinds)),
    cheat(
        "32.6",
        "an ndarray subclass whose == says yes",
        rs(lambda *a: np.zeros(3).view(_Yes)),
        match="plain value",
    ),
]


# --------------------------------------------------------------------------- 32.7
class CondSaver:
    """A Condition and a deque instead of a Semaphore and a Queue; copy.deepcopy."""

    def __init__(self, disk, max_pending):
        import collections

        self.disk, self.cap = disk, max_pending
        self.cv = threading.Condition()
        self.todo, self.alive = collections.deque(), 0
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            with self.cv:
                self.cv.wait_for(lambda: self.todo)
                step, snap = self.todo[0]
            self.disk.write(step, snap)
            with self.cv:
                self.todo.popleft()
                self.alive -= 1
                self.cv.notify_all()

    def save(self, step, state):
        import copy

        with self.cv:
            self.cv.wait_for(lambda: self.alive < self.cap)
            self.alive += 1
        snap = copy.deepcopy(dict(state))
        with self.cv:
            self.todo.append((step, snap))
            self.cv.notify_all()

    def wait(self):
        with self.cv:
            self.cv.wait_for(lambda: not self.todo)


@dataclass
class ChainSaver:
    """A thread per save, each waiting for the previous one's write: order by a chain."""

    disk: object
    max_pending: int

    def __post_init__(self):
        self.slots = threading.BoundedSemaphore(self.max_pending)
        self.last = None

    def save(self, step, state):
        self.slots.acquire()
        snap = {n: np.copy(a) for n, a in state.items()}
        before = self.last

        def persist():
            if before is not None:
                before.join()
            self.disk.write(step, snap)
            self.slots.release()

        self.last = threading.Thread(target=persist, daemon=True)
        self.last.start()

    def wait(self):
        if self.last is not None:
            self.last.join()


class SlotLate(AsyncSaver):
    """The copy made before the slot is taken: max_pending + 1 snapshots alive while the save
    waits (not seen: the record counts saves returned minus writes done)."""

    def save(self, step, state):
        snap = {k: v.copy() for k, v in state.items()}
        self.slots.acquire()
        self.q.put((step, snap))


class NamesOnly(AsyncSaver):
    """Only the weights copied (no model of it): the snapshot lacks names."""

    def save(self, step, state):
        self.slots.acquire()
        self.q.put((step, {"w": state["w"].copy()}))


class DirectRequests(AsyncSaver):
    """A synchronous save that sends disk.write itself with on_loop=False, and the loop's
    "loop.end" first, so the write seems to follow the save's return."""

    def save(self, step, state):
        from a2s.checks.harness import request

        snap = {k: v.copy() for k, v in state.items()}
        request("loop.end", 2 * step + 1, b"", step)
        request("disk.write", 2 * step + 2, b"", step, snap, False)


class Deferred(AsyncSaver):
    """Writes the previous step's copy synchronously in the next save, through a request of
    its own that says it was not on the loop's thread."""

    def save(self, step, state):
        from a2s.checks.harness import request

        if getattr(self, "held", None) is not None:
            request("disk.write", 0, b"", *self.held, False)
        self.held = (step, {k: v.copy() for k, v in state.items()})

    def wait(self):
        from a2s.checks.harness import request

        request("disk.write", 0, b"", *self.held, False)


class AttrHook:
    """No copy, no thread: the disk's loop hooks (``_ask``, ``saving_since``) rewritten by
    attribute; the learner's disk now has ``write`` only."""

    def __init__(self, disk, max_pending):
        self.disk = disk
        orig = disk._ask  # AttributeError: the disk holds nothing but write

        def ask(name, *a):
            out = orig(name, *a)
            if name == "loop.end":
                orig("disk.write", self.step, dict(self.state), False)
            return out

        disk._ask = ask

    def save(self, step, state):
        self.step, self.state = step, state

    def wait(self):
        pass


class ClosureHook(AttrHook):
    """The same through the closure cell of the disk's write: the loop's own ``ask``
    rewritten, so its signed requests carry the writes (reflection)."""

    def __init__(self, disk, max_pending):
        loop = type(disk).write.__closure__[0].cell_contents
        orig = loop.ask

        def ask(name, *a):
            out = orig(name, *a)
            if name == "loop.end":
                orig("disk.write", self.step, dict(self.state), False)
            return out

        loop.ask = ask


class RebindJudge(AsyncSaver):
    """The grader's judge rebound in the child: the parent's record decides."""

    def __init__(self, disk, max_pending):
        from a2s.checks.lab32 import async_save

        async_save._judge = lambda *a: 0
        super().__init__(disk, max_pending, "sync")


def asv(cls, bug=None):
    fn = cls if bug is None else (lambda disk, max_pending: cls(disk, max_pending, bug))
    return lambda: lab32.check_async_saver(fn)


ASYNC = [
    cheat(
        "32.7",
        "the loop's ask rewritten through a closure cell",
        asv(ClosureHook),
        match=REF,
        error=ReferenceCalledError,
    ),
    honest("32.7", "a Condition, a deque, deepcopy", asv(CondSaver)),
    honest("32.7", "a dataclass, a thread per save chained", asv(ChainSaver)),
    honest("32.7", "the notebook's class", asv(AsyncSaver)),
    wrong("32.7", "no copy", asv(AsyncSaver, "shallow"), match="It holds what training made"),
    wrong(
        "32.7", "synchronous", asv(AsyncSaver, "sync"), match="ran on the training loop's thread"
    ),
    wrong(
        "32.7",
        "a bounded queue, the writer's copy forgotten",
        asv(AsyncSaver, "queue"),
        match="The snapshot the writer holds counts too",
    ),
    wrong("32.7", "save joins the writer", asv(AsyncSaver, "join"), match=r"written before save"),
    wrong(
        "32.7",
        "wait() returns at once",
        asv(AsyncSaver, "no wait"),
        match=r"when wait\(\) returned",
    ),
    wrong(
        "32.7",
        "only the weights copied (no named mistake)",
        asv(NamesOnly, ""),
        match=r"^(?!.*training made).*same names and arrays",
    ),
    cheat(
        "32.7",
        "the reference AsyncCheckpointer",
        asv(
            lambda disk, m: __import__(
                "minitorch.elastic.sharded"
            ).elastic.sharded.AsyncCheckpointer(
                ".", max_pending=m, writer=lambda f, step, snap, keep: disk.write(step, snap)
            )
        ),
        match=REF,
        error=ReferenceCalledError,
    ),
    cheat(
        "32.7",
        "loop events and writes sent by request",
        asv(DirectRequests, ""),
        match="did not send",
    ),
    cheat(
        "32.7",
        "a deferred synchronous write sent by request",
        asv(Deferred, ""),
        match="did not send",
    ),
    cheat(
        "32.7",
        "the disk's loop hooks rewritten by attribute",
        asv(AttrHook),
        match="_ask",
        error=StudentError,
    ),
    cheat(
        "32.7", "the grader's judge rebound in the child", asv(RebindJudge), match="loop's thread"
    ),
    cheat(
        "32.7",
        "a snapshot whose == says yes",
        asv(
            lambda disk, m: type(
                "S",
                (AsyncSaver,),
                {"save": lambda self, k, st: self.disk.write(k, always_equal(1))},
            )(disk, m)
        ),
        match="plain value",
    ),
]

ATTEMPTS = LATEST + INTERVAL + DETECT + STRAGGLERS + SAVE + RESHARD + ASYNC


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


# --------------------------------------------------------------------------- frames
def _frame_local(*names):
    f = sys._getframe(2)
    while f is not None:
        if all(n in f.f_locals for n in names):
            return f.f_locals
        f = f.f_back
    return None


def ll_from_frame(folder):
    """The case's spec read from the grader's frame (``_on_disk``'s ``args``): no check."""
    found = _frame_local("args", "folder")
    entries, _ = found["args"]
    ok = [s for s, kind in entries if kind == "ok"]
    if not ok:
        return None, None
    return max(ok), Path(folder, f"ckpt-{max(ok):08d}.bin").read_bytes()


def ci_from_frame(cost, mtbf):
    found = _frame_local("want", "case")
    return found["want"] if found else 0.0


PENDING = [
    cheat("32.1", "the spec from the grader's frame", ll(ll_from_frame)),
    cheat("32.2", "the expected value from the runner's frame", ci(ci_from_frame)),
]


@pytest.mark.parametrize("attempt", PENDING, ids=attempt_id)
@pytest.mark.xfail(strict=True, reason="reading the grader's frame: the sealed kernel vetoes it")
def test_pending(attempt):
    judge(attempt)


# 32.7's record counts saves returned minus writes done, so a copy made before the slot is
# taken (max_pending + 1 snapshots alive while the save waits) is not seen (docs/trust.md).
GAPS = [
    wrong("32.7", "the copy before the slot", asv(SlotLate, ""), match="snapshots alive"),
]


@pytest.mark.parametrize("attempt", GAPS, ids=attempt_id)
@pytest.mark.xfail(strict=True, reason="32.7's known gaps: the loop in the child; copies unseen")
def test_known_gaps(attempt):
    judge(attempt)
