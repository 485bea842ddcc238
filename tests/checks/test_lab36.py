"""Graders of lab 36: right answers pass, realistic wrong ones and reference calls fail, and
the graders' own truth agrees with the reference package (each can catch a bug in the other)."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks import lab36
from a2s.checks.core import CheckFailure, ReferenceCalledError
from a2s.checks.lab36 import _truth
from minitorch.cpu import asm, branch, debug, golden, isa, pipeline, programs, superscalar
from tests.helpers.graders import rejects

# --------------------------------------------------------------------------- answers
OPCODE = {
    "R": 0b0110011,
    "I": 0b0010011,
    "LOAD": 0b0000011,
    "JALR": 0b1100111,
    "S": 0b0100011,
    "B": 0b1100011,
    "U": 0b0110111,
    "J": 0b1101111,
}
R_FUNCT = {
    "add": (0, 0),
    "sub": (0, 0x20),
    "xor": (4, 0),
    "or": (6, 0),
    "and": (7, 0),
    "slt": (2, 0),
    "mul": (0, 0x01),
}
B_FUNCT3 = {"beq": 0, "bne": 1, "blt": 4, "bge": 5}


def bits(x, hi, lo):
    """Bits hi..lo of x (x may be negative: Python's >> and & work on two's complement)."""
    return (x >> lo) & ((1 << (hi - lo + 1)) - 1)


def encode(op, rd=0, rs1=0, rs2=0, imm=0):
    """One instruction -> its 32-bit word; ValueError for an operand that does not fit."""

    def need(ok, what):
        if not ok:
            raise ValueError(f"{op}: {what}")

    for r in (rd, rs1, rs2):
        need(0 <= r < 32, f"register {r} is not x0..x31")
    regs = rs2 << 20 | rs1 << 15
    if op in R_FUNCT:
        f3, f7 = R_FUNCT[op]
        return f7 << 25 | regs | f3 << 12 | rd << 7 | OPCODE["R"]
    if op in ("addi", "lw", "jalr"):
        need(-2048 <= imm <= 2047, f"immediate {imm} is not 12 bits signed")
        opcode, f3 = {"addi": ("I", 0), "lw": ("LOAD", 2), "jalr": ("JALR", 0)}[op]
        return bits(imm, 11, 0) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | OPCODE[opcode]
    if op == "sw":
        need(-2048 <= imm <= 2047, f"offset {imm} is not 12 bits signed")
        return bits(imm, 11, 5) << 25 | regs | 2 << 12 | bits(imm, 4, 0) << 7 | OPCODE["S"]
    if op in B_FUNCT3:
        need(-4096 <= imm <= 4094 and imm % 2 == 0, f"offset {imm} is not even 13 bits signed")
        hi = bits(imm, 12, 12) << 31 | bits(imm, 10, 5) << 25
        lo = bits(imm, 4, 1) << 8 | bits(imm, 11, 11) << 7
        return hi | regs | B_FUNCT3[op] << 12 | lo | OPCODE["B"]
    if op == "lui":
        need(0 <= imm < 1 << 20, f"immediate {imm} is not 20 bits unsigned")
        return imm << 12 | rd << 7 | OPCODE["U"]
    if op == "jal":
        need(-(1 << 20) <= imm < 1 << 20 and imm % 2 == 0, f"offset {imm} is not even 21 bits")
        j = bits(imm, 20, 20) << 31 | bits(imm, 10, 1) << 21 | bits(imm, 11, 11) << 20
        return j | bits(imm, 19, 12) << 12 | rd << 7 | OPCODE["J"]
    raise ValueError(f"unknown op {op!r}")


def pipeline_cycles(trace, forwarding=True):
    """Cycles of the 5-stage pipeline for a retired trace of (op, rd, rs1, rs2, taken)."""

    if not trace:
        return 0
    free_at = {}  # register -> the first ID cycle a consumer may have
    id_cycle, after_redirect = 0, False
    for i, (op, rd, rs1, rs2, taken) in enumerate(trace):
        id_cycle = 2 if i == 0 else id_cycle + (3 if after_redirect else 1)
        for src in (rs1, rs2):
            if src != 0:
                id_cycle = max(id_cycle, free_at.get(src, 0))
        if rd != 0:
            if forwarding:
                free_at[rd] = id_cycle + (2 if op == "lw" else 1)
            else:
                free_at[rd] = id_cycle + 3
        after_redirect = taken
    return id_cycle + 3


def mispredictions(trace, scheme, k):
    """Mispredictions over a trace of (pc, taken) for a table of 2**k entries."""

    mask = (1 << k) - 1
    top = 1 if scheme == "1bit" else 3
    table = [0 if scheme == "1bit" else 1] * (1 << k)
    history, wrong = 0, 0
    for pc, taken in trace:
        i = (pc >> 2) & mask
        if scheme == "gshare":
            i = ((pc >> 2) ^ history) & mask
        guess = table[i] > top // 2
        wrong += guess != taken
        table[i] = min(table[i] + 1, top) if taken else max(table[i] - 1, 0)
        history = ((history << 1) | int(taken)) & mask
    return wrong


LATENCY = {"lw": 2, "mul": 3}


def critical_path(trace):
    """The longest chain of register dependences of a trace, in cycles."""

    done = [0] * 32
    longest = 0
    for op, rd, rs1, rs2, *_ in trace:
        start = max(done[rs1] if rs1 else 0, done[rs2] if rs2 else 0)
        end = start + LATENCY.get(op, 1)
        if rd:
            done[rd] = end
        longest = max(longest, end)
    return longest


def first_divergence(expected, log, k=10):
    """The first place a pipeline's cycle log parts from the golden trace."""

    i, last = 0, 0
    for cycle, got in enumerate(log, start=1):
        if got is None:
            if cycle - last >= k:
                return ("hang", cycle, i)
            continue
        if i == len(expected):
            return ("extra", cycle, i)
        if tuple(got) != tuple(expected[i]):
            return ("mismatch", cycle, i)
        i, last = i + 1, cycle
    if i < len(expected):
        return ("missing", len(log), i)
    return None


def encode_variant(op, rd=0, rs1=0, rs2=0, imm=0):
    """Written differently: the word as a string of bits, the immediate in two's complement."""
    fmt = isa_format(op)
    ranges = {"I": (-2048, 2047, 1), "S": (-2048, 2047, 1), "B": (-4096, 4094, 2)}
    ranges |= {"U": (0, (1 << 20) - 1, 1), "J": (-(1 << 20), (1 << 20) - 2, 2), "R": (0, 0, 1)}
    lo, hi, step = ranges[fmt]
    if not (lo <= imm <= hi and imm % step == 0 and all(0 <= r <= 31 for r in (rd, rs1, rs2))):
        raise ValueError(f"{op} {rd} {rs1} {rs2} {imm}")
    b = format(imm & 0xFFFFFFFF, "032b")[::-1]  # b[i] is bit i

    def im(hi, lo):
        return "".join(b[i] for i in range(hi, lo - 1, -1))

    def reg(r):
        return format(r, "05b")

    opc = {"R": "0110011", "S": "0100011", "B": "1100011", "U": "0110111", "J": "1101111"}
    f3 = {"add": "000", "sub": "000", "xor": "100", "or": "110", "and": "111", "slt": "010"}
    f3 |= {"mul": "000", "beq": "000", "bne": "001", "blt": "100", "bge": "101"}
    if fmt == "R":
        f7 = {"sub": "0100000", "mul": "0000001"}.get(op, "0000000")
        bits = f7 + reg(rs2) + reg(rs1) + f3[op] + reg(rd) + opc["R"]
    elif fmt == "I":
        code, funct = {"addi": ("0010011", "000"), "lw": ("0000011", "010")}.get(
            op, ("1100111", "000")
        )
        bits = im(11, 0) + reg(rs1) + funct + reg(rd) + code
    elif fmt == "S":
        bits = im(11, 5) + reg(rs2) + reg(rs1) + "010" + im(4, 0) + opc["S"]
    elif fmt == "B":
        bits = im(12, 12) + im(10, 5) + reg(rs2) + reg(rs1) + f3[op] + im(4, 1) + im(11, 11)
        bits += opc["B"]
    elif fmt == "U":
        bits = im(19, 0) + reg(rd) + opc["U"]
    else:
        bits = im(20, 20) + im(10, 1) + im(11, 11) + im(19, 12) + reg(rd) + opc["J"]
    return int(bits, 2)


def isa_format(op):
    from minitorch.cpu.isa import FORMAT  # a dict of data: not a blocked function

    if op not in FORMAT:
        raise ValueError(op)
    return FORMAT[op]


def test_reference_answers_pass(capsys):
    lab36.check_encode(encode)
    lab36.check_encode(encode_variant)
    lab36.check_pipeline_cycles(pipeline_cycles)
    lab36.check_mispredictions(mispredictions)
    lab36.check_critical_path(critical_path)
    lab36.check_first_divergence(first_divergence)
    assert capsys.readouterr().out.count("passed") == 6


# --------------------------------------------------------------------------- the truth
def test_truth_agrees_with_the_reference_on_every_program():
    g = np.random.default_rng(5)
    texts = [(_truth.random_program(g, int(g.integers(1, 30))), [1, -2, 3, 4]) for _ in range(60)]
    for p in (
        programs.dot([1, 2, 3], [4, 5, 6]),
        programs.matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]),
        programs.insertion_sort([5, 3, 9, 1, 2, 8]),
        programs.count_words(b"ab  cd e fgh "),
    ):
        texts.append((p.text, p.mem))
    for text, mem in texts:
        words = asm.assemble(text)
        gold = golden.run(words, mem)
        for fw in (True, False):
            sim = pipeline.simulate(words, mem, pipeline.Config(forwarding=fw))
            assert sim.cycles == _truth.cycles(_truth.steps(text, mem), fw)
        assert superscalar.critical_path(gold.trace) == _truth.critical_path(
            _truth.steps(text, mem)
        )
        events = branch.branch_trace(gold)
        assert [(e.pc, e.taken) for e in events] == _truth.branches(text, mem)
        for k in (0, 2, 5):
            tr = [(e.pc, e.taken) for e in events]
            assert _truth.mispredictions(tr, "2bit", k) == branch.mispredictions(
                branch.Bimodal(k), events
            )
            assert _truth.mispredictions(tr, "1bit", k) == branch.mispredictions(
                branch.Bimodal(k, init=0, bits=1), events
            )
            assert _truth.mispredictions(tr, "gshare", k) == branch.mispredictions(
                branch.Gshare(k), events
            )


def test_truth_lands_on_the_closed_forms():
    for n in (1, 2, 7, 30):
        d = programs.dot([1] * n)
        assert _truth.cycles(_truth.steps(d.text, d.mem)) == 11 * n + 6
        assert _truth.cycles(_truth.steps(d.text, d.mem), False) == 16 * n + 7
        assert _truth.critical_path(_truth.steps(d.text, d.mem)) == n + 6
    for n in (1, 2, 3, 5):
        m = programs.matmul([[1] * n] * n, [[1] * n] * n)
        assert _truth.cycles(_truth.steps(m.text, m.mem)) == 11 * n**3 + 9 * n**2 + 5 * n + 7
        assert len(_truth.steps(m.text, m.mem)) == 8 * n**3 + 9 * n**2 + 5 * n + 5


def test_truth_encoder_agrees_with_the_reference():
    g = np.random.default_rng(3)
    for _ in range(3000):
        op = sorted(isa.FORMAT)[int(g.integers(0, len(isa.FORMAT)))]
        fmt = isa.FORMAT[op]
        lo, hi, step = _truth.LIMITS[fmt]
        imm = int(g.integers(lo, hi + 1)) // step * step
        rd, rs1, rs2 = (int(v) for v in g.integers(0, 32, 3))
        ins = isa.Instr(
            op,
            0 if fmt in "SB" else rd,
            rs1 if fmt in "RISB" else 0,
            rs2 if fmt in "RSB" else 0,
            imm,
        )
        assert _truth.encode(ins.op, ins.rd, ins.rs1, ins.rs2, ins.imm) == isa.encode(ins)


def test_truth_divergence_agrees_with_the_reference_on_the_planted_bugs():
    for bug, (text, mem) in debug.EXPOSERS.items():
        words = asm.assemble(text)
        gold = [(r.pc, r.word, r.rd, r.value, r.next_pc) for r in golden.run(words, mem).trace]
        p = pipeline.Pipeline(list(words), [*mem, *[0] * 250], debug.buggy(bug))
        log = []
        while not p.done and len(log) < 50:
            c = p.step()
            r = c.retired
            log.append(None if r is None else (r.pc, r.word, r.rd, r.value, r.next_pc))
        d = debug.first_divergence(words, mem, debug.buggy(bug))
        assert d is not None
        assert _truth.divergence(gold, log) == (d.kind, d.cycle, d.index)


# --------------------------------------------------------------------------- 36.1
def test_encode_rejects_a_store_layout_for_branches():
    def flat_branch(op, rd=0, rs1=0, rs2=0, imm=0):
        if op in B_FUNCT3:
            return (
                encode("sw", 0, rs1, rs2, imm)
                ^ (OPCODE["S"] ^ OPCODE["B"])
                ^ ((2 ^ B_FUNCT3[op]) << 12)
            )
        return encode(op, rd, rs1, rs2, imm)

    rejects(lab36.check_encode, flat_branch, match="scrambled")


def test_encode_rejects_an_unmasked_immediate():
    def unmasked(op, rd=0, rs1=0, rs2=0, imm=0):
        if op in ("addi", "lw", "jalr"):
            opcode = {"addi": 0x13, "lw": 0x03, "jalr": 0x67}[op]
            return imm << 20 | rs1 << 15 | (2 if op == "lw" else 0) << 12 | rd << 7 | opcode
        return encode(op, rd, rs1, rs2, imm)

    rejects(lab36.check_encode, unmasked, match="negative")


def test_encode_rejects_a_missing_funct7():
    def no_funct7(op, rd=0, rs1=0, rs2=0, imm=0):
        return encode("add" if op == "sub" else op, rd, rs1, rs2, imm)

    rejects(lab36.check_encode, no_funct7, match="funct7")


def test_encode_rejects_truncating_bad_operands():
    def truncating(op, rd=0, rs1=0, rs2=0, imm=0):
        lo = {"B": -4096, "J": -(1 << 20)}.get(isa_format(op), -2048)
        imm = max(lo, min(imm, -lo - 2)) // 2 * 2 if isa_format(op) in "BJ" else imm
        if isa_format(op) == "U":
            imm &= 0xFFFFF
        elif isa_format(op) in "IS":
            imm = max(-2048, min(imm, 2047))
        return encode(op, rd & 31, rs1 & 31, rs2 & 31, imm)

    rejects(lab36.check_encode, truncating, match="must raise ValueError")


def test_encode_rejects_the_wrong_error_type():
    def asserts(op, rd=0, rs1=0, rs2=0, imm=0):
        try:
            return encode(op, rd, rs1, rs2, imm)
        except ValueError as err:
            raise TypeError(str(err)) from None

    rejects(lab36.check_encode, asserts, match="raise ValueError")


def test_encode_rejects_swapped_source_registers():
    def swapped(op, rd=0, rs1=0, rs2=0, imm=0):
        if op in R_FUNCT or op in B_FUNCT3 or op == "sw":
            return encode(op, rd, rs2, rs1, imm)
        return encode(op, rd, rs1, rs2, imm)

    rejects(lab36.check_encode, swapped, match="swapped")


def test_encode_rejects_the_reference():
    def through_reference(op, rd=0, rs1=0, rs2=0, imm=0):
        return isa.encode(isa.Instr(op, rd, rs1, rs2, imm))

    def through_assembler(op, rd=0, rs1=0, rs2=0, imm=0):
        return asm.assemble(asm.format_instr(isa.Instr(op, rd, rs1, rs2, imm)))[0]

    for fn in (through_reference, through_assembler):
        rejects(lab36.check_encode, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 36.2
def test_pipeline_cycles_rejects_a_missing_load_use_bubble():
    def no_bubble(trace, forwarding=True):
        return _truth_free_cycles(trace, forwarding, load_extra=0)

    rejects(lab36.check_pipeline_cycles, no_bubble, match="load-use bubble")


def test_pipeline_cycles_rejects_stalls_on_every_alu_dependence():
    def stalls_everywhere(trace, forwarding=True):
        return _truth_free_cycles(trace, forwarding, alu_extra=1)

    rejects(lab36.check_pipeline_cycles, stalls_everywhere, match="pipeline takes")


def test_pipeline_cycles_rejects_a_paid_last_redirect():
    def formula(trace, forwarding=True):
        return pipeline_cycles(trace, forwarding) + 2 * bool(trace and trace[-1][4])

    rejects(lab36.check_pipeline_cycles, formula, match="last instruction")


def test_pipeline_cycles_rejects_x0_dependences():
    def x0_counts(trace, forwarding=True):
        return _truth_free_cycles(trace, forwarding, x0=True)

    rejects(lab36.check_pipeline_cycles, x0_counts, match="x0")


def test_pipeline_cycles_rejects_a_two_cycle_register_file_gap():
    def gap2(trace, forwarding=True):
        if forwarding:
            return pipeline_cycles(trace, True)
        free, at, jump = {}, 0, False
        for i, (_op, rd, rs1, rs2, taken) in enumerate(trace):
            at = 2 if i == 0 else at + (3 if jump else 1)
            at = max([at, *(free.get(s, 0) for s in (rs1, rs2) if s)])
            if rd:
                free[rd] = at + 2
            jump = taken
        return at + 3 if trace else 0

    rejects(lab36.check_pipeline_cycles, gap2, match="first half of the cycle")


def test_pipeline_cycles_rejects_an_ignored_forwarding_flag():
    rejects(
        lab36.check_pipeline_cycles,
        lambda trace, forwarding=True: pipeline_cycles(trace, True),
        match="forwarding flag",
    )


def test_pipeline_cycles_rejects_the_reference():
    def through_reference(trace, forwarding=True):
        return programs.straight_line_cycles(len(trace)) + pipeline_cycles(trace, forwarding) * 0

    rejects(
        lab36.check_pipeline_cycles,
        through_reference,
        match="reference",
        error=ReferenceCalledError,
    )
    rejects(
        lab36.check_pipeline_cycles,
        lambda tr, fw=True: _truth.cycles(tr, fw),
        match="reference|grader",
        error=ReferenceCalledError,
    )


def _truth_free_cycles(trace, forwarding, load_extra=1, alu_extra=0, x0=False):
    """A learner's timeline with one rule switchable."""
    if not trace:
        return 0
    free, at, jump = {}, 0, False
    for i, (op, rd, rs1, rs2, taken) in enumerate(trace):
        at = 2 if i == 0 else at + (3 if jump else 1)
        for s in (rs1, rs2):
            if s or x0:
                at = max(at, free.get(s, 0))
        if rd or x0:
            gap = (1 + (load_extra if op == "lw" else alu_extra)) if forwarding else 3
            free[rd] = at + gap
        jump = taken
    return at + 3


# --------------------------------------------------------------------------- 36.3
def test_mispredictions_rejects_an_unshifted_index():
    def by_pc(trace, scheme, k):
        return mispredictions([(pc << 2, t) for pc, t in trace], scheme, k) * 0 + _m(
            trace, scheme, k, shift=0
        )

    rejects(lab36.check_mispredictions, by_pc, match="pc >> 2")


def test_mispredictions_rejects_the_history_shifted_before_the_update():
    def early(trace, scheme, k):
        return _m(trace, scheme, k, early=True)

    rejects(lab36.check_mispredictions, early, match="history")


def test_mispredictions_rejects_a_low_threshold():
    def low(trace, scheme, k):
        return _m(trace, scheme, k, threshold=1)

    rejects(lab36.check_mispredictions, low, match="2 or 3")


def test_mispredictions_rejects_counters_that_start_strongly_not_taken():
    def cold(trace, scheme, k):
        if scheme == "1bit":
            return mispredictions(trace, scheme, k)
        mask, table, h, wrong = (1 << k) - 1, [0] * (1 << k), 0, 0
        for pc, taken in trace:
            i = ((pc >> 2) ^ (h if scheme == "gshare" else 0)) & mask
            wrong += (table[i] >= 2) != taken
            table[i] = min(table[i] + 1, 3) if taken else max(table[i] - 1, 0)
            h = ((h << 1) | taken) & mask
        return wrong

    rejects(lab36.check_mispredictions, cold, match="weakly not taken")


def test_mispredictions_rejects_the_reference():
    def through_reference(trace, scheme, k):
        make = {"1bit": lambda: branch.Bimodal(k, 0, 1), "2bit": lambda: branch.Bimodal(k)}
        pred = make.get(scheme, lambda: branch.Gshare(k))()
        return branch.mispredictions(pred, [branch.BranchEvent(pc, pc, t) for pc, t in trace])

    rejects(
        lab36.check_mispredictions, through_reference, match="reference", error=ReferenceCalledError
    )


def _m(trace, scheme, k, shift=2, early=False, threshold=None):
    mask, top = (1 << k) - 1, 1 if scheme == "1bit" else 3
    cut = (top + 1) // 2 if threshold is None else threshold
    table, h, wrong = [0 if scheme == "1bit" else 1] * (1 << k), 0, 0
    for pc, taken in trace:
        i = ((pc >> shift) ^ (h if scheme == "gshare" else 0)) & mask
        wrong += (table[i] >= cut) != taken
        if early and scheme == "gshare":
            h = ((h << 1) | taken) & mask
            i = ((pc >> shift) ^ h) & mask
        table[i] = min(table[i] + 1, top) if taken else max(table[i] - 1, 0)
        if not early:
            h = ((h << 1) | taken) & mask
    return wrong


# --------------------------------------------------------------------------- 36.4
def test_critical_path_rejects_unit_latencies():
    def unit(trace):
        done, longest = [0] * 32, 0
        for _, rd, rs1, rs2, _ in trace:
            end = 1 + max(done[rs1] if rs1 else 0, done[rs2] if rs2 else 0)
            if rd:
                done[rd] = end
            longest = max(longest, end)
        return longest

    rejects(lab36.check_critical_path, unit, match="latency")


def test_critical_path_rejects_a_serial_sum():
    def serial(trace):
        return sum(LATENCY.get(op, 1) for op, *_ in trace)

    rejects(lab36.check_critical_path, serial, match="overlap")


def test_critical_path_rejects_x0_dependences():
    def x0_chain(trace):
        done, longest = [0] * 32, 0
        for op, rd, rs1, rs2, _ in trace:
            end = LATENCY.get(op, 1) + max(done[rs1], done[rs2])
            done[rd] = end
            longest = max(longest, end)
        return longest

    rejects(lab36.check_critical_path, x0_chain, match="x0")


def test_critical_path_rejects_the_reference():
    def through_reference(trace):
        return critical_path(trace) + 0 * superscalar.dot_critical_path(1)

    rejects(
        lab36.check_critical_path, through_reference, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 36.5
def test_first_divergence_rejects_zero_based_cycles():
    def zero_based(expected, log, k=10):
        i, last = 0, 0
        for cycle, got in enumerate(log):
            if got is None:
                if cycle - last >= k:
                    return ("hang", cycle, i)
                continue
            if i == len(expected):
                return ("extra", cycle, i)
            if tuple(got) != tuple(expected[i]):
                return ("mismatch", cycle, i)
            i, last = i + 1, cycle
        return ("missing", len(log) - 1, i) if i < len(expected) else None

    rejects(lab36.check_first_divergence, zero_based, match="numbered from 1")


def test_first_divergence_rejects_a_silent_early_stop():
    def quiet(expected, log, k=10):
        got = first_divergence(expected, log, k)
        return None if got and got[0] == "missing" else got

    rejects(lab36.check_first_divergence, quiet, match="missing")


def test_first_divergence_rejects_a_late_hang():
    def late(expected, log, k=10):
        return first_divergence(expected, log, k + 1)

    rejects(lab36.check_first_divergence, late, match="k cycles in a row")


def test_first_divergence_rejects_comparing_pcs_only():
    def pcs(expected, log, k=10):
        return first_divergence(
            [(r[0], 0, 0, 0, 0) for r in expected],
            [None if r is None else (r[0], 0, 0, 0, 0) for r in log],
            k,
        )

    rejects(lab36.check_first_divergence, pcs, match="whole record")


def test_first_divergence_rejects_a_malformed_answer():
    rejects(lab36.check_first_divergence, lambda e, log, k=10: ("hang",), match="tuple")


def test_first_divergence_rejects_the_reference():
    def through_reference(expected, log, k=10):
        debug.describe(None)
        return first_divergence(expected, log, k)

    rejects(
        lab36.check_first_divergence,
        through_reference,
        match="reference",
        error=ReferenceCalledError,
    )


def test_every_check_fails_on_an_unwritten_exercise():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 36.x")

    for check in (
        lab36.check_encode,
        lab36.check_pipeline_cycles,
        lab36.check_mispredictions,
        lab36.check_critical_path,
        lab36.check_first_divergence,
    ):
        with pytest.raises(CheckFailure, match="not implemented"):
            check(stub)


MUSTS = [
    ("36.1", "Exercise code may not call `minitorch.cpu`", "test_encode_rejects_the_reference"),
    ("36.1", "**must raise `ValueError`**", "test_encode_rejects_the_wrong_error_type"),
    ("36.1", "never be truncated into the word", "test_encode_rejects_truncating_bad_operands"),
    (
        "36.1",
        "**must raise `ValueError`**",
        "test_encode_refuses_an_error_that_only_names_value_error",
    ),
    ("36.1", "a register outside 0…31", "test_encode_refuses_a_bad_register_in_every_field"),
    ("36.1", "an immediate outside its range", "test_encode_refuses_every_ops_range_edges"),
    ("36.1", "an odd branch or jump offset", "test_encode_refuses_an_odd_offset_on_every_branch"),
    (
        "36.1",
        "it counts cycles, mispredictions and dependence chains itself",
        "test_every_check_keeps_its_truth_tables",
    ),
    (
        "36.2",
        "only the **load-use** case stalls",
        "test_pipeline_cycles_rejects_stalls_on_every_alu_dependence",
    ),
    (
        "36.2",
        "The last instruction's redirect costs nothing",
        "test_pipeline_cycles_rejects_a_paid_last_redirect",
    ),
    ("36.2", "`x0` is never a dependence", "test_pipeline_cycles_rejects_x0_dependences"),
    (
        "36.2",
        "the two instructions fetched behind it are flushed",
        "test_pipeline_cycles_rejects_one_flushed_slot",
    ),
    (
        "36.2",
        "a consumer right behind it (an ALU op, a store's data, a branch) waits one bubble",
        "test_pipeline_cycles_rejects_a_missing_load_use_bubble",
    ),
    (
        "36.2",
        "a plain loop over the trace, no simulator",
        "test_pipeline_cycles_rejects_the_reference",
    ),
    (
        "36.3",
        "Index: $i = (pc \\gg 2) \\bmod 2^k$",
        "test_mispredictions_rejects_an_unshifted_index",
    ),
    (
        "36.3",
        "shift the outcome into $h$ after the update",
        "test_mispredictions_rejects_the_history_shifted_before_the_update",
    ),
    ("36.3", "predict taken when $c \\ge 2$", "test_mispredictions_rejects_a_low_threshold"),
    (
        "36.3",
        "start at 1 (weakly not taken)",
        "test_mispredictions_rejects_counters_that_start_strongly_not_taken",
    ),
    ("36.3", "The check counts the misses itself", "test_mispredictions_rejects_the_reference"),
    (
        "36.4",
        "each instruction weighted by its latency",
        "test_critical_path_rejects_unit_latencies",
    ),
    ("36.4", "`x0` carries nothing", "test_critical_path_rejects_x0_dependences"),
    ("36.4", "(`LATENCY`, 1 for ops not listed)", "test_critical_path_rejects_a_one_cycle_load"),
    (
        "36.4",
        "the longest chain of register read-after-write dependences",
        "test_critical_path_rejects_a_serial_sum",
    ),
    ("36.5", "compare the whole record", "test_first_divergence_rejects_comparing_pcs_only"),
    ("36.5", "`k` cycles in a row without a retire", "test_first_divergence_rejects_a_late_hang"),
    (
        "36.5",
        "the log ended before the golden trace did",
        "test_first_divergence_rejects_a_silent_early_stop",
    ),
    ("36.5", "cycles numbered from 1", "test_first_divergence_rejects_zero_based_cycles"),
    ("36.5", "or from cycle 0", "test_first_divergence_rejects_no_hang_in_the_fill"),
    (
        "36.5",
        '("missing", len(log), i)',
        "test_first_divergence_rejects_missing_a_cycle_late",
    ),
]
