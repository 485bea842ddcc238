"""The command ring: wrap-around, doorbells, back pressure, and Hypothesis over random
submit/consume interleavings against a plain FIFO (order kept, nothing lost or duplicated)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.device import DOORBELL, RING_HEAD, Bar
from minitorch.driver.ring import CommandRing, RingConsumer, free_slots


def test_one_slot_stays_empty_and_full_ring_refuses() -> None:
    ring = CommandRing(4, Bar())
    assert ring.free_slots() == 3
    assert [ring.submit(i) for i in range(4)] == [True, True, True, False]
    assert ring.refused == 1 and ring.free_slots() == 0 and ring.pending() == 3


def test_device_sees_nothing_before_the_doorbell() -> None:
    bar = Bar()
    ring = CommandRing(8, bar)
    dev = RingConsumer(ring)
    ring.submit("a")
    ring.submit("b")
    assert dev.consume() == []
    ring.doorbell()
    ring.submit("c")  # after the doorbell: not announced yet
    assert dev.consume() == ["a", "b"]
    assert bar.regs[RING_HEAD] == 2 and ring.head == 2
    ring.doorbell()
    assert dev.consume() == ["c"]


def test_wrap_around_keeps_order() -> None:
    bar = Bar()
    ring = CommandRing(3, bar)
    dev = RingConsumer(ring)
    got = []
    for i in range(10):
        assert ring.submit(i)
        ring.doorbell()
        got += dev.consume()
    assert got == list(range(10)) and ring.wraps == 10 // 3
    assert bar.regs[DOORBELL] == 10 % 3


def test_a_batch_needs_one_doorbell() -> None:
    bar = Bar()
    ring = CommandRing(16, bar)
    assert ring.submit_all(range(20)) == 15
    assert bar.writes == 1 and ring.doorbells == 1
    assert RingConsumer(ring).consume() == list(range(15))


@pytest.mark.parametrize("capacity", [2, 5, 8])
def test_free_slots_formula_matches_a_count(capacity: int) -> None:
    for head in range(capacity):
        for used in range(capacity):
            tail = (head + used) % capacity
            assert free_slots(head, tail, capacity) == capacity - 1 - used


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 7),
    st.lists(
        st.one_of(
            st.tuples(st.just("submit"), st.integers(1, 9)),
            st.tuples(st.just("doorbell"), st.just(0)),
            st.tuples(st.just("consume"), st.integers(0, 9)),
        ),
        max_size=60,
    ),
)
def test_random_interleavings_match_a_fifo(capacity: int, ops: list[tuple[str, int]]) -> None:
    bar = Bar()
    ring = CommandRing(capacity, bar)
    dev = RingConsumer(ring)
    written: deque[int] = deque()  # plain model: submitted, not announced
    announced: deque[int] = deque()  # announced by a doorbell, not consumed
    received: list[int] = []
    counter = 0
    for op, k in ops:
        if op == "submit":
            for _ in range(k):
                room = len(written) + len(announced) < capacity - 1
                assert ring.submit(counter) == room
                if room:
                    written.append(counter)
                    counter += 1
        elif op == "doorbell":
            ring.doorbell()
            announced.extend(written)
            written.clear()
        else:
            got = dev.consume(k)
            want = [announced.popleft() for _ in range(min(k, len(announced)))]
            assert got == want
            received += got
        assert ring.free_slots() == capacity - 1 - len(written) - len(announced)
    ring.doorbell()
    received += dev.consume()
    assert received == list(range(counter))  # in order, nothing lost, nothing twice
    assert dev.consumed == ring.submitted == counter
