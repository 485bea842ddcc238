"""nm and objdump parsed; the three undefined-symbol errors triggered and explained."""

from __future__ import annotations

import subprocess

import pytest

from minitorch.native import linking, symbols
from minitorch.native.build import build, kernel_source
from tests.native.conftest import needs_binutils, needs_gxx

NM = """\
.LC0 r 0000000000000000
a2s_scale U
a2s_twice T 0000000000000000 000000000000002d
weak_one W 0000000000000010 0000000000000004
"""

OBJDUMP = """\

caller.o:     file format elf64-x86-64

RELOCATION RECORDS FOR [.text]:
OFFSET           TYPE              VALUE
000000000000000b R_X86_64_PLT32    a2s_scale-0x0000000000000004
0000000000000020 R_X86_64_64       table+0x0000000000000010


RELOCATION RECORDS FOR [.eh_frame]:
OFFSET           TYPE              VALUE
0000000000000020 R_X86_64_PC32     .text
"""


def test_nm_output_is_parsed() -> None:
    syms = symbols.parse_nm(NM)
    assert [s.name for s in syms] == [".LC0", "a2s_scale", "a2s_twice", "weak_one"]
    by = {s.name: s for s in syms}
    assert not by["a2s_scale"].defined and by["a2s_scale"].value is None
    assert by["a2s_twice"].defined and by["a2s_twice"].is_global and by["a2s_twice"].size == 45
    assert not by[".LC0"].is_global and by["weak_one"].value == 16


def test_objdump_relocations_are_parsed() -> None:
    rel = symbols.parse_relocations(OBJDUMP)
    assert rel == [
        symbols.Relocation(".text", 0xB, "R_X86_64_PLT32", "a2s_scale", -4),
        symbols.Relocation(".text", 0x20, "R_X86_64_64", "table", 16),
        symbols.Relocation(".eh_frame", 0x20, "R_X86_64_PC32", ".text", 0),
    ]


def test_names_in_linker_and_loader_messages() -> None:
    ld = "caller.cpp:(.text+0xb): undefined reference to `a2s_scale'\n" * 2
    assert symbols.undefined_in_message(ld) == ["a2s_scale"]
    dl = "libcaller.so: undefined symbol: _Z9a2s_scaled"
    assert symbols.undefined_in_message(dl) == ["_Z9a2s_scaled"]
    assert "no undefined symbol" in symbols.explain("ld returned 1 exit status")


@needs_gxx
@needs_binutils
def test_the_kernel_object_defines_its_kernels_and_needs_tanh() -> None:
    obj = build(kernel_source()).objects[0]
    assert {"a2s_matmul_ijk", "a2s_matmul_ikj", "a2s_matmul_tiled", "a2s_bias_gelu"} <= (
        symbols.defined(obj)
    )
    assert "tanh" in symbols.undefined(obj)
    calls = [r for r in symbols.relocations(obj) if r.symbol == "tanh"]
    assert calls and all(r.section == ".text" and r.type.endswith("PLT32") for r in calls)
    assert symbols.demangle(["_Z9a2s_scaled", "tanh"]) == {
        "_Z9a2s_scaled": "a2s_scale(double)",
        "tanh": "tanh",
    }


@needs_gxx
@needs_binutils
def test_a_missing_object_is_reported_by_the_linker() -> None:
    case = linking.broken("missing")
    assert case.stage == "link" and "undefined reference to `a2s_scale'" in case.message
    assert "`a2s_scale` is used but defined by no object" in case.explanation
    assert "caller.o (.text+" in case.explanation and "Link the object" in case.explanation


@needs_gxx
@needs_binutils
def test_a_linkage_mismatch_is_explained_as_mangling() -> None:
    case = linking.broken("mangled")
    assert case.stage == "link" and "a2s_scale(double)" in case.message
    assert "symbol _Z9a2s_scaled" in case.explanation and 'extern "C"' in case.explanation
    assert {o.name for o in case.objects} == {"caller.o", "helper.o"}


@needs_gxx
@needs_binutils
def test_a_shared_object_fails_at_load_time_instead() -> None:
    case = linking.broken("dlopen")
    assert case.stage == "load" and "undefined symbol: a2s_scale" in case.message
    assert "-Wl,--no-undefined" in case.explanation


@needs_gxx
def test_the_fixed_program_links_and_runs() -> None:
    made = linking.fixed()
    assert subprocess.run([str(made.output)], check=False).returncode == 0
    with pytest.raises(ValueError, match="case"):
        linking.sources("typo")
