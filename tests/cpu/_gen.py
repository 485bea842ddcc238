"""Hypothesis strategies shared by the CPU tests: valid instructions and random programs."""

from __future__ import annotations

from hypothesis import strategies as st

from minitorch.cpu.isa import FORMAT, IMM_RANGE, Instr

ALU = ["add", "sub", "and", "or", "xor", "slt", "mul"]
BRANCH = ["beq", "bne", "blt", "bge"]


@st.composite
def instrs(draw: st.DrawFn) -> Instr:
    """Any valid instruction of the subset."""
    op = draw(st.sampled_from(sorted(FORMAT)))
    fmt = FORMAT[op]
    lo, hi, even = IMM_RANGE[fmt]
    imm = draw(st.integers(lo, hi))
    imm -= imm % 2 if even else 0
    reg = st.integers(0, 31)
    rd = draw(reg) if fmt not in ("S", "B") else 0
    rs1 = draw(reg) if fmt not in ("U", "J") else 0
    rs2 = draw(reg) if fmt in ("R", "S", "B") else 0
    return Instr(op, rd, rs1, rs2, imm)


@st.composite
def straight_line(draw: st.DrawFn, max_len: int = 12, branches: bool = False) -> list[str]:
    """Random code on x0..x5 (many hazards); forward branches and jumps if ``branches``."""
    n = draw(st.integers(1, max_len))
    kinds = ["alu", "alu", "addi", "lw", "lw", "sw", "lui"] + (["br", "jal"] * branches)
    reg = st.integers(0, 5)
    lines = []
    for i in range(n):
        kind = draw(st.sampled_from(kinds))
        rd, a, b = draw(reg), draw(reg), draw(reg)
        off = 4 * min(draw(st.integers(1, 3)) + 1, n - i)  # lands at most on line n
        if kind == "alu":
            lines.append(f"{draw(st.sampled_from(ALU))} x{rd}, x{a}, x{b}")
        elif kind == "addi":
            lines.append(f"addi x{rd}, x{a}, {draw(st.integers(-50, 50))}")
        elif kind == "lw":
            lines.append(f"lw x{rd}, {4 * draw(st.integers(0, 15))}(x0)")
        elif kind == "sw":
            lines.append(f"sw x{b}, {4 * draw(st.integers(0, 15))}(x0)")
        elif kind == "lui":
            lines.append(f"lui x{rd}, {draw(st.integers(0, 0xFFFFF))}")
        elif kind == "br":
            lines.append(f"{draw(st.sampled_from(BRANCH))} x{a}, x{b}, {off}")
        else:
            lines.append(f"jal x{rd}, {off}")
    return lines


@st.composite
def small_loop(draw: st.DrawFn) -> str:
    """A counted loop (x31 from 1..4 down to 0) around random code with forward branches."""
    body = draw(straight_line(max_len=8, branches=True))
    head = draw(straight_line(max_len=3))
    iters = draw(st.integers(1, 4))
    return "\n".join(
        [*head, f"addi x31, x0, {iters}", "loop:", *body, "addi x31, x31, -1", "bne x31, x0, loop"]
    )


memories = st.lists(st.integers(-(2**31), 2**31 - 1), min_size=16, max_size=16)
