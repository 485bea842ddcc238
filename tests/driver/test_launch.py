"""Kernel launch: the packet round trip, kernels run on device memory through the ring, the
eager pipeline and the graph replay against closed forms written out in the test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.driver.device import CostModel, DeviceMemory
from minitorch.driver.launch import (
    ADD,
    FILL,
    NOP,
    ComputeEngine,
    Kernel,
    Launch,
    Stream,
    decode,
    eager_ns,
    encode,
    graph_ns,
)

u32 = st.integers(0, 2**32 - 1)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(0, 9),
    st.tuples(u32, u32, u32),
    st.tuples(u32, u32, u32),
    st.lists(u32, max_size=6).map(tuple),
)
def test_packet_round_trip(kernel: int, grid: tuple, block: tuple, args: tuple) -> None:
    launch = Launch(kernel, grid, block, args)
    packet = encode(launch)
    assert packet.dtype == np.uint32 and packet.size == 15
    assert decode(packet) == launch


def test_bad_packets_are_refused() -> None:
    with pytest.raises(ValueError, match="at most 6"):
        encode(Launch(NOP, args=tuple(range(7))))
    with pytest.raises(ValueError, match="not a launch packet"):
        decode(np.zeros(15, dtype=np.uint32))


def bits(x: float) -> int:
    return int(np.float32(x).view(np.uint32))


def program(a: int, b: int, c: int, n: int) -> list[Launch]:
    return [
        Launch(FILL, (1, 1, 1), (n, 1, 1), (a, n, bits(1.5))),
        Launch(FILL, (1, 1, 1), (n, 1, 1), (b, n, bits(2.25))),
        Launch(ADD, (1, 1, 1), (n, 1, 1), (c, a, b, n)),
    ]


@pytest.mark.parametrize("graph", [False, True])
def test_kernels_compute_on_device_memory(graph: bool) -> None:
    mem = DeviceMemory(1 << 14)
    n = 100
    a, b, c = (mem.alloc(4 * n) for _ in range(3))
    stream = Stream(ComputeEngine(mem))
    if graph:
        stream.begin_capture()
    for launch in program(a, b, c, n):
        stream.launch(launch)
    if graph:
        assert not mem.data.any()  # capturing runs nothing
        stream.replay(stream.instantiate(stream.end_capture()))
    stream.synchronize()
    np.testing.assert_array_equal(mem.read(c, 4 * n).view(np.float32), np.full(n, 3.75))
    assert stream.bar.writes == (1 if graph else 3)  # one doorbell per submission
    assert stream.engine.commands == (1 if graph else 3)
    assert [s.name for s in stream.engine.spans] == ["fill", "fill", "add"]


@pytest.mark.parametrize("k", [200.0, 1000.0, 1850.0, 5000.0])
@pytest.mark.parametrize("n", [1, 2, 50])
def test_eager_pipeline_closed_form(n: int, k: float) -> None:
    model = CostModel()
    engine = ComputeEngine(DeviceMemory(256), model)
    engine.kernels = {NOP: Kernel("nop", lambda m, x: None, k)}
    stream = Stream(engine)
    for _ in range(n):
        stream.launch(Launch(NOP))
    h = model.launch_cpu_ns + model.mmio_write_ns
    g = model.cmd_fetch_ns + k
    want = h + g + (n - 1) * max(h, g)
    assert stream.synchronize() == pytest.approx(want)
    assert eager_ns([k] * n, model) == pytest.approx(want)
    starts = [s.start_ns for s in engine.spans]
    assert all(b - a >= max(h, g) - 1e-9 for a, b in itertools.pairwise(starts))


def test_graph_replay_one_doorbell_and_speedup_for_a_decode_step() -> None:
    model = CostModel()
    n, k = 300, 1000.0  # a decode step: many small kernels (NOP takes 1000 ns)
    stream = Stream(ComputeEngine(DeviceMemory(256), model))
    stream.begin_capture()
    for _ in range(n):
        stream.launch(Launch(NOP))
    gid = stream.instantiate(stream.end_capture())
    stream.replay(gid)
    t_graph = stream.synchronize()
    want = (
        model.graph_launch_cpu_ns
        + model.mmio_write_ns
        + model.cmd_fetch_ns
        + n * (model.graph_node_ns + k)
    )
    assert t_graph == pytest.approx(want) == pytest.approx(graph_ns([k] * n, model))
    assert stream.bar.writes == 1 and len(stream.engine.spans) == n
    h = model.launch_cpu_ns + model.mmio_write_ns
    t_eager = h + model.cmd_fetch_ns + k + (n - 1) * max(h, model.cmd_fetch_ns + k)
    assert t_eager / t_graph > 1.8  # launch bound eager vs one doorbell
    stream.replay(gid)  # replays again without recording
    assert stream.synchronize() == pytest.approx(2 * t_graph)  # the host was idle: same again
