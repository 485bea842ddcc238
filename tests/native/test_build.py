"""The build chain stage by stage, its cache and its errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from minitorch.native import build as nb
from tests.native.conftest import needs_gxx

pytestmark = needs_gxx


def test_every_stage_leaves_its_file(tmp_path: Path) -> None:
    made = nb.build(nb.kernel_source(), cache=tmp_path)
    files = made.files["kernels.cpp"]
    assert set(made.seconds) == set(nb.STAGES)
    assert "#include" not in files["ii"].read_text()  # preprocessed: headers expanded
    assert "namespace std" in files["ii"].read_text()
    asm = files["s"].read_text()
    assert "a2s_matmul_tiled:" in asm and "call\ttanh" in asm.replace("@PLT", "")
    assert files["o"].read_bytes()[:4] == b"\x7fELF"
    assert made.output.name == "libkernels.so" and made.output.read_bytes()[:4] == b"\x7fELF"
    assert "-E" in made.commands[0] and "-S" in made.commands[1] and "-c" in made.commands[2]
    assert made.commands[-1][1] == "-shared" and not made.cached


def test_a_second_build_comes_from_the_cache(tmp_path: Path) -> None:
    first = nb.build(nb.kernel_source(), cache=tmp_path)
    stamp = first.output.stat().st_mtime_ns
    again = nb.build(nb.kernel_source(), cache=tmp_path)
    assert again.cached and again.output == first.output and again.key == first.key
    assert again.output.stat().st_mtime_ns == stamp
    other = nb.build(nb.kernel_source(), cache=tmp_path, flags=("-O0", "-fPIC"))
    assert other.key != first.key and not other.cached
    renamed = nb.build(nb.kernel_source(), "other", cache=tmp_path)
    assert renamed.key != first.key and renamed.output.name == "libother.so"
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 3


def test_the_default_cache_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("A2S_NATIVE_CACHE", str(tmp_path / "here"))
    assert nb.cache_root() == tmp_path / "here"
    assert nb.build("int f() { return 1; }", "tiny").directory.parent == tmp_path / "here"
    monkeypatch.delenv("A2S_NATIVE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nb.cache_root() == tmp_path / "xdg" / "a2s" / "native"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert nb.cache_root() == Path.home() / ".cache" / "a2s" / "native"


def test_a_missing_compiler_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler-a2s")
    with pytest.raises(nb.ToolMissing, match=r"no-such-compiler-a2s is not installed.*apt-get"):
        nb.build("int f() { return 1; }")


def test_a_compile_error_names_its_stage_and_is_cached(tmp_path: Path) -> None:
    with pytest.raises(nb.BuildError) as err:
        nb.build("int f() { return undeclared; }", "bad", cache=tmp_path)
    assert err.value.stage == "compile" and "undeclared" in err.value.stderr
    assert "compile failed" in str(err.value)
    with pytest.raises(nb.BuildError) as again:  # from the record, same stage and words
        nb.build("int f() { return undeclared; }", "bad", cache=tmp_path)
    assert (again.value.stage, again.value.stderr) == (err.value.stage, err.value.stderr)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kind"):
        nb.build("int f();", kind="archive", cache=tmp_path)


def test_two_threads_building_one_key_both_get_it(tmp_path: Path) -> None:
    src = 'extern "C" int a2s_seven() { return 7; }'
    out: list[Path] = []
    threads = [
        threading.Thread(target=lambda: out.append(nb.build(src, "seven", cache=tmp_path).output))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 2 and out[0] == out[1] and out[0].exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no half builds


def test_the_compiler_version_is_part_of_the_key() -> None:
    assert nb.compiler_version(nb.compiler()).split()[0] in ("g++", "c++", "clang")
