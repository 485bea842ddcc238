"""Completions: the device reports finished work; the host learns of it by interrupt or poll.

The device writes a :class:`Completion` entry into a **completion queue** in host memory
(:class:`CompletionQueue`, as an NVMe CQ or a GPU's semaphore release) and then, unless the
host masked it (``IRQ_MASK``), raises an MSI-X **interrupt**. With **interrupt coalescing**
(moderation) the device holds the interrupt until ``threshold`` completions are pending or
``delay_ns`` has passed since the first of them (:func:`coalesce`): fewer interrupts, more
latency. :func:`raise_interrupts` raises none while the host has masked them.

How one waiting thread learns that work of service time ``T`` (submit to done) has finished
(``p = poll_ns``, ``t_i = interrupt_ns``, ``c_i = irq_cpu_ns``, ``D`` the coalescing delay a
lone completion waits):

* **interrupt** (sleep until woken; ``cudaDeviceScheduleBlockingSync``):
  latency ``T + D + t_i``, CPU time ``c_i``;
* **poll** (spin reading the CQ entry every ``p``; ``cudaDeviceScheduleSpin``): the first
  poll at or after ``T`` sees it, latency ``ceil(T / p) p``, CPU time the same (all spinning);
* **hybrid** (spin ``S`` then sleep; ``cudaDeviceScheduleAuto``, Linux's hybrid polling):
  the poll's numbers when ``ceil(T / p) p <= S``, else latency ``T + D + t_i`` and CPU
  ``floor(S / p) p + c_i``. With ``S = c_i`` (the default: spin as long as an interrupt
  costs) its CPU time is never more than twice the better of the other two in hindsight
  (the ski-rental argument).

:func:`choose_policy` picks, for a message of ``n`` bytes (``T = t_s + n / B``), the policy
minimising ``latency + w * cpu``: polling for small messages, interrupts for large ones.

Lab: 29_driver_and_command_submission
Reference: NVM Express Base Specification 2.0, section 5.21.1.8 (interrupt coalescing); NVIDIA
CUDA Runtime API, cudaSetDeviceFlags; A. Karlin et al., "Competitive snoopy caching",
Algorithmica 3 (1988) (spin then block).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from minitorch.driver.device import IRQ_MASK, Bar, CostModel

__all__ = [
    "POLICIES",
    "Completion",
    "CompletionQueue",
    "CompletionQueueFull",
    "Wait",
    "choose_policy",
    "coalesce",
    "hybrid_wait",
    "interrupt_wait",
    "poll_wait",
    "raise_interrupts",
    "wait",
]

POLICIES = ("poll", "hybrid", "interrupt")  # ties go to the earlier one


@dataclass(frozen=True)
class Completion:
    """One entry the device writes: which command, when it finished, how."""

    tag: int
    done_ns: float
    status: str = "ok"  # or an error, as a CUDA error code is reported


class CompletionQueueFull(RuntimeError):
    """The device found no free entry: the host is not reaping completions."""


class CompletionQueue:
    """A ring of completion entries in host memory: the device posts, the host reaps."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.entries: list[Completion] = []
        self.posted = self.reaped = 0

    def post(self, entry: Completion) -> None:
        if len(self.entries) == self.capacity:
            raise CompletionQueueFull(f"completion queue full ({self.capacity} entries)")
        self.entries.append(entry)
        self.posted += 1

    def reap(self, max_entries: int | None = None) -> list[Completion]:
        """The host takes the oldest pending entries (one poll of host memory each call)."""
        n = len(self.entries) if max_entries is None else min(max_entries, len(self.entries))
        out, self.entries = self.entries[:n], self.entries[n:]
        self.reaped += n
        return out


def coalesce(done_ns: Sequence[float], threshold: int, delay_ns: float) -> list[tuple[float, int]]:
    """Interrupts ``(fire time, completions delivered)`` under moderation: fire at the
    ``threshold``-th pending completion or ``delay_ns`` after the first, whichever is first."""
    if threshold < 1 or delay_ns < 0:
        raise ValueError("threshold must be positive and delay_ns non-negative")
    times, out, i = sorted(done_ns), [], 0
    while i < len(times):
        deadline = times[i] + delay_ns
        last = i + threshold - 1
        if last < len(times) and times[last] <= deadline:
            out.append((times[last], threshold))
            i = last + 1
            continue
        j = i
        while j < len(times) and times[j] <= deadline:
            j += 1
        out.append((deadline, j - i))
        i = j
    return out


def raise_interrupts(
    done_ns: Sequence[float], bar: Bar, threshold: int = 1, delay_ns: float = 0.0
) -> list[tuple[float, int]]:
    """The interrupts the device raises for these completions: none while the host has set
    bit 0 of ``IRQ_MASK`` (it polls instead), else :func:`coalesce`'s."""
    return [] if bar.regs[IRQ_MASK] & 1 else coalesce(done_ns, threshold, delay_ns)


class Wait(NamedTuple):
    """What waiting for one completion cost the host."""

    latency_ns: float  # from submission to the thread knowing
    cpu_ns: float  # host CPU time spent waiting
    polls: int
    interrupts: int


def interrupt_wait(service_ns: float, model: CostModel, delay_ns: float = 0.0) -> Wait:
    """Sleep until the interrupt: ``T + D + t_i`` latency, ``c_i`` CPU."""
    return Wait(service_ns + delay_ns + model.interrupt_ns, model.irq_cpu_ns, 0, 1)


def poll_wait(service_ns: float, model: CostModel) -> Wait:
    """Spin every ``p``: latency and CPU ``ceil(T / p) p``."""
    polls = max(1, math.ceil(service_ns / model.poll_ns))
    return Wait(polls * model.poll_ns, polls * model.poll_ns, polls, 0)


def hybrid_wait(
    service_ns: float, model: CostModel, spin_ns: float | None = None, delay_ns: float = 0.0
) -> Wait:
    """Spin up to ``S`` (default ``c_i``), then sleep on the interrupt."""
    spin = model.irq_cpu_ns if spin_ns is None else spin_ns
    polled = poll_wait(service_ns, model)
    if polled.latency_ns <= spin:
        return polled
    polls = math.floor(spin / model.poll_ns)
    latency = service_ns + delay_ns + model.interrupt_ns
    return Wait(latency, polls * model.poll_ns + model.irq_cpu_ns, polls, 1)


def wait(policy: str, service_ns: float, model: CostModel, delay_ns: float = 0.0) -> Wait:
    """The :class:`Wait` of one of :data:`POLICIES`."""
    if policy == "poll":
        return poll_wait(service_ns, model)
    if policy == "interrupt":
        return interrupt_wait(service_ns, model, delay_ns)
    if policy == "hybrid":
        return hybrid_wait(service_ns, model, delay_ns=delay_ns)
    raise ValueError(f"unknown policy {policy!r}; one of {POLICIES}")


def choose_policy(nbytes: int, model: CostModel, cpu_weight: float = 1.0) -> str:
    """The policy minimising ``latency + cpu_weight * cpu`` for one ``nbytes`` DMA."""
    service = model.transfer_ns(nbytes)

    def cost(policy: str) -> float:
        w = wait(policy, service, model)
        return w.latency_ns + cpu_weight * w.cpu_ns

    return min(POLICIES, key=cost)
