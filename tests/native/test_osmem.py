"""A file loaded by read and by mmap: the process's own page faults and resident memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from minitorch.native import osmem

SIZE = 8 << 20  # 8 MiB: 2048 pages
_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_ALWAYS = _THP.exists() and "[always]" in _THP.read_text()
LINUX = Path("/proc/self/status").exists()


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return osmem.write_file(tmp_path_factory.mktemp("osmem") / "ckpt.bin", SIZE, seed=3)


def test_the_file_is_seeded_and_sized(blob: Path, tmp_path: Path) -> None:
    assert blob.stat().st_size == SIZE
    again = osmem.write_file(tmp_path / "b.bin", SIZE, seed=3)
    assert again.read_bytes()[:4096] == blob.read_bytes()[:4096]
    with pytest.raises(ValueError, match="nbytes"):
        osmem.write_file(tmp_path / "c.bin", 0)


def test_read_and_mmap_see_the_same_bytes(blob: Path) -> None:
    want = int(np.frombuffer(blob.read_bytes(), np.uint8)[:: osmem.PAGE].sum(dtype=np.int64))
    assert osmem.load_read(blob).checksum == want == osmem.load_mmap(blob).checksum


@pytest.mark.skipif(not LINUX, reason="no /proc/self/status: resident memory is not reported")
def test_read_owns_anonymous_pages_mmap_maps_the_page_cache(blob: Path) -> None:
    kib = SIZE // 1024
    read, mapped = osmem.load_read(blob), osmem.load_mmap(blob)
    assert read.delta.status["RssAnon"] >= 0.9 * kib  # a private copy
    assert mapped.delta.status["RssAnon"] < 0.1 * kib  # no copy
    assert mapped.delta.status["RssFile"] >= 0.9 * kib  # the cached file, mapped
    assert read.delta.majflt == 0 and mapped.delta.majflt == 0  # just written: cached
    assert mapped.delta.minflt < read.delta.minflt  # fault-around: several pages per fault
    if not THP_ALWAYS:
        assert read.faults_per_page >= 0.9  # one minor fault per fresh 4 KiB page


def test_an_untouched_mapping_costs_nothing(blob: Path) -> None:
    idle = osmem.load_mmap(blob, touch=False)
    assert idle.touched_pages == 0 and idle.delta.minflt < 64
    if LINUX:
        assert idle.delta.status["VmRSS"] < 0.05 * SIZE // 1024


def test_counters_subtract_field_by_field() -> None:
    a, b = osmem.counters(), osmem.counters()
    d = b - a
    assert d.minflt >= 0 and set(d.status) == {"VmRSS", "RssAnon", "RssFile", "VmLck"}


def test_pin_locks_a_small_buffer_or_says_why_not() -> None:
    ok, why, locked = osmem.pin(1 << 16)
    assert (ok and why == "" and (locked >= 64 or not LINUX)) or (not ok and "mlock" in why)
