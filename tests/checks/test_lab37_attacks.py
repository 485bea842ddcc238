"""Lab 37 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Tried:

* honest: nm's letters as a dict, a class, recursion over the lines, frozensets and lists, a
  decorator with ``functools.wraps`` and imports inside; the link as a name -> defined? dict, a
  ``Counter``, a class over the objects, recursively; the ctypes call with
  ``POINTER(c_float)`` argtypes and ``data_as``, with both views flipped to positive strides
  when both are reversed, skipping the call for n = 0, with values built by hand; the pages as
  merged intervals, a numpy ``unique``, an int bitmask, recursion;
* wrong: weak undefined needed, locals offered, data or weak definitions or ``u`` left out,
  names demangled with ``c++filt``; one object at a time, the GOT undefined, the libraries
  ignored, a static definition resolving, demangled matching; strides in bytes, no argtypes
  (alpha as a double), a ``ValueError`` for a dtype, no length check, a copy of ``y``, two
  calls; ``ceil(length / page)``, an inclusive end, an empty range one page, no union, 4 KiB
  pages always;
* cheats: ``minitorch.native`` (symbols, linking, loader, osmem), the grader's ``_truth``,
  the named cases replayed (with an empty answer, or a guess, for anything else), answers
  whose ``==`` says yes, a fake ``nm`` first on ``PATH``, the grader's object cache poisoned
  with empty objects, the grader's data rebound, numpy doing 37.3's work (alone, after a call
  on a scratch buffer, after a call with alpha 0, after a call of a kernel of one's own), the
  counter's ``static`` read through ``in_dll``, faults measured instead of predicted, the
  expected value read from the grader's frame.
* 37.5: honest a ``Counter`` of one layer added L times, a class returning only the operators
  it calls, recursion over the layers, numpy ints behind ``functools.wraps``; wrong: no LM
  head, bmm and softmax per head, one attention matmul, addmm without a bias, a linear per
  sequence, the final norm left out (no modelled hint), ``aten::linear``; cheats: the
  reference's closed form and its profiler, ``torch.profiler`` in the function, the grader's
  own child script run with ``subprocess``, the reference under ``os.system``, a forked
  ``multiprocessing`` pool, the grader's cached counts read and poisoned, the grader's
  profiler run rebound, the named cases replayed, a dict whose ``[]`` lies, counts whose
  ``==`` says yes, the frame's ``want``, a torch thread started before the check.
* 37.6: honest nested loops (a list), numpy per tile (int32), a generator over
  ``itertools.product``, recursion over the six loops; wrong: B column-major, an inclusive
  tile bound, C left out, C read and written, tiles in (i0, j0, k0) order and element
  indices (no modelled hint); cheats: lab 06's ``blocked_trace``, lab 15's loop-nest
  ``trace`` and ``iteration_order``, the grader's truth, torch, the named cases replayed, a
  trace right on small n only, a fake ``valgrind`` first on ``PATH``, ``$A2S_NATIVE_CACHE``
  full of planted programs, the measured shapes rebound, an array whose ``==`` says yes, the
  frame's ``want``.

Found and fixed: a cheat that called ``lab37_axpy`` on scratch buffers (or with alpha 0) and
wrote ``y`` with numpy passed 37.3 (the kernel now records its last call's arrays and alpha,
read only by the grader, and the element pairs must be ``x``'s and ``y``'s); a fake ``nm`` on
``PATH`` and objects planted in ``$A2S_NATIVE_CACHE/lab37-grader`` made every compiled case
empty, so a lookup of the named answers passed 37.1 (the tools now run with the import-time
``PATH`` in a clean environment, and every object is compiled afresh in a private directory;
results are kept per process, by source). A frame-reading answer passes the table of 37.4
in-process (kept ``xfail(strict=True)``: the sealed kernel's to veto).

Found and fixed in 37.5/37.6: the grader's per-process counts were an ``lru_cache`` any code
could call, and every configuration of the run (the fresh ones too) was profiled before the
learner's first call, so ``opcounts._profiled()[config]`` passed; the check now asks for the
fresh configurations first, profiles every case afresh in one child afterwards and keeps the
counts in its own frame (the cache only serves the table's truth outside a check). The
learner's function could run the grader's child script (or the reference) with
``subprocess``, ``os.system`` or a forked pool and read the profiler's exact counts; those are
forbidden calls now. Lab 15's ``minitorch.compiler.loops.trace`` of a split and reordered
matmul nest is 37.6's trace exactly, and ``iteration_order`` gives its points; both are
blocked. Numpy int counts were refused as not ints (an honest answer); they are read as ints.
Kept ``xfail(strict=True)``: a thread started before the check that runs torch's profiler on
request is not the learner's call, so the watch does not see it.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

import numpy as np
import pytest

from a2s.checks import lab37
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from a2s.checks.lab37 import _truth, cachesim, link, opcounts, pages
from a2s.checks.lab37 import symbols as sym_grader
from minitorch.compiler import loops
from minitorch.kernels import traces
from minitorch.native import loader, osmem, profiled, symbols
from tests.checks.test_lab37 import (
    ARGTYPES,
    _ok_arrays,
    offers_and_needs,
    op_counts,
    pages_touched,
    tiled,
    unresolved,
)
from tests.helpers.attacks import (
    attempt_id,
    cheat,
    honest,
    judge,
    replay_public,
    wrapped,
    wrong,
)
from tests.helpers.graders import always_equal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="lab 37 needs g++")
REF = ReferenceCalledError
FORBIDDEN = ForbiddenCallError
O, U, A, P, C, T = (
    lab37.check_offers_and_needs,
    lab37.check_unresolved,
    lab37.check_axpy,
    lab37.check_pages_touched,
    lab37.check_op_counts,
    lab37.check_tiled_trace,
)
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="37.6 needs valgrind")


def run(check, *fns):
    return lambda: check(*fns)


def from_frame(*_args, **_kwargs):
    f = sys._getframe(1)
    while f is not None and "want" not in f.f_locals:
        f = f.f_back
    return f.f_locals["want"] if f is not None else None


# --------------------------------------------------------------------------- 37.1
_ROLE = {"U": "need", "w": "none", "v": "none", "u": "offer"}


def offers_dict(nm_text):
    out = {"offer": set(), "need": set(), "none": set()}
    for line in nm_text.splitlines():
        f = line.split()
        if len(f) >= 2 and not line.rstrip().endswith(":"):
            role = _ROLE.get(f[1], "offer" if f[1].isupper() else "none")
            out[role].add(f[0])
    return frozenset(out["offer"]), frozenset(out["need"])


class NmReader:
    def __init__(self, text):
        self.rows = [ln.split()[:2] for ln in text.splitlines() if ln.strip()]

    def answer(self):
        rows = [r for r in self.rows if len(r) == 2 and not r[1].endswith(":")]
        rows = [r for r in rows if not r[0].endswith(":")]
        return [n for n, k in rows if (k.isupper() and k != "U") or k == "u"], [
            n for n, k in rows if k == "U"
        ]


def offers_recursive(nm_text):
    def walk(lines):
        if not lines:
            return set(), set()
        o, n = walk(lines[1:])
        f = lines[0].split()
        if len(f) < 2 or lines[0].rstrip().endswith(":"):
            return o, n
        if f[1] == "U":
            return o, n | {f[0]}
        if f[1] == "u" or (f[1].isupper()):
            return o | {f[0]}, n
        return o, n

    return walk(nm_text.splitlines())


def offers_weak_needed(text):
    o, n = offers_and_needs(text)
    return o, n | {ln.split()[0] for ln in text.splitlines() if ln.split()[1:2] in (["w"], ["v"])}


def offers_locals(text):
    o, n = offers_and_needs(text)
    return o | {f[0] for f in map(str.split, text.splitlines()) if len(f) > 1 and f[1] in "tdbr"}, n


def offers_isupper_only(text):
    o, n = offers_and_needs(text)
    return {x for x in o if f"{x} u" not in text}, n


def offers_cxxfilt(text):
    o, n = offers_and_needs(text)
    out = subprocess.run(["c++filt"], input="\n".join(sorted(o)), capture_output=True, text=True)
    return set(out.stdout.split("\n")) - {""}, n


NAMED_O = {args[0]: _truth.offers_and_needs(args[0]) for _l, args in sym_grader._NAMED}


def replay_o(text):
    return NAMED_O.get(text, ([], []))


def offers_eq(text):
    return always_equal(np.zeros(2)), always_equal(np.zeros(2))


def offers_via_truth(text):
    return _truth.offers_and_needs(text)


def offers_via_reference(text):
    ref = symbols.parse_nm(text)
    return {s.name for s in ref if s.defined and s.is_global}, {
        s.name for s in ref if s.kind == "U"
    }


def offers_patches_grader(text):
    sym_grader.OFFERS = None
    return offers_and_needs(text)


def fake_nm_on_path():
    d = pathlib.Path(tempfile.mkdtemp())
    (d / "nm").write_text("#!/bin/sh\nexit 0\n")
    (d / "nm").chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{d}:{old}"
    try:
        O(replay_o)
    finally:
        os.environ["PATH"] = old


def poisoned_cache(check, table, answer):
    """Let the grader draw this run's cases (filling its old object cache), then replace
    every object in ``$A2S_NATIVE_CACHE/lab37-grader`` by an empty one; answer by replay."""
    cache = pathlib.Path(tempfile.mkdtemp())
    old = os.environ.get("A2S_NATIVE_CACHE")
    os.environ["A2S_NATIVE_CACHE"] = str(cache)
    try:
        table.cases()
        (cache / "e.cpp").write_text("\n")
        subprocess.run(["g++", "-c", str(cache / "e.cpp"), "-o", str(cache / "e.o")], check=True)
        for obj in cache.glob("lab37-grader/*.o"):
            shutil.copy(cache / "e.o", obj)
        check(answer)
    finally:
        os.environ.pop("A2S_NATIVE_CACHE")
        if old is not None:
            os.environ["A2S_NATIVE_CACHE"] = old


# --------------------------------------------------------------------------- 37.2
def unresolved_counter(objects, libraries=()):
    need, have = Counter(), Counter(libraries)
    have["_GLOBAL_OFFSET_TABLE_"] += 1
    for text in objects.values():
        o, n = offers_dict(text)
        need.update(n)
        have.update(o)
    return sorted(n for n in need if not have[n])


class Linker:
    def __init__(self, libraries):
        self.defined = set(libraries) | {"_GLOBAL_OFFSET_TABLE_"}
        self.wanted = set()

    def add(self, text):
        o, n = NmReader(text).answer()
        self.defined |= set(o)
        self.wanted |= set(n)
        return self

    def undefined(self):
        return self.wanted - self.defined


def unresolved_class(objects, libraries=()):
    linker = Linker(libraries)
    for text in objects.values():
        linker.add(text)
    return linker.undefined()


def unresolved_recursive(objects, libraries=()):
    texts = list(objects.values())

    def go(i, offered, needed):
        if i == len(texts):
            return needed - offered - set(libraries) - {"_GLOBAL_OFFSET_TABLE_"}
        o, n = offers_recursive(texts[i])
        return go(i + 1, offered | o, needed | n)

    return tuple(sorted(go(0, set(), set())))


def per_object(objects, libraries=()):
    return set().union(*(unresolved({k: t}, libraries) for k, t in objects.items()))


def got_undefined(objects, libraries=()):
    return unresolved(objects, libraries) | {
        n for t in objects.values() for n in offers_and_needs(t)[1] if n.startswith("_GLOBAL")
    }


def static_resolves(objects, libraries=()):
    offered = set(libraries) | {"_GLOBAL_OFFSET_TABLE_"}
    needed = set()
    for t in objects.values():
        o, n = offers_locals(t)
        offered |= o
        needed |= n
    return needed - offered


def weak_fails(objects, libraries=()):
    offered, needed = set(libraries) | {"_GLOBAL_OFFSET_TABLE_"}, set()
    for t in objects.values():
        o, n = offers_weak_needed(t)
        offered |= o
        needed |= n
    return needed - offered


NAMED_U = {repr(args): _truth.unresolved(*args) for _l, args in link._NAMED}


def replay_u(objects, libraries=()):
    return NAMED_U.get(repr((objects, libraries) if libraries else (objects,)), [])


def unresolved_via_truth(objects, libraries=()):
    return _truth.unresolved(objects, libraries)


def unresolved_via_ld(objects, libraries=()):
    return _truth.ld_undefined([])


def unresolved_via_reference(objects, libraries=()):
    return symbols.undefined_in_message("undefined reference to `x'") and unresolved(
        objects, libraries
    )


def unresolved_rebinds_libm(objects, libraries=()):
    link.LIBM = frozenset()  # the compiled links' libraries: drawn already, and kept intact
    return unresolved(objects, libraries)


class AlwaysList(list):
    def __eq__(self, other):
        return True

    __hash__ = None


# --------------------------------------------------------------------------- 37.3
def _fn(lib, types=ARGTYPES):
    fn = lib.lab37_axpy
    fn.argtypes = types
    fn.restype = None
    return fn


def axpy_pointer(lib, alpha, x, y):
    import ctypes as c

    _ok_arrays(x, y)
    fp = c.POINTER(c.c_float)
    fn = _fn(lib, [c.c_long, c.c_float, fp, c.c_long, fp, c.c_long])
    fn(
        len(x),
        alpha,
        x.ctypes.data_as(fp),
        x.strides[0] // 4,
        y.ctypes.data_as(fp),
        y.strides[0] // 4,
    )


def axpy_flipped(lib, alpha, x, y):
    """Both reversed: pass both flipped (positive strides), the same pairs of elements."""
    _ok_arrays(x, y)
    if x.strides[0] < 0 and y.strides[0] < 0:
        x, y = x[::-1], y[::-1]
    if x.size == 0:
        return
    _fn(lib)(x.size, alpha, x.ctypes.data, x.strides[0] // 4, y.ctypes.data, y.strides[0] // 4)


def bytes_strides(lib, alpha, x, y):
    _ok_arrays(x, y)
    _fn(lib)(x.size, alpha, x.ctypes.data, x.strides[0], y.ctypes.data, y.strides[0])


def no_argtypes(lib, alpha, x, y):
    _ok_arrays(x, y)
    fn = lib.lab37_axpy
    fn.argtypes = None
    xp, yp = ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data)
    a = ctypes.c_double(alpha)  # what ctypes would guess: a Python float is a C double
    fn(ctypes.c_long(x.size), a, xp, ctypes.c_long(x.strides[0] // 4), yp, y.strides[0] // 4)


def no_length_check(lib, alpha, x, y):
    if x.dtype != np.float32 or y.dtype != np.float32:
        raise TypeError("float32")
    n = min(x.size, y.size)
    _fn(lib)(n, alpha, x.ctypes.data, x.strides[0] // 4, y.ctypes.data, y.strides[0] // 4)


def on_a_copy(lib, alpha, x, y):
    _ok_arrays(x, y)
    yc = y.copy()
    _fn(lib)(x.size, alpha, x.ctypes.data, x.strides[0] // 4, yc.ctypes.data, 1)


def numpy_only(lib, alpha, x, y):
    _ok_arrays(x, y)
    y += np.float32(alpha) * x


def scratch_then_numpy(lib, alpha, x, y):
    _ok_arrays(x, y)
    a, b = np.zeros(x.size, np.float32), np.zeros(x.size, np.float32)
    _fn(lib)(x.size, alpha, a.ctypes.data, 1, b.ctypes.data, 1)
    y += np.float32(alpha) * x


def alpha0_then_numpy(lib, alpha, x, y):
    _ok_arrays(x, y)
    _fn(lib)(x.size, 0.0, x.ctypes.data, x.strides[0] // 4, y.ctypes.data, y.strides[0] // 4)
    y += np.float32(alpha) * x


def scratch_y_copied_back(lib, alpha, x, y):
    _ok_arrays(x, y)
    b = np.ascontiguousarray(y)
    _fn(lib)(x.size, alpha, x.ctypes.data, x.strides[0] // 4, b.ctypes.data, 1)
    y[...] = b


_OWN = {}


def own_kernel(lib, alpha, x, y):
    """A kernel of one's own, compiled and loaded: the grader's counter never moves."""
    _ok_arrays(x, y)
    if "lib" not in _OWN:
        d = pathlib.Path(tempfile.mkdtemp())
        (d / "k.cpp").write_text(_truth.AXPY)
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", str(d / "k.cpp"), "-o", str(d / "k.so")])
        _OWN["lib"] = ctypes.CDLL(str(d / "k.so"))
    axpy_pointer(_OWN["lib"], alpha, x, y)


def counter_in_dll(lib, alpha, x, y):
    _ok_arrays(x, y)
    try:
        ctypes.c_long.in_dll(lib, "done_elements").value += x.size
    except ValueError:  # a static: not in the dynamic symbol table
        pass
    y += np.float32(alpha) * x


def axpy_via_reference(lib, alpha, x, y):
    _ok_arrays(x, y)
    loader.bind(lib)


def axpy_torch(lib, alpha, x, y):
    import torch

    _ok_arrays(x, y)
    torch.from_numpy(y).add_(torch.from_numpy(x.copy()), alpha=float(np.float32(alpha)))


# --------------------------------------------------------------------------- 37.4
def pages_numpy(ranges, page=4096):
    parts = [np.arange(o // page, (o + n - 1) // page + 1) for o, n in ranges if n > 0]
    return int(np.unique(np.concatenate(parts)).size) if parts else 0


def pages_bitmask(ranges, page=4096):
    mask = 0
    for o, n in ranges:
        if n:
            lo, hi = o // page, (o + n - 1) // page
            mask |= ((1 << (hi - lo + 1)) - 1) << lo
    return bin(mask).count("1")


def pages_recursive(ranges, page=4096):
    def go(rs):
        if not rs:
            return set()
        (o, n), rest = rs[0], rs[1:]
        return go(rest) | (set(range(o // page, (o + n - 1) // page + 1)) if n else set())

    return len(go(list(ranges)))


NAMED_P = {repr(args): _truth.pages_touched(*args) for _l, args in pages._NAMED}


def replay_p(ranges, page=4096):
    key = repr((ranges, page) if page != 4096 else (ranges,))
    return NAMED_P.get(key, sum(-(-n // page) for _, n in ranges))


def pages_measured(ranges, page=4096):
    return osmem.counters().minflt * 0 + pages_touched(ranges)


def pages_own_measurement(ranges, page=4096):
    import mmap
    import resource

    size = max((o + n for o, n in ranges), default=0) + 1
    buf = mmap.mmap(-1, size)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for o, n in ranges:
        buf[o : o + n] = b"\1" * n
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def pages_patches_table(ranges, page=4096):
    pages.PAGES = None
    return pages_touched(ranges, page)


def pages_via_truth(ranges, page=4096):
    return _truth.pages_touched(ranges, page)


# --------------------------------------------------------------------------- 37.5
def counts_per_layer(cfg):
    """A Counter, one layer's calls added L times (a stdlib dict subclass reads as a dict)."""
    total = Counter({"aten::embedding": 2, "aten::layer_norm": 1})
    linear = "aten::addmm" if cfg["bias"] else "aten::mm"
    total["aten::mm"] += 1  # the LM head has no bias
    for _ in range(cfg["n_layer"]):
        total.update({"aten::layer_norm": 2, linear: 4, "aten::bmm": 2})
        total.update(["aten::softmax", "aten::gelu"])
    return total


class GptCounter:
    """The architecture as a class; only the operators it calls are returned."""

    PER_LAYER = (("layer_norm", 2), ("bmm", 2), ("softmax", 1), ("gelu", 1))

    def __init__(self, cfg):
        self.cfg = cfg

    def __call__(self):
        import math  # an import inside

        n = self.cfg["n_layer"]
        out = {f"aten::{op}": k * n for op, k in self.PER_LAYER}
        out["aten::layer_norm"] += 1
        out["aten::embedding"] = math.prod([2])
        lin = 4 * n
        if self.cfg["bias"]:
            out["aten::addmm"], out["aten::mm"] = lin, 1
        else:
            out["aten::mm"] = lin + 1
        return out


def counts_recursive(cfg):
    def layers(n):
        if n == 0:
            return {"aten::embedding": 2, "aten::layer_norm": 1, "aten::mm": 1}
        out = dict(layers(n - 1))
        lin = "aten::addmm" if cfg["bias"] else "aten::mm"
        for op, k in (("aten::layer_norm", 2), (lin, 4), ("aten::bmm", 2)):
            out[op] = out.get(op, 0) + k
        for op in ("aten::softmax", "aten::gelu"):
            out[op] = out.get(op, 0) + 1
        return out

    return layers(cfg["n_layer"])


def counts_numpy(cfg):
    """numpy ints as the counts (plain values read them as ints)."""
    n = np.int64(cfg["n_layer"])
    return {
        "aten::embedding": np.int64(2),
        "aten::layer_norm": 2 * n + 1,
        "aten::addmm": 4 * n * int(cfg["bias"]),
        "aten::mm": 1 + 4 * n * (1 - int(cfg["bias"])),
        "aten::bmm": 2 * n,
        "aten::softmax": n,
        "aten::gelu": n,
    }


def counts_no_final_norm(cfg):
    return {**op_counts(cfg), "aten::layer_norm": 2 * cfg["n_layer"]}


def counts_per_batch(cfg):
    out = op_counts(cfg)
    lin = "aten::addmm" if cfg["bias"] else "aten::mm"
    out[lin] = 4 * cfg["n_layer"] * cfg["batch"]
    out["aten::mm"] = (0 if cfg["bias"] else out["aten::mm"]) + cfg["batch"]
    return out


def counts_via_reference(cfg):
    return profiled.predicted_op_counts(cfg)


def counts_reference_measured(cfg):
    return profiled.profile_counts(cfg)


def counts_own_profiler(cfg):
    """The model run under torch.profiler inside the function: measured, not predicted."""
    import torch
    from torch.profiler import profile

    with profile() as prof:
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    return {**op_counts(cfg), "aten::mm": sum(e.name == "aten::mm" for e in prof.events())}


def _child_counts(cfg):
    args = [sys.executable, "-c", opcounts._PROFILE_CHILD]
    args += [json.dumps(opcounts.OPS), json.dumps(opcounts.CONFIG_KEYS)]
    done = subprocess.run(args, input=json.dumps([cfg]), capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])[0]


def counts_in_a_child(cfg):
    """The grader's own child script, run by the learner: the profiler's counts, exact."""
    return _child_counts(cfg)


def counts_os_system(cfg):
    out = pathlib.Path(tempfile.mkdtemp()) / "counts.json"
    code = "import json,sys; from minitorch.native import profiled as p; "
    code += f"json.dump(p.profile_counts(json.loads(sys.argv[1])), open({str(out)!r}, 'w'))"
    os.system(f"{sys.executable} -c {shlex.quote(code)} {shlex.quote(json.dumps(cfg))}")
    return json.loads(out.read_text())


def counts_forked(cfg):
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(_child_counts, (cfg,))


def counts_from_cache(cfg):
    """The grader's per-process counts, looked up (empty for this run's fresh cases)."""
    return dict(opcounts._profiled().get(tuple(cfg[k] for k in opcounts.CONFIG_KEYS), {}))


def counts_poisons_cache(cfg):
    """Every configuration the grader kept set to this (wrong, no LM head) answer."""
    wrong = op_counts(cfg, head=False)
    for key in list(opcounts._profiled()):
        opcounts._profiled()[key] = dict(wrong)
    opcounts._profiled()[tuple(cfg[k] for k in opcounts.CONFIG_KEYS)] = dict(wrong)
    return wrong


def counts_patch_profile(cfg):
    """The grader's profiler run rebound to the closed form of a wrong answer."""
    opcounts._profile = lambda configs: {
        tuple(c[k] for k in opcounts.CONFIG_KEYS): op_counts(c, head=False) for c in configs
    }
    return op_counts(cfg, head=False)


class LyingDict(dict):
    def __getitem__(self, key):
        return 0

    def get(self, key, default=None):
        return 0


class OracleUnseen(Exception):
    """The check passed an answer a pre-started thread measured with torch."""


def _oracle():
    """A thread started outside any check: it runs the grader's own model under torch's
    profiler for each configuration put on its queue."""
    import queue
    import threading

    src = opcounts._PROFILE_CHILD.replace("sys.argv[1]", repr(json.dumps(opcounts.OPS)))
    src = src.replace("sys.argv[2]", repr(json.dumps(opcounts.CONFIG_KEYS)))
    src = src.rsplit("print(", 1)[0]
    q_in, q_out = queue.Queue(), queue.Queue()

    def serve():
        space = {}
        exec(src, space)
        while True:
            q_out.put(space["run"](q_in.get()))

    threading.Thread(target=serve, daemon=True).start()
    return q_in, q_out


def oracle_before_the_check():
    q_in, q_out = _oracle()

    def ask(cfg):
        q_in.put(cfg)
        return q_out.get()

    C(ask)
    raise OracleUnseen("a thread started before the check measured every count with torch")


# --------------------------------------------------------------------------- 37.6
def trace_numpy(n, tile):
    nb = -(-n // tile)
    t = np.arange(nb)[:, None] * tile + np.arange(tile)[None, :]  # (tile block, within)
    out = []
    for i0, k0, j0 in itertools.product(range(nb), repeat=3):
        i, p, j = (t[x][t[x] < n] for x in (i0, k0, j0))
        ii, pp, jj = np.meshgrid(i, p, j, indexing="ij")
        rows = np.stack(
            [8 * (ii * n + pp), 8 * n * n + 8 * (pp * n + jj), 16 * n * n + 8 * (ii * n + jj)], -1
        )
        out.append(rows.reshape(-1))
    return np.concatenate(out).astype(np.int32)


def trace_generator(n, tile):
    def tiles():
        return range(0, n, tile)

    def within(start):
        return range(start, min(start + tile, n))

    def gen():
        for i0, k0, j0 in itertools.product(tiles(), repeat=3):
            for i, p, j in itertools.product(within(i0), within(k0), within(j0)):
                yield from (8 * (i * n + p), 8 * (n * n + p * n + j), 8 * (2 * n * n + i * n + j))

    return list(gen())


def trace_recursive(n, tile, depth=0, at=()):
    """Six loop levels, by recursion: three of tiles, three inside them."""
    if depth == 6:
        i, p, j = at[3:]
        return [8 * (i * n + p), 8 * n * n + 8 * (p * n + j), 16 * n * n + 8 * (i * n + j)]
    if depth < 3:
        levels = range(0, n, tile)
    else:
        start = at[depth - 3]
        levels = range(start, min(start + tile, n))
    return [a for v in levels for a in trace_recursive(n, tile, depth + 1, (*at, v))]


def trace_tiles_ijk(n, tile):
    """The tiles in (i0, j0, k0) order: not the kernel's (no modelled mistake)."""
    out = []
    for i0, j0, k0 in itertools.product(range(0, n, tile), repeat=3):
        for i in range(i0, min(i0 + tile, n)):
            for p in range(k0, min(k0 + tile, n)):
                for j in range(j0, min(j0 + tile, n)):
                    out += [
                        8 * (i * n + p),
                        8 * n * n + 8 * (p * n + j),
                        16 * n * n + 8 * (i * n + j),
                    ]
    return out


def trace_elements(n, tile):
    """Element indices, not bytes."""
    return [a // 8 for a in tiled(n, tile)]


def trace_via_lab06(n, tile):
    return traces.blocked_trace(n, tile)


def trace_via_lab15(n, tile):
    s = loops.nest(loops.matmul(n, n, n))
    for v in "ijk":
        s = loops.split(s, v, tile)
    return loops.trace(loops.reorder(s, "io", "ko", "jo", "ii", "ki", "ji"))


def trace_via_lab15_points(n, tile):
    s = loops.nest(loops.matmul(n, n, n))
    for v in "ijk":
        s = loops.split(s, v, tile)
    pts = loops.iteration_order(loops.reorder(s, "io", "ko", "jo", "ii", "ki", "ji"))
    i, j, k = pts.T
    return np.stack(
        [8 * (i * n + k), 8 * n * n + 8 * (k * n + j), 16 * n * n + 8 * (i * n + j)], 1
    ).ravel()


def trace_via_truth(n, tile):
    return cachesim.tiled_trace(n, tile)


def trace_torch(n, tile):
    import torch

    return torch.tensor(tiled(n, tile)).numpy()


def trace_small_only(n, tile):
    """Right where the cases are small; the rows of B swapped above n = 16."""
    return tiled(n, tile) if n <= 16 else tiled(n, tile, swap=True)


def fake_valgrind_on_path():
    """A valgrind that writes a made-up cachegrind file, first on PATH; a wrong trace."""
    d = pathlib.Path(tempfile.mkdtemp())
    (d / "valgrind").write_text("#!/bin/sh\nexit 0\n")
    (d / "valgrind").chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{d}:{old}"
    try:
        T(trace_small_only)
    finally:
        os.environ["PATH"] = old


def poisoned_native_cache():
    """``$A2S_NATIVE_CACHE`` pointed at a folder of planted programs; a wrong trace."""
    cache = pathlib.Path(tempfile.mkdtemp())
    old = os.environ.get("A2S_NATIVE_CACHE")
    os.environ["A2S_NATIVE_CACHE"] = str(cache)
    try:
        for name in ("cg_main", "lab37-grader/tiled", "tiled"):
            (cache / name).parent.mkdir(parents=True, exist_ok=True)
            (cache / name).write_text("#!/bin/sh\nexit 0\n")
        T(trace_small_only)
    finally:
        os.environ.pop("A2S_NATIVE_CACHE")
        if old is not None:
            os.environ["A2S_NATIVE_CACHE"] = old


def trace_patches_table(n, tile):
    cachesim.MEASURED = ()
    return tiled(n, tile) if n <= 16 else []


# --------------------------------------------------------------------------- the battery
_SEALED = "a frame read of the table's expected value is the sealed kernel's to veto"
FRAMES = ()  # each check calls once more outside its table: no expected value in a frame

ATTEMPTS = [
    honest("37.1", "a dict of letters, frozensets", run(O, offers_dict)),
    honest("37.1", "a class over the rows, lists", run(O, lambda t: NmReader(t).answer())),
    honest("37.1", "recursion over the lines", run(O, offers_recursive)),
    honest("37.1", "a decorator with functools.wraps", run(O, wrapped(offers_and_needs))),
    wrong("37.1", "weak undefined needed", run(O, offers_weak_needed), match="weak undefined"),
    wrong("37.1", "locals offered", run(O, offers_locals), match="local"),
    wrong("37.1", "u left out (isupper only)", run(O, offers_isupper_only), "unique global"),
    wrong("37.1", "names demangled by c++filt", run(O, offers_cxxfilt), match="mangled"),
    cheat("37.1", "the reference's parse_nm", run(O, offers_via_reference), "reference", REF),
    cheat("37.1", "the grader's truth", run(O, offers_via_truth), "reference|grader", REF),
    cheat("37.1", "the named cases replayed", run(O, replay_o), match="offers lacks"),
    cheat("37.1", "values whose == says yes", run(O, offers_eq), match="symbol names|plain"),
    cheat("37.1", "a fake nm first on PATH", fake_nm_on_path, match="offers lacks"),
    cheat(
        "37.1",
        "the object cache poisoned",
        lambda: poisoned_cache(O, sym_grader.OFFERS, replay_o),
        match="offers lacks",
    ),
    cheat("37.1", "the grader's table rebound", run(O, offers_patches_grader), "grader's own"),
    cheat("37.1", "the frame's want", run(O, from_frame)),
    honest("37.2", "a Counter of names", run(U, unresolved_counter)),
    honest("37.2", "a class over the objects", run(U, unresolved_class)),
    honest("37.2", "recursively, a tuple", run(U, unresolved_recursive)),
    honest("37.2", "a decorator with functools.wraps", run(U, wrapped(unresolved))),
    wrong("37.2", "one object at a time", run(U, per_object), match="across every object"),
    wrong("37.2", "the GOT undefined", run(U, got_undefined), match="GLOBAL_OFFSET_TABLE"),
    wrong("37.2", "libraries ignored", run(U, lambda o, libs=(): unresolved(o)), "libraries"),
    wrong("37.2", "a static definition resolves", run(U, static_resolves), match="static"),
    wrong("37.2", "a weak reference fails the link", run(U, weak_fails), "weak undefined"),
    cheat("37.2", "the reference", run(U, unresolved_via_reference), "reference", REF),
    cheat("37.2", "the grader's truth", run(U, unresolved_via_truth), "reference|grader", REF),
    cheat("37.2", "the grader's ld", run(U, unresolved_via_ld), "reference|grader", REF),
    cheat("37.2", "the named cases replayed", run(U, replay_u), match="ld reports"),
    cheat("37.2", "a list whose == says yes", run(U, lambda o, libs=(): AlwaysList()), "plain"),
    cheat(
        "37.2",
        "the object cache poisoned",
        lambda: poisoned_cache(U, link.LINKS, replay_u),
        match="ld reports",
    ),
    cheat("37.2", "the libraries rebound", run(U, unresolved_rebinds_libm), "grader's own"),
    cheat("37.2", "the frame's want", run(U, from_frame)),
    honest("37.3", "POINTER(c_float) and data_as", run(A, axpy_pointer)),
    honest("37.3", "both flipped, no call for n=0", run(A, axpy_flipped)),
    honest("37.3", "a decorator with functools.wraps", run(A, wrapped(axpy_pointer))),
    wrong("37.3", "strides in bytes", run(A, bytes_strides), match="outside y"),
    wrong("37.3", "no argtypes, alpha a double", run(A, no_argtypes), "C float|C double|y\\["),
    wrong("37.3", "no length check", run(A, no_length_check), match="must raise ValueError"),
    wrong("37.3", "C given a copy of y", run(A, on_a_copy), match="copy"),
    cheat("37.3", "numpy does the work", run(A, numpy_only), match="processed no element"),
    cheat("37.3", "a scratch call, numpy writes y", run(A, scratch_then_numpy), "compute this y"),
    cheat("37.3", "a call with alpha 0, then numpy", run(A, alpha0_then_numpy), "compute this y"),
    cheat("37.3", "C on a copy of y, copied back", run(A, scratch_y_copied_back), "compute this"),
    cheat("37.3", "a kernel of one's own", run(A, own_kernel), match="processed no element"),
    cheat("37.3", "the counter set through in_dll", run(A, counter_in_dll), "processed no"),
    cheat("37.3", "the reference loader", run(A, axpy_via_reference), "reference", REF),
    cheat("37.3", "torch adds in place", run(A, axpy_torch), match="torch|processed no"),
    cheat("37.3", "the frame's want", run(A, from_frame), match="processed no element"),
    honest("37.4", "numpy unique of page numbers", run(P, pages_numpy)),
    honest("37.4", "an int bitmask", run(P, pages_bitmask)),
    honest("37.4", "recursion over the ranges", run(P, pages_recursive)),
    honest("37.4", "a decorator with functools.wraps", run(P, wrapped(pages_touched))),
    wrong(
        "37.4",
        "ceil(length / page)",
        run(P, lambda r, page=4096: sum(-(-n // page) for _, n in r)),
        "crosses into",
    ),
    wrong(
        "37.4",
        "4 KiB pages always",
        run(P, lambda r, page=4096: pages_touched(r)),
        "page size given",
    ),
    wrong(
        "37.4",
        "an empty range one page",
        run(P, lambda r, page=4096: pages_touched([(o, max(n, 1)) for o, n in r], page)),
        "empty range",
    ),
    wrong(
        "37.4",
        "shared pages twice",
        run(P, lambda r, page=4096: sum(pages_touched([x], page) for x in r)),
        "once",
    ),
    cheat("37.4", "the reference's counters", run(P, pages_measured), "reference", REF),
    cheat("37.4", "the grader's truth", run(P, pages_via_truth), "reference|grader", REF),
    cheat("37.4", "the named cases replayed", run(P, replay_p), match="pages_touched returned"),
    cheat(
        "37.4",
        "an int whose == says yes",
        run(P, lambda r, page=4096: always_equal(pages_touched(r, page) + 1)),
        "plain",
    ),
    cheat("37.4", "faults measured, not predicted", run(P, pages_own_measurement), "returned"),
    cheat("37.4", "the grader's table rebound", run(P, pages_patches_table), "grader's own"),
    cheat("37.4", "the frame's want", run(P, from_frame)),
    honest("37.5", "a Counter, one layer added L times", run(C, counts_per_layer)),
    honest("37.5", "a class, only the ops it calls", run(C, lambda c: GptCounter(c)())),
    honest("37.5", "recursion over the layers", run(C, counts_recursive)),
    honest("37.5", "numpy ints, a decorator with wraps", run(C, wrapped(counts_numpy))),
    wrong("37.5", "no LM head", run(C, lambda c: op_counts(c, head=False)), match="LM head"),
    wrong(
        "37.5",
        "bmm and softmax per head",
        run(C, lambda c: op_counts(c, per_head=True)),
        "folded into the batch",
    ),
    wrong("37.5", "one attention matmul", run(C, lambda c: op_counts(c, one=True)), "two matmuls"),
    wrong(
        "37.5",
        "addmm without a bias",
        run(C, lambda c: op_counts(c, always_addmm=True)),
        "torch.mm, not",
    ),
    wrong("37.5", "a linear per sequence", run(C, counts_per_batch), match="rows of one"),
    wrong(
        "37.5",
        "no final layer norm (no modelled hint)",
        run(C, counts_no_final_norm),
        "^(?!.*(linear too|are folded|matmuls per|torch.mm, not|rows of one)).*Count per layer",
    ),
    wrong(
        "37.5",
        "aten::linear named",
        run(C, lambda c: {**op_counts(c), "aten::linear": 5}),
        "not among",
    ),
    cheat("37.5", "the reference's closed form", run(C, counts_via_reference), "reference", REF),
    cheat(
        "37.5",
        "the reference's profiler",
        run(C, counts_reference_measured),
        "reference|torch",
        REF,
    ),
    cheat(
        "37.5", "torch.profiler in the function", run(C, counts_own_profiler), "torch", FORBIDDEN
    ),
    cheat(
        "37.5", "the grader's child script, run", run(C, counts_in_a_child), "subprocess", FORBIDDEN
    ),
    cheat("37.5", "the reference under os.system", run(C, counts_os_system), "system", FORBIDDEN),
    cheat(
        "37.5", "a forked pool runs the child", run(C, counts_forked), "multiprocessing", FORBIDDEN
    ),
    cheat("37.5", "the grader's cached counts", run(C, counts_from_cache), match="op_counts"),
    cheat("37.5", "the grader's cache poisoned", run(C, counts_poisons_cache), match="LM head"),
    cheat(
        "37.5",
        "the profiler run rebound",
        run(C, counts_patch_profile),
        match="LM head|grader's own",
    ),
    cheat(
        "37.5",
        "the named cases replayed",
        lambda: C(replay_public(opcounts.OP_COUNTS, lambda c: op_counts(c, head=False))),
        "LM head",
    ),
    cheat(
        "37.5",
        "a dict whose [] lies",
        run(C, lambda c: LyingDict(op_counts(c, one=True))),
        "dict|plain",
    ),
    cheat(
        "37.5",
        "counts whose == says yes",
        run(C, lambda c: {k: always_equal(v) for k, v in op_counts(c).items()}),
        "int|plain",
    ),
    cheat("37.5", "the frame's want", run(C, from_frame)),
    cheat("37.5", "a torch thread started before", oracle_before_the_check),
    honest("37.6", "nested loops, a list", run(T, tiled)),
    honest("37.6", "numpy per tile, int32", run(T, trace_numpy)),
    honest("37.6", "a generator over itertools.product", run(T, trace_generator)),
    honest("37.6", "recursion over the six loops, wraps", run(T, wrapped(trace_recursive))),
    wrong("37.6", "B column-major", run(T, lambda n, t: tiled(n, t, swap=True)), "row-major"),
    wrong(
        "37.6", "an inclusive tile bound", run(T, lambda n, t: tiled(n, t, incl=True)), "exclusive"
    ),
    wrong("37.6", "C left out", run(T, lambda n, t: tiled(n, t, no_c=True)), "write-allocate"),
    wrong(
        "37.6",
        "C read and written",
        run(T, lambda n, t: [x for a in tiled(n, t) for x in ([a, a] if a >= 16 * n * n else [a])]),
        "lists C once",
    ),
    wrong(
        "37.6",
        "tiles in i0, j0, k0 order (no modelled hint)",
        run(T, trace_tiles_ijk),
        "^(?!.*(row-major|exclusive|write-allocate|lists C once)).*for i0, k0, j0",
    ),
    wrong(
        "37.6",
        "element indices, not bytes",
        run(T, trace_elements),
        "^(?!.*(row-major|exclusive|write-allocate)).*address 1 ",
    ),
    cheat("37.6", "lab 06's blocked_trace", run(T, trace_via_lab06), "reference", REF),
    cheat("37.6", "lab 15's loop nest trace", run(T, trace_via_lab15), "reference", REF),
    cheat("37.6", "lab 15's iteration order", run(T, trace_via_lab15_points), "reference", REF),
    cheat("37.6", "the grader's truth", run(T, trace_via_truth), "reference|grader", REF),
    cheat("37.6", "torch builds the array", run(T, trace_torch), "torch", FORBIDDEN),
    cheat(
        "37.6",
        "the named cases replayed",
        lambda: T(replay_public(cachesim.TRACE, lambda n, t: [])),
        "tiled_trace",
    ),
    cheat("37.6", "right on small n only", run(T, trace_small_only), "differs from the kernel"),
    cheat(
        "37.6", "a fake valgrind first on PATH", fake_valgrind_on_path, "differs from the kernel"
    ),
    cheat("37.6", "the native cache poisoned", poisoned_native_cache, "differs from the kernel"),
    cheat(
        "37.6",
        "the measured shapes rebound",
        run(T, trace_patches_table),
        "grader's own|1-D|differs",
    ),
    cheat(
        "37.6",
        "an array whose == says yes",
        run(T, lambda n, t: always_equal(np.zeros(3 * n**3, np.int64))),
        "plain|tiled_trace",
    ),
    cheat("37.6", "the frame's want", run(T, from_frame)),
]


_ORACLE_GAP = (
    "a thread (or process) started before the check and running torch on request is outside "
    "the learner's call: the watch sees only what the call itself runs"
)


def _marks(a):
    marks = []
    if a.name == "the frame's want" and a.exercise in FRAMES:
        marks.append(pytest.mark.xfail(strict=True, reason=_SEALED))
    if a.name == "a torch thread started before":
        marks.append(pytest.mark.xfail(strict=True, reason=_ORACLE_GAP, raises=OracleUnseen))
    if a.exercise == "37.6":
        marks.append(needs_valgrind)
    return marks


@pytest.mark.parametrize(
    "attempt",
    [pytest.param(a, marks=_marks(a)) for a in ATTEMPTS],
    ids=attempt_id,
)
def test_attempt(attempt):
    judge(attempt)


def test_a_fake_tool_or_a_planted_object_changes_nothing():
    for a in ATTEMPTS:
        if a.name in ("a fake nm first on PATH", "the object cache poisoned"):
            judge(a)


def test_axpy_rejects_a_scratch_call_and_numpy():
    for a in ATTEMPTS:
        if a.exercise == "37.3" and "numpy" in a.name:
            judge(a)


def test_axpy_rejects_no_length_check():
    judge(next(a for a in ATTEMPTS if a.name == "no length check"))


def test_op_counts_refuses_torch_the_reference_and_child_processes():
    names = ("reference's", "torch.profiler", "child script", "os.system", "forked pool")
    for a in ATTEMPTS:
        if a.exercise == "37.5" and any(n in a.name for n in names):
            judge(a)


def test_op_counts_reads_a_missing_key_as_zero():
    judge(next(a for a in ATTEMPTS if a.name == "a class, only the ops it calls"))


@needs_valgrind
def test_tiled_trace_accepts_a_list_or_an_int_array():
    for a in ATTEMPTS:
        if a.name in ("nested loops, a list", "numpy per tile, int32"):
            judge(a)
