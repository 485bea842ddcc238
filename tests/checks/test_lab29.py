"""Graders of lab 29: right answers pass; wrong answers, budget breakers, attribute rewrites
and reference calls fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from a2s.checks import lab29
from a2s.checks.core import ReferenceCalledError
from minitorch.driver import completion, context, dma, launch, ring
from tests.helpers.graders import rejects


# --------------------------------------------------------------------------- answers
def submit_all(ring, commands):
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        if (head - tail - 1) % cap == 0:  # full: announce what is there, wait for room
            ring.doorbell(tail)
            while (head - tail - 1) % cap == 0:
                head = ring.head()
        ring.write(tail, command)
        tail = (tail + 1) % cap
    if commands:
        ring.doorbell(tail)


def dma_chain(shape, strides, itemsize, offset, device_addr, max_bytes):
    runs = []
    for idx in np.ndindex(*shape):
        start = offset + sum(i * s for i, s in zip(idx, strides, strict=False))
        if runs and runs[-1][0] + runs[-1][1] == start:
            runs[-1][1] += itemsize
        else:
            runs.append([start, itemsize])
    chain, dev = [], device_addr
    for start, n in runs:
        step = n if max_bytes is None else max_bytes
        for off in range(0, n, step):
            piece = min(step, n - off)
            chain.append((start + off, dev, piece))
            dev += piece
    return chain


def reference_chain(shape, strides, itemsize, offset, device_addr, max_bytes):
    runs = dma.tensor_runs(shape, strides, itemsize, offset)
    chain = dma.gather_chain(runs, device_addr, max_bytes=max_bytes)
    return [(d.host, d.device, d.nbytes) for d in chain]


def copy_ns(nbytes, descriptors, pinned, model):
    link = nbytes / model.pcie_gbps
    if pinned:
        return descriptors * model.dma_setup_ns + link
    chunks = math.ceil(nbytes / model.staging_bytes)
    return nbytes / model.host_copy_gbps + chunks * model.dma_setup_ns + link


def wait_cost(policy, service_ns, model, spin_ns):
    p = model.poll_ns
    spun = max(1, math.ceil(service_ns / p)) * p
    if policy == "poll" or (policy == "hybrid" and spun <= spin_ns):
        return (spun, spun)
    if policy == "interrupt":
        return (service_ns + model.interrupt_ns, model.irq_cpu_ns)
    return (service_ns + model.interrupt_ns, math.floor(spin_ns / p) * p + model.irq_cpu_ns)


def choose_policy(nbytes, model, cpu_budget_ns):
    service = model.dma_setup_ns + nbytes / model.pcie_gbps
    costs = {
        k: wait_cost(k, service, model, model.irq_cpu_ns) for k in ("poll", "hybrid", "interrupt")
    }
    fits = [k for k in costs if costs[k][1] <= cpu_budget_ns]
    if fits:
        return min(fits, key=lambda k: costs[k])
    return min(costs, key=lambda k: costs[k][1])


def decode_steps(stream, step, n_steps):
    stream.begin_capture()
    for kernel, grid, block, args in step:
        stream.launch(kernel, grid, block, args)
    graph = stream.instantiate(stream.end_capture())
    for _ in range(n_steps):
        stream.replay(graph)
    return stream.synchronize()


def context_dma(device, table, page_size, chain):
    physical = []
    for i, (host, vaddr, nbytes) in enumerate(chain):
        v = vaddr
        while v < vaddr + nbytes:
            page, off = divmod(v, page_size)
            if page not in table:
                device.fault(i)
                return
            n = min(page_size - off, vaddr + nbytes - v)
            physical.append((host, table[page] + off, n))
            host, v = host + n, v + n
    device.run(physical)


def time_slices(work, timeslice_ns, switch_ns):
    left = {c: list(w) for c, w in work.items() if w}
    ready, t, out, prev = list(left), 0.0, [], None
    while ready:
        c = ready.pop(0)
        if prev is not None and prev != c:
            t += switch_ns
        start, budget = t, timeslice_ns
        while left[c] and budget > 0:
            run = min(left[c][0], budget)
            t, budget, left[c][0] = t + run, budget - run, left[c][0] - run
            if left[c][0] == 0:
                left[c].pop(0)
        out.append((c, start, t))
        if left[c]:
            ready.append(c)
        prev = c
    return out


def test_solutions_pass(capsys):
    lab29.check_ring(submit_all)
    lab29.check_dma(dma_chain, copy_ns)
    lab29.check_completions(wait_cost, choose_policy)
    lab29.check_graph_replay(decode_steps)
    lab29.check_contexts(context_dma, time_slices)
    out = capsys.readouterr().out
    print(out)
    assert out.count("passed") == 5


# --------------------------------------------------------------------------- 29.1 the ring
def ring_doorbell_per_command(ring, commands):
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        while (head - tail - 1) % cap == 0:
            head = ring.head()
        ring.write(tail, command)
        tail = (tail + 1) % cap
        ring.doorbell(tail)


def ring_all_slots(ring, commands):
    """Counts free slots as (head - tail) % capacity: fills the last slot too."""
    cap, tail = ring.capacity, ring.tail
    head, written = tail, 0
    for command in commands:
        if written and (head - tail) % cap == 0:
            ring.doorbell(tail)
            while (head - tail) % cap == 0 and head != tail:
                head = ring.head()
        ring.write(tail, command)
        tail, written = (tail + 1) % cap, written + 1
    if commands:
        ring.doorbell(tail)


def ring_no_wrap(ring, commands):
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        if (head - tail - 1) % cap == 0:
            ring.doorbell(tail % cap)
            while (head - tail - 1) % cap == 0:
                head = ring.head()
        ring.write(tail, command)
        tail += 1
    if commands:
        ring.doorbell(tail % cap)


def ring_from_zero(ring, commands):
    class Fresh:
        capacity, tail = ring.capacity, 0
        write, doorbell, head = ring.write, ring.doorbell, ring.head

    submit_all(Fresh, commands)


def ring_wait_silently(ring, commands):
    """Waits for room without announcing the full ring first."""
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        while (head - tail - 1) % cap == 0:
            head = ring.head()
        ring.write(tail, command)
        tail = (tail + 1) % cap
    if commands:
        ring.doorbell(tail)


def ring_no_last_doorbell(ring, commands):
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        if (head - tail - 1) % cap == 0:
            ring.doorbell(tail)
            while (head - tail - 1) % cap == 0:
                head = ring.head()
        ring.write(tail, command)
        tail = (tail + 1) % cap


def ring_mmio_poll(ring, commands):
    cap, tail = ring.capacity, ring.tail
    head = tail
    for command in commands:
        if (head - tail - 1) % cap == 0:
            ring.doorbell(tail)
            while (head - tail - 1) % cap == 0:
                head = ring.mmio_read("RING_HEAD")
        ring.write(tail, command)
        tail = (tail + 1) % cap
    if commands:
        ring.doorbell(tail)


def ring_empty_doorbells(ring, commands):
    submit_all(ring, commands)
    ring.doorbell(ring.tail) if not commands else None


def ring_bigger_capacity(ring, commands):
    """Cheat: rewrites the handed ring's capacity to skip back pressure."""
    ring.capacity = 10**6
    submit_all(ring, commands)


def ring_reversed(ring, commands):
    submit_all(ring, list(reversed(commands)))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (ring_doorbell_per_command, "One doorbell per batch"),
        (ring_all_slots, "Leave one slot empty"),
        (ring_no_wrap, "The tail wraps"),
        (ring_from_zero, "ring starts at ring.tail"),
        (ring_wait_silently, "ring the doorbell before you wait"),
        (ring_no_last_doorbell, "never announced"),
        (ring_mmio_poll, "MMIO read"),
        (ring_bigger_capacity, "slot index 0..capacity-1"),
        (ring_reversed, "in order"),
    ],
)
def test_wrong_rings_are_rejected(wrong, hint):
    rejects(lab29.check_ring, wrong, match=hint)


def test_an_empty_doorbell_is_rejected():
    def extra(ring, commands):
        submit_all(ring, commands)
        if commands:
            ring.doorbell((ring.tail + len(commands)) % ring.capacity)

    rejects(lab29.check_ring, extra, match="announced no new command")


def test_ring_calling_the_reference_is_rejected():
    def via_reference(r, commands):
        ring.CommandRing(r.capacity, None)

    rejects(lab29.check_ring, via_reference, match="CommandRing", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 29.2 DMA
def chain_per_element(shape, strides, itemsize, offset, device_addr, max_bytes):
    out, dev = [], device_addr
    for idx in np.ndindex(*shape):
        out.append((offset + sum(i * s for i, s in zip(idx, strides, strict=False)), dev, itemsize))
        dev += itemsize
    return out


def chain_unsplit(shape, strides, itemsize, offset, device_addr, max_bytes):
    return dma_chain(shape, strides, itemsize, offset, device_addr, None)


def chain_at_host_offsets(shape, strides, itemsize, offset, device_addr, max_bytes):
    return [
        (h, device_addr + h, n)
        for h, _, n in dma_chain(shape, strides, itemsize, offset, 0, max_bytes)
    ]


def chain_as_dicts(shape, strides, itemsize, offset, device_addr, max_bytes):
    return [
        {"host": h, "device": d, "nbytes": n}
        for h, d, n in dma_chain(shape, strides, itemsize, offset, device_addr, max_bytes)
    ]


def copy_no_staging(nbytes, descriptors, pinned, model):
    return copy_ns(nbytes, descriptors, True, model)


def copy_staged_per_descriptor(nbytes, descriptors, pinned, model):
    return copy_ns(nbytes, descriptors, True, model) + (
        0 if pinned else nbytes / model.host_copy_gbps
    )


def copy_bits(nbytes, descriptors, pinned, model):
    return copy_ns(nbytes * 8, descriptors, pinned, model)


@pytest.mark.parametrize(
    ("chain", "copy", "hint"),
    [
        (chain_per_element, copy_ns, "One descriptor per element"),
        (chain_unsplit, copy_ns, "max_bytes, from its start"),
        (chain_at_host_offsets, copy_ns, "Pack the tensor contiguously"),
        (chain_as_dicts, copy_ns, "list of \\(host, device"),
        (dma_chain, copy_no_staging, "pinned staging"),
        (dma_chain, copy_staged_per_descriptor, "not the tensor's descriptors"),
        (dma_chain, copy_bits, "pinned: d t_s"),
    ],
)
def test_wrong_dma_answers_are_rejected(chain, copy, hint):
    rejects(lab29.check_dma, chain, copy, match=hint)


@pytest.mark.parametrize(
    ("chain", "copy"),
    [
        (reference_chain, copy_ns),
        (
            dma_chain,
            lambda n, d, pinned, m: dma.pinned_ns(n, d, m) if pinned else dma.pageable_ns(n, m),
        ),
        (
            dma_chain,
            lambda n, d, pinned, m: m.transfer_ns(n, d) if pinned else copy_ns(n, d, pinned, m),
        ),
    ],
)
def test_dma_calling_the_reference_is_rejected(chain, copy):
    rejects(lab29.check_dma, chain, copy, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 29.3 completions
def wait_unrounded(policy, service_ns, model, spin_ns):
    if policy == "poll" or (policy == "hybrid" and service_ns <= spin_ns):
        return (service_ns, service_ns)
    return wait_cost(policy, service_ns, model, spin_ns)


def wait_hybrid_free_spin(policy, service_ns, model, spin_ns):
    lat, cpu = wait_cost(policy, service_ns, model, spin_ns)
    return (lat, model.irq_cpu_ns) if policy == "hybrid" and lat != cpu else (lat, cpu)


def wait_as_dict(policy, service_ns, model, spin_ns):
    lat, cpu = wait_cost(policy, service_ns, model, spin_ns)
    return {"latency": lat, "cpu": cpu}


def choose_by_latency(nbytes, model, cpu_budget_ns):
    return choose_policy(nbytes, model, float("inf"))


def choose_weighted(nbytes, model, cpu_budget_ns):
    service = model.dma_setup_ns + nbytes / model.pcie_gbps
    return min(
        ("poll", "hybrid", "interrupt"),
        key=lambda k: sum(wait_cost(k, service, model, model.irq_cpu_ns)),
    )


def choose_always_hybrid(nbytes, model, cpu_budget_ns):
    return "hybrid"


@pytest.mark.parametrize(
    ("wait", "choose", "hint"),
    [
        (wait_unrounded, choose_policy, "first poll at or after T"),
        (wait_hybrid_free_spin, choose_policy, "already spent"),
        (wait_as_dict, choose_policy, "return \\(latency_ns, cpu_ns\\)"),
        (wait_cost, choose_by_latency, "Latency alone"),
        (wait_cost, choose_weighted, "not a weight"),
        (wait_cost, choose_always_hybrid, "choose 'poll'"),
    ],
)
def test_wrong_completion_answers_are_rejected(wait, choose, hint):
    rejects(lab29.check_completions, wait, choose, match=hint)


def test_completions_calling_the_reference_is_rejected():
    def via_reference(policy, service_ns, model, spin_ns):
        w = (
            completion.hybrid_wait(service_ns, model, spin_ns)
            if policy == "hybrid"
            else completion.wait(policy, service_ns, model)
        )
        return (w.latency_ns, w.cpu_ns)

    rejects(
        lab29.check_completions,
        via_reference,
        choose_policy,
        match="reference",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 29.4 graphs
def steps_eager(stream, step, n_steps):
    for _ in range(n_steps):
        for entry in step:
            stream.launch(*entry)
    return stream.synchronize()


def steps_capture_each(stream, step, n_steps):
    for _ in range(n_steps):
        stream.begin_capture()
        for entry in step:
            stream.launch(*entry)
        stream.replay(stream.instantiate(stream.end_capture()))
    return stream.synchronize()


def steps_sync_each(stream, step, n_steps):
    stream.begin_capture()
    for entry in step:
        stream.launch(*entry)
    graph = stream.instantiate(stream.end_capture())
    for _ in range(n_steps):
        stream.replay(graph)
        stream.synchronize()
    return stream.synchronize()


def steps_once(stream, step, n_steps):
    return decode_steps(stream, step, 1)


def steps_half_eager(stream, step, n_steps):
    """The first kernel eager, the rest in the graph: a doorbell more per step."""
    stream.begin_capture()
    for entry in step[1:]:
        stream.launch(*entry)
    graph = stream.instantiate(stream.end_capture())
    for _ in range(n_steps):
        stream.launch(*step[0])
        stream.replay(graph)
    return stream.synchronize()


def steps_reordered(stream, step, n_steps):
    return decode_steps(stream, step[::-1], n_steps)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (steps_eager, "doorbells for"),
        (steps_capture_each, "capture\\(s\\)"),
        (steps_sync_each, "back to back"),
        (steps_once, "ran \\d+ kernels"),
        (steps_half_eager, "doorbells for"),
        (steps_reordered, "device memory differs"),
    ],
)
def test_wrong_decode_steps_are_rejected(wrong, hint):
    rejects(lab29.check_graph_replay, wrong, match=hint)


def test_decode_steps_calling_the_reference_is_rejected():
    def via_reference(stream, step, n_steps):
        launch.encode(launch.Launch(*step[0]))
        return decode_steps(stream, step, n_steps)

    rejects(lab29.check_graph_replay, via_reference, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 29.5 contexts
def dma_start_page_only(device, table, page_size, chain):
    """Translates the first byte and assumes the frames continue."""
    physical = []
    for i, (host, vaddr, nbytes) in enumerate(chain):
        page, off = divmod(vaddr, page_size)
        if page not in table:
            device.fault(i)
            return
        physical.append((host, table[page] + off, nbytes))
    device.run(physical)


def dma_as_it_goes(device, table, page_size, chain):
    """Runs each good descriptor at once: the ones before a bad one are copied."""
    for _i, d in enumerate(chain):
        try:
            context_dma(device, table, page_size, [d])
        except KeyError:
            pass
        _host, vaddr, nbytes = d
        pages = range(vaddr // page_size, (vaddr + nbytes - 1) // page_size + 1)
        if any(p not in table for p in pages):
            return


def dma_unchecked(device, table, page_size, chain):
    """No check: an unmapped page is translated to frame 0."""
    physical = []
    for host, vaddr, nbytes in chain:
        v = vaddr
        while v < vaddr + nbytes:
            page, off = divmod(v, page_size)
            n = min(page_size - off, vaddr + nbytes - v)
            physical.append((host, table.get(page, 0) + off, n))
            host, v = host + n, v + n
    device.run(physical)


def dma_fault_without_index(device, table, page_size, chain):
    for _host, vaddr, nbytes in chain:
        pages = range(vaddr // page_size, (vaddr + nbytes - 1) // page_size + 1)
        if any(p not in table for p in pages):
            device.fault(-1)
            return
    context_dma(device, table, page_size, chain)


def slices_no_switch(work, timeslice_ns, switch_ns):
    return time_slices(work, timeslice_ns, 0.0)


def slices_whole_commands(work, timeslice_ns, switch_ns):
    return time_slices(work, float("inf"), switch_ns)


def slices_switch_always(work, timeslice_ns, switch_ns):
    out, t = [], 0.0
    for i, (c, s, e) in enumerate(time_slices(work, timeslice_ns, 0.0)):
        out.append((c, t + (switch_ns if i else 0), t + (switch_ns if i else 0) + e - s))
        t = out[-1][2]
    return out


@pytest.mark.parametrize(
    ("dma_fn", "slices", "hint"),
    [
        (dma_start_page_only, time_slices, "page by page"),
        (dma_as_it_goes, time_slices, "nothing is copied"),
        (dma_unchecked, time_slices, "moved \\d+ B of a chain that faults"),
        (dma_fault_without_index, time_slices, "of the first descriptor outside"),
        (context_dma, slices_no_switch, "costs switch_ns"),
        (context_dma, slices_whole_commands, "in the middle of a command"),
        (context_dma, slices_switch_always, "round robin gives"),
    ],
)
def test_wrong_contexts_are_rejected(dma_fn, slices, hint):
    rejects(lab29.check_contexts, dma_fn, slices, match=hint)


def test_contexts_calling_the_reference_is_rejected():
    def via_reference(device, table, page_size, chain):
        pt = context.PageTable(page_size)
        return context_dma(device, table, page_size, chain) if pt else None

    rejects(
        lab29.check_contexts,
        via_reference,
        time_slices,
        match="PageTable",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- honest variants
def ring_in_batches(ring, commands):
    """Honest: fill every free slot, one doorbell, wait until the device made room."""
    cap, tail, head, i = ring.capacity, ring.tail, ring.tail, 0
    while i < len(commands):
        free = (head - tail - 1) % cap
        while free == 0:
            head = ring.head()
            free = (head - tail - 1) % cap
        for _ in range(min(free, len(commands) - i)):
            ring.write(int(np.int64(tail)), commands[i])
            tail, i = (tail + 1) % cap, i + 1
        ring.doorbell(np.int64(tail))


def context_dma_checked_first(device, table, page_size, chain):
    """Honest: check every page first, then translate with numpy integers."""
    for i, (_host, vaddr, nbytes) in enumerate(chain):
        first, last = vaddr // page_size, (vaddr + max(nbytes, 1) - 1) // page_size
        if any(p not in table for p in range(first, last + 1)):
            device.fault(np.int64(i))
            return
    out = []
    for host, vaddr, nbytes in chain:
        for page in range(vaddr // page_size, (vaddr + nbytes - 1) // page_size + 1):
            lo, hi = max(vaddr, page * page_size), min(vaddr + nbytes, (page + 1) * page_size)
            out.append((np.int64(host + lo - vaddr), table[page] + lo % page_size, hi - lo))
    device.run(out)


def test_honest_variants_pass(capsys):
    lab29.check_ring(ring_in_batches)
    lab29.check_contexts(context_dma_checked_first, time_slices)
    assert capsys.readouterr().out.count("passed") == 2


def test_rewriting_the_handed_ring_changes_no_count():
    """A doorbell per command, then an attempt to reset the counts on the handed object."""

    def forged(ring, commands):
        ring_doorbell_per_command(ring, commands)
        for name in ("doorbells", "mmio_reads", "_device"):
            try:
                setattr(ring, name, 0)
            except AttributeError:
                pass

    rejects(lab29.check_ring, forged, match="One doorbell per batch")


@pytest.mark.parametrize(
    ("check", "answers", "match"),
    [
        (lab29.check_dma, (lambda *a: None, copy_ns), "list of \\(host, device, nbytes\\)"),
        (lab29.check_dma, (dma_chain, lambda *a: "fast"), "copy_ns returned 'fast'"),
        (lab29.check_completions, (lambda *a: 3.0, choose_policy), "return \\(latency_ns"),
        (lab29.check_contexts, (context_dma, lambda *a: None), "a list of \\(cid, start, end\\)"),
    ],
)
def test_bad_answers_get_a_clear_message(check, answers, match):
    rejects(check, *answers, match=match)


def test_a_bad_physical_chain_is_the_learners_error():
    from a2s.checks.errors import StudentError

    def garbage(device, table, page_size, chain):
        device.run([(0, 10**9, 4)])

    with pytest.raises(StudentError, match="outside the host buffer or device memory"):
        lab29.check_contexts(garbage, time_slices)


# --------------------------------------------------------------------------- the musts
# (test_attempt: the adversarial battery, tests/checks/test_lab29_attacks.py)
MUSTS = [
    (
        "29.1",
        "the device must fetch exactly the commands you submitted, in order",
        "test_wrong_rings_are_rejected",
    ),
    (
        "29.1",
        "never overwrite a slot the device has not fetched; leave one slot empty",
        "test_wrong_rings_are_rejected",
    ),
    (
        "29.1",
        "one doorbell per batch: ring it only when the ring is full or everything is written",
        "test_wrong_rings_are_rejected",
    ),
    ("29.1", "every doorbell must announce new work", "test_an_empty_doorbell_is_rejected"),
    (
        "29.1",
        "poll `ring.head()`, never the `RING_HEAD` register (0 MMIO reads)",
        "test_wrong_rings_are_rejected",
    ),
    (
        "29.1",
        "rewriting an attribute of `ring` changes nothing the check counts",
        "test_rewriting_the_handed_ring_changes_no_count",
    ),
    ("29.1", "The producer must ring the doorbell", "test_wrong_rings_are_rejected"),
    ("29.1", "A batch of $k$ commands needs one doorbell, not $k$", "test_attempt"),
    ("29.1", "with $C > n$ one doorbell", "test_attempt"),
    ("29.1", "a previous batch may have left it anywhere", "test_wrong_rings_are_rejected"),
    (
        "29.2",
        "Merge an element into the run before it whenever it starts where that run ends",
        "test_wrong_dma_answers_are_rejected",
    ),
    (
        "29.2",
        "each cut into pieces of at most `max_bytes` from its start",
        "test_wrong_dma_answers_are_rejected",
    ),
    (
        "29.2",
        "`copy_ns(nbytes, descriptors, pinned, model)` returns $t_\\text{pinned}$ or "
        "$t_\\text{pageable}$",
        "test_wrong_dma_answers_are_rejected",
    ),
    ("29.2", "an empty tensor has no descriptor", "test_attempt"),
    ("29.2", "packed from `device_addr`", "test_attempt"),
    ("29.2", "strides and offset in bytes", "test_attempt"),
    (
        "29.2",
        "the reference copy engine runs both chains",
        "test_dma_calling_the_reference_is_rejected",
    ),
    (
        "29.3",
        "Return the policy with the lowest latency among those whose CPU time fits the budget",
        "test_wrong_completion_answers_are_rejected",
    ),
    ("29.3", "$T = t_s + n/B$", "test_attempt"),
    ("29.3", "when none fits, the one with the least CPU", "test_attempt"),
    ("29.3", "a tie: the least CPU, then the order poll, hybrid, interrupt", "test_attempt"),
    (
        "29.3",
        "the first poll at or after $T$ sees it",
        "test_wrong_completion_answers_are_rejected",
    ),
    ("29.4", "at most one doorbell per step", "test_wrong_decode_steps_are_rejected"),
    ("29.4", "run the decode step `n_steps` times, in order", "test_attempt"),
    ("29.4", "`step` is a list of `(kernel, grid, block, args)` launches", "test_attempt"),
    (
        "29.4",
        "capture and instantiate the step once, then replay it",
        "test_wrong_decode_steps_are_rejected",
    ),
    (
        "29.4",
        "the run at least 1.5x faster than eager launches on the device's clock",
        "test_wrong_decode_steps_are_rejected",
    ),
    ("29.4", "synchronize once, at the end", "test_wrong_decode_steps_are_rejected"),
    (
        "29.4",
        "device memory equal to `n_steps` runs of the step",
        "test_wrong_decode_steps_are_rejected",
    ),
    (
        "29.5",
        "the chain moves no byte (not even the descriptors before it)",
        "test_wrong_contexts_are_rejected",
    ),
    ("29.5", "report the fault once", "test_wrong_contexts_are_rejected"),
    (
        "29.5",
        "call `device.fault(i)` with the index of the first bad descriptor",
        "test_attempt",
    ),
    ("29.5", "If any descriptor touches an unmapped page", "test_attempt"),
    ("29.5", "a context with no work left drops out", "test_attempt"),
    ("29.5", "at most `timeslice_ns` per slice", "test_wrong_contexts_are_rejected"),
    (
        "29.5",
        "Translate page by page into physical descriptors",
        "test_wrong_contexts_are_rejected",
    ),
    (
        "29.5",
        "`switch_ns` before a slice of a different context than the last one",
        "test_wrong_contexts_are_rejected",
    ),
]
