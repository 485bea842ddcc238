"""The W-wide in-order issue model: IPC bounded by W and by the critical path, exact on
independent and fully dependent code, the dot product's critical path in closed form."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from minitorch.cpu.asm import assemble
from minitorch.cpu.golden import Retire, run
from minitorch.cpu.programs import count_words, dot, insertion_sort, matmul
from minitorch.cpu.superscalar import (
    critical_path,
    cycles_lower_bound,
    dot_critical_path,
    ipc_bound,
    ipc_vs_width,
    issue,
)
from tests.cpu._gen import memories, small_loop

ONES = {"lw": 1, "mul": 1}


def _kernels() -> list[list[Retire]]:
    progs = [
        dot(list(range(1, 13))),
        matmul([[1, 2, 3]] * 3, [[3, 2, 1]] * 3),
        insertion_sort([5, 1, 4, 2, 3, 9, 0]),
        count_words(b"a bb ccc  dd e"),
    ]
    return [run(p.words, p.mem).trace for p in progs]


def _check_bounds(trace: list[Retire]) -> None:
    cp = critical_path(trace)
    for w in (1, 2, 3, 4, 8):
        res = issue(trace, w)
        assert res.instructions == len(trace)
        assert res.cycles >= cycles_lower_bound(len(trace), w, cp)
        assert res.ipc <= ipc_bound(len(trace), w, cp) + 1e-12
        assert res.ipc <= w
        assert res.issue_cycles == sorted(res.issue_cycles)  # in order
        assert max(res.issue_cycles.count(c) for c in set(res.issue_cycles)) <= w


def test_kernels_respect_both_bounds_and_gain_from_width() -> None:
    for trace in _kernels():
        _check_bounds(trace)
        ipcs = ipc_vs_width(trace, (1, 2, 4))
        assert ipcs[1] < ipcs[2] <= ipcs[4] <= ipc_bound(len(trace), 4, critical_path(trace))


@settings(max_examples=25, deadline=None)
@given(small_loop(), memories)
def test_random_programs_respect_both_bounds(text: str, mem: list[int]) -> None:
    _check_bounds(run(assemble(text), mem, mem_words=16).trace)


@pytest.mark.parametrize("w", [1, 2, 4, 8])
def test_independent_code_reaches_width(w: int) -> None:
    trace = run(assemble("\n".join(f"addi x{1 + i % 16}, x0, {i}" for i in range(8 * w)))).trace
    res = issue(trace, w, ONES)
    assert res.cycles == 8 and res.ipc == w and critical_path(trace, ONES) == 1


@pytest.mark.parametrize("w", [1, 2, 4])
def test_a_dependence_chain_is_width_independent(w: int) -> None:
    trace = run(assemble("\n".join(["addi x1, x1, 1"] * 20 + ["mul x1, x1, x1"]))).trace
    assert critical_path(trace) == 20 + 3
    assert issue(trace, w).cycles == 23


@pytest.mark.parametrize("n", [1, 2, 5, 12])
@pytest.mark.parametrize("lat", [{"lw": 2, "mul": 3}, ONES, {"lw": 4, "mul": 5}])
def test_dot_critical_path_closed_form(n: int, lat: dict[str, int]) -> None:
    prog = dot(list(range(n)))
    trace = run(prog.words, prog.mem).trace
    assert critical_path(trace, lat) == dot_critical_path(n, lat)


def test_scalar_unit_latency_is_one_instruction_per_cycle() -> None:
    prog = dot(list(range(6)))
    trace = run(prog.words, prog.mem).trace
    assert issue(trace, 1, ONES, break_on_taken=False).cycles == len(trace)
    with pytest.raises(ValueError):
        issue(trace, 0)
