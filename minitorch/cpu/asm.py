"""The assembler and disassembler: text with labels to 32-bit words and back.

Two passes. The first gives every instruction its address (``pc = 4 * index``, each line
one word) and every ``label:`` the address of the next instruction; the second encodes,
turning a label operand of a branch or ``jal`` into the pc-relative offset
``imm = label_address - pc``. Syntax (``#`` starts a comment, commas optional):

    add  rd, rs1, rs2        addi rd, rs1, imm        lui rd, imm20
    lw   rd, imm(rs1)        sw   rs2, imm(rs1)       jalr rd, imm(rs1)
    beq  rs1, rs2, label     jal  rd, label           (or a numeric offset in place of a label)

Pseudo-instructions, each one word: ``nop`` (``addi x0, x0, 0``), ``mv rd, rs``
(``addi rd, rs, 0``), ``li rd, imm`` (``addi rd, x0, imm``, 12-bit imm only), ``j label``
(``jal x0, label``), ``ret`` (``jalr x0, 0(x1)``). Registers are ``x0``..``x31``.
:func:`disassemble` writes the canonical form (numeric offsets, no pseudo-instructions),
so ``assemble(disassemble(words)) == words`` for every word of the subset.

    assemble("loop: addi x1, x1, -1\\n bne x1, x0, loop")   # [0xFFF08093, 0xFE009EE3]

Lab: 36_cpu_pipelines
Reference: The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA (20191213), chapter 25
(RISC-V Assembly Programmer's Handbook: pseudo-instructions, table 25.2).
"""

from __future__ import annotations

import re

from minitorch.cpu.isa import FORMAT, Instr, decode, encode

__all__ = ["AsmError", "assemble", "disassemble", "format_instr", "parse"]

_MEM = re.compile(r"^(-?(?:0x[0-9a-fA-F]+|\d+))\((x\d+)\)$")


class AsmError(ValueError):
    """A line the assembler cannot read; the message names the line."""


def _reg(tok: str) -> int:
    if not re.fullmatch(r"x\d+", tok) or int(tok[1:]) > 31:
        raise AsmError(f"bad register {tok!r}")
    return int(tok[1:])


def _int(tok: str) -> int:
    try:
        return int(tok, 0)
    except ValueError:
        raise AsmError(f"bad number {tok!r}") from None


def _mem(tok: str) -> tuple[int, int]:
    m = _MEM.match(tok)
    if not m:
        raise AsmError(f"bad memory operand {tok!r} (want imm(xN))")
    return _int(m.group(1)), _reg(m.group(2))


def _expand(op: str, args: list[str]) -> tuple[str, list[str]]:
    """Pseudo-instructions to their one real instruction."""
    if op == "nop":
        return "addi", ["x0", "x0", "0"]
    if op == "mv":
        return "addi", [*args, "0"]
    if op == "li":
        return "addi", [args[0], "x0", *args[1:]]
    if op == "j":
        return "jal", ["x0", *args]
    if op == "ret":
        return "jalr", ["x0", "0(x1)"]
    return op, args


def _instr(op: str, args: list[str], pc: int, labels: dict[str, int]) -> Instr:
    def target(tok: str) -> int:
        return labels[tok] - pc if tok in labels else _int(tok)

    fmt = FORMAT.get(op)
    want = {"R": 3, "I": 3 if op == "addi" else 2, "S": 2, "B": 3, "U": 2, "J": 2}
    if fmt is None:
        raise AsmError(f"unknown instruction {op!r}")
    if len(args) != want[fmt]:
        raise AsmError(f"{op} takes {want[fmt]} operands, got {len(args)}")
    if fmt == "R":
        return Instr(op, _reg(args[0]), _reg(args[1]), _reg(args[2]))
    if op == "addi":
        return Instr(op, _reg(args[0]), _reg(args[1]), imm=_int(args[2]))
    if fmt == "I":
        imm, rs1 = _mem(args[1])
        return Instr(op, _reg(args[0]), rs1, imm=imm)
    if fmt == "S":
        imm, rs1 = _mem(args[1])
        return Instr(op, rs1=rs1, rs2=_reg(args[0]), imm=imm)
    if fmt == "B":
        return Instr(op, rs1=_reg(args[0]), rs2=_reg(args[1]), imm=target(args[2]))
    if fmt == "U":
        return Instr(op, _reg(args[0]), imm=_int(args[1]))
    return Instr(op, _reg(args[0]), imm=target(args[1]))


def _lines(text: str) -> list[tuple[int, list[str], str]]:
    """``(line number, labels, instruction text)`` for every non-empty line."""
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        labels = []
        while (m := re.match(r"^([A-Za-z_.][\w.]*):", line)) is not None:
            labels.append(m.group(1))
            line = line[m.end() :].strip()
        if labels or line:
            out.append((no, labels, line))
    return out


def parse(text: str) -> tuple[list[Instr], dict[str, int]]:
    """The instructions of a program and its labels (name -> byte address)."""
    labels: dict[str, int] = {}
    body: list[tuple[int, str]] = []
    for no, names, line in _lines(text):
        for name in names:
            if name in labels:
                raise AsmError(f"line {no}: label {name!r} defined twice")
            labels[name] = 4 * len(body)
        if line:
            body.append((no, line))
    prog = []
    for index, (no, line) in enumerate(body):
        op, _, rest = line.partition(" ")
        args = [a for a in re.split(r"[,\s]+", rest.strip()) if a]
        try:
            prog.append(_instr(*_expand(op.lower(), args), 4 * index, labels))
        except (AsmError, ValueError) as err:
            raise AsmError(f"line {no}: {line!r}: {err}") from None
    return prog, labels


def assemble(text: str) -> list[int]:
    """The 32-bit words of a program (instruction ``i`` at byte address ``4 i``)."""
    return [encode(ins) for ins in parse(text)[0]]


def format_instr(ins: Instr) -> str:
    """One instruction in canonical assembly (numeric branch and jump offsets)."""
    fmt, op = FORMAT[ins.op], ins.op
    if fmt == "R":
        return f"{op} x{ins.rd}, x{ins.rs1}, x{ins.rs2}"
    if op == "addi":
        return f"{op} x{ins.rd}, x{ins.rs1}, {ins.imm}"
    if fmt == "I":
        return f"{op} x{ins.rd}, {ins.imm}(x{ins.rs1})"
    if fmt == "S":
        return f"{op} x{ins.rs2}, {ins.imm}(x{ins.rs1})"
    if fmt == "B":
        return f"{op} x{ins.rs1}, x{ins.rs2}, {ins.imm}"
    if fmt == "U":
        return f"{op} x{ins.rd}, {ins.imm:#x}"
    return f"{op} x{ins.rd}, {ins.imm}"


def disassemble(words: list[int]) -> str:
    """The canonical text of a program, one instruction per line."""
    return "\n".join(format_instr(decode(w)) for w in words)
