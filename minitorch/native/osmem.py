"""The operating system under a load: a file by ``read`` vs by ``mmap``, page faults, RSS.

``read`` copies the file from the kernel's page cache into memory the process owns: the
buffer's pages are new anonymous memory, each one faulted in (a *minor* fault: no disk I/O,
the kernel finds or zeroes a page) when the copy first writes it, and they count in the
process's anonymous resident set (``RssAnon``). ``mmap`` copies nothing: the file's pages in
the page cache are mapped into the address space, a page is faulted in on its first touch
(Linux maps several neighbours per fault, "fault-around", when they are already cached),
and the resident pages count as file-backed (``RssFile``); pages never touched cost nothing.
A *major* fault is one that waits for the disk: a file just written is in the page cache,
so both loads here see minor faults only.

The counters are the process's own: ``getrusage(RUSAGE_SELF)`` (``ru_minflt``,
``ru_majflt``) and ``/proc/self/status`` (``VmRSS``, ``RssAnon``, ``RssFile``, ``VmLck``,
in kB; absent outside Linux, then reported as 0). :func:`pin` locks a buffer in RAM with
``mlock`` (what a pinned host buffer for DMA is), within ``RLIMIT_MEMLOCK``.

Lab: 37_python_to_machine_code
Paper: Bovet & Cesati, *Understanding the Linux Kernel* (3rd ed.), ch. 9 and 16 (page faults,
memory mapping); ``mmap(2)``, ``getrusage(2)``, ``proc(5)``, ``mlock(2)``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "PAGE",
    "Counters",
    "Load",
    "counters",
    "load_mmap",
    "load_read",
    "pin",
    "write_file",
]

PAGE = mmap.PAGESIZE
_STATUS = ("VmRSS", "RssAnon", "RssFile", "VmLck")


@dataclass(frozen=True)
class Counters:
    """One snapshot of the process's own fault counters and resident memory (kB)."""

    minflt: int
    majflt: int
    status: dict[str, int]  # VmRSS, RssAnon, RssFile, VmLck in kB (0 where unknown)

    def __sub__(self, other: Counters) -> Counters:
        st = {k: self.status[k] - other.status[k] for k in _STATUS}
        return Counters(self.minflt - other.minflt, self.majflt - other.majflt, st)


def _status() -> dict[str, int]:
    found = dict.fromkeys(_STATUS, 0)
    try:
        text = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        return found
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in found:
            found[key] = int(rest.split()[0])
    return found


def counters() -> Counters:
    """The process's minor and major faults so far and its memory now."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return Counters(use.ru_minflt, use.ru_majflt, _status())


def write_file(path: str | Path, nbytes: int, seed: int = 0) -> Path:
    """Write ``nbytes`` of seeded random bytes to ``path`` (a checkpoint stand-in)."""
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")
    path = Path(path)
    rng = np.random.default_rng(seed)
    with path.open("wb") as f:
        for start in range(0, nbytes, 1 << 22):
            f.write(rng.bytes(min(1 << 22, nbytes - start)))
    return path


@dataclass(frozen=True)
class Load:
    """One load of a file: how, how much, what it cost in faults, memory and time."""

    method: str  # "read" or "mmap"
    nbytes: int
    touched_pages: int
    delta: Counters  # counters after the load (mapping still alive) minus before
    seconds: float
    checksum: int  # sum of the first byte of every page touched

    @property
    def faults_per_page(self) -> float:
        return self.delta.minflt / max(1, -(-self.nbytes // PAGE))


def _checksum(data: np.ndarray, stride: int) -> int:
    return int(data[::stride].sum(dtype=np.int64))


def load_read(path: str | Path) -> Load:
    """Read the whole file into a new buffer; touch every page (the copy does)."""
    path = Path(path)
    size = path.stat().st_size
    before = counters()
    start = time.perf_counter()
    # fresh anonymous pages, as a new allocation gets them (malloc may reuse freed heap)
    with mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as buf:
        with path.open("rb", buffering=0) as f:
            got = f.readinto(buf)
        data = np.frombuffer(buf, dtype=np.uint8)
        checksum = _checksum(data, PAGE)
        seconds = time.perf_counter() - start
        delta = counters() - before  # measured while the buffer is alive
        del data
    if got != size:
        raise OSError(f"short read: {got} of {size} bytes")
    return Load("read", size, -(-size // PAGE), delta, seconds, checksum)


def load_mmap(path: str | Path, touch: bool = True) -> Load:
    """Map the file read-only; touch one byte per page (``touch``) or nothing at all."""
    path = Path(path)
    size = path.stat().st_size
    before = counters()
    start = time.perf_counter()
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        data = np.frombuffer(mm, dtype=np.uint8)
        checksum = _checksum(data, PAGE) if touch else 0
        seconds = time.perf_counter() - start
        delta = counters() - before  # measured while the mapping is alive
        del data  # the buffer must go before the mapping closes
    pages = -(-size // PAGE) if touch else 0
    return Load("mmap", size, pages, delta, seconds, checksum)


def pin(nbytes: int) -> tuple[bool, str, int]:
    """``mlock`` a fresh buffer of ``nbytes``: (locked, why not, VmLck kB while locked)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    buf = mmap.mmap(-1, max(nbytes, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    try:
        if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(nbytes)) != 0:
            err = ctypes.get_errno()
            soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
            return False, f"mlock: {os.strerror(err)} (RLIMIT_MEMLOCK {soft} bytes)", 0
        locked = _status()["VmLck"]
        libc.munlock(ctypes.c_void_p(addr), ctypes.c_size_t(nbytes))
        return True, "", locked
    finally:
        del addr
        buf.close()
