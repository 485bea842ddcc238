"""Every build of these tests goes to one temporary cache, never to ~/.cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ is not installed: lab 37's C++ builds are skipped"
)
needs_binutils = pytest.mark.skipif(
    shutil.which("nm") is None or shutil.which("objdump") is None,
    reason="nm/objdump (binutils) are not installed",
)
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None,
    reason="valgrind is not installed: the cachegrind comparison is skipped",
)


@pytest.fixture(scope="session")
def native_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("native-cache")


@pytest.fixture(autouse=True)
def _cache_in_tmp(native_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2S_NATIVE_CACHE", str(native_cache))
