"""Graders of lab 32: right answers pass; wrong answers, rule breakers and reference calls
fail with the hint that names the mistake."""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import threading

import numpy as np
import pytest

from a2s.checks import lab32
from a2s.checks.core import CheckFailure, ReferenceCalledError, StudentError
from a2s.checks.lab32 import _truth
from minitorch.elastic import checkpoint, detect, interval, sharded, stragglers
from minitorch.elastic import reshard as reshard_ref
from tests.helpers.graders import rejects


# --------------------------------------------------------------------------- answers
def load_latest(folder, bug=""):
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        if bug == "scan":
            names = sorted(n for n in os.listdir(folder) if n.startswith("ckpt-"))
            if names:
                with open(os.path.join(folder, names[-1]), "rb") as f:
                    return int(names[-1][5:13]), f.read()
        return None, None
    with open(path) as f:
        entries = json.load(f)["checkpoints"]
    order = entries[::-1] if bug == "last entry" else sorted(entries, key=lambda e: -e["step"])
    for e in order:
        file = os.path.join(folder, e["file"])
        if not os.path.exists(file):
            if bug == "raise":
                raise FileNotFoundError(file)
            continue
        with open(file, "rb") as f:
            data = f.read()
        ok = {
            "no check": True,
            "size only": len(data) == e["bytes"],
        }.get(bug, len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"])
        if ok:
            return (e["step"], data) if bug != "hex" else (e["step"], data.hex())
    return None, None


def checkpoint_interval(cost, mtbf, bug=""):
    if bug == "young":
        return math.sqrt(2 * cost * mtbf)
    if cost >= 2 * mtbf and bug != "no cap":
        return float(mtbf)
    r = cost / (2 * mtbf)
    tau = math.sqrt(2 * cost * mtbf) * (1 + math.sqrt(r) / 3 + r / 9)
    return tau if bug == "no minus" else tau - cost


def failed_ranks(beats, deadline, poll, horizon, bug=""):
    out = {}
    for rank, times in enumerate(beats):
        if bug == "skip silent" and not times:
            continue
        k = 1
        while k * poll <= horizon:
            t = k * poll
            seen = times if bug == "future" else [b for b in times if b <= t]
            last = max(seen, default=0.0)
            if t - last > deadline or (bug == ">=" and t - last >= deadline):
                out[rank] = t
                break
            k += 1
    if bug == "list":
        return sorted(out)
    return out


def find_stragglers(compute, factor, bug=""):
    c = np.asarray(compute, dtype=np.float64)
    per = c.mean(axis=0) if bug == "mean" else np.median(c, axis=0)
    out = []
    for r in range(len(per)):
        base = np.median(per) if bug == "itself" else np.median(np.delete(per, r))
        if per[r] > factor * base or (bug == ">=" and per[r] >= factor * base):
            out.append(r)
    return out


def save_checkpoint(disk, step, data, bug=""):
    def put(name, payload, in_place=False):
        tmp = name if in_place else f".{name}.tmp"
        disk.write(tmp, payload)
        if bug != "no fsync":
            disk.fsync(tmp)
        if not in_place:
            disk.replace(tmp, name)

    name = f"ckpt-{step:08d}.bin"
    put(name, data)
    if bug == "no commit":
        return
    old = disk.read("manifest.json")
    entries = json.loads(old.decode())["checkpoints"] if old else []
    sha = hashlib.sha256(data).hexdigest() if bug != "reference" else checkpoint.sha256(data)
    entries.append({"step": step, "file": name, "sha256": sha, "bytes": len(data)})
    put("manifest.json", json.dumps({"checkpoints": entries}).encode(), bug == "manifest in place")


def test_right_answers_pass(capsys):
    lab32.check_load_latest(load_latest)
    lab32.check_checkpoint_interval(checkpoint_interval)
    lab32.check_failed_ranks(failed_ranks)
    lab32.check_find_stragglers(find_stragglers)
    lab32.check_save_checkpoint(save_checkpoint)
    assert capsys.readouterr().out.count("passed") == 5


def test_the_truth_agrees_with_the_spec_it_wrote():
    for case in lab32.LATEST.cases():
        entries, strays = case.args
        assert case.want() == _truth.newest_intact(entries, strays), case.label


# --------------------------------------------------------------------------- 32.1
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("no check", "killed mid-write"),
        ("size only", "flipped bit keeps the size"),
        ("last entry", "highest step"),
        ("scan", "commit point"),
    ],
)
def test_load_latest_rejects_wrong_answers(bug, match):
    rejects(lab32.check_load_latest, lambda f: load_latest(f, bug=bug), match=match)


def test_load_latest_must_skip_a_missing_file():
    rejects(
        lab32.check_load_latest,
        lambda f: load_latest(f, bug="raise"),
        match=r"newest file missing.*FileNotFoundError",
        error=StudentError,
    )


def test_load_latest_rejects_a_wrong_shape():
    rejects(lab32.check_load_latest, lambda f: load_latest(f, bug="hex"), match="bytes")
    rejects(lab32.check_load_latest, lambda f: load_latest(f)[0], match="a pair")
    rejects(lab32.check_load_latest, lambda f: (None, b""), match="None, None")


def test_load_latest_rejects_the_reference():
    def ref(folder):
        step, _, _ = checkpoint.load_latest(folder)
        return step, None

    def hashed(folder):
        checkpoint.sha256(b"")
        return load_latest(folder)

    for fn in (ref, hashed):
        rejects(lab32.check_load_latest, fn, match="reference", error=ReferenceCalledError)
    rejects(
        lab32.check_load_latest,
        lambda f: _truth.newest_intact([], []),
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 32.2
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("young", "Young's first-order"),
        ("no minus", "subtract the save cost"),
        ("no cap", "M itself"),
    ],
)
def test_checkpoint_interval_rejects_wrong_answers(bug, match):
    rejects(
        lab32.check_checkpoint_interval,
        lambda c, m: checkpoint_interval(c, m, bug=bug),
        match=match,
    )


def test_checkpoint_interval_holds_the_papers_figure():
    assert round(_truth.daly(300.0, 86400.0) / 60, 1) == 116.7
    assert round(_truth.young(300.0, 86400.0) / 60, 1) == 120.0
    rejects(lab32.check_checkpoint_interval, lambda c, m: "soon", match="number of seconds")


def test_checkpoint_interval_rejects_the_reference():
    rejects(
        lab32.check_checkpoint_interval,
        interval.daly_interval,
        match="reference",
        error=ReferenceCalledError,
    )
    rejects(
        lab32.check_checkpoint_interval, _truth.daly, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 32.3
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        (">=", "exactly the deadline"),
        ("future", "only the beats at or before t"),
        ("skip silent", "never beat"),
    ],
)
def test_failed_ranks_rejects_wrong_answers(bug, match):
    rejects(lab32.check_failed_ranks, lambda *a: failed_ranks(*a, bug=bug), match=match)


def test_failed_ranks_never_flags_a_slow_rank():
    def slow_too(beats, deadline, poll, horizon):
        out = failed_ranks(beats, deadline, poll, horizon)
        gaps = [(b[1] - b[0]) if len(b) > 1 else 0.0 for b in beats]
        slowest = int(np.argmax(gaps))
        if len(set(gaps)) > 1 and slowest not in out:
            out[slowest] = float(horizon)
        return out

    rejects(lab32.check_failed_ranks, slow_too, match="slow")


def test_failed_ranks_rejects_a_wrong_shape():
    rejects(lab32.check_failed_ranks, lambda *a: failed_ranks(*a, bug="list"), match="a dict")


def test_failed_ranks_rejects_the_reference():
    def ref(beats, deadline, poll, horizon):
        mon = detect.HeartbeatMonitor(len(beats), deadline)
        return {r: horizon for r in mon.failed(horizon)}

    rejects(lab32.check_failed_ranks, ref, match="reference", error=ReferenceCalledError)
    rejects(
        lab32.check_failed_ranks, _truth.declared, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 32.4
@pytest.mark.parametrize(
    ("bug", "match"),
    [("mean", "noisy step"), ("itself", "other"), (">=", "exactly the factor")],
)
def test_find_stragglers_rejects_wrong_answers(bug, match):
    rejects(lab32.check_find_stragglers, lambda c, f: find_stragglers(c, f, bug=bug), match=match)


def test_find_stragglers_takes_the_even_median():
    def low(compute, factor):
        c = np.sort(np.asarray(compute, dtype=np.float64), axis=0)
        per = c[(len(c) - 1) // 2]
        return [r for r in range(len(per)) if per[r] > factor * np.median(np.delete(per, r))]

    rejects(lab32.check_find_stragglers, low, match="middle two")
    rejects(lab32.check_find_stragglers, lambda c, f: "rank 2", match="list of ranks")


def test_find_stragglers_rejects_the_reference():
    rejects(
        lab32.check_find_stragglers,
        lambda c, f: stragglers.find_stragglers(np.asarray(c), f),
        match="reference",
        error=ReferenceCalledError,
    )
    rejects(
        lab32.check_find_stragglers,
        _truth.slow_ranks,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 32.5
@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("manifest in place", "right after call 4, write.'manifest.json'.*temporary name"),
        ("no fsync", "fsync each one"),
        ("no commit", "commit it in the manifest"),
    ],
)
def test_save_checkpoint_rejects_wrong_answers(bug, match):
    rejects(lab32.check_save_checkpoint, lambda *a: save_checkpoint(*a, bug=bug), match=match)


def test_save_checkpoint_rejects_the_reference():
    rejects(
        lab32.check_save_checkpoint,
        lambda *a: save_checkpoint(*a, bug="reference"),
        match="reference",
        error=ReferenceCalledError,
    )


def test_save_checkpoint_never_writes_in_place():
    """An unsynced write is replayed torn in half and lost whole: a manifest written in place
    padded to twice its length (its first half is all of it) is caught, and so is the data
    file written in place without an fsync."""

    def padded(disk, step, data):
        save_checkpoint(disk, step, data, bug="no commit")
        old = disk.read("manifest.json")
        entries = json.loads(old.decode())["checkpoints"] if old else []
        name = f"ckpt-{step:08d}.bin"
        sha = hashlib.sha256(data).hexdigest()
        entries.append({"step": step, "file": name, "sha256": sha, "bytes": len(data)})
        blob = json.dumps({"checkpoints": entries}).encode()
        disk.write("manifest.json", blob + b" " * len(blob))

    rejects(lab32.check_save_checkpoint, padded, match="fsync each one")
    crashed = _truth.crash_after({}, [("write", "m", b"abcd")], 1, "lost")
    assert crashed == {"m": b""}


# --------------------------------------------------------------------------- 32.6
def _edges(n, w, first=True):
    e = [0]
    for k in range(w):
        e.append(e[-1] + n // w + int(k < n % w if first else (k == w - 1) * (n % w)))
    return e


def reshard(shards, numel, new_world, rank, bug=""):
    old = _edges(numel, len(shards), bug != "last")
    new = _edges(numel, new_world, bug != "last")
    if bug == "whole":
        full = np.concatenate([s.read(0, numel) for s in shards])
        return full[new[rank] : new[rank + 1]]
    a, b = new[rank], new[rank + 1]
    parts = [np.zeros(0, np.float32)]
    for k in range(len(shards)):
        s, e = max(a, old[k]), min(b, old[k + 1])
        if s < e:
            parts.append(shards[k].read(s - old[k], e - old[k] + (bug == "inclusive")))
    if bug == "short" and len(parts) > 1:
        parts[-1] = parts[-1][:-1]
    return np.concatenate(parts)


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("last", "remainder to the first ranks"),
        ("whole", "read 10 elements .40 bytes.*read every old shard whole"),
        ("inclusive", "one element past the end"),
        ("short", r"returned 2 elements.*owns 3: .* Rank r of M owns"),
    ],
)
def test_reshard_rejects_wrong_answers(bug, match):
    rejects(lab32.check_reshard, lambda *a: reshard(*a, bug=bug), match=match)


def test_reshard_hint_names_a_mistake_only_when_the_answer_is_it():
    with pytest.raises(CheckFailure) as err:
        lab32.check_reshard(lambda *a: reshard(*a, bug="short"))
    assert "remainder" not in str(err.value) and "past the end" not in str(err.value)


def test_reshard_counts_reads_in_the_graders_process():
    """The count is the grader's record: a learner reading element by element passes, one
    reading a shard twice fails, and the child cannot lower the count."""

    def twice(shards, numel, new_world, rank):
        for s in shards:
            s.read(0, 1)
        return reshard(shards, numel, new_world, rank)

    lab32.check_reshard(
        lambda sh, n, m, r: np.array(
            [v for k, lo, hi in reshard_plan(n, len(sh), m, r) for v in _one_by_one(sh[k], lo, hi)],
            np.float32,
        )
    )
    rejects(lab32.check_reshard, twice, match="the values are right, but your rank read")


def reshard_plan(numel, old_world, new_world, rank):
    old, new = _edges(numel, old_world), _edges(numel, new_world)
    a, b = new[rank], new[rank + 1]
    return [
        (k, max(a, old[k]) - old[k], min(b, old[k + 1]) - old[k])
        for k in range(old_world)
        if max(a, old[k]) < min(b, old[k + 1])
    ]


def _one_by_one(shard, lo, hi):
    return [float(shard.read(i, i + 1)[0]) for i in range(lo, hi)]


def test_reshard_passes_and_rejects_the_reference():
    lab32.check_reshard(reshard)
    rejects(lab32.check_reshard, reshard_ref.reshard, match="reference", error=ReferenceCalledError)
    rejects(
        lab32.check_reshard,
        lambda sh, n, m, r: reshard_ref.reshard(sh, n, m, r),
        match="reference",
        error=ReferenceCalledError,
    )


def test_reshard_rejects_chunk_bounds():
    from minitorch.comm.collectives import chunk_bounds

    def uses(shards, numel, new_world, rank):
        chunk_bounds(numel, new_world)
        return reshard(shards, numel, new_world, rank)

    rejects(lab32.check_reshard, uses, match="reference", error=ReferenceCalledError)


def test_reshard_reference_equals_the_plain_loop():
    for numel, n, m in ((10, 4, 3), (2, 4, 3), (13, 2, 5), (0, 3, 2)):
        full = np.arange(numel, dtype=np.float32)
        e = _edges(numel, n)
        shards = [_truth_shard(full[e[k] : e[k + 1]]) for k in range(n)]
        got = np.concatenate([reshard_ref.reshard(shards, numel, m, r) for r in range(m)])
        assert np.array_equal(got, full)


def _truth_shard(data):
    from a2s.checks.lab32.reshard import Shard

    return Shard(data)


# --------------------------------------------------------------------------- 32.7
class AsyncSaver:
    def __init__(self, disk, max_pending, bug=""):
        self.disk, self.bug = disk, bug
        self.slots = threading.Semaphore(10**6 if bug == "unbounded" else max_pending)
        self.q = queue.Queue(maxsize=max_pending) if bug == "queue" else queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            step, snap = self.q.get()
            self.disk.write(step, snap)
            if self.bug != "queue":
                self.slots.release()
            self.q.task_done()

    def save(self, step, state):
        if self.bug == "sync":
            self.disk.write(step, {k: v.copy() for k, v in state.items()})
            return
        if self.bug != "queue":
            self.slots.acquire()
        snap = dict(state) if self.bug == "shallow" else {k: v.copy() for k, v in state.items()}
        self.q.put((step, snap))
        if self.bug == "join":
            self.q.join()

    def wait(self):
        if self.bug != "no wait":
            self.q.join()


def _saver(bug):
    return lambda disk, max_pending: AsyncSaver(disk, max_pending, bug)


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("unbounded", "4 snapshots alive, max_pending is 1. Nothing bounded the copies"),
        ("queue", "2 snapshots alive.*The snapshot the writer holds counts too"),
        ("sync", "ran on the training loop's thread"),
        ("shallow", "not the state at step 0. It holds what training made"),
        ("join", "written before save.0. returned"),
        ("no wait", r"when wait\(\) returned the writes were of steps \["),
    ],
)
def test_async_saver_rejects_wrong_answers(bug, match):
    rejects(lab32.check_async_saver, _saver(bug), match=match)


def test_async_saver_passes_and_rejects_the_reference():
    lab32.check_async_saver(AsyncSaver)

    def reference(disk, max_pending):
        return sharded.AsyncCheckpointer(
            ".", max_pending=max_pending, writer=lambda f, step, snap, keep: disk.write(step, snap)
        )

    rejects(lab32.check_async_saver, reference, match="reference", error=ReferenceCalledError)


MUSTS = [
    ("32.6", "one more for the first", "test_reshard_rejects_wrong_answers"),
    ("32.6", "a rank may own nothing", "test_reshard_passes_and_rejects_the_reference"),
    (
        "32.6",
        "a rank that reads more than it owns fails, even with the right values",
        "test_reshard_counts_reads_in_the_graders_process",
    ),
    ("32.6", "work out the bounds yourself", "test_reshard_rejects_chunk_bounds"),
    (
        "32.7",
        "a new dict of the same arrays is no copy",
        "test_async_saver_rejects_wrong_answers",
    ),
    (
        "32.7",
        "returns without waiting for the write",
        "test_async_saver_rejects_wrong_answers",
    ),
    (
        "32.7",
        "the one the writer is writing counts",
        "test_async_saver_rejects_wrong_answers",
    ),
    (
        "32.7",
        "every save is written exactly once, in order",
        "test_async_saver_rejects_wrong_answers",
    ),
    (
        "32.7",
        "Exercise code may not call `minitorch.elastic.sharded`",
        "test_async_saver_passes_and_rejects_the_reference",
    ),
    (
        "32.5",
        "never write a file in place that a resume reads",
        "test_save_checkpoint_never_writes_in_place",
    ),
    (
        "32.5",
        "a crash after any of your calls must leave a checkpoint to resume from",
        "test_save_checkpoint_rejects_wrong_answers",
    ),
    (
        "32.5",
        "once `save_checkpoint` has returned, a crash must lose nothing",
        "test_save_checkpoint_rejects_wrong_answers",
    ),
    (
        "32.5",
        "Exercise code may not call `minitorch.elastic.checkpoint`.",
        "test_save_checkpoint_rejects_the_reference",
    ),
    (
        "32.1",
        "Exercise code may not call `minitorch.elastic.checkpoint`",
        "test_load_latest_rejects_the_reference",
    ),
    (
        "32.1",
        "the manifest is the commit point: a file it does not list",
        "test_load_latest_rejects_wrong_answers",
    ),
    (
        "32.1",
        "a file must match the manifest's size **and** checksum",
        "test_load_latest_rejects_wrong_answers",
    ),
    (
        "32.1",
        "the newest is the highest step, whatever the manifest's order",
        "test_load_latest_rejects_wrong_answers",
    ),
    (
        "32.1",
        "whose file exists with the recorded size and SHA-256",
        "test_load_latest_must_skip_a_missing_file",
    ),
    ("32.1", "`(None, None)` when there is none", "test_load_latest_rejects_a_wrong_shape"),
    (
        "32.2",
        "Exercise code may not call `minitorch.elastic.interval`",
        "test_checkpoint_interval_rejects_the_reference",
    ),
    ("32.2", "Daly's optimum $\\tau_D$ above", "test_checkpoint_interval_rejects_wrong_answers"),
    ("32.2", "For $\\delta \\ge 2M$ return $M$", "test_checkpoint_interval_rejects_wrong_answers"),
    ("32.2", "120.0 and 116.7 min", "test_checkpoint_interval_holds_the_papers_figure"),
    (
        "32.3",
        "Exercise code may not call `minitorch.elastic.detect`",
        "test_failed_ranks_rejects_the_reference",
    ),
    (
        "32.3",
        "the monitor has heard only the beats at or before $t$",
        "test_failed_ranks_rejects_wrong_answers",
    ),
    (
        "32.3",
        "a rank that never beat is silent since the start",
        "test_failed_ranks_rejects_wrong_answers",
    ),
    (
        "32.3",
        "a gap of exactly the deadline is not a failure",
        "test_failed_ranks_rejects_wrong_answers",
    ),
    (
        "32.3",
        "a slow rank that still beats within the deadline must never be declared",
        "test_failed_ranks_never_flags_a_slow_rank",
    ),
    ("32.3", "return a dict", "test_failed_ranks_rejects_a_wrong_shape"),
    (
        "32.4",
        "Exercise code may not call `minitorch.elastic.stragglers`",
        "test_find_stragglers_rejects_the_reference",
    ),
    (
        "32.4",
        "medians, not means: one noisy step must not flag a rank",
        "test_find_stragglers_rejects_wrong_answers",
    ),
    (
        "32.4",
        "with an even number of steps the median is the mean of the middle two",
        "test_find_stragglers_takes_the_even_median",
    ),
    (
        "32.4",
        "compare a rank with the *other* ranks only",
        "test_find_stragglers_rejects_wrong_answers",
    ),
    ("32.4", "**more** than `factor` times", "test_find_stragglers_rejects_wrong_answers"),
]


@pytest.mark.parametrize(("exercise", "rule", "test"), MUSTS)
def test_every_must_has_its_test(exercise, rule, test):
    assert callable(globals()[test]), f"{exercise}: {rule}"
