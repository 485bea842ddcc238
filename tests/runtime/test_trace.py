"""The training-step trace: balanced, repeated per step, its lower bound a plain loop's."""

from __future__ import annotations

from minitorch.runtime.allocator import CachingAllocator, Device, NaiveAllocator
from minitorch.runtime.trace import live_bytes, lower_bound, training_step_trace


def test_trace_is_balanced_and_each_id_freed_once() -> None:
    trace = training_step_trace(steps=2)
    alloc = {i: n for op, i, n in trace if op == "alloc"}
    freed = [i for op, i, _ in trace if op == "free"]
    assert sorted(freed) == sorted(alloc) and live_bytes(trace)[-1] == 0
    assert all(alloc[i] == n for op, i, n in trace if op == "free")
    live, peak = 0, 0
    for op, _, n in trace:
        live += n if op == "alloc" else -n
        peak = max(peak, live)
    assert lower_bound(trace) == peak > 0


def test_two_steps_repeat_one_step() -> None:
    one, two = training_step_trace(steps=1), training_step_trace(steps=2)
    assert (
        len(two) > len(one)
        and sum(op == "alloc" for op, _, _ in two)
        > 1.8 * sum(op == "alloc" for op, _, _ in one) - 100
    )


def replay(trace, allocator):
    addr = {}
    for op, i, n in trace:
        if op == "alloc":
            addr[i] = allocator.malloc(n)
        else:
            allocator.free(addr.pop(i))
    return allocator.stats()


def test_caching_beats_naive_and_stays_near_the_bound() -> None:
    trace = training_step_trace(steps=2)
    cached = replay(trace, CachingAllocator(Device()))
    naive = replay(trace, NaiveAllocator(Device()))
    assert cached["device_allocs"] <= 10 < 500 <= naive["device_allocs"]
    assert cached["peak_reserved"] <= 1.25 * lower_bound(trace)
