"""Completions: coalescing against an event loop, the waits against plain time-stepping
loops, the 2x bound of spin-then-sleep, and the policy per message size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.completion import (
    Completion,
    CompletionQueue,
    CompletionQueueFull,
    choose_policy,
    coalesce,
    hybrid_wait,
    interrupt_wait,
    poll_wait,
    raise_interrupts,
    wait,
)
from minitorch.driver.device import IRQ_MASK, Bar, CostModel

MODEL = CostModel()


def event_loop_coalesce(times: list[int], threshold: int, delay: int) -> list[tuple[float, int]]:
    """Plain model: walk the completions in time; fire on the count or on the timer."""
    fired: list[tuple[float, int]] = []
    pending: list[int] = []
    for t in sorted(times):
        if pending and t > pending[0] + delay:  # the timer went off before t
            fired.append((pending[0] + delay, len(pending)))
            pending = []
        pending.append(t)
        if len(pending) == threshold:
            fired.append((t, threshold))
            pending = []
    if pending:
        fired.append((pending[0] + delay, len(pending)))
    return fired


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 2000), max_size=30),
    st.integers(1, 6),
    st.integers(0, 500),
)
def test_coalesce_matches_an_event_loop(times: list[int], threshold: int, delay: int) -> None:
    got = coalesce(times, threshold, delay)
    assert got == event_loop_coalesce(times, threshold, delay)
    assert sum(n for _, n in got) == len(times)
    assert all(n <= threshold for _, n in got)


def test_no_coalescing_is_one_interrupt_each() -> None:
    assert coalesce([5.0, 1.0, 3.0], 1, 100.0) == [(1.0, 1), (3.0, 1), (5.0, 1)]


def stepped(service: float, p: float, spin: float | None) -> tuple[float, float, int, int]:
    """Plain loop: poll every p until done or the spin budget runs out, then sleep."""
    t = cpu = 0.0
    polls = 0
    while spin is None or t + p <= spin:
        t += p
        cpu += p
        polls += 1
        if t >= service:
            return t, cpu, polls, 0
    return service + MODEL.interrupt_ns, cpu + MODEL.irq_cpu_ns, polls, 1


@pytest.mark.parametrize("service", [0.0, 50.0, 100.0, 1234.0, 1999.0, 2000.0, 2001.0, 9e4])
def test_waits_match_time_stepping(service: float) -> None:
    p = MODEL.poll_ns
    assert tuple(poll_wait(service, MODEL)) == stepped(service, p, None)
    assert tuple(hybrid_wait(service, MODEL)) == stepped(service, p, MODEL.irq_cpu_ns)
    assert tuple(hybrid_wait(service, MODEL, 450.0)) == stepped(service, p, 450.0)
    w = interrupt_wait(service, MODEL, delay_ns=300.0)
    assert w == (service + 300.0 + MODEL.interrupt_ns, MODEL.irq_cpu_ns, 0, 1)
    assert wait("interrupt", service, MODEL, 300.0) == w


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1e6))
def test_spin_then_sleep_is_within_twice_the_hindsight_cpu(service: float) -> None:
    best = min(poll_wait(service, MODEL).cpu_ns, interrupt_wait(service, MODEL).cpu_ns)
    assert hybrid_wait(service, MODEL).cpu_ns <= 2 * best + 1e-9


def test_policy_per_message_size() -> None:
    def cost(policy: str, n: int) -> float:  # latency + cpu, written out again
        t = MODEL.dma_setup_ns + n / MODEL.pcie_gbps
        if policy == "interrupt":
            return t + MODEL.interrupt_ns + MODEL.irq_cpu_ns
        polled = -(-t // MODEL.poll_ns) * MODEL.poll_ns
        return 2 * polled

    sizes = [2**k for k in range(6, 24)]
    chosen = [choose_policy(n, MODEL) for n in sizes]
    assert chosen[0] == "poll" and chosen[-1] == "interrupt"
    for n, c in zip(sizes, chosen, strict=True):
        want = "poll" if cost("poll", n) <= cost("interrupt", n) else "interrupt"
        assert c == want
    assert choose_policy(1 << 20, MODEL, cpu_weight=0.0) == "poll"  # latency alone: spin
    with pytest.raises(ValueError, match="unknown policy"):
        wait("yield", 1.0, MODEL)


def test_completion_queue_reaps_in_order_and_overflows() -> None:
    cq = CompletionQueue(2)
    cq.post(Completion(0, 10.0))
    cq.post(Completion(1, 20.0, "illegal address"))
    with pytest.raises(CompletionQueueFull):
        cq.post(Completion(2, 30.0))
    assert [c.tag for c in cq.reap(1)] == [0]
    assert cq.reap()[0].status == "illegal address"
    assert (cq.posted, cq.reaped, cq.reap()) == (2, 2, [])


def test_masked_interrupts_are_not_raised() -> None:
    bar = Bar()
    assert raise_interrupts([1.0, 2.0], bar, 2, 10.0) == [(2.0, 2)]
    bar.write(IRQ_MASK, 1)  # the host switches to polling
    assert raise_interrupts([1.0, 2.0], bar, 2, 10.0) == []
