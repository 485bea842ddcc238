"""The stream simulator against hand-worked timelines and a brute-force fixed point."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.runtime.streams import (
    Device,
    comm_time,
    compute_time,
    ring_allreduce_time,
    simulate,
)


def test_streams_run_concurrently_and_fifo() -> None:
    spans = simulate([("op", "a", "x", 2), ("op", "b", "y", 3), ("op", "a", "z", 1)])
    assert [(s.start, s.end) for s in spans] == [(0, 2), (0, 3), (2, 3)]


def test_event_wait_delays_only_later_ops_of_the_waiting_stream() -> None:
    prog = [
        ("op", "b", "early", 1),
        ("op", "a", "x", 4),
        ("record", "a", "e"),
        ("wait", "b", "e"),
        ("op", "b", "y", 1),
        ("op", "c", "free", 1),
    ]
    got = [(s.name, s.start, s.end) for s in simulate(prog)]
    assert got == [("early", 0, 1), ("x", 0, 4), ("y", 4, 5), ("free", 0, 1)]


def test_record_marks_work_enqueued_so_far() -> None:
    prog = [
        ("op", "a", "x", 2),
        ("record", "a", "e"),
        ("op", "a", "later", 5),
        ("wait", "b", "e"),
        ("op", "b", "y", 1),
    ]
    assert simulate(prog)[-1].start == 2


def test_sync_blocks_the_host() -> None:
    prog = [
        ("op", "a", "x", 3),
        ("op", "b", "y", 1),
        ("sync", "b"),
        ("op", "c", "z", 1),
        ("sync",),
        ("op", "b", "w", 1),
    ]
    assert [s.start for s in simulate(prog)] == [0, 0, 1, 3]


def test_wait_on_unrecorded_event_fails() -> None:
    with pytest.raises(ValueError, match="before it was recorded"):
        simulate([("wait", "a", "nope")])


def _fixed_point(prog: list) -> list[tuple[float, float]]:
    """Brute force: iterate start = max(constraints) until nothing changes."""
    ops = [i for i, ins in enumerate(prog) if ins[0] == "op"]
    start = {i: 0.0 for i in ops}
    for _ in range(len(prog) + 2):
        end = {i: start[i] + prog[i][3] for i in ops}

        def done_before(k: int, stream: str | None, end: dict = end) -> float:
            return max(
                [end[j] for j in ops if j < k and (stream is None or prog[j][1] == stream)],
                default=0.0,
            )

        new = {}
        for i in ops:
            s = prog[i][1]
            lo = done_before(i, s)
            for k in range(i):
                ins = prog[k]
                if ins[0] == "wait" and ins[1] == s:
                    rec = max(
                        r for r in range(k) if prog[r][0] == "record" and prog[r][2] == ins[2]
                    )
                    lo = max(
                        lo,
                        done_before(rec, prog[rec][1]),
                        max(
                            [
                                done_before(q, prog[q][1] if len(prog[q]) > 1 else None)
                                for q in range(rec)
                                if prog[q][0] == "sync"
                            ],
                            default=0.0,
                        ),
                    )
                if ins[0] == "sync":
                    lo = max(lo, done_before(k, ins[1] if len(ins) > 1 else None))
            new[i] = lo
        if new == start:
            break
        start = new
    return [(start[i], start[i] + prog[i][3]) for i in ops]


def test_random_programs_match_brute_force() -> None:
    gen = np.random.default_rng(16)
    for _ in range(40):
        prog: list = []
        recorded: list[str] = []
        for k in range(int(gen.integers(3, 14))):
            s = "abc"[int(gen.integers(0, 3))]
            r = gen.random()
            if r < 0.55:
                prog.append(("op", s, f"op{k}", int(gen.integers(1, 6))))
            elif r < 0.75:
                prog.append(("record", s, f"e{k}"))
                recorded.append(f"e{k}")
            elif r < 0.92 and recorded:
                prog.append(("wait", s, recorded[int(gen.integers(0, len(recorded)))]))
            else:
                prog.append(("sync", s) if gen.random() < 0.5 else ("sync",))
        got = [(s.start, s.end) for s in simulate(prog)]
        assert got == _fixed_point(prog), prog


def test_device_figures_and_cost_models() -> None:
    dev = Device()
    dev.launch("a", "x", 2.0)
    dev.launch("b", "y", 5.0, kind="comm")
    assert dev.makespan == 5.0 and dev.busy("a") == 2.0 and dev.sync() == 5.0
    assert compute_time(2e12, 1e9, 1e12, 1e12) == 2.0
    assert compute_time(1e9, 4e12, 1e12, 2e12) == 2.0
    assert comm_time(1000, 1e-6, 1e-9) == pytest.approx(2e-6)
    assert ring_allreduce_time(800, 4, 1.0, 0.01) == pytest.approx(6 + 12.0)
    assert ring_allreduce_time(800, 1, 1.0, 0.01) == 0.0
