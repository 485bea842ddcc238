"""Graders of lab 37: right answers pass, realistic wrong answers and reference calls fail, and
the graders' own truth agrees with GNU ld and with the reference package (each can catch a bug
in the other)."""

from __future__ import annotations

import ctypes
import re
import shutil
import tempfile

import numpy as np
import pytest

from a2s.checks import lab37
from a2s.checks.core import CheckFailure, ReferenceCalledError, StudentError
from a2s.checks.lab37 import _truth, cachesim, link
from a2s.checks.lab37 import symbols as sym_grader
from minitorch.native import linking, loader, osmem, symbols
from tests.helpers.graders import rejects

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="lab 37 needs g++")

_C_TYPES = [ctypes.c_long, ctypes.c_float, ctypes.c_void_p, ctypes.c_long, ctypes.c_void_p]
ARGTYPES = [*_C_TYPES, ctypes.c_long]


# --------------------------------------------------------------------------- answers
def offers_and_needs(nm_text):
    offers, needs = set(), set()
    for line in nm_text.splitlines():
        fields = line.split()
        if len(fields) < 2 or line.rstrip().endswith(":"):
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            needs.add(name)
        elif kind in ("w", "v"):
            continue
        elif kind.isupper() or kind == "u":
            offers.add(name)
    return offers, needs


def offers_and_needs_regex(nm_text):
    """Written differently: one regex, lists, a dict of letters."""
    rows = re.findall(r"^(\S+) ([A-Za-z?])\b", nm_text, flags=re.M)
    offered = [n for n, k in rows if k in "TDBRCWVGSAu"]
    return sorted(offered), [n for n, k in rows if k == "U"]


LINKER_MADE = {"_GLOBAL_OFFSET_TABLE_"}


def unresolved(objects, libraries=()):
    offered = set(libraries) | LINKER_MADE
    needed = set()
    for text in objects.values():
        o, n = offers_and_needs(text)
        offered |= o
        needed |= n
    return needed - offered


def unresolved_counting(objects, libraries=()):
    """Written differently: a dict name -> defined?, a list answer."""
    state = {}
    for text in objects.values():
        o, n = offers_and_needs_regex(text)
        for name in n:
            state.setdefault(name, False)
        for name in o:
            state[name] = True
    for name in [*libraries, "_GLOBAL_OFFSET_TABLE_"]:
        state[name] = True
    return [name for name, ok in state.items() if not ok]


def _ok_arrays(x, y):
    for a in (x, y):
        if a.dtype != np.float32:
            raise TypeError(f"float32 needed, got {a.dtype}")
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError("x and y must be 1-D of one length")


def axpy(lib, alpha, x, y):
    _ok_arrays(x, y)
    fn = lib.lab37_axpy
    fn.argtypes = ARGTYPES
    fn.restype = None
    fn(x.size, alpha, x.ctypes.data, x.strides[0] // 4, y.ctypes.data, y.strides[0] // 4)


def axpy_interface(lib, alpha, x, y):
    """Written differently: the array interface's address, ctypes values built by hand."""
    if not (x.dtype == y.dtype == np.dtype("float32")):
        raise TypeError("float32 only")
    if len(x) != len(y):
        raise ValueError("lengths differ")
    f = lib.lab37_axpy
    f.argtypes = ARGTYPES
    addr = [a.__array_interface__["data"][0] for a in (x, y)]
    inc = [a.strides[0] // a.itemsize for a in (x, y)]
    f(ctypes.c_long(len(x)), ctypes.c_float(alpha), addr[0], inc[0], addr[1], inc[1])


def pages_touched(ranges, page=4096):
    pages = set()
    for offset, length in ranges:
        if length > 0:
            pages.update(range(offset // page, (offset + length - 1) // page + 1))
    return len(pages)


def pages_touched_intervals(ranges, page=4096):
    """Written differently: merge sorted page intervals, no set."""
    spans = sorted((o // page, (o + n - 1) // page) for o, n in ranges if n)
    total, end = 0, -1
    for lo, hi in spans:
        if hi > end:
            total += hi - max(lo, end + 1) + 1
            end = hi
    return total


def test_reference_answers_pass(capsys):
    lab37.check_offers_and_needs(offers_and_needs)
    lab37.check_offers_and_needs(offers_and_needs_regex)
    lab37.check_unresolved(unresolved)
    lab37.check_unresolved(unresolved_counting)
    lab37.check_axpy(axpy)
    lab37.check_axpy(axpy_interface)
    lab37.check_pages_touched(pages_touched)
    lab37.check_pages_touched(pages_touched_intervals)
    assert capsys.readouterr().out.count("passed") == 8


# --------------------------------------------------------------------------- the truth
def test_truth_agrees_with_ld_on_random_links():
    g = np.random.default_rng(11)
    for i in range(12):
        label, (texts, libs), _, ld = link._draw(g, i + 1)
        assert _truth.unresolved(texts, libs) == ld, label


def test_truth_agrees_with_the_reference_on_compiled_objects(tmp_path):
    g = np.random.default_rng(5)
    sources = [sym_grader.FIXED_SOURCE, *(sym_grader.random_source(g, str(i)) for i in range(12))]
    for src in sources:
        path = _truth.compiled(src, tmp_path / str(len(src)))
        text = _truth.nm_text(path)
        assert text == _truth.listing(src)
        offers, needs = _truth.offers_and_needs(text)
        ref = symbols.parse_nm(text)
        assert offers == sorted(s.name for s in ref if s.defined and s.is_global)
        assert needs == sorted(s.name for s in ref if s.kind == "U")
        assert set(needs) | {s.name for s in ref if s.kind in "wv"} == symbols.undefined(path)


def test_the_broken_link_is_the_references(tmp_path):
    objs = [_truth.compiled(src, tmp_path / f"o{i}") for i, src in enumerate(link.BROKEN.values())]
    assert _truth.ld_undefined(objs) == ["_Z9a2s_scaled"]
    assert _truth.link_of(tuple(link.BROKEN.values()))[1] == ("_Z9a2s_scaled",)
    assert "_Z9a2s_scaled" in symbols.undefined(linking.broken("mangled").objects[0])


def test_pages_truth_matches_the_measurement():
    for ranges, size in (
        ([(0, 1 << 20)], 1 << 20),
        ([(4095, 2), (9000, 0), (1 << 19, 5)], 1 << 20),
    ):
        measured = _truth.measured_read_faults(ranges, size)
        if measured is not None:
            assert _truth.pages_touched(ranges) <= measured <= _truth.pages_touched(ranges) + 2


def test_builds_go_to_temporary_directories_never_the_checkout(monkeypatch, tmp_path):
    made = []
    real = _truth.compiled
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_truth, "compiled", lambda *a: made.append(real(*a)) or made[-1])
    assert "lab37_cache_probe" in _truth.listing.__wrapped__(
        "int lab37_cache_probe() { return 1; }"
    )
    assert made and all(p.is_relative_to(tmp_path) for p in made)
    assert list(tmp_path.iterdir()) == []  # and removed after


def test_doctor_reports_the_toolchain(monkeypatch):
    from a2s import doctor

    assert doctor._toolchain().ok
    monkeypatch.setenv("PATH", "")
    found = doctor._toolchain()
    assert not found.ok and "apt-get install g++" in found.fix


# --------------------------------------------------------------------------- 37.1
def _on(**mistake):
    return lambda text: _truth_free_offers(text, **mistake)


def _truth_free_offers(text, weak_needed=False, local=False, weak=True, data=True, unique=True):
    offers, needs = set(), set()
    for line in text.splitlines():
        f = line.split()
        if len(f) < 2 or line.rstrip().endswith(":"):
            continue
        if f[1] == "U" or (weak_needed and f[1] in "wv"):
            needs.add(f[0])
        elif f[1] in "wv":
            continue
        elif f[1] == "u":
            if unique:
                offers.add(f[0])
        elif f[1].isupper():
            if (f[1] in "WV" and not weak) or (f[1] in "DBRC" and not data):
                continue
            offers.add(f[0])
        elif local:
            offers.add(f[0])
    return offers, needs


def test_offers_rejects_weak_undefined_as_needed():
    rejects(lab37.check_offers_and_needs, _on(weak_needed=True), match="weak undefined")


def test_offers_rejects_local_symbols_offered():
    rejects(lab37.check_offers_and_needs, _on(local=True), match="local")


def test_offers_rejects_weak_definitions_left_out():
    rejects(lab37.check_offers_and_needs, _on(weak=False), match="weak definition")


def test_offers_rejects_data_left_out():
    rejects(lab37.check_offers_and_needs, _on(data=False), match="Data is offered")


def test_offers_rejects_unique_globals_left_out():
    rejects(lab37.check_offers_and_needs, _on(unique=False), match="unique global")


def test_offers_rejects_demangled_names():
    def demangled(text):
        offers, needs = offers_and_needs(text)
        return {n if not n.startswith("_Z") else n + "(double)" for n in offers}, needs

    rejects(lab37.check_offers_and_needs, demangled, match="mangled")


def test_offers_rejects_a_malformed_answer():
    rejects(lab37.check_offers_and_needs, lambda t: offers_and_needs(t)[0], match="two collections")
    rejects(lab37.check_offers_and_needs, lambda t: ({1}, set()), match="symbol names")


def test_offers_rejects_the_reference():
    def through_reference(text):
        ref = symbols.parse_nm(text)
        return {s.name for s in ref if s.defined and s.is_global}, {
            s.name for s in ref if s.kind == "U"
        }

    rejects(
        lab37.check_offers_and_needs,
        through_reference,
        match="reference",
        error=ReferenceCalledError,
    )


def test_offers_reads_an_archive_listing():
    def unskipped(text):  # every line unpacked: a blank line or a member header breaks it
        offers, needs = set(), set()
        for line in text.splitlines():
            name, kind = line.split()[:2]
            if kind == "U":
                needs.add(name)
            elif kind.isupper() or kind == "u":
                offers.add(name)
        return offers, needs

    rejects(lab37.check_offers_and_needs, unskipped, match="archive", error=StudentError)


def test_every_check_says_so_without_g_plus_plus(monkeypatch):
    monkeypatch.setitem(_truth._ENV, "PATH", "")
    with pytest.raises(CheckFailure, match="lab 37 needs g\\+\\+"):
        _truth.listing.__wrapped__("int lab37_no_gxx;")


# --------------------------------------------------------------------------- 37.2
def test_unresolved_rejects_static_definitions_resolving():
    def local_ok(objects, libraries=()):
        return _truth_free_unresolved(objects, libraries, local=True)

    rejects(lab37.check_unresolved, local_ok, match="static")


def _truth_free_unresolved(objects, libraries=(), local=False, weak_needed=False, got=True):
    offered = set(libraries) | ({"_GLOBAL_OFFSET_TABLE_"} if got else set())
    needed = set()
    for text in objects.values():
        o, n = _truth_free_offers(text, weak_needed=weak_needed, local=local)
        offered |= o
        needed |= n
    return needed - offered


def test_unresolved_rejects_weak_references_as_errors():
    rejects(
        lab37.check_unresolved,
        lambda o, libs=(): _truth_free_unresolved(o, libs, weak_needed=True),
        match="weak undefined",
    )


def test_unresolved_rejects_matching_demangled_names():
    def strip(name):
        m = re.match(r"_Z(\d+)", name)
        return name[m.end() : m.end() + int(m.group(1))] if m else name

    def bare(objects, libraries=()):
        offered = {strip(n) for t in objects.values() for n in offers_and_needs(t)[0]}
        return {n for n in unresolved(objects, libraries) if strip(n) not in offered}

    rejects(lab37.check_unresolved, bare, match="exactly")


def test_unresolved_rejects_ignoring_the_libraries():
    rejects(lab37.check_unresolved, lambda o, libs=(): unresolved(o), match="libraries")


def test_unresolved_rejects_the_got_as_undefined():
    rejects(
        lab37.check_unresolved,
        lambda o, libs=(): _truth_free_unresolved(o, libs, got=False),
        match="GLOBAL_OFFSET_TABLE",
    )


def test_unresolved_rejects_one_object_at_a_time():
    def per_object(objects, libraries=()):
        out = set()
        for text in objects.values():
            out |= unresolved({"x": text}, libraries)
        return out

    rejects(lab37.check_unresolved, per_object, match="across every object")


def test_unresolved_rejects_the_reference():
    def through_reference(objects, libraries=()):
        symbols.undefined_in_message("")
        return unresolved(objects, libraries)

    rejects(
        lab37.check_unresolved, through_reference, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 37.3
def _call(lib, alpha, x, y, types=ARGTYPES, incx=None, incy=None, n=None):
    fn = lib.lab37_axpy
    fn.argtypes = types
    incx = x.strides[0] // 4 if incx is None else incx
    incy = y.strides[0] // 4 if incy is None else incy
    fn(x.size if n is None else n, alpha, x.ctypes.data, incx, y.ctypes.data, incy)


def test_axpy_rejects_strides_in_bytes():
    def in_bytes(lib, alpha, x, y):
        _ok_arrays(x, y)
        _call(lib, alpha, x, y, incx=x.strides[0], incy=y.strides[0])

    rejects(lab37.check_axpy, in_bytes, match="outside y")


def test_axpy_rejects_ignored_strides():
    def contiguous(lib, alpha, x, y):
        _ok_arrays(x, y)
        _call(lib, alpha, x, y, incx=1, incy=1)

    rejects(lab37.check_axpy, contiguous, match="outside y|y\\[")


def test_axpy_rejects_alpha_as_a_double():
    def double_alpha(lib, alpha, x, y):
        _ok_arrays(x, y)
        _call(lib, alpha, x, y, types=[ctypes.c_long, ctypes.c_double, *ARGTYPES[2:]])

    rejects(lab37.check_axpy, double_alpha, match="C float|C double")


def test_axpy_rejects_numpy_doing_the_work():
    def numpy_only(lib, alpha, x, y):
        _ok_arrays(x, y)
        y += np.float32(alpha) * x

    rejects(lab37.check_axpy, numpy_only, match="processed no element")


def test_axpy_rejects_a_copy_of_y():
    def copied(lib, alpha, x, y):
        _ok_arrays(x, y)
        _call(lib, alpha, np.ascontiguousarray(x), np.ascontiguousarray(y))

    rejects(lab37.check_axpy, copied, match="copy")


def test_axpy_rejects_two_calls():
    def twice(lib, alpha, x, y):
        _ok_arrays(x, y)
        half = x.size // 2
        _call(lib, alpha, x[:half], y[:half])
        _call(lib, alpha, x[half:], y[half:])
        _call(lib, 0.0, x[:half], y[:half])

    rejects(lab37.check_axpy, twice, match="call it once")


def test_axpy_rejects_no_dtype_check():
    def trusting(lib, alpha, x, y):
        _call(lib, alpha, x, y)

    rejects(lab37.check_axpy, trusting, match="must raise TypeError")


def test_axpy_rejects_the_wrong_error_type():
    def wrong_error(lib, alpha, x, y):
        if x.dtype != np.float32 or y.dtype != np.float32:
            raise ValueError("float32 only")
        if x.shape != y.shape:
            raise ValueError("lengths")
        _call(lib, alpha, x, y)

    rejects(lab37.check_axpy, wrong_error, match="must raise TypeError")


def test_axpy_reports_a_crash_without_dying():
    def huge(lib, alpha, x, y):
        _ok_arrays(x, y)
        _call(lib, alpha, x, y, n=x.size * 10**9, incx=1, incy=1)

    rejects(lab37.check_axpy, huge, match="crashed the process")


def test_axpy_rejects_the_reference():
    def through_reference(lib, alpha, x, y):
        _ok_arrays(x, y)
        loader.bind(lib)

    rejects(lab37.check_axpy, through_reference, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 37.4
def test_pages_rejects_ceil_of_length():
    rejects(
        lab37.check_pages_touched,
        lambda r, page=4096: sum(-(-n // page) for _, n in r),
        match="crosses into the next",
    )


def test_pages_rejects_an_inclusive_end():
    def inclusive(r, page=4096):
        return len({p for o, n in r if n for p in range(o // page, (o + n) // page + 1)})

    rejects(lab37.check_pages_touched, inclusive, match="offset \\+ length - 1")


def test_pages_rejects_an_empty_range_touching_a_page():
    def empty(r, page=4096):
        return len({p for o, n in r for p in range(o // page, (o + max(n, 1) - 1) // page + 1)})

    rejects(lab37.check_pages_touched, empty, match="empty range")


def test_pages_rejects_counting_shared_pages_twice():
    def summed(r, page=4096):
        return sum((o + n - 1) // page - o // page + 1 for o, n in r if n)

    rejects(lab37.check_pages_touched, summed, match="once")


def test_pages_rejects_a_fixed_page_size():
    rejects(
        lab37.check_pages_touched, lambda r, page=4096: pages_touched(r), match="page size given"
    )


def test_pages_rejects_the_reference():
    def through_reference(r, page=4096):
        return pages_touched(r, page) + 0 * osmem.counters().minflt

    rejects(
        lab37.check_pages_touched, through_reference, match="reference", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- all
def test_every_check_keeps_its_truth_tables():
    def rebinds(objects, libraries=()):
        _truth.LINKER_MADE = frozenset({"_GLOBAL_OFFSET_TABLE_", "helper"})
        return unresolved(objects, libraries)

    rejects(lab37.check_unresolved, rebinds, match="grader's own tables")
    assert frozenset({"_GLOBAL_OFFSET_TABLE_"}) == _truth.LINKER_MADE


def test_every_check_fails_on_an_unwritten_exercise():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 37.x")

    for check in (
        lab37.check_offers_and_needs,
        lab37.check_unresolved,
        lab37.check_axpy,
        lab37.check_pages_touched,
    ):
        with pytest.raises(CheckFailure, match="not implemented"):
            check(stub)


MUSTS = [
    ("37.1", "Exercise code may not call `minitorch.native`", "test_offers_rejects_the_reference"),
    (
        "37.1",
        "a weak undefined `w`/`v` is in neither",
        "test_offers_rejects_weak_undefined_as_needed",
    ),
    ("37.1", "other lower-case letters are local", "test_offers_rejects_local_symbols_offered"),
    ("37.1", "Keep the names exactly as nm prints them", "test_offers_rejects_demangled_names"),
    (
        "37.1",
        "every upper-case letter except `U`, and `u`",
        "test_offers_rejects_unique_globals_left_out",
    ),
    ("37.1", "every upper-case letter except `U`", "test_offers_rejects_data_left_out"),
    (
        "37.1",
        "the checks compile, list and link their own C++",
        "test_every_check_keeps_its_truth_tables",
    ),
    (
        "37.2",
        "Resolve across every object of the link",
        "test_unresolved_rejects_one_object_at_a_time",
    ),
    ("37.2", "match names exactly", "test_unresolved_rejects_matching_demangled_names"),
    ("37.2", "not by the linker itself", "test_unresolved_rejects_the_got_as_undefined"),
    ("37.2", "no library", "test_unresolved_rejects_ignoring_the_libraries"),
    (
        "37.2",
        "a static definition elsewhere",
        "test_unresolved_rejects_static_definitions_resolving",
    ),
    ("37.3", "**in place**", "test_axpy_rejects_a_copy_of_y"),
    ("37.3", "**one call of `lab37_axpy`**", "test_axpy_rejects_two_calls"),
    ("37.3", "the work must be the call's", "test_axpy_rejects_numpy_doing_the_work"),
    ("37.3", "its stride in elements", "test_axpy_rejects_strides_in_bytes"),
    ("37.3", "`c_float`", "test_axpy_rejects_alpha_as_a_double"),
    ("37.3", "**must raise `TypeError`**", "test_axpy_rejects_the_wrong_error_type"),
    ("37.3", "before C sees a pointer", "test_axpy_rejects_no_dtype_check"),
    ("37.3", "a call that crashes is reported", "test_axpy_reports_a_crash_without_dying"),
    ("37.4", "an empty range touches none", "test_pages_rejects_an_empty_range_touching_a_page"),
    (
        "37.4",
        "a page shared by several ranges counts once",
        "test_pages_rejects_counting_shared_pages_twice",
    ),
    ("37.4", "a range ending exactly on a page boundary", "test_pages_rejects_an_inclusive_end"),
    ("37.4", "16 KiB and 2 MiB pages", "test_pages_rejects_a_fixed_page_size"),
    ("37.1", "Skip blank lines and lines ending in `:`", "test_offers_reads_an_archive_listing"),
    ("37.1", "Without g++ the checks say so", "test_every_check_says_so_without_g_plus_plus"),
    (
        "37.1",
        "the checks compile, list and link their own C++",
        "test_a_fake_tool_or_a_planted_object_changes_nothing",
    ),
    ("37.3", "the work must be the call's", "test_axpy_rejects_a_scratch_call_and_numpy"),
    ("37.3", "arrays of different lengths `ValueError`", "test_axpy_rejects_no_length_check"),
    (
        "37.3",
        "nothing outside `y`'s elements changed",
        "test_axpy_rejects_strides_in_bytes",
    ),
    (
        "37.2",
        "a mangled name is not its C twin",
        "test_unresolved_rejects_matching_demangled_names",
    ),
    (
        "37.1",
        "never into your checkout",
        "test_builds_go_to_temporary_directories_never_the_checkout",
    ),
    (
        "37.5",
        "your function may not call torch nor the reference",
        "test_op_counts_refuses_torch_the_reference_and_child_processes",
    ),
    ("37.5", "a missing key counts 0", "test_op_counts_reads_a_missing_key_as_zero"),
    ("37.5", "compares every count exactly", "test_op_counts_solution_and_mistakes_in_one_profile"),
    ("37.6", "as a 1-D int array or list", "test_tiled_trace_accepts_a_list_or_an_int_array"),
    ("37.6", "compares it element by element", "test_tiled_trace_solution_and_mistakes"),
    (
        "37.6",
        "without it the check says so and cannot grade",
        "test_tiled_trace_without_valgrind_says_so",
    ),
]


# --------------------------------------------------------------------------- 37.5
def op_counts(cfg, head=True, per_head=False, one=False, always_addmm=False):
    n = cfg["n_layer"]
    bias = cfg["bias"] or always_addmm
    r = cfg["n_head"] if per_head else 1
    return {
        "aten::embedding": 2,
        "aten::layer_norm": 2 * n + 1,
        "aten::addmm": 4 * n if bias else 0,
        "aten::mm": (0 if bias else 4 * n) + int(head),
        "aten::bmm": (1 if one else 2) * n * r,
        "aten::softmax": n * r,
        "aten::gelu": n,
    }


def test_op_counts_solution_and_mistakes_in_one_profile():
    lab37.check_op_counts(op_counts)  # the child profiles every configuration once per process
    rejects(lab37.check_op_counts, lambda c: op_counts(c, head=False), match="LM head")
    rejects(lab37.check_op_counts, lambda c: op_counts(c, per_head=True), match="folded into")
    rejects(lab37.check_op_counts, lambda c: op_counts(c, one=True), match="two matmuls")
    rejects(lab37.check_op_counts, lambda c: op_counts(c, always_addmm=True), match="torch.mm")
    rejects(lab37.check_op_counts, lambda c: {**op_counts(c), "aten::linear": 1}, match="not among")


def test_op_counts_rejects_the_reference_and_torch():
    from minitorch.native.profiled import predicted_op_counts

    rejects(
        lab37.check_op_counts, predicted_op_counts, match="reference", error=ReferenceCalledError
    )

    def measured(cfg):
        from minitorch.native.profiled import profile_counts

        return profile_counts(cfg)

    with pytest.raises(Exception, match=r"reference|torch"):
        lab37.check_op_counts(measured)


def test_reference_profile_matches_its_closed_form():
    from minitorch.native import profiled

    for bias in (True, False):
        cfg = dict(profiled.TINY_SIZES, bias=bias, n_layer=3)
        assert profiled.profile_counts(cfg) == profiled.predicted_op_counts(cfg)
    assert profiled.top_operator(profiled.profile(profiled.TINY_SIZES, planted=True))[:2] == (
        "aten::mm",
        64,
    )


# --------------------------------------------------------------------------- 37.6
def tiled(n, tile, swap=False, incl=False, no_c=False):
    out, b0, c0, e = [], 8 * n * n, 16 * n * n, int(incl)
    for i0 in range(0, n, tile):
        for k0 in range(0, n, tile):
            for j0 in range(0, n, tile):
                for i in range(i0, min(i0 + tile + e, n)):
                    for p in range(k0, min(k0 + tile + e, n)):
                        for j in range(j0, min(j0 + tile + e, n)):
                            out += [
                                8 * (i * n + p),
                                b0 + 8 * ((j * n + p) if swap else (p * n + j)),
                            ]
                            if not no_c:
                                out.append(c0 + 8 * (i * n + j))
    return out


needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="no valgrind")


@needs_valgrind
def test_tiled_trace_solution_and_mistakes():
    lab37.check_tiled_trace(tiled)
    rejects(lab37.check_tiled_trace, lambda n, t: tiled(n, t, swap=True), match="row-major")
    rejects(lab37.check_tiled_trace, lambda n, t: tiled(n, t, incl=True), match="exclusive")
    rejects(lab37.check_tiled_trace, lambda n, t: tiled(n, t, no_c=True), match="write-allocate")
    doubled = lambda n, t: [a for a in tiled(n, t) for a in ([a, a] if a >= 16 * n * n else [a])]  # noqa: E731
    rejects(lab37.check_tiled_trace, doubled, match="lists C once")
    rejects(lab37.check_tiled_trace, lambda n, t: [[0]], match="1-D")


@needs_valgrind
def test_tiled_trace_rejects_lab06_reference():
    from minitorch.kernels.traces import blocked_trace

    rejects(lab37.check_tiled_trace, blocked_trace, match="reference", error=ReferenceCalledError)


def test_tiled_trace_without_valgrind_says_so(monkeypatch):
    monkeypatch.setitem(cachesim._ENV, "PATH", "/nonexistent")
    with pytest.raises(CheckFailure, match="needs valgrind"):
        cachesim.valgrind()
