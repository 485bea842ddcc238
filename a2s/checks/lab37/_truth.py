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


# --------------------------------------------------------------------------- 37.5
OPS = (
    "aten::embedding",
    "aten::layer_norm",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::softmax",
    "aten::gelu",
)
CONFIG_KEYS = ("vocab_size", "block_size", "n_layer", "n_head", "d_model", "batch", "bias")

# the grader's own model, run in a child process under torch's profiler: the top-level events
# (no parent event) of one forward are counted, for every configuration given on stdin
_PROFILE_CHILD = r"""
import json, sys
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

OPS = set(json.loads(sys.argv[1]))

def run(cfg):
    V, T, L, H, C, B, bias = (cfg[k] for k in json.loads(sys.argv[2]))
    g = torch.Generator().manual_seed(1)
    rnd = lambda *s: torch.randn(*s, generator=g) * 0.02
    layers = [[(rnd(o, i), rnd(o) if bias else None)
               for o, i in ((3 * C, C), (C, C), (4 * C, C), (C, 4 * C))] for _ in range(L)]
    wte, wpe, head = rnd(V, C), rnd(T, C), rnd(V, C)
    idx = torch.randint(0, V, (B, T), generator=g)
    hd = C // H
    def lin(x, wb):
        w, b = wb
        return torch.mm(x, w.t()) if b is None else torch.addmm(b, x, w.t())
    def split_heads(z):
        return z.reshape(B, T, H, hd).transpose(1, 2).reshape(B * H, T, hd)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = F.embedding(idx, wte) + F.embedding(torch.arange(T), wpe)
        x = x.reshape(B * T, C)
        for qkv, proj, fc1, fc2 in layers:
            q, k, v = lin(F.layer_norm(x, (C,)), qkv).split(C, dim=1)
            s = torch.bmm(split_heads(q), split_heads(k).transpose(1, 2)) / hd ** 0.5
            p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
            y = torch.bmm(p, split_heads(v)).reshape(B, H, T, hd).transpose(1, 2)
            x = x + lin(y.reshape(B * T, C), proj)
            x = x + lin(F.gelu(lin(F.layer_norm(x, (C,)), fc1)), fc2)
        torch.mm(F.layer_norm(x, (C,)), head.t())
    counts = dict.fromkeys(sorted(OPS), 0)
    for e in prof.events():
        if e.cpu_parent is None and e.name in OPS:
            counts[e.name] += 1
    return counts

print(json.dumps([run(c) for c in json.load(sys.stdin)]))
"""


@functools.lru_cache(maxsize=1)
def _profiled() -> dict[tuple[Any, ...], dict[str, int]]:
    """The counts profiled so far in this process, by configuration (kept per process)."""
    return {}


def _key(cfg: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(cfg[k] for k in CONFIG_KEYS)


def profile_all(configs: Sequence[Mapping[str, Any]]) -> None:
    """Profile every configuration not yet profiled, all in one child process."""
    import json

    seen = _profiled()
    todo = {_key(c): {k: c[k] for k in CONFIG_KEYS} for c in configs if _key(c) not in seen}
    if not todo:
        return
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        args = [sys.executable, "-c", _PROFILE_CHILD, json.dumps(OPS), json.dumps(CONFIG_KEYS)]
        env = {**_ENV, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(
            args,
            input=json.dumps(list(todo.values())),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp,
            env=env,
        )
    if done.returncode:
        raise CheckFailure(f"the grader's own profiler run failed: {done.stderr.strip()[-800:]}")
    for key, counts in zip(todo, json.loads(done.stdout.splitlines()[-1]), strict=True):
        seen[key] = {op: int(counts[op]) for op in OPS}


def profiled_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """``{op: top-level calls}`` of one forward of ``cfg`` under torch's profiler."""
    profile_all([cfg])
    return dict(_profiled()[_key(cfg)])


def closed_counts(
    cfg: Mapping[str, Any],
    no_head: bool = False,
    per_head: bool = False,
    one_matmul: bool = False,
    bias_always: bool = False,
    per_batch: bool = False,
) -> dict[str, int]:
    """The counts from the configuration (the switches are the modelled mistakes)."""
    n, h, b = cfg["n_layer"], cfg["n_head"], cfg["batch"]
    bias = bool(cfg["bias"]) or bias_always
    rep = h if per_head else 1
    rows = b if per_batch else 1
    return {
        "aten::embedding": 2,
        "aten::layer_norm": 2 * n + 1,
        "aten::addmm": 4 * n * rows if bias else 0,
        "aten::mm": (0 if bias else 4 * n * rows) + (0 if no_head else rows),
        "aten::bmm": (1 if one_matmul else 2) * n * rep,
        "aten::softmax": n * rep,
        "aten::gelu": n,
    }


# --------------------------------------------------------------------------- 37.6
def tiled_trace(
    n: int, tile: int, b_transposed: bool = False, inclusive: bool = False, no_c: bool = False
) -> list[int]:
    """Byte addresses of ``a2s_matmul_tiled(a, b, c, n, n, n, tile)``, a plain loop of its C
    (A at 0, B at 8 n^2, C at 16 n^2; per iteration A, B, C; the switches: mistakes)."""
    b0, c0, out = 8 * n * n, 16 * n * n, []
    stop = 1 if inclusive else 0
    for i0 in range(0, n, tile):
        for k0 in range(0, n, tile):
            for j0 in range(0, n, tile):
                for i in range(i0, min(i0 + tile + stop, n)):
                    for p in range(k0, min(k0 + tile + stop, n)):
                        for j in range(j0, min(j0 + tile + stop, n)):
                            out.append(8 * (i * n + p))
                            out.append(b0 + 8 * ((j * n + p) if b_transposed else (p * n + j)))
                            if not no_c:
                                out.append(c0 + 8 * (i * n + j))
    return out


# the kernel and its driver, the grader's own copies (kernels.cpp's tiled nest, cg_main.cpp's
# cold start), built once per process in a private directory
_CG_KERNEL = r"""
#include <cstdio>
#include <cstdlib>
static long lo(long a, long b) { return a < b ? a : b; }
extern "C" __attribute__((noinline)) void lab37_tiled(const double* a, const double* b,
                                                     double* c, long n, long tile) {
  for (long i0 = 0; i0 < n; i0 += tile)
    for (long k0 = 0; k0 < n; k0 += tile)
      for (long j0 = 0; j0 < n; j0 += tile)
        for (long i = i0; i < lo(i0 + tile, n); ++i)
          for (long p = k0; p < lo(k0 + tile, n); ++p)
            for (long j = j0; j < lo(j0 + tile, n); ++j)
              c[i * n + j] += a[i * n + p] * b[p * n + j];
}
extern "C" __attribute__((noinline)) double lab37_flush(const double* junk, long count) {
  double s = 0.0;
  for (long i = 0; i < count; i += 8) s += junk[i];
  return s;
}
int main(int argc, char** argv) {
  const long n = std::atol(argv[1]), tile = std::atol(argv[2]);
  const size_t align = size_t(1) << 21, bytes = 3 * size_t(n) * size_t(n) * sizeof(double);
  const size_t padded = (bytes + align - 1) / align * align;
  double* base = static_cast<double*>(std::aligned_alloc(align, padded));
  double* junk = static_cast<double*>(std::calloc(1L << 20, sizeof(double)));
  for (long i = 0; i < 3 * n * n; ++i) base[i] = double(i % 7);
  double sink = lab37_flush(junk, 1L << 20);
  lab37_tiled(base, base + n * n, base + 2 * n * n, n, tile);
  for (long i = 0; i < n * n; ++i) sink += base[2 * n * n + i];
  std::printf("%f\n", sink);
  return 0;
}
"""
CG_FLAGS = ("-O1", "-fno-tree-vectorize", "-std=c++17")


def valgrind() -> str:
    """valgrind's path, or a clear failure saying exercise 37.6 needs it."""
    path = shutil.which("valgrind", path=_ENV["PATH"])
    if path is None:
        raise CheckFailure(
            "exercise 37.6 needs valgrind (apt-get install valgrind): this check runs the "
            "kernel under cachegrind and cannot grade without it."
        )
    return path


@functools.lru_cache(maxsize=1)
def _cg_program() -> Path:
    gxx = tool("g++")
    tmp = Path(tempfile.mkdtemp(prefix="a2s37-cg-"))
    atexit.register(shutil.rmtree, tmp, True)
    src, exe = tmp / "tiled.cpp", tmp / "tiled"
    src.write_text(_CG_KERNEL, encoding="utf-8")
    done = _run([gxx, *CG_FLAGS, str(src), "-o", str(exe)], cwd=tmp)
    if done.returncode:
        raise CheckFailure(f"the grader's own build failed: {done.stderr.strip()[-800:]}")
    return exe


def _geometry(size: int, ways: int, line: int) -> str:
    return f"{size},{ways},{line}"


@functools.lru_cache(maxsize=64)
def cachegrind_misses(
    n: int, tile: int, d1: tuple[int, int, int], ll: tuple[int, int, int]
) -> tuple[int, int]:
    """(D1 misses, LL misses) of ``lab37_tiled`` alone, reads and writes, under cachegrind
    with D1 and LL given as (size, ways, line); I1 fixed at 32 KiB 8-way."""
    vg, exe = valgrind(), _cg_program()
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            vg,
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=no",
            "--I1=32768,8,64",
            f"--D1={_geometry(*d1)}",
            f"--LL={_geometry(*ll)}",
            f"--cachegrind-out-file={out}",
            str(exe),
            str(n),
            str(tile),
        ]
        done = _run(cmd, cwd=Path(tmp))
        if done.returncode:
            raise CheckFailure(f"the grader's cachegrind run failed: {done.stderr.strip()[-800:]}")
        text = out.read_text(encoding="utf-8")
    events: list[str] = []
    counts: dict[str, int] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split(":", 1)[1].split()
        elif line.startswith("fn="):
            inside = line[3:].strip() == "lab37_tiled"
        elif inside and line[:1].isdigit():
            for name, value in zip(events, line.split()[1:], strict=False):
                counts[name] = counts.get(name, 0) + int(value)
    if not counts:
        raise CheckFailure("the grader's cachegrind run has no counts for lab37_tiled")
    return counts["D1mr"] + counts["D1mw"], counts["DLmr"] + counts["DLmw"]
