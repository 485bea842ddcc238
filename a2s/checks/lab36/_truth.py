"""Lab 36's own ground truth: bit fields, a tiny parser and interpreter, and plain-loop models.

Nothing here calls ``minitorch.cpu``: the encoder places each immediate bit by a table of
fields, the interpreter runs a program text one instruction at a time, the pipeline's cycles
come from a timeline of ID cycles (one per instruction, pushed back by hazards and
redirects), the predictors and the critical path are loops over the trace, and the lock-step
comparison is a loop over the cycle log. ``minitorch.cpu.programs`` supplies program texts
only (data), which the parser here reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

R_OPS = {"add": (0, 0), "sub": (0, 32), "xor": (4, 0), "or": (6, 0), "and": (7, 0)}
R_OPS |= {"slt": (2, 0), "mul": (0, 1)}
I_OPS = {"addi": (0x13, 0), "lw": (0x03, 2), "jalr": (0x67, 0)}
B_OPS = {"beq": 0, "bne": 1, "blt": 4, "bge": 5}
FMT = {op: "R" for op in R_OPS} | {op: "I" for op in I_OPS} | {op: "B" for op in B_OPS}
FMT |= {"sw": "S", "lui": "U", "jal": "J"}
LIMITS = {"R": (0, 0, 1), "I": (-2048, 2047, 1), "S": (-2048, 2047, 1), "B": (-4096, 4094, 2)}
LIMITS |= {"U": (0, (1 << 20) - 1, 1), "J": (-(1 << 20), (1 << 20) - 2, 2)}
# where the immediate's bits go: (word bit, immediate bit) for every stored bit
_PLACES = {
    "I": [(20 + i, i) for i in range(12)],
    "S": [(7 + i, i) for i in range(5)] + [(25 + i, 5 + i) for i in range(7)],
    "B": [(8 + i, 1 + i) for i in range(4)]
    + [(25 + i, 5 + i) for i in range(6)]
    + [(7, 11), (31, 12)],
    "U": [(12 + i, i) for i in range(20)],
    "J": [(21 + i, 1 + i) for i in range(10)]
    + [(20, 11)]
    + [(12 + i, 12 + i) for i in range(8)]
    + [(31, 20)],
    "R": [],
}
LATENCY = {"lw": 2, "mul": 3}
# the reference, blocked for every exercise of the lab while the learner's code runs
CPU = tuple(
    f"minitorch.cpu.{m}"
    for m in ("isa", "asm", "golden", "pipeline", "programs", "branch", "superscalar", "debug")
)


def encode(op: str, rd: int = 0, rs1: int = 0, rs2: int = 0, imm: int = 0, **bad: Any) -> int:
    """The 32-bit word, field by field; ValueError on an operand that does not fit."""
    if op not in FMT:
        raise ValueError(f"unknown op {op!r}")
    fmt = FMT[op]
    if not all(isinstance(r, int) and 0 <= r < 32 for r in (rd, rs1, rs2)):
        raise ValueError("registers are 0..31")
    lo, hi, step = LIMITS[fmt]
    if not lo <= imm <= hi or imm % step:
        raise ValueError(f"immediate {imm} does not fit {op}")
    if bad.get("b_as_s") and fmt == "B":
        fmt_places = _PLACES["S"]
    else:
        fmt_places = _PLACES[fmt]
    word = sum(((imm >> i) & 1) << w for w, i in fmt_places)
    opcode = {"R": 0x33, "S": 0x23, "B": 0x63, "U": 0x37, "J": 0x6F}.get(fmt, 0)
    f3 = 0
    if fmt == "R":
        f3, f7 = R_OPS[op]
        word |= f7 << 25
    elif fmt == "I":
        opcode, f3 = I_OPS[op]
    elif fmt == "S":
        f3 = 2
    elif fmt == "B":
        f3 = B_OPS[op]
    if fmt not in ("S", "B"):
        word |= rd << 7
    if fmt in ("R", "I", "S", "B"):
        word |= rs1 << 15 | (f3 << 12)
    if fmt in ("R", "S", "B"):
        word |= rs2 << 20
    return word | opcode


# --------------------------------------------------------------------------- programs
Ins = tuple[Any, ...]  # op, rd, rs1, rs2, imm or label


def parse(text: str) -> list[Ins]:
    """``label:`` lines and ``op a, b, c`` lines (the subset the lab's programs use)."""
    prog: list[Ins] = []
    labels: dict[str, int] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        while (m := re.match(r"(\w+):", line)) is not None:
            labels[m.group(1)] = len(prog)
            line = line[m.end() :].strip()
        if not line:
            continue
        op, *args = re.split(r"[,\s]+", line)
        regs: list[Any] = [int(a[1:]) if re.fullmatch(r"x\d+", a) else a for a in args]
        if FMT[op] == "R":
            prog.append((op, regs[0], regs[1], regs[2], 0))
        elif op == "addi":
            prog.append((op, regs[0], regs[1], 0, int(regs[2])))
        elif op in ("lw", "sw"):
            imm, base = re.fullmatch(r"(-?\d+)\(x(\d+)\)", str(regs[1])).groups()  # type: ignore[union-attr]
            rd, rs2 = (regs[0], 0) if op == "lw" else (0, regs[0])
            prog.append((op, int(rd), int(base), int(rs2), int(imm)))
        elif FMT[op] == "B":
            prog.append((op, 0, regs[0], regs[1], regs[2]))
        else:  # jal rd, label
            prog.append((op, regs[0], 0, 0, regs[1]))
    return [
        (op, rd, a, b, labels.get(imm, imm) if isinstance(imm, str) else imm)
        for op, rd, a, b, imm in prog
    ]


def execute(text: str, mem: Sequence[int], max_steps: int = 200_000) -> list[tuple[Any, ...]]:
    """Run a program; one ``(pc, op, rd, rs1, rs2, next_pc)`` per executed instruction."""
    prog = parse(text)
    x, m = [0] * 32, [*mem, *[0] * 256]
    pc, out = 0, list[tuple[Any, ...]]()
    while pc < len(prog) and len(out) < max_steps:
        op, rd, a, b, imm = prog[pc]
        va, vb, nxt, val = x[a], x[b], pc + 1, None
        if FMT[op] == "R":
            val = {"add": va + vb, "sub": va - vb, "mul": va * vb, "slt": int(va < vb)}.get(op)
            val = {"xor": va ^ vb, "or": va | vb, "and": va & vb}.get(op, val)
        elif op == "addi":
            val = va + imm
        elif op == "lw":
            val = m[(va + imm) // 4]
        elif op == "sw":
            m[(va + imm) // 4] = vb
        elif op == "jal":
            val, nxt = 4 * (pc + 1), imm
        else:
            conds = {"beq": va == vb, "bne": va != vb, "blt": va < vb, "bge": va >= vb}
            nxt = imm if conds[op] else pc + 1
        if val is not None and rd:
            x[rd] = val
        out.append((4 * pc, op, rd, a, b, 4 * nxt))
        pc = nxt
    return out


def steps(text: str, mem: Sequence[int]) -> list[tuple[str, int, int, int, bool]]:
    """The learner's trace format: ``(op, rd, rs1, rs2, taken)``, taken = next pc != pc + 4."""
    return [(op, rd, a, b, nxt != pc + 4) for pc, op, rd, a, b, nxt in execute(text, mem)]


def branches(text: str, mem: Sequence[int]) -> list[tuple[int, bool]]:
    """The conditional branches of a run: ``(pc, taken)``."""
    return [(pc, nxt != pc + 4) for pc, op, _, _, _, nxt in execute(text, mem) if op in B_OPS]


# --------------------------------------------------------------------------- models
def cycles(
    trace: Sequence[Sequence[Any]],
    forwarding: bool = True,
    *,
    load_use: int = 1,
    gap: int = 3,
    last_free: bool = True,
    x0: bool = False,
    flush: int = 2,
    store_data: int = 1,
) -> int:
    """Cycles of the 5-stage pipeline: a timeline of ID cycles (WB = ID + 3)."""
    ready: dict[int, int] = {}
    loaded: set[int] = set()  # registers whose newest value comes from a lw
    at, taken = 0, False
    for n, (op, rd, rs1, rs2, tk) in enumerate(trace):
        at = 2 if n == 0 else at + 1 + (flush if taken else 0)
        for s in (rs1, rs2):
            if s or x0:
                late = op == "sw" and s == rs2 and s in loaded and forwarding
                at = max(at, ready.get(s, 0) - (1 - store_data if late else 0))
        if rd or x0:
            ready[rd] = at + (gap if not forwarding else 1 + (load_use if op == "lw" else 0))
            (loaded.add if op == "lw" else loaded.discard)(rd)
        taken = bool(tk)
    extra = 0 if last_free or not trace or not trace[-1][4] else 2
    return at + 3 + extra if trace else 0


def mispredictions(
    trace: Sequence[Sequence[Any]],
    scheme: str,
    k: int,
    *,
    shift: int = 2,
    init: int | None = None,
    early_ghr: bool = False,
    threshold: int | None = None,
    add: bool = False,
) -> int:
    """Mispredictions of ``1bit``, ``2bit`` (bimodal) or ``gshare`` tables of 2**k entries."""
    mask, top = (1 << k) - 1, 1 if scheme == "1bit" else 3
    table = [(0 if scheme == "1bit" else 1) if init is None else init] * (1 << k)
    cut = (top + 1) // 2 if threshold is None else threshold
    ghr = wrong = 0
    for pc, taken in trace:
        h = ghr if scheme == "gshare" else 0
        i = ((pc >> shift) + h if add else (pc >> shift) ^ h) & mask
        wrong += (table[i] >= cut) != bool(taken)
        if early_ghr and scheme == "gshare":
            ghr = ((ghr << 1) | bool(taken)) & mask
            i = ((pc >> shift) ^ ghr) & mask
        table[i] = min(table[i] + 1, top) if taken else max(table[i] - 1, 0)
        if scheme == "gshare" and not early_ghr:
            ghr = ((ghr << 1) | bool(taken)) & mask
    return wrong


def critical_path(
    trace: Sequence[Sequence[Any]],
    *,
    unit: bool = False,
    x0: bool = False,
    serial: bool = False,
    latency: dict[str, int] | None = None,
) -> int:
    """The longest RAW chain, each instruction weighted by its latency."""
    done: dict[int, int] = {}
    longest = 0
    for op, rd, rs1, rs2, *_ in trace:
        lat = 1 if unit else (LATENCY if latency is None else latency).get(op, 1)
        end = lat + (
            longest if serial else max([0, *(done.get(s, 0) for s in (rs1, rs2) if s or x0)])
        )
        longest = max(longest, end)
        if rd or x0:
            done[rd] = end
    return longest


def divergence(
    expected: Sequence[Any],
    log: Sequence[Any],
    k: int = 10,
    *,
    base: int = 1,
    late: int = 0,
    quiet_end: bool = False,
    after_first: bool = False,
    pc_only: bool = False,
    end: int = 0,
) -> tuple[str, int, int] | None:
    """The first place a cycle log parts from the golden retires: (kind, cycle, index)."""
    i = last = 0
    for c, got in enumerate(log, base):
        if got is not None:
            if i >= len(expected):
                return ("extra", c, i)
            same = got[0] == expected[i][0] if pc_only else tuple(got) == tuple(expected[i])
            if not same:
                return ("mismatch", c, i)
            i, last = i + 1, c
        elif c - last >= k + late and (i or not after_first):
            return ("hang", c, i)
    if i < len(expected) and not quiet_end:
        return ("missing", len(log) + base - 1 + end, i)
    return None


def random_program(g: Any, length: int) -> str:
    """Straight-line code over x1..x6 (loads, stores, ALU ops, mul) with forward skips."""
    lines, skips = [], 0
    for i in range(length):
        r = [int(v) for v in g.integers(0, 7, 3)]
        kind = int(g.integers(0, 8))
        if kind <= 1:
            lines.append(f"lw x{r[0] or 1}, {4 * int(g.integers(0, 8))}(x0)")
        elif kind == 2:
            lines.append(f"sw x{r[0]}, {4 * int(g.integers(0, 8))}(x0)")
        elif kind == 3:
            lines.append(f"mul x{r[0]}, x{r[1]}, x{r[2]}")
        elif kind == 4:
            lines.append(f"addi x{r[0]}, x{r[1]}, {int(g.integers(-5, 6))}")
        elif kind == 5 and i < length - 2:
            op = ("beq", "bne", "jal")[int(g.integers(0, 3))]
            target = f"s{skips}"
            lines.append(
                f"jal x{r[0]}, {target}" if op == "jal" else f"{op} x{r[1]}, x{r[2]}, {target}"
            )
            lines.append(f"add x{r[1]}, x{r[2]}, x{r[0]}")
            lines.append(f"{target}:")
            skips += 1
        else:
            lines.append(f"add x{r[0]}, x{r[1]}, x{r[2]}")
    return "\n".join(lines)
