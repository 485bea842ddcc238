"""The host's response to faults: a watchdog for hung kernels, retries, isolation, re-mapping.

**Watchdog.** Every ``poll_ns`` the host looks at a kernel's heartbeats and completion.
*Progress* is the time of the last heartbeat seen (the kernel's start if none). At a poll
``t`` the kernel is declared **hung** when it has not completed and

    t − last_progress(t) > deadline_ns

A slow kernel whose heartbeats come at most ``deadline_ns`` apart is *never* declared hung
however slow it is (no false alarm); a hung kernel is detected at the first poll after
``last_beat + deadline_ns``: within ``deadline_ns + poll_ns`` of its last beat. Deciding on
the completion alone would need a deadline longer than the slowest legitimate kernel.

**Runtime response.** :class:`Runtime` runs commands over ``n_devices`` devices (round robin
at first, each device's queue in order, simulated time per device). A :data:`FaultPlan`
maps ``(command, attempt)`` to a fault of that attempt:

* ``"transient"`` (an error the driver recovered from): retry on the same device;
* ``"hang"``: the watchdog fires after :meth:`Watchdog.detect_ns` (XID 8), the channel is
  reset and the command retried;
* ``"dbe"`` (XID 48), ``"link_down"`` (its NVLink lost; see ``Xid.NVLINK_ERROR``) or
  ``"fallen_off_bus"`` (XID 79, it no longer answers on PCIe): the **device** is isolated
  and this command and every command still queued on it are re-mapped to the healthy
  devices (least loaded first); these attempts are the device's fault and do not use up
  the command's retries.

A command gets at most ``max_retries`` retries after its own errors, then is reported failed;
with no healthy device left every pending command is reported failed. Every submitted
command ends in exactly one of ``completed`` (once) or ``failed``.

    rt = Runtime(n_devices=4, max_retries=2)
    rep = rt.run([1000.0] * 16, {(3, 0): "transient", (5, 0): "dbe"})
    sorted(rep.completed) == list(range(16)); 1 in rep.isolated   # command 5 was on device 1

Lab: 30_telemetry_power_and_faults
Reference: NVIDIA "Xid Errors" documentation (XID 8, 48, 79); NVIDIA DCGM User Guide (health
checks, GPU isolation); Linux kernel Documentation/watchdog/ (a deadline on progress).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from minitorch.driver.faults import KernelTrace, Xid, hung_kernel

__all__ = ["DEVICE_FAULTS", "FAULTS", "FaultPlan", "Report", "Runtime", "Watchdog"]

FaultPlan = dict[tuple[int, int], str]  # (command, attempt) -> "transient" | "hang" | ...
DEVICE_FAULTS = {
    "dbe": Xid.DBE_ECC,
    "link_down": Xid.NVLINK_ERROR,
    "fallen_off_bus": Xid.FALLEN_OFF_BUS,
}
FAULTS = ("transient", "hang", *DEVICE_FAULTS)


@dataclass(frozen=True)
class Watchdog:
    """Declare a kernel hung when it shows no progress for ``deadline_ns`` at a poll."""

    deadline_ns: float = 2e9
    poll_ns: float = 1e8

    def first_alarm_ns(self, trace: KernelTrace, horizon_ns: float) -> float | None:
        """The first poll time ``<= horizon_ns`` at which the kernel is declared hung."""
        beats = sorted(trace.heartbeats_ns)
        k, last, t = 0, 0.0, self.poll_ns
        while t <= horizon_ns:
            if trace.completion_ns is not None and trace.completion_ns <= t:
                return None
            while k < len(beats) and beats[k] <= t:
                last, k = beats[k], k + 1
            if t - last > self.deadline_ns:
                return t
            t += self.poll_ns
        return None

    def detect_ns(self, heartbeat_ns: float, hang_at_ns: float) -> float:
        """Time from a kernel's start to the alarm when it hangs at ``hang_at_ns``."""
        trace = hung_kernel(hang_at_ns + heartbeat_ns, heartbeat_ns, hang_at_ns)
        alarm = self.first_alarm_ns(trace, hang_at_ns + self.deadline_ns + 2 * self.poll_ns)
        assert alarm is not None
        return alarm


@dataclass
class Report:
    """Where every command ended, the XID-like events, the isolated devices."""

    completed: dict[int, int] = field(default_factory=dict)  # command -> device
    failed: dict[int, str] = field(default_factory=dict)  # command -> reason
    completions: list[int] = field(default_factory=list)  # in order, for "exactly once"
    events: list[tuple[float, int, Xid | None, int]] = field(default_factory=list)
    isolated: set[int] = field(default_factory=set)
    retries: int = 0
    makespan_ns: float = 0.0


class Runtime:
    """Run commands on devices under a fault plan; see the module docstring."""

    def __init__(
        self, n_devices: int, max_retries: int = 2, watchdog: Watchdog | None = None
    ) -> None:
        if n_devices < 1:
            raise ValueError("need at least one device")
        self.n_devices, self.max_retries = n_devices, max_retries
        self.watchdog = watchdog or Watchdog()
        self.heartbeat_ns = self.watchdog.deadline_ns / 4

    def run(self, durations_ns: list[float], plan: FaultPlan | None = None) -> Report:
        plan = plan or {}
        rep = Report()
        queues: list[deque[int]] = [deque() for _ in range(self.n_devices)]
        for c in range(len(durations_ns)):
            queues[c % self.n_devices].append(c)
        clock = [0.0] * self.n_devices
        attempts = [0] * len(durations_ns)  # every attempt, the key into the plan
        errors = [0] * len(durations_ns)  # attempts failed by the command's own errors
        healthy = set(range(self.n_devices))
        while True:
            ready = [d for d in healthy if queues[d]]
            if not ready:
                break
            d = min(ready, key=lambda i: (clock[i], i))
            c = queues[d].popleft()
            fault = plan.get((c, attempts[c]))
            attempts[c] += 1
            if fault is None:
                clock[d] += durations_ns[c]
                rep.completed[c] = d
                rep.completions.append(c)
            elif fault in ("transient", "hang"):
                if fault == "hang":
                    clock[d] += self.watchdog.detect_ns(self.heartbeat_ns, durations_ns[c] / 2)
                    rep.events.append((clock[d], d, Xid.GPU_STOPPED_PROCESSING, c))
                else:
                    clock[d] += durations_ns[c]
                    rep.events.append((clock[d], d, None, c))
                errors[c] += 1
                if errors[c] <= self.max_retries:
                    rep.retries += 1
                    queues[d].appendleft(c)  # retry first, keep the queue's order
                else:
                    rep.failed[c] = f"failed {errors[c]} times"
            elif fault in DEVICE_FAULTS:
                rep.events.append((clock[d], d, DEVICE_FAULTS[fault], c))
                healthy.discard(d)
                rep.isolated.add(d)
                orphans = [c, *queues[d]]
                queues[d].clear()
                for o in orphans:
                    if not healthy:
                        rep.failed[o] = "no healthy device"
                        continue
                    to = min(healthy, key=lambda i: (len(queues[i]), clock[i], i))
                    queues[to].append(o)
            else:
                raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")
        rep.makespan_ns = max(clock)
        return rep
