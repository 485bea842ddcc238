"""Lab 37's own ground truth: g++, nm and ld run by the grader, plain parsers and set loops.

Nothing here calls ``minitorch.native``: the grader compiles its sources with the system g++
itself, each time in a fresh private temporary directory (never a file found on disk, never the
repository; the results are kept per process, by source), reads ``nm -P`` with its own parser,
links with GNU ld and reads ld's own ``undefined reference`` lines, builds its own axpy kernel
with a call counter only the grader reads, counts pages with a set, and measures page faults in
a child process.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from a2s.checks.errors import CheckFailure

# the reference, blocked for every exercise of the lab while the learner's code runs
NATIVE = tuple(
    f"minitorch.native.{m}"
    for m in (
        "build",
        "symbols",
        "linking",
        "loader",
        "osmem",
        "cachegrind",
        "toolchain",
        "ops",
        "profiled",
        "torchext",
    )
)
LINKER_MADE = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # ld defines it for every PIC link
FLAGS = ("-O0", "-fPIC", "-fno-stack-protector", "-fno-exceptions", "-std=c++17")


# the tools' environment, bound at import: a PATH, COMPILER_PATH or LD_PRELOAD set later by the
# learner's code (a fake nm or g++ first on PATH) changes nothing the grader runs
_ENV = {"PATH": os.environ.get("PATH") or os.defpath, "LC_ALL": "C"}


def tool(name: str) -> str:
    """The path of ``name`` (on the PATH of import time), or a clear failure saying lab 37
    needs it."""
    path = shutil.which(name, path=_ENV["PATH"])
    if path is None:
        raise CheckFailure(
            f"lab 37 needs {name} (apt-get install g++ binutils); this check compiles and links "
            "its own code with it and cannot grade without it."
        )
    return path


def _run(cmd: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**_ENV, "TMPDIR": str(cwd)}
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def compiled(source: str, where: Path, flags: Sequence[str] = FLAGS) -> Path:
    """``source`` (C++) compiled to an object (``-c``) in ``where``, a directory the caller
    has just made (never a file found on disk: a cache the learner's code can write to could
    hand the grader any object)."""
    key = hashlib.sha256(f"{' '.join(flags)}\0{source}".encode()).hexdigest()[:20]
    where.mkdir(exist_ok=True)
    src, out = where / f"{key}.cpp", where / f"{key}.o"
    src.write_text(source, encoding="utf-8")
    done = _run([tool("g++"), *flags, "-c", str(src), "-o", str(out)], cwd=where)
    if done.returncode:
        raise CheckFailure(f"the grader's own build failed: {done.stderr.strip()[-800:]}")
    return out


def nm_text(path: Path) -> str:
    """``nm -P`` of an object, as the learner would get it."""
    done = _run([tool("nm"), "-P", str(path)], cwd=path.parent)
    if done.returncode:
        raise CheckFailure(f"nm failed on the grader's own object: {done.stderr.strip()}")
    return done.stdout


@functools.lru_cache(maxsize=512)  # per process, by source: results, never files, are kept
def listing(source: str) -> str:
    """``nm -P`` of ``source`` compiled now in a fresh private directory."""
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        return nm_text(compiled(source, Path(tmp)))


_LD_UNDEFINED = re.compile(r"undefined reference to [`'‘](.+?)['’]")


def ld_undefined(objects: Sequence[Path]) -> list[str]:
    """The names GNU ld reports undefined linking ``objects`` into one .so (sorted)."""
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        cmd = [tool("g++"), "-shared", "-Wl,--no-undefined", "-Wl,--no-demangle"]
        done = _run([*cmd, *map(str, objects), "-o", str(Path(tmp) / "linked.so")], Path(tmp))
    found = sorted(set(_LD_UNDEFINED.findall(done.stderr)))
    if done.returncode and not found:
        raise CheckFailure(f"the grader's own link failed: {done.stderr.strip()[-800:]}")
    return found


@functools.lru_cache(maxsize=256)
def link_of(sources: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(``nm -P`` of each source, the names ld leaves undefined linking them all), every
    object compiled now in one fresh private directory."""
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        objs = [compiled(src, Path(tmp, str(i))) for i, src in enumerate(sources)]
        return tuple(nm_text(o) for o in objs), tuple(ld_undefined(objs))


# --------------------------------------------------------------------------- 37.1 / 37.2
def offers_and_needs(
    text: str,
    weak_needed: bool = False,
    local_offered: bool = False,
    weak_offered: bool = True,
    data_offered: bool = True,
    unique_offered: bool = True,
) -> tuple[list[str], list[str]]:
    """(offered, needed) names of one ``nm -P`` listing, each sorted (the switches: mistakes)."""
    offers: set[str] = set()
    needs: set[str] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.rstrip().endswith(":"):
            continue
        name, kind = parts[0], parts[1]
        if kind == "U" or (weak_needed and kind in "wv"):
            needs.add(name)
        elif kind in "wv":
            continue
        elif kind == "u":
            if unique_offered:
                offers.add(name)
        elif kind.isupper():
            if kind in "WV" and not weak_offered:
                continue
            if kind in "DBRCGS" and not data_offered:
                continue
            offers.add(name)
        elif local_offered and kind.isalpha():
            offers.add(name)
    return sorted(offers), sorted(needs)


def unresolved(
    objects: Mapping[str, str],
    libraries: Iterable[str] = (),
    *,
    _made: frozenset[str] = LINKER_MADE,  # bound now: a rebound module attribute changes nothing
    **mistake: Any,
) -> list[str]:
    """Names some object needs that no object, library or the linker defines (sorted)."""
    offered = set(libraries) | set(_made)
    needed: set[str] = set()
    for text in objects.values():
        offers, needs = offers_and_needs(text, **mistake)
        offered |= set(offers)
        needed |= set(needs)
    return sorted(needed - offered)


def names(got: Any, label: str, what: str) -> list[str]:
    """A collection of names (set, frozenset, list, tuple of ``str``) as a sorted list."""
    if type(got) not in (set, frozenset, list, tuple) or any(type(n) is not str for n in got):
        raise CheckFailure(
            f"[{label}] {what} must be a set (or list) of symbol names (str), got {got!r:.200}"
        )
    return sorted(set(got))


# --------------------------------------------------------------------------- 37.3
AXPY = """\
// only the grader reads these (through lab37_done, lab37_last): the count of the work, and
// the arguments of the last call that did any (its arrays are y and x, not a scratch buffer)
static long done_elements = 0;
static long last_n = 0, last_incx = 0, last_incy = 0;
static const float* last_x = 0;
static float* last_y = 0;
static float last_alpha = 0;

extern "C" void lab37_axpy(long n, float alpha, const float* x, long incx, float* y, long incy) {
    for (long i = 0; i < n; ++i) y[i * incy] += alpha * x[i * incx];
    done_elements += n;
    if (n > 0) {
        last_n = n, last_incx = incx, last_incy = incy, last_x = x, last_y = y;
        last_alpha = alpha;
    }
}

extern "C" long lab37_done(void) { return done_elements; }

extern "C" void lab37_last(long* out, float* alpha) {
    out[0] = last_n, out[1] = (long)last_x, out[2] = last_incx;
    out[3] = (long)last_y, out[4] = last_incy;
    *alpha = last_alpha;
}
"""
AXPY_FLAGS = ("-O2", "-fPIC", "-ffp-contract=off", "-std=c++17")


@functools.lru_cache(maxsize=1)
def axpy_library() -> Path:
    """The axpy kernel built once per process in a private temporary directory, never the
    shared cache (a library the learner's code could have replaced there is never loaded;
    once loaded, ``dlopen`` of the same path returns the library already mapped)."""
    gxx = tool("g++")
    tmp = Path(tempfile.mkdtemp(prefix="a2s37-axpy-"))
    atexit.register(shutil.rmtree, tmp, True)
    src, lib = tmp / "axpy.cpp", tmp / "liblab37_axpy.so"
    src.write_text(AXPY, encoding="utf-8")
    done = _run([gxx, *AXPY_FLAGS, "-shared", str(src), "-o", str(lib)], cwd=tmp)
    if done.returncode:
        raise CheckFailure(f"the grader's own build failed: {done.stderr.strip()[-800:]}")
    return lib


# --------------------------------------------------------------------------- 37.4
def pages_touched(
    ranges: Sequence[tuple[int, int]],
    page: int = 4096,
    per_range: bool = False,
    end_inclusive: bool = False,
    empty_one: bool = False,
    no_union: bool = False,
) -> int:
    """Distinct pages of a page-aligned buffer that the byte ranges ``(offset, length)`` touch
    (the switches are the modelled mistakes)."""
    seen: set[int] = set()
    total = 0
    for off, length in ranges:
        if per_range:  # ceil(length / page) a range, wherever it starts
            total += -(-length // page)
            continue
        if length == 0 and not empty_one:
            continue
        end = off + max(length, 1) - (0 if end_inclusive else 1)
        pages = range(off // page, end // page + 1)
        total += len(pages)
        seen.update(pages)
    return total if per_range or no_union else len(seen)


_CHILD = r"""
import mmap, os, resource, sys
path, size = sys.argv[1], int(sys.argv[2])
ranges = [tuple(map(int, r.split(":"))) for r in sys.argv[3:]]
fd = os.open(path, os.O_RDONLY)
def load(buf):
    view = memoryview(buf)
    for off, n in ranges:
        if n:
            os.preadv(fd, [view[off:off + n]], off)
    view.release()
def fresh():
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buf.madvise(mmap.MADV_NOHUGEPAGE)
    return buf
warm = fresh(); warm.write(b"\1" * size); load(warm)  # the interpreter's own pages, first
buf = fresh()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
load(buf)
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(after - before)
"""


def measured_read_faults(ranges: Sequence[tuple[int, int]], size: int) -> int | None:
    """Minor faults of ``preadv`` of the ranges into a fresh buffer, in a child process.

    None where it cannot be measured (no ``/proc``-style rusage, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        path = Path(tmp) / "checkpoint.bin"
        path.write_bytes(os.urandom(size))
        args = [f"{o}:{n}" for o, n in ranges]
        done = _run([sys.executable, "-c", _CHILD, str(path), str(size), *args], cwd=Path(tmp))
    if done.returncode:
        return None
    return int(done.stdout.split()[-1])
