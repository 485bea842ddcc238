"""Overlapping communication with compute: DDP's bucketed all-reduce and FSDP's prefetch.

**Bucketed all-reduce (DDP).** Backward produces gradients layer by layer, last layer first.
Gradients are packed, in that order, into buckets: a layer joins the open bucket, and the
bucket closes once it holds at least ``bucket_bytes``. When a bucket's last gradient is ready
(an event recorded on the compute stream), its all-reduce is launched on the comm stream
(FIFO), costing ``alpha + beta * bytes``. The step ends when both streams are idle:

    step = max(backward end, last all-reduce end),   exposed = step - backward time.

For ``L`` equal layers (time ``t``, ``g`` bytes) and buckets of ``k`` layers (``c = alpha +
beta k g`` each, ``n = L/k`` buckets), bucket ``j`` is ready at ``j k t`` and the comm stream
ends at ``max_j (j k t + (n - j + 1) c)``, a maximum reached at ``j = 1`` or ``j = n``:

    exposed = max(c, k t + n c - L t)                         (:func:`exposed_uniform`)

Small buckets pay ``alpha`` many times (comm-bound), one big bucket exposes all of it.

**Parameter prefetch (FSDP).** Each layer's parameters are all-gathered (comm stream) before
its forward (compute stream) and freed after it. Prefetching the gather of layer ``i+1``
while layer ``i`` computes hides the gathers; holding at most ``depth + 1`` layers at once
means gather ``i`` may start only after layer ``i - depth - 1`` was freed.

Lab: 16_streams_and_overlap
Paper: Li et al. 2020, *PyTorch Distributed: Experiences on Accelerating Data Parallel
Training* (VLDB; gradient buckets); Zhao et al. 2023, *PyTorch FSDP* (VLDB; prefetch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minitorch.runtime.streams import Device, comm_time

__all__ = [
    "OverlapResult",
    "allreduce_intervals",
    "best_bucket_bytes",
    "exposed_uniform",
    "make_buckets",
    "overlap_step",
    "peak_resident",
    "prefetch_forward",
    "prefetch_intervals",
]


def make_buckets(grad_bytes: Sequence[int], bucket_bytes: float) -> list[list[int]]:
    """Indices of ``grad_bytes`` (in ready order) packed into buckets closing at ``>= cap``."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, nbytes in enumerate(grad_bytes):
        current.append(i)
        size += int(nbytes)
        if size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    return buckets


@dataclass(frozen=True, slots=True)
class OverlapResult:
    """One overlapped backward: the buckets, the device timeline and the step's figures."""

    buckets: list[list[int]]
    device: Device
    backward: float
    step: float

    @property
    def exposed(self) -> float:
        """Communication time not hidden behind backward compute."""
        return self.step - self.backward


def overlap_step(
    bwd_times: Sequence[float],
    grad_bytes: Sequence[int],
    bucket_bytes: float,
    alpha: float,
    beta: float,
) -> OverlapResult:
    """Schedule backward (compute stream) and bucket all-reduces (comm stream) on a Device.

    ``bwd_times[i]`` and ``grad_bytes[i]`` are in the order backward produces them.
    """
    dev = Device()
    buckets = make_buckets(grad_bytes, bucket_bytes)
    for j, bucket in enumerate(buckets):
        for i in bucket:
            dev.launch("compute", f"bwd {i}", bwd_times[i])
        dev.record("compute", f"grads {j}")
        dev.wait("comm", f"grads {j}")
        nbytes = sum(int(grad_bytes[i]) for i in bucket)
        dev.launch("comm", f"all-reduce {j}", comm_time(nbytes, alpha, beta), kind="comm")
    backward = dev.tail.get("compute", 0.0)
    return OverlapResult(buckets, dev, backward, dev.sync())


def allreduce_intervals(
    bwd_times: Sequence[float],
    grad_bytes: Sequence[int],
    bucket_bytes: float,
    alpha: float,
    beta: float,
) -> list[tuple[float, float]]:
    """(start, end) of each bucket's all-reduce, in launch order (exercise 16.2's shape)."""
    res = overlap_step(bwd_times, grad_bytes, bucket_bytes, alpha, beta)
    return [(s.start, s.end) for s in res.device.timeline if s.stream == "comm"]


def exposed_uniform(
    n_layers: int, t_layer: float, g_layer: float, per_bucket: int, alpha: float, beta: float
) -> float:
    """Closed-form exposed communication for equal layers, ``per_bucket`` dividing them."""
    c = alpha + beta * per_bucket * g_layer
    n = n_layers // per_bucket
    return max(c, per_bucket * t_layer + n * c - n_layers * t_layer)


def best_bucket_bytes(
    bwd_times: Sequence[float], grad_bytes: Sequence[int], alpha: float, beta: float
) -> int:
    """The bucket cap with the shortest step (the smallest such cap on ties).

    Only caps equal to the bytes of a run of consecutive layers change the buckets, so
    trying those finds the optimum of the greedy bucketing.
    """
    sizes = [int(b) for b in grad_bytes]
    caps = sorted(
        {sum(sizes[i:j]) for i in range(len(sizes)) for j in range(i + 1, len(sizes) + 1)}
    )
    steps = [overlap_step(bwd_times, sizes, cap, alpha, beta).step for cap in caps]
    best = min(steps)
    return next(cap for cap, s in zip(caps, steps, strict=True) if s <= best * (1 + 1e-12))


def prefetch_forward(
    fwd_times: Sequence[float],
    param_bytes: Sequence[int],
    alpha: float,
    beta: float,
    depth: int = 1,
) -> Device:
    """FSDP-style forward: gather layer i on "comm", compute it on "compute", free it.

    At most ``depth + 1`` layers are held: gather ``i`` waits for layer ``i-depth-1``'s free.
    ``depth = 0`` is no prefetch (gather, compute, gather, ...).
    """
    dev = Device()
    for i, (t, nbytes) in enumerate(zip(fwd_times, param_bytes, strict=True)):
        if i - depth - 1 >= 0:
            dev.wait("comm", f"free {i - depth - 1}")
        dev.launch("comm", f"gather {i}", comm_time(nbytes, alpha, beta), kind="comm")
        dev.record("comm", f"gathered {i}")
        dev.wait("compute", f"gathered {i}")
        dev.launch("compute", f"fwd {i}", t)
        dev.record("compute", f"free {i}")
    dev.sync()
    return dev


def prefetch_intervals(
    fwd_times: Sequence[float], param_bytes: Sequence[int], alpha: float, beta: float
) -> list[tuple[float, float, float, float]]:
    """(gather start, gather end, compute start, compute end) per layer, depth 1 (ex. 16.5)."""
    dev = prefetch_forward(fwd_times, param_bytes, alpha, beta, depth=1)
    gathers = [s for s in dev.timeline if s.stream == "comm"]
    fwds = [s for s in dev.timeline if s.stream == "compute"]
    return [(g.start, g.end, f.start, f.end) for g, f in zip(gathers, fwds, strict=True)]


def peak_resident(
    held: Sequence[tuple[float, float]], sizes: Sequence[float] | None = None
) -> float:
    """Peak of the summed ``sizes`` (1 each if None) over half-open intervals [start, end)."""
    weights = [1.0] * len(held) if sizes is None else [float(s) for s in sizes]
    # at equal times a free (-) comes before an allocation (+): intervals are half-open
    points = sorted(
        [(s, 1, w) for (s, _), w in zip(held, weights, strict=True)]
        + [(e, 0, -w) for (_, e), w in zip(held, weights, strict=True)]
    )
    live = peak = 0.0
    for _, _, w in points:
        live += w
        peak = max(peak, live)
    return peak
