"""Predictors: the 2-bit counter against a plain loop model, gshare against an independent
implementation, static rules, aliasing, and misprediction cycles inside the pipeline."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from minitorch.cpu.branch import (
    BTFN,
    AlwaysTaken,
    Bimodal,
    BranchEvent,
    Gshare,
    NeverTaken,
    Predictor,
    accuracy,
    accuracy_vs_size,
    branch_trace,
    mispredict_cycles,
    mispredictions,
)
from minitorch.cpu.golden import run
from minitorch.cpu.isa import decode
from minitorch.cpu.pipeline import Config, simulate
from minitorch.cpu.programs import count_words, dot, dot_cycles, insertion_sort, matmul


def _loop(n: int, m: int, pc: int = 64) -> list[BranchEvent]:
    """A loop branch taken n - 1 times then not, m times over."""
    return [BranchEvent(pc, pc - 16, i < n - 1) for _ in range(m) for i in range(n)]


def _plain_two_bit(events: list[BranchEvent]) -> int:
    """The 2-bit state machine by its state names; one branch, starts weakly not taken."""
    up = {"SN": "WN", "WN": "WT", "WT": "ST", "ST": "ST"}
    down = {"SN": "SN", "WN": "SN", "WT": "WN", "ST": "WT"}
    state, wrong = "WN", 0
    for ev in events:
        wrong += (state in ("WT", "ST")) != ev.taken
        state = up[state] if ev.taken else down[state]
    return wrong


@pytest.mark.parametrize(("n", "m"), [(1, 5), (2, 4), (3, 6), (10, 10)])
def test_two_bit_counter_against_the_loop_model(n: int, m: int) -> None:
    events = _loop(n, m)
    assert mispredictions(Bimodal(4), events) == _plain_two_bit(events)
    if n >= 3:  # warm, one miss per loop exit; the first entry misses once more
        assert _plain_two_bit(events) == m + 1
    one_bit = Bimodal(4, init=0, bits=1)
    assert mispredictions(one_bit, _loop(10, 10)) == 20  # a 1-bit counter: exit and re-entry


def _ref_gshare(events: list[BranchEvent], k: int, h: int) -> list[bool]:
    """Gshare written independently: history as a string of outcomes, counters in a dict."""
    counters: dict[int, int] = {}
    history = ""
    out = []
    for ev in events:
        ghr = int(history[-h:] or "0", 2) if h else 0
        idx = ((ev.pc // 4) ^ ghr) % (2**k)
        c = counters.get(idx, 1)
        out.append(c >= 2)
        counters[idx] = min(3, c + 1) if ev.taken else max(0, c - 1)
        history += "1" if ev.taken else "0"
    return out


def _sort_trace() -> list[BranchEvent]:
    prog = insertion_sort([9, 3, 7, 1, 8, 2, 6, 5, 4, 0, 3, 3])
    return branch_trace(run(prog.words, prog.mem))


@pytest.mark.parametrize(("k", "h"), [(2, 2), (4, 4), (6, 3), (5, 0)])
def test_gshare_against_an_independent_implementation(k: int, h: int) -> None:
    events = _sort_trace() + _loop(5, 4)
    g = Gshare(k, h)
    got = []
    for ev in events:
        got.append(g.predict(ev.pc, ev.target))
        g.update(ev.pc, ev.target, ev.taken)
    assert got == _ref_gshare(events, k, h)


def test_gshare_learns_a_pattern_bimodal_cannot() -> None:
    alternating = [BranchEvent(40, 20, i % 2 == 0) for i in range(200)]
    assert accuracy(Bimodal(4), alternating) <= 0.5
    assert accuracy(Gshare(4, 2), alternating) > 0.95


def test_static_rules_on_a_loop() -> None:
    prog = dot(list(range(10)))
    trace = branch_trace(run(prog.words, prog.mem))
    assert len(trace) == 10 and all(ev.target < ev.pc for ev in trace)
    assert mispredictions(AlwaysTaken(), trace) == mispredictions(BTFN(), trace) == 1
    assert mispredictions(NeverTaken(), trace) == 9
    forward = [BranchEvent(0, 8, False), BranchEvent(0, 8, True)]
    assert mispredictions(BTFN(), forward) == 1


def test_traces_from_real_programs_and_aliasing() -> None:
    prog = matmul([[1, 2, 3]] * 3, [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    trace = branch_trace(run(prog.words, prog.mem))
    assert len({ev.pc for ev in trace}) == 3 and len(trace) == 27 + 9 + 3
    sweep = accuracy_vs_size(trace, range(0, 9))
    assert len({sweep[k] for k in range(6, 9)}) == 1  # no aliasing left: size stops mattering
    data = b"the quick  brown fox jumps over a lazy dog "
    words = count_words(data)
    text_trace = branch_trace(run(words.words, words.mem))
    assert {decode(w).op for w in words.words} >= {"beq", "bne", "blt"}
    assert len(text_trace) == 2 * len(data) + sum(c != ord(" ") for c in data)
    assert all(0.0 <= a <= 1.0 for a in accuracy_vs_size(text_trace, range(4)).values())
    # two branches 64 bytes apart share a counter until the table has 32 entries
    fight = [BranchEvent(pc, 0, pc == 0) for _ in range(50) for pc in (0, 64)]
    sizes = accuracy_vs_size(fight, [4, 5])
    assert sizes[4] <= 0.5 and sizes[5] > 0.95


@pytest.mark.parametrize("make", [Bimodal, lambda: Gshare(4), BTFN, NeverTaken])
def test_misprediction_cycles_in_the_pipeline(make: Callable[[], Predictor]) -> None:
    n = 12
    prog = dot(list(range(n)))
    trace = branch_trace(run(prog.words, prog.mem))
    pred, flags = make(), []
    for ev in trace:
        flags.append(pred.predict(ev.pc, ev.target) != ev.taken)
        pred.update(ev.pc, ev.target, ev.taken)
    wrong = sum(flags)
    assert wrong == mispredictions(make(), trace)
    res = simulate(prog.words, prog.mem, Config(predictor=make()))
    assert res.mispredicts == wrong
    # a miss on the last exit redirects out of the program: the pipe drains, no cost
    assert res.redirects == wrong - flags[-1]
    # the not-taken baseline pays 2 per taken branch; a predictor pays 2 per miss instead
    assert res.cycles == dot_cycles(n) - mispredict_cycles(n - 1) + mispredict_cycles(res.redirects)
