"""Contexts: translation against a byte-by-byte walk, isolation, out-of-bounds DMA rejected
with device memory unchanged, and the round-robin scheduler against closed forms and a plain
turn-by-turn model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.context import (
    Command,
    Context,
    DmaFault,
    PageTable,
    TimeSliceScheduler,
)
from minitorch.driver.device import CostModel, DeviceMemory
from minitorch.driver.dma import D2H, Descriptor, DmaEngine, HostBuffer

PS = 256


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 4 * PS), st.integers(0, 3 * PS))
def test_translate_matches_a_byte_walk(vaddr: int, nbytes: int) -> None:
    table = PageTable(PS)
    frames = {1: 7 * PS, 2: 3 * PS, 3: 0, 4: 9 * PS}
    for vpage, paddr in frames.items():
        table.map(vpage, paddr)
    wanted = [frames.get(v // PS, -1) + v % PS for v in range(vaddr, vaddr + nbytes)]
    if any(v // PS not in frames for v in range(vaddr, vaddr + nbytes)):
        with pytest.raises(DmaFault, match="not mapped"):
            table.translate(vaddr, nbytes)
        return
    got = [p + i for p, n in table.translate(vaddr, nbytes) for i in range(n)]
    assert got == wanted


def two_contexts() -> tuple[DeviceMemory, Context, Context]:
    mem = DeviceMemory(16 * PS, alignment=PS)
    a, b = Context(0, mem, PS), Context(1, mem, PS)
    return mem, a, b


def test_contexts_are_isolated() -> None:
    mem, a, b = two_contexts()
    va = a.alloc(2 * PS)
    vb = b.alloc(2 * PS)
    assert va == vb == PS  # the same virtual addresses ...
    a.write(va, np.full(2 * PS, 1, dtype=np.uint8))
    b.write(vb, np.full(2 * PS, 2, dtype=np.uint8))
    assert (a.read(va, 2 * PS) == 1).all() and (b.read(vb, 2 * PS) == 2).all()  # ... apart
    assert int((mem.data == 1).sum()) == int((mem.data == 2).sum()) == 2 * PS
    with pytest.raises(DmaFault, match="context 0: read"):
        a.read(0, 4)  # null


def test_dma_over_scattered_frames() -> None:
    mem, a, b = two_contexts()
    va = a.alloc(PS)
    b.alloc(PS)
    a.alloc(PS)  # a's second page is not next to its first physically
    engine = DmaEngine(CostModel(), mem)
    src = np.arange(2 * PS, dtype=np.uint8)
    t = a.dma(engine, [Descriptor(0, va, 2 * PS)], HostBuffer(src, pinned=True))
    assert engine.descriptors == 2 and t > 0  # split at the page boundary
    np.testing.assert_array_equal(a.read(va, 2 * PS), src)
    back = np.zeros(2 * PS, dtype=np.uint8)
    a.dma(engine, [Descriptor(0, va, 2 * PS, D2H)], HostBuffer(back, pinned=True))
    np.testing.assert_array_equal(back, src)


def test_out_of_bounds_dma_is_rejected_and_nothing_moves() -> None:
    mem, a, b = two_contexts()
    va = a.alloc(PS)
    b.write(b.alloc(PS), np.full(PS, 9, dtype=np.uint8))  # b's frame sits right after a's
    before = mem.data.copy()
    engine = DmaEngine(CostModel(), mem)
    host = HostBuffer(np.full(2 * PS, 5, dtype=np.uint8), pinned=True)
    chain = [Descriptor(0, va, PS), Descriptor(PS, va + PS, 16)]  # the second is past a's
    with pytest.raises(DmaFault) as info:
        a.dma(engine, chain, host)
    msg = str(info.value)
    assert "context 0" in msg and "descriptor 1" in msg and "outside its address space" in msg
    np.testing.assert_array_equal(mem.data, before)  # not even descriptor 0 ran
    assert engine.bytes == 0 and a.faults == [msg] and b.faults == []


@pytest.mark.parametrize(("n", "m"), [(1, 3), (2, 1), (2, 4), (3, 2)])
def test_round_robin_closed_form(n: int, m: int) -> None:
    model = CostModel(timeslice_ns=100.0, context_switch_ns=30.0)
    q, c = 100.0, 30.0
    streams = {i: [Command(q * m / 2), Command(q * m / 2)] for i in range(n)}
    sched = TimeSliceScheduler(model).run(streams)
    assert len(sched.slices) == n * m and sched.switches == (n * m - 1 if n > 1 else 0)
    for i in range(n):
        j = (m - 1) * n + i
        switches = j if n > 1 else 0
        assert sched.finish_ns[i] == pytest.approx((j + 1) * q + switches * c)
    assert sched.makespan_ns == max(sched.finish_ns.values())


def plain_round_robin(work: list[int], q: int, c: int) -> tuple[list[int], int]:
    """Turn by turn: each context with work left runs min(q, left), switching between."""
    left, finish, t, prev = list(work), [0] * len(work), 0, None
    while any(left):
        for i in range(len(left)):
            if left[i]:
                t += c if prev is not None and prev != i else 0
                run = min(q, left[i])
                t, left[i], prev = t + run, left[i] - run, i
                finish[i] = t
    return finish, t


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(1, 250), max_size=4), min_size=1, max_size=4))
def test_scheduler_matches_a_plain_model(durations: list[list[int]]) -> None:
    model = CostModel(timeslice_ns=100.0, context_switch_ns=7.0)
    streams = {i: [Command(float(d)) for d in ds] for i, ds in enumerate(durations)}
    sched = TimeSliceScheduler(model).run(streams)
    finish, total = plain_round_robin([sum(ds) for ds in durations], 100, 7)
    assert [sched.finish_ns[i] for i in range(len(durations))] == finish
    assert sched.makespan_ns == total


def test_a_faulting_context_loses_its_stream_and_the_other_runs_on() -> None:
    mem, a, b = two_contexts()
    engine = DmaEngine(CostModel(), mem)
    host = HostBuffer(np.ones(PS, dtype=np.uint8), pinned=True)
    va, vb = a.alloc(PS), b.alloc(PS)
    ran: list[str] = []
    bad = [Descriptor(0, va + 4 * PS, 8)]
    good = [Descriptor(0, vb, PS)]
    streams = {
        0: [Command(50.0, lambda: a.dma(engine, bad, host)), Command(50.0), Command(50.0)],
        1: [
            Command(150.0, lambda: b.dma(engine, good, host)),
            Command(10.0, lambda: ran.append("b")),
        ],
    }
    sched = TimeSliceScheduler(CostModel(timeslice_ns=100.0, context_switch_ns=5.0)).run(streams)
    assert sched.dropped == {0: 3} and "context 0" in sched.faults[0]
    assert ran == ["b"] and (b.read(vb, PS) == 1).all() and not (a.read(va, PS)).any()
    assert sched.slices[0] == (0, 0.0, 0.0)  # a faulted as its first command started
    assert sched.finish_ns[1] == pytest.approx(5.0 + 160.0)  # one switch, then b alone
