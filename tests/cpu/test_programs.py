"""The lab's programs compute the right answers, and the pipeline takes exactly their
closed-form cycle counts."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.cpu.asm import assemble
from minitorch.cpu.golden import run
from minitorch.cpu.pipeline import Config, simulate
from minitorch.cpu.programs import (
    dot,
    dot_cycles,
    matmul,
    matmul_cycles,
    matmul_instructions,
    straight_line_cycles,
)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_dot_cycles_closed_form(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.integers(-50, 50, n).tolist(), rng.integers(-50, 50, n).tolist()
    prog = dot(a, b)
    gold = run(prog.words, prog.mem)
    res = simulate(prog.words, prog.mem)
    assert res.retired == gold.trace and res.regs[13] == int(np.dot(a, b))
    assert len(gold.trace) == 8 * n + 4
    assert res.cycles == dot_cycles(n) == 11 * n + 6
    assert res.stalls == n and res.redirects == n - 1
    slow = simulate(prog.words, prog.mem, Config(forwarding=False))
    assert slow.retired == gold.trace and slow.cycles == dot_cycles(n, False) == 16 * n + 7
    assert slow.stalls == 6 * n + 1


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_matmul_cycles_closed_form(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.integers(-9, 9, (n, n)), rng.integers(-9, 9, (n, n))
    prog = matmul(a.tolist(), b.tolist())
    gold = run(prog.words, prog.mem)
    assert gold.mem[2 * n * n : 3 * n * n] == (a @ b).ravel().tolist()
    res = simulate(prog.words, prog.mem)
    assert res.retired == gold.trace
    assert len(gold.trace) == matmul_instructions(n)
    assert res.cycles == matmul_cycles(n)
    assert res.stalls == n**3 and res.redirects == n**3 - 1
    slow = simulate(prog.words, prog.mem, Config(forwarding=False))
    assert slow.retired == gold.trace and slow.cycles == matmul_cycles(n, forwarding=False)
    assert slow.stalls == 6 * n**3 + 3 * n**2 + 2 * n


def test_straight_line_closed_form() -> None:
    text = "addi x1, x0, 1\nlw x2, 0(x0)\nadd x3, x2, x1\nlw x4, 4(x0)\nsw x4, 8(x0)\nnop"
    res = simulate(assemble(text))
    assert res.stalls == 2 and res.cycles == straight_line_cycles(6, 2) == 12
    assert res.cpi == 2.0


def test_builders_refuse_sizes_their_immediates_cannot_hold() -> None:
    with pytest.raises(ValueError):
        dot([1] * 300)
    with pytest.raises(ValueError):
        matmul([[0] * 16] * 16, [[0] * 16] * 16)
