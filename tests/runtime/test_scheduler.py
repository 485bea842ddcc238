"""The scheduler: token budget, chunked prefill, FCFS admission, preemption by recompute."""

from __future__ import annotations

from minitorch.runtime.block_manager import BlockManager
from minitorch.runtime.scheduler import Scheduler, plan_preemption, plan_step
from minitorch.runtime.sequence import Sequence


def test_plan_step_runs_decodes_first_and_chunks_the_prompt() -> None:
    running = [(0, 1), (1, 1)]
    waiting = [(2, 50, 13), (3, 2, 1)]
    assert plan_step(running, waiting, 10, 8, 99, True) == [(0, 1), (1, 1), (2, 8)]
    assert plan_step(running, waiting, 10, 8, 99, False) == [(0, 1), (1, 1)]  # no overtaking
    assert plan_step(running, waiting, 10, 2, 99, True) == [(0, 1), (1, 1)]  # no seat
    assert plan_step(running, waiting, 10, 8, 5, True) == [(0, 1), (1, 1)]  # no blocks


def test_plan_preemption_takes_the_newest_first() -> None:
    assert plan_preemption([(0, 1, 3), (1, 1, 2), (2, 0, 4)], 1) == ([0, 1], [2])
    assert plan_preemption([(0, 0, 3), (1, 2, 1)], 0) == ([0], [1])
    assert plan_preemption([(0, 1, 1), (1, 0, 1)], 5) == ([0, 1], [])


def test_scheduler_chunks_under_the_budget_and_never_exceeds_it() -> None:
    bm = BlockManager(32, 4)
    sched = Scheduler(bm, token_budget=8, max_num_seqs=4)
    seqs = [Sequence(i, list(range(10 + i)), 3) for i in range(3)]
    for s in seqs:
        sched.add(s)
    for _ in range(40):
        if not sched.has_work():
            break
        batch = sched.schedule()
        assert 0 < sum(n for _, n in batch) <= 8
        for seq, n in batch:
            seq.num_computed += n
            if seq.need == 0:
                seq.append(1, 0.0)
                if seq.finished:
                    sched.finish(seq)
    assert all(s.finished for s in seqs) and bm.num_free_blocks() == 32


def test_scheduler_preempts_by_recompute_when_blocks_run_out() -> None:
    bm = BlockManager(5, 2, prefix_caching=False)
    sched = Scheduler(bm, token_budget=64, max_num_seqs=4)
    a, b = Sequence(0, [1, 2, 3], 6), Sequence(1, [4, 5, 6], 6)
    sched.add(a)
    sched.add(b)
    for _ in range(30):
        if not sched.has_work():
            break
        for seq, n in sched.schedule():
            seq.num_computed += n
            if seq.need == 0:
                seq.append(7, 0.0)
                if seq.finished:
                    sched.finish(seq)
    assert a.finished and b.finished
    assert sched.preempted >= 1 and b.preemptions >= 1 and a.preemptions == 0


def test_static_policy_admits_only_when_the_batch_is_done() -> None:
    bm = BlockManager(64, 4)
    sched = Scheduler(bm, token_budget=64, max_num_seqs=2, chunked_prefill=False, policy="static")
    seqs = [Sequence(i, [1, 2], m) for i, m in enumerate([1, 3, 1])]
    for s in seqs:
        sched.add(s)
    first = sched.schedule()
    assert [s.seq_id for s, _ in first] == [0, 1]
    for seq, n in first:
        seq.num_computed += n
        seq.append(1, 0.0)
        if seq.finished:
            sched.finish(seq)
    assert [s.seq_id for s, _ in sched.schedule()] == [1]  # seat free, but the batch runs on
