"""A tiny ISA: an RV32I subset (plus ``mul``) with the real RISC-V bit layouts.

Every instruction is one 32-bit word; ``opcode = w[6:0]``, ``rd = w[11:7]``,
``funct3 = w[14:12]``, ``rs1 = w[19:15]``, ``rs2 = w[24:20]``, ``funct7 = w[31:25]``. The
six formats differ only in where the immediate lives:

* **R** ``add sub and or xor slt mul``: no immediate, ``funct7`` picks sub (0x20), mul (0x01);
* **I** ``addi lw jalr``: ``imm[11:0] = w[31:20]``;
* **S** ``sw``: ``imm[11:5] = w[31:25]``, ``imm[4:0] = w[11:7]`` (rs1/rs2 stay put);
* **B** ``beq bne blt bge``: ``imm[12|10:5] = w[31|30:25]``, ``imm[4:1|11] = w[11:8|7]``;
* **U** ``lui``: ``imm[31:12] = w[31:12]``;
* **J** ``jal``: ``imm[20|10:1|11|19:12] = w[31|30:21|20|19:12]``.

B and J immediates are even (``imm[0] = 0`` is not stored) and every immediate is sign
extended from its top bit, which is always ``w[31]``. Semantics, on signed 32-bit values:
``rd = rs1 op rs2``; ``addi``: ``rd = rs1 + imm``; ``lw``: ``rd = M[rs1 + imm]``; ``sw``:
``M[rs1 + imm] = rs2``; a branch sets ``pc += imm`` when its condition holds, else
``pc += 4``; ``jal``: ``rd = pc + 4, pc += imm``; ``jalr``: ``rd = pc + 4, pc = (rs1 + imm) & ~1``;
``lui``: ``rd = imm << 12``. ``x0`` reads 0 and ignores writes.

    encode(Instr("addi", rd=1, rs1=0, imm=5))    # 0x00500093
    decode(0xFFDFF06F)                           # Instr("jal", rd=0, imm=-4)

Lab: 36_cpu_pipelines
Reference: The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA (20191213): chapter 2
(RV32I base instruction formats; section 2.3, immediate encoding variants), chapter 7 (M
extension: MUL), chapter 24 (RV32/64G instruction set listings: opcode, funct3, funct7).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FORMAT",
    "OPCODES",
    "Instr",
    "alu",
    "branch_taken",
    "decode",
    "encode",
    "next_pc",
    "reads",
    "to_signed",
    "writes",
]

MASK = 0xFFFFFFFF
R_FUNCT = {  # op -> (funct3, funct7)
    "add": (0b000, 0b0000000),
    "sub": (0b000, 0b0100000),
    "xor": (0b100, 0b0000000),
    "or": (0b110, 0b0000000),
    "and": (0b111, 0b0000000),
    "slt": (0b010, 0b0000000),
    "mul": (0b000, 0b0000001),
}
B_FUNCT = {"beq": 0b000, "bne": 0b001, "blt": 0b100, "bge": 0b101}
I_FUNCT = {"addi": (0b0010011, 0b000), "lw": (0b0000011, 0b010), "jalr": (0b1100111, 0b000)}
FORMAT = (
    {op: "R" for op in R_FUNCT}
    | {op: "I" for op in I_FUNCT}
    | {"sw": "S", "lui": "U", "jal": "J"}
    | {op: "B" for op in B_FUNCT}
)
OPCODES = {"R": 0b0110011, "S": 0b0100011, "B": 0b1100011, "U": 0b0110111, "J": 0b1101111}
IMM_RANGE = {  # format -> (lo, hi, must be even)
    "R": (0, 0, False),
    "I": (-2048, 2047, False),
    "S": (-2048, 2047, False),
    "B": (-4096, 4094, True),
    "U": (0, (1 << 20) - 1, False),
    "J": (-(1 << 20), (1 << 20) - 2, True),
}


@dataclass(frozen=True, slots=True)
class Instr:
    """One decoded instruction; unused fields are 0."""

    op: str
    rd: int = 0
    rs1: int = 0
    rs2: int = 0
    imm: int = 0

    def __post_init__(self) -> None:
        if self.op not in FORMAT:
            raise ValueError(f"unknown op {self.op!r}")
        if not all(0 <= r < 32 for r in (self.rd, self.rs1, self.rs2)):
            raise ValueError(f"register out of range in {self}")
        lo, hi, even = IMM_RANGE[FORMAT[self.op]]
        if not lo <= self.imm <= hi or (even and self.imm % 2):
            raise ValueError(f"immediate {self.imm} does not fit {self.op}")


def to_signed(x: int) -> int:
    """The signed 32-bit value of ``x mod 2**32``."""
    x &= MASK
    return x - (1 << 32) if x & 0x80000000 else x


def _bits(w: int, hi: int, lo: int) -> int:
    return (w >> lo) & ((1 << (hi - lo + 1)) - 1)


def _sext(x: int, nbits: int) -> int:
    return x - (1 << nbits) if x & (1 << (nbits - 1)) else x


def encode(ins: Instr) -> int:
    """The 32-bit word of one instruction."""
    fmt, imm = FORMAT[ins.op], ins.imm & MASK
    rd, rs1, rs2 = ins.rd << 7, ins.rs1 << 15, ins.rs2 << 20
    if fmt == "R":
        f3, f7 = R_FUNCT[ins.op]
        return f7 << 25 | rs2 | rs1 | f3 << 12 | rd | OPCODES["R"]
    if fmt == "I":
        opcode, f3 = I_FUNCT[ins.op]
        return _bits(imm, 11, 0) << 20 | rs1 | f3 << 12 | rd | opcode
    if fmt == "S":
        return _bits(imm, 11, 5) << 25 | rs2 | rs1 | 0b010 << 12 | _bits(imm, 4, 0) << 7 | 0x23
    if fmt == "B":
        hi = _bits(imm, 12, 12) << 31 | _bits(imm, 10, 5) << 25
        lo = _bits(imm, 4, 1) << 8 | _bits(imm, 11, 11) << 7
        return hi | rs2 | rs1 | B_FUNCT[ins.op] << 12 | lo | OPCODES["B"]
    if fmt == "U":
        return imm << 12 | rd | OPCODES["U"]
    j = _bits(imm, 20, 20) << 31 | _bits(imm, 10, 1) << 21 | _bits(imm, 11, 11) << 20
    return j | _bits(imm, 19, 12) << 12 | rd | OPCODES["J"]


def decode(w: int) -> Instr:
    """The instruction of a 32-bit word; ValueError for a word outside the subset."""
    opcode, rd, f3 = _bits(w, 6, 0), _bits(w, 11, 7), _bits(w, 14, 12)
    rs1, rs2, f7 = _bits(w, 19, 15), _bits(w, 24, 20), _bits(w, 31, 25)
    if opcode == OPCODES["R"]:
        for op, funct in R_FUNCT.items():
            if funct == (f3, f7):
                return Instr(op, rd, rs1, rs2)
    for op, (opc, funct3) in I_FUNCT.items():
        if (opcode, f3) == (opc, funct3):
            return Instr(op, rd, rs1, 0, _sext(_bits(w, 31, 20), 12))
    if opcode == OPCODES["S"] and f3 == 0b010:
        return Instr("sw", 0, rs1, rs2, _sext(f7 << 5 | rd, 12))
    if opcode == OPCODES["B"]:
        imm = _bits(w, 31, 31) << 12 | _bits(w, 7, 7) << 11 | f7 % 64 << 5 | _bits(w, 11, 8) << 1
        for op, funct3 in B_FUNCT.items():
            if f3 == funct3:
                return Instr(op, 0, rs1, rs2, _sext(imm, 13))
    if opcode == OPCODES["U"]:
        return Instr("lui", rd, imm=_bits(w, 31, 12))
    if opcode == OPCODES["J"]:
        imm = _bits(w, 31, 31) << 20 | _bits(w, 19, 12) << 12 | _bits(w, 20, 20) << 11
        return Instr("jal", rd, imm=_sext(imm | _bits(w, 30, 21) << 1, 21))
    raise ValueError(f"word {w:#010x} is not in the subset")


def writes(ins: Instr) -> int | None:
    """The register an instruction writes, None for stores, branches and ``rd = x0``."""
    return ins.rd if FORMAT[ins.op] not in ("S", "B") and ins.rd != 0 else None


def reads(ins: Instr) -> tuple[int, ...]:
    """The source registers an instruction reads (x0 included: it reads 0)."""
    fmt = FORMAT[ins.op]
    if fmt in ("R", "S", "B"):
        return (ins.rs1, ins.rs2)
    return (ins.rs1,) if fmt == "I" else ()


def alu(ins: Instr, a: int, b: int, pc: int) -> int:
    """EX's result: the value written to rd, or the address of ``lw``/``sw``."""
    op = ins.op
    if op in ("addi", "lw", "sw"):
        return to_signed(a + ins.imm)
    if op in ("jal", "jalr"):
        return to_signed(pc + 4)
    if op == "lui":
        return to_signed(ins.imm << 12)
    results = {
        "add": a + b,
        "sub": a - b,
        "xor": a ^ b,
        "or": a | b,
        "and": a & b,
        "slt": int(a < b),
        "mul": a * b,
    }
    return to_signed(results[op]) if op in results else 0


def branch_taken(ins: Instr, a: int, b: int) -> bool:
    """Whether a conditional branch is taken (``a``, ``b`` signed)."""
    return {"beq": a == b, "bne": a != b, "blt": a < b, "bge": a >= b}[ins.op]


def next_pc(ins: Instr, a: int, b: int, pc: int) -> int:
    """The pc after ``ins`` (``a = rs1``, ``b = rs2``)."""
    fmt = FORMAT[ins.op]
    if fmt == "B":
        return pc + ins.imm if branch_taken(ins, a, b) else pc + 4
    if ins.op == "jal":
        return pc + ins.imm
    if ins.op == "jalr":
        return (a + ins.imm) & ~1 & MASK
    return pc + 4
