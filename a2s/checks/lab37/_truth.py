"""Lab 37's own ground truth: g++, nm and ld run by the grader, plain parsers and set loops.

Nothing here calls ``minitorch.native``: the grader compiles its sources with the system g++
itself (cached under ``$A2S_NATIVE_CACHE/lab37-grader``, else ``~/.cache/a2s/native/...``;
never in the repository), reads ``nm -P`` with its own parser, links with GNU ld and reads
ld's own ``undefined reference`` lines, builds its own axpy kernel with a call counter only
the grader reads, counts pages with a set, and measures page faults in a child process.
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
    for m in ("build", "symbols", "linking", "loader", "osmem", "cachegrind", "toolchain", "ops")
)
LINKER_MADE = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # ld defines it for every PIC link
FLAGS = ("-O0", "-fPIC", "-fno-stack-protector", "-fno-exceptions", "-std=c++17")


def tool(name: str) -> str:
    """The path of ``name``, or a clear failure saying lab 37 needs it."""
    path = shutil.which(name)
    if path is None:
        raise CheckFailure(
            f"lab 37 needs {name} (apt-get install g++ binutils); this check compiles and links "
            "its own code with it and cannot grade without it."
        )
    return path


def _cache() -> Path:
    root = os.environ.get("A2S_NATIVE_CACHE") or str(Path.home() / ".cache" / "a2s" / "native")
    path = Path(root) / "lab37-grader"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(cmd: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, cwd=cwd)


def compiled(source: str, kind: str = "object", flags: Sequence[str] = FLAGS) -> Path:
    """``source`` (C++) compiled to an object (``-c``) or a shared object, cached by content."""
    key = hashlib.sha256(f"{kind}\0{' '.join(flags)}\0{source}".encode()).hexdigest()[:20]
    out = _cache() / (f"{key}.o" if kind == "object" else f"lib{key}.so")
    if out.exists():
        return out
    gxx = tool("g++")
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        src = Path(tmp) / "src.cpp"
        src.write_text(source, encoding="utf-8")
        part = Path(tmp) / out.name
        mode = ["-c"] if kind == "object" else ["-shared"]
        done = _run([gxx, *flags, *mode, str(src), "-o", str(part)])
        if done.returncode:
            raise CheckFailure(f"the grader's own build failed: {done.stderr.strip()[-800:]}")
        os.replace(part, out)  # atomic: a concurrent grader sees a whole file or none
    return out


def nm_text(path: Path) -> str:
    """``nm -P`` of an object, as the learner would get it."""
    done = _run([tool("nm"), "-P", str(path)])
    if done.returncode:
        raise CheckFailure(f"nm failed on the grader's own object: {done.stderr.strip()}")
    return done.stdout


_LD_UNDEFINED = re.compile(r"undefined reference to [`'‘](.+?)['’]")


def ld_undefined(objects: Sequence[Path]) -> list[str]:
    """The names GNU ld reports undefined linking ``objects`` into one .so (sorted)."""
    return list(_ld_undefined(tuple(str(p) for p in objects)))


@functools.lru_cache(maxsize=256)  # per process: the objects' names are hashes of their sources
def _ld_undefined(objects: tuple[str, ...]) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        cmd = [tool("g++"), "-shared", "-Wl,--no-undefined", "-Wl,--no-demangle"]
        done = _run([*cmd, *objects, "-o", str(Path(tmp) / "linked.so")])
    found = tuple(sorted(set(_LD_UNDEFINED.findall(done.stderr))))
    if done.returncode and not found:
        raise CheckFailure(f"the grader's own link failed: {done.stderr.strip()[-800:]}")
    return found


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
static long done_elements = 0;  // only lab37_done() reads it: the grader's count of the work

extern "C" void lab37_axpy(long n, float alpha, const float* x, long incx, float* y, long incy) {
    for (long i = 0; i < n; ++i) y[i * incy] += alpha * x[i * incx];
    done_elements += n;
}

extern "C" long lab37_done(void) { return done_elements; }
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
    done = _run([gxx, *AXPY_FLAGS, "-shared", str(src), "-o", str(lib)])
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
        done = _run([sys.executable, "-c", _CHILD, str(path), str(size), *args])
    if done.returncode:
        return None
    return int(done.stdout.split()[-1])
