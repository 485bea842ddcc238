"""Lab 29's ground truth, written here and not taken from ``minitorch.driver``: a plain
element loop for DMA runs, the closed forms of copies and waits, a plain replay of the launch
kernels, a page walk, a round-robin loop; and the grader's devices (a command ring, a launch
stream, a context's DMA engine) whose counters live in the grader's process while the
learner's code, in a forked child, holds proxies whose every call is a request."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

# -------------------------------------------------------------------------- 29.2 DMA


def element_offsets(shape: Sequence[int], strides: Sequence[int], offset: int) -> list[int]:
    """Byte offset of every element, in C order, by counting up an index like an odometer."""
    if any(n == 0 for n in shape):
        return []
    idx, out = [0] * len(shape), []
    while True:
        out.append(offset + sum(i * s for i, s in zip(idx, strides, strict=True)))
        d = len(shape) - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < shape[d]:
                break
            idx[d], d = 0, d - 1
        if d < 0:
            return out


def runs_by_element(
    shape: Sequence[int], strides: Sequence[int], itemsize: int, offset: int
) -> list[tuple[int, int]]:
    """Maximal byte runs: an element that starts where the previous one ended extends it."""
    runs: list[list[int]] = []
    for addr in element_offsets(shape, strides, offset):
        if runs and runs[-1][0] + runs[-1][1] == addr:
            runs[-1][1] += itemsize
        else:
            runs.append([addr, itemsize])
    return [(a, n) for a, n in runs]


def pack(
    runs: Sequence[tuple[int, int]], device_addr: int, max_bytes: int | None
) -> list[tuple[int, int, int]]:
    """Descriptors ``(host, device, nbytes)`` packing the runs from ``device_addr``."""
    out, dev = [], device_addr
    for host, n in runs:
        while n > 0:
            piece = n if max_bytes is None else min(n, max_bytes)
            out.append((host, dev, piece))
            host, dev, n = host + piece, dev + piece, n - piece
    return out


def chain_truth(shape, strides, itemsize, offset, device_addr, max_bytes):  # type: ignore[no-untyped-def]
    return pack(runs_by_element(shape, strides, itemsize, offset), device_addr, max_bytes)


def copy_truth(nbytes: int, descriptors: int, pinned: bool, model: Any) -> float:
    """Pinned: d t_s + N / B. Pageable: N / B_h + ceil(N / S) t_s + N / B."""
    link = nbytes / model.pcie_gbps
    if pinned:
        return descriptors * model.dma_setup_ns + link
    chunks = -(-nbytes // model.staging_bytes)
    return nbytes / model.host_copy_gbps + chunks * model.dma_setup_ns + link


# -------------------------------------------------------------------- 29.3 completions

ORDER = ("poll", "hybrid", "interrupt")


def wait_truth(policy: str, service_ns: float, model: Any, spin_ns: float) -> tuple[float, float]:
    """(latency, CPU) of one wait: the three closed forms of the lab's prose."""
    p = model.poll_ns
    spun = max(1, math.ceil(service_ns / p)) * p
    sleep = (service_ns + model.interrupt_ns, float(model.irq_cpu_ns))
    if policy == "poll":
        return (spun, spun)
    if policy == "interrupt":
        return sleep
    if spun <= spin_ns:
        return (spun, spun)
    return (sleep[0], math.floor(spin_ns / p) * p + model.irq_cpu_ns)


def choose_truth(nbytes: int, model: Any, cpu_budget_ns: float) -> str:
    service = model.dma_setup_ns + nbytes / model.pcie_gbps
    costs = {k: wait_truth(k, service, model, model.irq_cpu_ns) for k in ORDER}
    fits = [k for k in ORDER if costs[k][1] <= cpu_budget_ns]
    if fits:  # the lowest latency; a tie to the least CPU, then the order
        return min(fits, key=lambda k: costs[k])
    return min(ORDER, key=lambda k: costs[k][1])


# ------------------------------------------------------------------------ 29.4 launches


def run_kernels(memory: np.ndarray, step: Sequence[Any], n_steps: int) -> np.ndarray:
    """The step's FILL (1) and ADD (2) kernels on float32 words, by hand, ``n_steps`` times."""
    words = memory.copy().view(np.float32)
    for _ in range(n_steps):
        for kernel, _grid, _block, args in step:
            if kernel == 1:
                addr, n, bits = args
                value = np.array([bits], np.uint32).view(np.float32)[0]
                words[addr // 4 : addr // 4 + n] = value
            elif kernel == 2:
                out, a, b, n = args
                s = words[a // 4 : a // 4 + n] + words[b // 4 : b // 4 + n]
                words[out // 4 : out // 4 + n] = s
    return words.view(np.uint8)


def kernel_ns(entry: Sequence[Any]) -> float:
    kernel, grid, block, _ = entry
    threads = math.prod(grid) * math.prod(block)
    return 1000.0 + threads * {0: 0.0, 1: 0.01, 2: 0.02}[kernel]


def eager_truth(durations: Sequence[float], model: Any) -> float:
    """Host and front end as two stages: launch i reaches the device at (i + 1) h."""
    h = model.launch_cpu_ns + model.mmio_write_ns
    free = 0.0
    for i, k in enumerate(durations):
        free = max(free, (i + 1) * h) + model.cmd_fetch_ns + k
    return free


def graph_truth(durations: Sequence[float], model: Any, replays: int) -> float:
    """``replays`` back-to-back replays of one graph: the host's part, then the nodes."""
    host = model.graph_launch_cpu_ns + model.mmio_write_ns
    body = model.cmd_fetch_ns + sum(model.graph_node_ns + k for k in durations)
    end = 0.0
    for i in range(replays):
        end = max(end, (i + 1) * host) + body
    return end


# ------------------------------------------------------------------------ 29.5 contexts


def page_pieces(table: dict[int, int], page: int, vaddr: int, nbytes: int) -> list | None:
    """Physical pieces of ``[vaddr, vaddr + nbytes)``, page by page; None on an unmapped page."""
    out, v = [], vaddr
    while v < vaddr + nbytes:
        vpage, off = v // page, v % page
        if vpage not in table or v < 0:
            return None
        n = min(page - off, vaddr + nbytes - v)
        out.append((table[vpage] + off, n))
        v += n
    return out


def slices_truth(work: dict[int, list[float]], q: float, c: float) -> list:
    """Round robin by hand: each context runs at most q, a switch costs c."""
    queues = {cid: list(w) for cid, w in work.items() if w}
    order, t, out, last = list(queues), 0.0, [], None
    while order:
        cid = order.pop(0)
        if last is not None and last != cid:
            t += c
        start, left = t, q
        while queues[cid] and left > 0:
            run = min(queues[cid][0], left)
            t, left = t + run, left - run
            queues[cid][0] -= run
            if queues[cid][0] == 0:
                queues[cid].pop(0)
        out.append((cid, start, t))
        if queues[cid]:
            order.append(cid)
        last = cid
    return out
