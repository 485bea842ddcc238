"""Lab 36 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Tried:

* honest: the encoder as a string of bits, as a table of (word bit, immediate bit) slices in a
  class raising a ValueError subclass, and wrapped by a decorator; the pipeline as a closed
  form (N + 4 + stalls + 2 x redirects), as a cycle-by-cycle stage occupancy, recursively;
  the predictors as dicts, as a class per scheme, with an unbounded history masked at the
  index; the chain recursively with ``lru_cache`` and over a list of latencies; the lock-step
  loop as a generator of events and with ``itertools``;
* wrong: unmasked immediates, a B-type laid out like a store, swapped sources, funct7
  forgotten, truncated operands, an error other than ValueError (also one whose *message*
  says "ValueError"), range checks skipped for lw/jalr, for rs2, for a branch below its range;
  no load-use bubble, a paid last redirect, x0 dependences, a 2-cycle register-file gap, one
  flushed slot per redirect, the first instruction in ID at cycle 1, a store's data forwarded
  without the bubble; pc not shifted, counters from 0, the history shifted early, the
  threshold at 1, gshare by addition; unit latencies, x0 chains, a serial sum, lw as 1 cycle;
  cycles from 0, a silent early stop, a late hang, pcs only, ``missing`` one cycle late;
* cheats: ``minitorch.cpu`` (isa, asm, pipeline, branch, superscalar, debug, golden), the
  grader's ``_truth`` (called, and its tables rewritten), the named cases replayed, ints whose
  ``==`` says yes, the handed-over trace or log emptied in place, the grader's frame read.

Frame, ``gc`` and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md:
the frame cheat is caught in-process by 36.1's error part and the closed forms of 36.2 and
36.4, and kept as ``xfail(strict=True)`` for 36.3 and 36.5.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
from typing import ClassVar

import pytest

from a2s.checks import lab36
from a2s.checks.core import ReferenceCalledError
from a2s.checks.lab36 import _truth
from a2s.checks.lab36.chains import _NAMED as chains_named
from a2s.checks.lab36.divergence import _NAMED as divergence_named
from a2s.checks.lab36.encoder import _NAMED as encoder_named
from a2s.checks.lab36.hazards import _NAMED as hazards_named
from a2s.checks.lab36.predictors import _NAMED as predictors_named
from minitorch.cpu import asm, branch, debug, golden, isa, pipeline, programs, superscalar
from tests.checks.test_lab36 import (
    B_FUNCT3,
    LATENCY,
    OPCODE,
    R_FUNCT,
    bits,
    critical_path,
    encode,
    encode_variant,
    first_divergence,
    mispredictions,
    pipeline_cycles,
)
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrapped, wrong
from tests.helpers.graders import always_equal, rejects

REF = ReferenceCalledError
DOT20 = tuple(map(tuple, _truth.steps(programs.dot([1] * 20).text, programs.dot([1] * 20).mem)))


# --------------------------------------------------------------------------- 36.1


def encode_bits(op, rd=0, rs1=0, rs2=0, imm=0):
    return encode_variant(op, rd, rs1, rs2, imm)


class OperandError(ValueError):
    """A learner's own error type: still a ValueError."""


class Encoder:
    """Each format as (word hi, word lo, imm hi, imm lo) slices; opcodes from a dict."""

    SLICES: ClassVar[dict[str, list[tuple[int, int, int, int]]]] = {
        "I": [(31, 20, 11, 0)],
        "S": [(31, 25, 11, 5), (11, 7, 4, 0)],
        "B": [(31, 31, 12, 12), (30, 25, 10, 5), (11, 8, 4, 1), (7, 7, 11, 11)],
        "U": [(31, 12, 19, 0)],
        "J": [(31, 31, 20, 20), (30, 21, 10, 1), (20, 20, 11, 11), (19, 12, 19, 12)],
        "R": [],
    }
    RANGE: ClassVar[dict[str, tuple[int, int]]] = {
        "I": (12, 1),
        "S": (12, 1),
        "B": (13, 2),
        "J": (21, 2),
    }

    def __call__(self, op, rd=0, rs1=0, rs2=0, imm=0):
        import math

        fmt = self.format(op)
        if any(not 0 <= r <= 31 for r in (rd, rs1, rs2)):
            raise OperandError("register")
        if fmt == "U" and not 0 <= imm < 2**20:
            raise OperandError("lui")
        if fmt in self.RANGE:
            width, align = self.RANGE[fmt]
            if abs(imm + 0.5) > 2 ** (width - 1) or math.remainder(imm, align):
                raise OperandError(f"imm {imm}")
        word = 0
        for _whi, wlo, ihi, ilo in self.SLICES[fmt]:
            word |= ((imm >> ilo) & ((1 << (ihi - ilo + 1)) - 1)) << wlo
        return word | self.fixed(op, fmt, rd, rs1, rs2)

    @staticmethod
    def format(op):
        for fmt, ops in {"R": R_FUNCT, "B": B_FUNCT3}.items():
            if op in ops:
                return fmt
        fmts = {"addi": "I", "lw": "I", "jalr": "I", "sw": "S", "lui": "U", "jal": "J"}
        if op not in fmts:
            raise OperandError(op)
        return fmts[op]

    @staticmethod
    def fixed(op, fmt, rd, rs1, rs2):
        f3, f7 = R_FUNCT.get(op, (B_FUNCT3.get(op, 2 if op in ("lw", "sw") else 0), 0))
        code = {"addi": 0x13, "lw": 0x03, "jalr": 0x67}.get(op) or OPCODE[fmt]
        out = code | f7 << 25
        out |= 0 if fmt in "SB" else rd << 7
        out |= 0 if fmt in "UJ" else rs1 << 15 | f3 << 12
        return out | (rs2 << 20 if fmt in "RSB" else 0)


def encode_unmasked(op, rd=0, rs1=0, rs2=0, imm=0):
    if op in ("addi", "lw", "jalr"):
        return encode(op, rd, rs1, rs2, 0) | imm << 20
    return encode(op, rd, rs1, rs2, imm)


def encode_b_as_s(op, rd=0, rs1=0, rs2=0, imm=0):
    if op in B_FUNCT3:
        word = encode(op, rd, rs1, rs2, 0)
        return word | bits(imm, 11, 5) << 25 | bits(imm, 4, 0) << 7
    return encode(op, rd, rs1, rs2, imm)


def encode_swapped(op, rd=0, rs1=0, rs2=0, imm=0):
    if op in R_FUNCT or op in B_FUNCT3 or op == "sw":
        return encode(op, rd, rs2, rs1, imm)
    return encode(op, rd, rs1, rs2, imm)


def encode_no_funct7(op, rd=0, rs1=0, rs2=0, imm=0):
    return encode("add" if op in ("sub", "mul") else op, rd, rs1, rs2, imm)


def encode_truncating(op, rd=0, rs1=0, rs2=0, imm=0):
    try:
        return encode(op, rd, rs1, rs2, imm)
    except ValueError:
        return 0x13 if op not in R_FUNCT else encode(op, rd & 31, rs1 & 31, rs2 & 31)


def encode_type_error(op, rd=0, rs1=0, rs2=0, imm=0):
    try:
        return encode(op, rd, rs1, rs2, imm)
    except ValueError as err:
        raise TypeError(str(err)) from None


def encode_says_value_error(op, rd=0, rs1=0, rs2=0, imm=0):
    try:
        return encode(op, rd, rs1, rs2, imm)
    except ValueError as err:
        raise RuntimeError(f"ValueError: {err}") from None


def _lenient(op, rd, rs1, rs2, imm, skip):
    """The solution, but operands that ``skip`` says yes to are not checked (masked in)."""
    if op in R_FUNCT or op in B_FUNCT3 or op in ("addi", "lw", "jalr", "sw", "lui", "jal"):
        if skip(op, rd, rs1, rs2, imm):
            word = encode(op, rd & 31, rs1 & 31, rs2 & 31, 0)
            return word | (bits(imm, 11, 0) << 20 if op in ("lw", "jalr") else 0)
    return encode(op, rd, rs1, rs2, imm)


def encode_no_load_check(op, rd=0, rs1=0, rs2=0, imm=0):
    return _lenient(op, rd, rs1, rs2, imm, lambda o, *a: o in ("lw", "jalr"))


def encode_no_rs2_check(op, rd=0, rs1=0, rs2=0, imm=0):
    return _lenient(op, rd, rs1, rs2, imm, lambda o, rd, a, b, i: not 0 <= b < 32)


def encode_branch_high(op, rd=0, rs1=0, rs2=0, imm=0):
    if op in B_FUNCT3 and imm < -4096 and imm % 2 == 0:
        return encode(op, rd, rs1, rs2, 0)
    return encode(op, rd, rs1, rs2, imm)


def encode_via_isa(op, rd=0, rs1=0, rs2=0, imm=0):
    return isa.encode(isa.Instr(op, rd, rs1, rs2, imm))


def encode_via_asm(op, rd=0, rs1=0, rs2=0, imm=0):
    return asm.assemble(asm.format_instr(isa.Instr(op, rd, rs1, rs2, imm)))[0]


def encode_via_truth(op, rd=0, rs1=0, rs2=0, imm=0):
    from a2s.checks.lab36 import _truth

    return _truth.encode(op, rd, rs1, rs2, imm)


def encode_patches_truth(op, rd=0, rs1=0, rs2=0, imm=0):
    """funct7 forgotten, and the grader's own table told the same."""
    from a2s.checks.lab36 import _truth

    _truth.R_OPS.update(sub=(0, 0), mul=(0, 0))
    return encode_no_funct7(op, rd, rs1, rs2, imm)


_ENCODED = {args: encode(*args) for _, args in encoder_named}


def encode_skips_the_errors(op, rd=0, rs1=0, rs2=0, imm=0):
    """Truncates, and rebinds the grader's helper so no bad operand is tried."""
    from a2s.checks.lab36 import encoder

    encoder._bad_cases = lambda g: []
    return encode_truncating(op, rd, rs1, rs2, imm)


def encode_always_equal(op, rd=0, rs1=0, rs2=0, imm=0):
    return always_equal(encode(op, rd, rs1, rs2, imm) ^ 1)


def encode_memorised(op, rd=0, rs1=0, rs2=0, imm=0):
    return _ENCODED.get((op, rd, rs1, rs2, imm), 0x13)


# --------------------------------------------------------------------------- 36.2
def _ids(trace, forwarding, *, flush=2, first=2, load_gap=2, x0=False, store_fwd=False):
    """The ID cycle of every instruction (a learner's timeline, one rule switchable)."""
    ready, ids, loads = {}, [], set()
    for n, (op, rd, rs1, rs2, _) in enumerate(trace):
        at = first if n == 0 else ids[-1] + 1 + (flush if trace[n - 1][4] else 0)
        for s in (rs1, rs2):
            if s or x0:
                need = ready.get(s, 0)
                if store_fwd and op == "sw" and s == rs2 and s in loads and forwarding:
                    need -= 1
                at = max(at, need)
        if rd or x0:
            ready[rd] = at + ((load_gap if op == "lw" else 1) if forwarding else 3)
            (loads.add if op == "lw" else loads.discard)(rd)
        ids.append(at)
    return ids


def cycles_closed_form(trace, forwarding=True):
    """N + 4 + stalls + 2 per redirect before the last instruction."""
    if not trace:
        return 0
    ids = _ids(trace, forwarding)
    redirects = sum(bool(t[4]) for t in trace[:-1])
    stalls = sum(b - a - 1 for a, b in zip([1, *ids], ids, strict=False)) - 2 * redirects
    return len(trace) + 4 + stalls + 2 * redirects


class _Stage:
    def __init__(self, forwarding):
        self.forwarding, self.ready, self.at, self.redirect = forwarding, [0] * 32, 1, False

    def issue(self, op, rd, rs1, rs2, taken):
        self.at += 3 if self.redirect else 1
        self.at = max(self.at, self.ready[rs1] * (rs1 != 0), self.ready[rs2] * (rs2 != 0))
        if rd:
            self.ready[rd] = self.at + (3 if not self.forwarding else 2 if op == "lw" else 1)
        self.redirect = taken


def cycles_by_stage(trace, forwarding=True):
    stage = _Stage(forwarding)
    for ins in trace:
        stage.issue(*ins)
    return stage.at + 3 if trace else 0


def cycles_recursive(trace, forwarding=True):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(trace) + 100))

    def go(n, at, ready, redirect):
        if n == len(trace):
            return at + 3
        op, rd, rs1, rs2, taken = trace[n]
        at = 2 if n == 0 else at + (3 if redirect else 1)
        at = max([at, *(ready.get(s, 0) for s in (rs1, rs2) if s)])
        if rd:
            ready = {**ready, rd: at + ((2 if op == "lw" else 1) if forwarding else 3)}
        return go(n + 1, at, ready, taken)

    return go(0, 0, {}, False) if trace else 0


def _cycles(**kw):
    return lambda trace, forwarding=True: _ids(trace, forwarding, **kw)[-1] + 3 if trace else 0


cycles_no_bubble = _cycles(load_gap=1)
cycles_x0 = _cycles(x0=True)
cycles_one_flush = _cycles(flush=1)
cycles_off_by_one = _cycles(first=1)
cycles_store_no_bubble = _cycles(store_fwd=True)


def cycles_every_branch(trace, forwarding=True):
    """Every branch pays the flush, taken or not (and a jump too)."""
    marked = [(*t[:4], t[0] in B_FUNCT3 or t[0] == "jal" or t[4]) for t in trace]
    return _cycles()(marked, forwarding)


def cycles_paid_last(trace, forwarding=True):
    return cycles_by_stage(trace, forwarding) + (2 if trace and trace[-1][4] else 0)


def cycles_flag_ignored(trace, forwarding=True):
    return cycles_by_stage(trace, True)


def cycles_via_programs(trace, forwarding=True):
    return programs.straight_line_cycles(len(trace))


def cycles_via_truth(trace, forwarding=True):
    from a2s.checks.lab36._truth import cycles

    return cycles(trace, forwarding)


_CYCLES = {repr(args): pipeline_cycles(*args) for _, args in hazards_named}


def cycles_memorised(trace, forwarding=True):
    return _CYCLES.get(repr((trace, forwarding)), len(trace) + 4)


def cycles_empties_trace(trace, forwarding=True):
    trace.clear()
    return 0


def cycles_always_equal(trace, forwarding=True):
    return always_equal(pipeline_cycles(trace, forwarding) + 1)


def cycles_via_pipeline(trace, forwarding=True):
    pipeline.Config(forwarding=forwarding)
    return pipeline_cycles(trace, forwarding)


# --------------------------------------------------------------------------- 36.3
def mispredict_dicts(trace, scheme, k):
    start, top = (0, 1) if scheme == "1bit" else (1, 3)
    table, hist, misses = {}, 0, 0
    for pc, taken in trace:
        i = ((pc >> 2) ^ (hist if scheme == "gshare" else 0)) % 2**k
        c = table.get(i, start)
        misses += (c * 2 > top) != bool(taken)
        table[i] = min(c + 1, top) if taken else max(c - 1, 0)
        hist = (hist * 2 + int(taken)) % 2**k
    return misses


class _Counters:
    top, start = 3, 1

    def __init__(self, k):
        self.k, self.c = k, [self.start] * (1 << k)

    def index(self, pc):
        return (pc >> 2) & ((1 << self.k) - 1)

    def step(self, pc, taken):
        i = self.index(pc)
        miss = (self.c[i] > self.top // 2) != taken
        self.c[i] = min(self.c[i] + 1, self.top) if taken else max(self.c[i] - 1, 0)
        return miss


class _OneBit(_Counters):
    top, start = 1, 0


class _Gshare(_Counters):
    h = 0

    def index(self, pc):
        return super().index(pc ^ (self.h << 2))

    def step(self, pc, taken):
        miss = super().step(pc, taken)
        self.h = ((self.h << 1) | taken) & ((1 << self.k) - 1)
        return miss


def mispredict_classes(trace, scheme, k):
    pred = {"1bit": _OneBit, "2bit": _Counters, "gshare": _Gshare}[scheme](k)
    return sum(pred.step(pc, bool(t)) for pc, t in trace)


def mispredict_long_history(trace, scheme, k):
    history = 0  # never masked: only its low k bits reach the index
    table = [0 if scheme == "1bit" else 1] * (1 << k)
    top, wrong = (1 if scheme == "1bit" else 3), 0
    for pc, taken in trace:
        i = ((pc >> 2) ^ (history if scheme == "gshare" else 0)) & ((1 << k) - 1)
        wrong += (table[i] >= (top + 1) // 2) != taken
        table[i] = min(table[i] + 1, top) if taken else max(table[i] - 1, 0)
        history = history << 1 | taken
    return wrong


def _mp(**kw):
    return lambda trace, scheme, k: mispredictions_truth_free(trace, scheme, k, **kw)


def mispredictions_truth_free(trace, scheme, k, shift=2, init=None, early=False, cut=None, op=None):
    mask, top = (1 << k) - 1, 1 if scheme == "1bit" else 3
    table = [(0 if scheme == "1bit" else 1) if init is None or scheme == "1bit" else init] * (
        1 << k
    )
    cut, h, wrong = (top + 1) // 2 if cut is None or scheme == "1bit" else cut, 0, 0
    mix = op or (lambda a, b: a ^ b)
    for pc, taken in trace:
        i = mix(pc >> shift, h if scheme == "gshare" else 0) & mask
        wrong += (table[i] >= cut) != taken
        if early and scheme == "gshare":
            h = ((h << 1) | taken) & mask
            i = mix(pc >> shift, h) & mask
        table[i] = min(table[i] + 1, top) if taken else max(table[i] - 1, 0)
        if not early:
            h = ((h << 1) | taken) & mask
    return wrong


mispredict_unshifted = _mp(shift=0)
mispredict_cold = _mp(init=0)
mispredict_early = _mp(early=True)
mispredict_low = _mp(cut=1)
mispredict_add = _mp(op=lambda a, b: a + b)


def mispredict_via_branch(trace, scheme, k):
    pred = branch.Gshare(k) if scheme == "gshare" else branch.Bimodal(k)
    return branch.mispredictions(pred, [branch.BranchEvent(pc, pc, t) for pc, t in trace])


_MADE = {
    (s, k): (
        branch.Gshare(k) if s == "gshare" else branch.Bimodal(k, *((0, 1) if s == "1bit" else ()))
    )
    for s in ("1bit", "2bit", "gshare")
    for k in range(11)
}


def mispredict_premade(trace, scheme, k):
    """Predictors built before the grading: only their methods are called inside."""
    pred, wrong = copy.deepcopy(_MADE[scheme, k]), 0
    for pc, taken in trace:
        wrong += pred.predict(pc, pc) != taken
        pred.update(pc, pc, taken)
    return wrong


def mispredict_via_truth(trace, scheme, k):
    from a2s.checks.lab36 import _truth

    return _truth.mispredictions(trace, scheme, k)


_MISSES = {repr(args): mispredictions(*args) for _, args in predictors_named}


def mispredict_memorised(trace, scheme, k):
    return _MISSES.get(repr((trace, scheme, k)), len(trace) // 4)


def mispredict_empties(trace, scheme, k):
    trace.clear()
    return 0


def mispredict_always_equal(trace, scheme, k):
    return always_equal(mispredictions(trace, scheme, k) + 1)


# --------------------------------------------------------------------------- 36.4
def chain_recursive(trace):
    lat = {"lw": 2, "mul": 3}

    @functools.cache
    def end(n):  # when instruction n's result is done
        op, _, rs1, rs2, *_ = trace[n]
        return lat.get(op, 1) + max([0, *(writer_end(n, s) for s in (rs1, rs2) if s)])

    def writer_end(n, reg):
        w = next((j for j in range(n - 1, -1, -1) if trace[j][1] == reg), None)
        return 0 if w is None else end(w)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(trace) + 100))
    return max((end(n) for n in range(len(trace))), default=0)


@dataclasses.dataclass
class _Reg:
    done: int = 0


def chain_dataclass(trace):
    regs = [_Reg() for _ in range(32)]
    best = 0
    for op, rd, rs1, rs2, _ in trace:
        t = LATENCY.get(op, 1) + max(regs[rs1].done * bool(rs1), regs[rs2].done * bool(rs2))
        if rd:
            regs[rd] = _Reg(t)
        best = max(best, t)
    return best


def _chain(lat, x0=False):
    def chain(trace):
        done, best = [0] * 32, 0
        for op, rd, rs1, rs2, _ in trace:
            t = lat.get(op, 1) + max(done[rs1] if rs1 or x0 else 0, done[rs2] if rs2 or x0 else 0)
            if rd or x0:
                done[rd] = t
            best = max(best, t)
        return best

    return chain


chain_unit = _chain({})
chain_x0 = _chain(LATENCY, x0=True)
chain_fast_load = _chain({"mul": 3})


def chain_serial(trace):
    return sum(LATENCY.get(op, 1) for op, *_ in trace)


def chain_via_superscalar(trace):
    return superscalar.dot_critical_path(1) * 0 + critical_path(trace)


def chain_via_truth(trace):
    from a2s.checks.lab36._truth import critical_path as cp

    return cp(trace)


def chain_patches_truth(trace):
    """Unit latencies, and the grader's latency table told the same."""
    from a2s.checks.lab36 import _truth

    _truth.LATENCY.clear()
    return chain_unit(trace)


_CHAINS = {repr(args): critical_path(*args) for _, args in chains_named}


def chain_memorised(trace):
    if len(trace) == len(DOT20) and tuple(map(tuple, trace)) == DOT20:
        return 26
    return _CHAINS.get(repr((trace,)), len(trace) + 6)


def chain_always_equal(trace):
    return always_equal(critical_path(trace) + 1)


# --------------------------------------------------------------------------- 36.5
def _events(log):
    yield from enumerate(log, 1)


def diverge_events(expected, log, k=10):
    want = iter(enumerate(expected))
    quiet = 0
    nxt = next(want, None)
    for cycle, got in _events(log):
        if got is None:
            quiet += 1
            if quiet == k:
                return "hang", cycle, nxt[0] if nxt else len(expected)
            continue
        quiet = 0
        if nxt is None:
            return "extra", cycle, len(expected)
        if list(got) != list(nxt[1]):
            return "mismatch", cycle, nxt[0]
        nxt = next(want, None)
    return None if nxt is None else ("missing", len(log), nxt[0])


def diverge_itertools(expected, log, k=10):
    import itertools

    retired = [(c, r) for c, r in zip(itertools.count(1), log, strict=False) if r is not None]
    prev = 0
    for i, (c, r) in enumerate(retired):
        if c - prev > k:  # k empty cycles before this retire
            return ["hang", prev + k, i]
        if i >= len(expected):
            return ["extra", c, i]
        if tuple(r) != tuple(expected[i]):
            return ["mismatch", c, i]
        prev = c
    n = len(retired)
    if len(log) - prev >= k:
        return ["hang", prev + k, n]
    return ["missing", len(log), n] if n < len(expected) else None


def _div(base=1, late=0, quiet_end=False, pc_only=False, end=0):
    def first(expected, log, k=10):
        i = last = 0
        for c, got in enumerate(log, base):
            if got is None:
                if c - last >= k + late:
                    return ("hang", c, i)
                continue
            if i >= len(expected):
                return ("extra", c, i)
            if (got[0] != expected[i][0]) if pc_only else tuple(got) != tuple(expected[i]):
                return ("mismatch", c, i)
            i, last = i + 1, c
        if i < len(expected) and not quiet_end:
            return ("missing", len(log) + base - 1 + end, i)
        return None

    return first


diverge_zero_based = _div(base=0)
diverge_quiet = _div(quiet_end=True)
diverge_late = _div(late=1)
diverge_pcs = _div(pc_only=True)
diverge_missing_late = _div(end=1)


def diverge_after_fill(expected, log, k=10):
    """No hang is looked for before the first retire (the fill "does not count")."""
    got = first_divergence(expected, log, k)
    if got and got[0] == "hang" and got[2] == 0:
        return _div(late=10**9)(expected, log, k)
    return got


def diverge_via_debug(expected, log, k=10):
    debug.describe(None)
    return first_divergence(expected, log, k)


def diverge_via_golden(expected, log, k=10):
    golden.run([], [])
    return first_divergence(expected, log, k)


def diverge_via_truth(expected, log, k=10):
    from a2s.checks.lab36._truth import divergence

    return divergence(expected, log, k)


def diverge_empties(expected, log, k=10):
    expected.clear()
    log.clear()
    return None


_DIVERGED = {repr(args): first_divergence(*args) for _, args in divergence_named}


def diverge_memorised(expected, log, k=10):
    return _DIVERGED.get(repr((expected, log, k)))


def diverge_always_equal(expected, log, k=10):
    class Yes(tuple):
        def __eq__(self, other):
            return True

        __hash__ = tuple.__hash__

    return Yes(("mismatch", 0, 0))


E, P, M, C, D = (
    lab36.check_encode,
    lab36.check_pipeline_cycles,
    lab36.check_mispredictions,
    lab36.check_critical_path,
    lab36.check_first_divergence,
)


def run(check, fn):
    return lambda: check(fn)


def _frame_reader(fn):
    """Return the grader's expected value, read from the caller's frames."""

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        f = sys._getframe(1)
        while f is not None and "want" not in f.f_locals:
            f = f.f_back
        return f.f_locals["want"] if f is not None else fn(*args, **kwargs)

    return inner


ATTEMPTS = [
    # ------------------------------------------------------------------ 36.1 encode
    honest("36.1", "a string of bits", run(E, encode_bits)),
    honest("36.1", "a slice table in a class, a ValueError subclass", run(E, Encoder())),
    honest("36.1", "the solution under functools.wraps", run(E, wrapped(encode))),
    wrong("36.1", "unmasked immediate", run(E, encode_unmasked), match="negative"),
    wrong("36.1", "B laid out like S", run(E, encode_b_as_s), match="scrambled"),
    wrong("36.1", "swapped sources", run(E, encode_swapped), match="swapped"),
    wrong("36.1", "funct7 forgotten", run(E, encode_no_funct7), match="funct7"),
    wrong("36.1", "truncates", run(E, encode_truncating), match="must raise ValueError"),
    wrong("36.1", "raises TypeError", run(E, encode_type_error), match="raise ValueError"),
    wrong(
        "36.1",
        "a RuntimeError that says ValueError",
        run(E, encode_says_value_error),
        match="raise ValueError",
    ),
    wrong("36.1", "no range check for lw/jalr", run(E, encode_no_load_check), "must raise"),
    wrong("36.1", "rs2 never checked", run(E, encode_no_rs2_check), match="must raise"),
    wrong("36.1", "branch range only checked above", run(E, encode_branch_high), "must raise"),
    cheat("36.1", "isa.encode", run(E, encode_via_isa), "reference", REF),
    cheat("36.1", "the assembler", run(E, encode_via_asm), "reference", REF),
    cheat("36.1", "the grader's truth", run(E, encode_via_truth), "reference|grader", REF),
    cheat("36.1", "the truth's funct7 table rewritten", run(E, encode_patches_truth)),
    cheat("36.1", "the grader's bad operands rebound", run(E, encode_skips_the_errors), "tables"),
    cheat("36.1", "the named words replayed", run(E, encode_memorised), match="fields give"),
    cheat("36.1", "an int whose == says yes", run(E, encode_always_equal), match="plain"),
    # ------------------------------------------------------------------ 36.2 pipeline_cycles
    honest("36.2", "closed form with stalls", run(P, cycles_closed_form)),
    honest("36.2", "stage occupancy, cycle by cycle", run(P, cycles_by_stage)),
    honest("36.2", "recursive over the trace", run(P, cycles_recursive)),
    wrong("36.2", "no load-use bubble", run(P, cycles_no_bubble), match="load-use bubble"),
    wrong("36.2", "every branch flushes", run(P, cycles_every_branch), match="taken branches"),
    wrong("36.2", "paid last redirect", run(P, cycles_paid_last), match="last instruction"),
    wrong("36.2", "x0 a dependence", run(P, cycles_x0), match="x0"),
    wrong("36.2", "one flushed slot", run(P, cycles_one_flush), match="two"),
    wrong("36.2", "first ID at cycle 1", run(P, cycles_off_by_one), match="N \\+ 4"),
    wrong("36.2", "store data forwarded", run(P, cycles_store_no_bubble), "store.s data"),
    wrong("36.2", "forwarding flag ignored", run(P, cycles_flag_ignored), "forwarding flag"),
    cheat("36.2", "the reference pipeline", run(P, cycles_via_pipeline), "reference", REF),
    cheat("36.2", "programs' closed form", run(P, cycles_via_programs), "reference", REF),
    cheat("36.2", "the grader's truth", run(P, cycles_via_truth), "reference|grader", REF),
    cheat("36.2", "the named counts replayed", run(P, cycles_memorised), "pipeline takes"),
    cheat("36.2", "the trace emptied in place", run(P, cycles_empties_trace), "pipeline"),
    cheat("36.2", "an int whose == says yes", run(P, cycles_always_equal), match="plain"),
    # ------------------------------------------------------------------ 36.3 mispredictions
    honest("36.3", "dict tables", run(M, mispredict_dicts)),
    honest("36.3", "a class per scheme", run(M, mispredict_classes)),
    honest("36.3", "unbounded history masked at the index", run(M, mispredict_long_history)),
    wrong("36.3", "pc not shifted", run(M, mispredict_unshifted), match="pc >> 2"),
    wrong("36.3", "counters from 0", run(M, mispredict_cold), match="weakly not taken"),
    wrong("36.3", "history shifted first", run(M, mispredict_early), match="history"),
    wrong("36.3", "taken at 1", run(M, mispredict_low), match="2 or 3"),
    wrong("36.3", "gshare adds", run(M, mispredict_add), match="XOR"),
    cheat("36.3", "branch.Bimodal/Gshare", run(M, mispredict_via_branch), "reference", REF),
    cheat("36.3", "predictors built beforehand", run(M, mispredict_premade), "reference", REF),
    cheat("36.3", "the grader's truth", run(M, mispredict_via_truth), "reference|grader", REF),
    cheat("36.3", "the named counts replayed", run(M, mispredict_memorised), "the table misses"),
    cheat("36.3", "the trace emptied in place", run(M, mispredict_empties), "table misses"),
    cheat("36.3", "an int whose == says yes", run(M, mispredict_always_equal), match="plain"),
    # ------------------------------------------------------------------ 36.4 critical_path
    honest("36.4", "recursive with lru_cache", run(C, chain_recursive)),
    honest("36.4", "a dataclass per register", run(C, chain_dataclass)),
    wrong("36.4", "unit latencies", run(C, chain_unit), match="latency"),
    wrong("36.4", "x0 chains", run(C, chain_x0), match="x0"),
    wrong("36.4", "a serial sum", run(C, chain_serial), match="overlap"),
    wrong("36.4", "lw as one cycle", run(C, chain_fast_load), match="lw 2"),
    cheat("36.4", "superscalar", run(C, chain_via_superscalar), "reference", REF),
    cheat("36.4", "the grader's truth", run(C, chain_via_truth), "reference|grader", REF),
    cheat("36.4", "the truth's latencies cleared", run(C, chain_patches_truth)),
    cheat("36.4", "the named chains replayed", run(C, chain_memorised), "longest chain"),
    cheat("36.4", "an int whose == says yes", run(C, chain_always_equal), match="plain"),
    # ------------------------------------------------------------------ 36.5 first_divergence
    honest("36.5", "a generator of events", run(D, diverge_events)),
    honest("36.5", "itertools and a list answer", run(D, diverge_itertools)),
    wrong("36.5", "cycles from 0", run(D, diverge_zero_based), match="numbered from 1"),
    wrong("36.5", "a silent early stop", run(D, diverge_quiet), match="missing"),
    wrong("36.5", "a hang one cycle late", run(D, diverge_late), match="k cycles in a row"),
    wrong("36.5", "no hang in the fill", run(D, diverge_after_fill), match="fill counts"),
    wrong("36.5", "pcs only", run(D, diverge_pcs), match="whole record"),
    wrong("36.5", "missing a cycle late", run(D, diverge_missing_late), "last cycle"),
    cheat("36.5", "debug.first_divergence", run(D, diverge_via_debug), "reference", REF),
    cheat("36.5", "the golden model", run(D, diverge_via_golden), "reference", REF),
    cheat("36.5", "the grader's truth", run(D, diverge_via_truth), "reference|grader", REF),
    cheat("36.5", "the log emptied in place", run(D, diverge_empties), match="expected"),
    cheat("36.5", "the named answers replayed", run(D, diverge_memorised), match="expected"),
    cheat("36.5", "a tuple whose == says yes", run(D, diverge_always_equal), "tuple|plain"),
]
ATTEMPTS += [
    # the bad operands and the closed forms have no expected value in a frame to read
    cheat("36.1", "reads the grader's frame", run(E, _frame_reader(encode_memorised)), "raise"),
    cheat("36.2", "reads the grader's frame", run(P, _frame_reader(cycles_memorised)), "closed"),
    cheat("36.4", "reads the grader's frame", run(C, _frame_reader(chain_memorised)), "chain"),
]
FRAMES = [
    cheat(ex, "reads the grader's frame", run(chk, _frame_reader(fn)))
    for ex, chk, fn in [("36.3", M, mispredict_memorised), ("36.5", D, diverge_memorised)]
]
ATTEMPTS += FRAMES
_SEALED = "frame reflection is the sealed kernel's (a2s grade); in-process it reads `want`"


@pytest.mark.parametrize(
    "attempt",
    [
        pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=_SEALED)) if a in FRAMES else a
        for a in ATTEMPTS
    ],
    ids=attempt_id,
)
def test_attempt(attempt):
    judge(attempt)


# --------------------------------------------------------------------------- the musts
def _odd_branch_unchecked(op, rd=0, rs1=0, rs2=0, imm=0):
    if op in ("blt", "bge") and imm % 2 and -4096 <= imm <= 4094:
        return encode(op, rd, rs1, rs2, imm - 1)
    return encode(op, rd, rs1, rs2, imm)


def test_encode_refuses_every_ops_range_edges():
    rejects(E, encode_no_load_check, match=r"\[(lw|jalr) imm .*must raise ValueError")
    rejects(E, encode_branch_high, match=r"imm -4098 .*must raise ValueError")


def test_encode_refuses_a_bad_register_in_every_field():
    rejects(E, encode_no_rs2_check, match=r"rs2=.*must raise ValueError")


def test_encode_refuses_an_odd_offset_on_every_branch():
    rejects(E, _odd_branch_unchecked, match=r"\[b(lt|ge) imm -4095 .*must raise ValueError")


def test_encode_refuses_an_error_that_only_names_value_error():
    rejects(E, encode_says_value_error, match="raise ValueError for an operand")


def test_pipeline_cycles_rejects_one_flushed_slot():
    rejects(P, cycles_one_flush, match="two cycles per redirect")


def test_critical_path_rejects_a_one_cycle_load():
    rejects(C, chain_fast_load, match="A lw takes 2 cycles")


def test_first_divergence_rejects_no_hang_in_the_fill():
    rejects(D, diverge_after_fill, match="fill counts too")


def test_first_divergence_rejects_missing_a_cycle_late():
    rejects(D, diverge_missing_late, match="the log's last cycle")


def test_every_check_keeps_its_truth_tables():
    """A learner who rewrites the truth's tables fails, and the tables are put back."""
    before = (dict(_truth.R_OPS), dict(_truth.LATENCY))
    rejects(E, encode_patches_truth, match="changed the grader's own tables")
    rejects(
        C,
        chain_patches_truth,
        match="changed the grader's own tables|longest chain|accumulator chain",
    )
    assert (_truth.R_OPS, _truth.LATENCY) == before
    E(encode)  # the grader still grades right after

    def rebinds(trace):
        _truth.LATENCY = {}
        return chain_unit(trace)

    rejects(C, rebinds, match="changed the grader's own tables|longest chain|accumulator chain")
    assert _truth.LATENCY == before[1]


def test_a_grader_helper_rebound_fails():
    """The bad operands skipped by rebinding the grader's own helper: failed and put back."""
    from a2s.checks.lab36 import encoder

    real = encoder._bad_cases

    rejects(E, encode_skips_the_errors, match="changed the grader's own tables")
    assert encoder._bad_cases is real
