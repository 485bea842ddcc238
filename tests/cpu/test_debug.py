"""The divergence finder: no divergence on a correct pipeline, every planted bug found at
the cycle and retire worked out by hand, hangs detected."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from minitorch.cpu.asm import assemble
from minitorch.cpu.debug import EXPOSERS, buggy, describe, first_divergence
from minitorch.cpu.pipeline import BUGS, Config
from minitorch.cpu.programs import dot, insertion_sort
from tests.cpu._gen import memories, small_loop

# bug -> (kind, cycle, retire index), counted on the pipeline diagram of its exposer
WHERE = {
    "forward_priority": ("mismatch", 7, 2),  # add (3rd, WB in cycle 7) takes x1 = 1, not 2
    "no_ex_forward": ("mismatch", 6, 1),  # add reads the stale x1 = 0
    "no_load_use_stall": ("mismatch", 6, 1),  # add gets the address 4, not M[4] = 5
    "no_flush": ("mismatch", 6, 1),  # the wrong-path addi x1 (pc 4) retires
    "freeze_on_stall": ("hang", 10, 0),  # the load never leaves EX: no retire for k cycles
}


def test_every_bug_has_an_exposer() -> None:
    assert set(EXPOSERS) == set(BUGS) == set(WHERE)


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_planted_bug_found_at_the_right_cycle(bug: str) -> None:
    text, mem = EXPOSERS[bug]
    words = assemble(text)
    for fwd in (True, False):
        assert first_divergence(words, mem, Config(forwarding=fwd)) is None
    d = first_divergence(words, mem, buggy(bug))
    assert d is not None and (d.kind, d.cycle, d.index) == WHERE[bug]
    assert d.kind in describe(d) and f"cycle {d.cycle}" in describe(d)


@pytest.mark.parametrize("bug", ["no_load_use_stall", "no_flush", "freeze_on_stall"])
def test_bugs_show_on_real_programs(bug: str) -> None:
    prog = insertion_sort([3, 1, 4, 1, 5])
    d = first_divergence(prog.words, prog.mem, buggy(bug))
    assert d is not None and d.kind in ("mismatch", "hang", "fault", "extra")


def test_no_flush_is_invisible_without_a_wrong_path() -> None:
    prog = dot([3, 1, 4])  # the loop branch is the last word: its wrong path is empty
    assert first_divergence(prog.words, prog.mem, buggy("no_flush")) is None


def test_no_divergence_on_correct_pipelines() -> None:
    prog = insertion_sort([4, 2, 7, 1])
    assert first_divergence(prog.words, prog.mem) is None
    assert describe(None).startswith("the pipeline retires exactly")


@settings(max_examples=20, deadline=None)
@given(small_loop(), memories)
def test_random_programs_do_not_diverge(text: str, mem: list[int]) -> None:
    assert first_divergence(assemble(text), mem, mem_words=16) is None


def test_a_program_that_never_halts_is_refused() -> None:
    with pytest.raises(ValueError, match="does not halt"):
        first_divergence(assemble("l: jal x0, l"), max_steps=100)
