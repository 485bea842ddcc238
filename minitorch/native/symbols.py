"""Symbols and relocations of an object file, and an undefined symbol explained.

``nm -P`` lists an object's symbols one a line, ``name type [value size]``: ``T`` a function
defined in ``.text``, ``U`` undefined (used here, defined elsewhere), ``W`` weak, lower case
for local symbols. ``objdump -r`` lists the relocations: the places in a section (``offset``)
where the linker must write an address it does not know yet, of which kind (``type``, e.g.
``R_X86_64_PLT32`` for a call through the PLT) and of which symbol (plus an ``addend``).
Linking resolves every undefined symbol of every object against the symbols the others
define; one left over is GNU ld's ``undefined reference to `name'`` (an executable, or a
``.so`` linked with ``-Wl,--no-undefined``) or, for a ``.so`` linked without it, the dynamic
loader's ``undefined symbol: name`` at ``dlopen``. :func:`explain` turns either message and
the objects into an explanation: who references the symbol and where, who defines it, and
the usual cause (an object left out, or C++ name mangling: ``_Z9a2s_scaled`` is
``a2s_scale(double)``, which a definition in ``extern "C"`` does not provide).

Lab: 37_python_to_machine_code
Paper: Levine, *Linkers and Loaders* (2000), ch. 4-5 (symbols, relocation); the Itanium
C++ ABI, "External Names (a.k.a. Mangling)"; the System V ABI, x86-64 supplement (relocation
types).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minitorch.native.build import find_tool

__all__ = [
    "Relocation",
    "Symbol",
    "defined",
    "demangle",
    "explain",
    "parse_nm",
    "parse_relocations",
    "relocations",
    "symbols",
    "undefined",
    "undefined_in_message",
]


@dataclass(frozen=True)
class Symbol:
    """One line of ``nm -P``: ``kind`` is nm's letter (``T``, ``U``, ``W``, ``t`` ...)."""

    name: str
    kind: str
    value: int | None = None
    size: int | None = None

    @property
    def defined(self) -> bool:
        return self.kind not in ("U", "w", "v")

    @property
    def is_global(self) -> bool:
        return self.kind.isupper() or self.kind in ("w", "v", "u")  # u: a GNU unique global


@dataclass(frozen=True)
class Relocation:
    """One relocation: in ``section`` at ``offset``, write ``symbol + addend`` as ``type``."""

    section: str
    offset: int
    type: str
    symbol: str
    addend: int = 0


def _tool(name: str, *args: str) -> str:
    exe = find_tool(name, "lab 37 reads object files with it")
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise RuntimeError(f"{name} {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def parse_nm(text: str) -> list[Symbol]:
    """Symbols of ``nm -P`` output (``name type [value [size]]``, values in hex)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.endswith(":"):
            continue  # blank, or an archive member's header
        value = int(parts[2], 16) if len(parts) > 2 else None
        size = int(parts[3], 16) if len(parts) > 3 else None
        out.append(Symbol(parts[0], parts[1], value, size))
    return out


def symbols(path: str | Path) -> list[Symbol]:
    """Every symbol of an object, shared object or program (``nm -P``)."""
    return parse_nm(_tool("nm", "-P", str(path)))


def defined(path: str | Path) -> set[str]:
    """Names of the global symbols ``path`` defines (what it offers the linker)."""
    return {s.name for s in symbols(path) if s.defined and s.is_global}


def undefined(path: str | Path) -> set[str]:
    """Names of the symbols ``path`` uses but does not define (what it needs)."""
    return {s.name for s in symbols(path) if not s.defined}


_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[(.+)\]:")
_VALUE = re.compile(r"^(.*?)(?:([+-])0x([0-9a-fA-F]+))?$")


def parse_relocations(text: str) -> list[Relocation]:
    """Relocations of ``objdump -r`` output (``OFFSET TYPE VALUE`` under each section)."""
    out, section = [], ""
    for line in text.splitlines():
        if m := _SECTION.match(line):
            section = m.group(1)
            continue
        parts = line.split()
        if not section or len(parts) != 3 or parts[0] == "OFFSET":
            continue
        try:
            offset = int(parts[0], 16)
        except ValueError:
            continue
        m = _VALUE.match(parts[2])
        assert m is not None  # the pattern matches every string
        addend = int(m.group(3), 16) * (-1 if m.group(2) == "-" else 1) if m.group(3) else 0
        out.append(Relocation(section, offset, parts[1], m.group(1), addend))
    return out


def relocations(path: str | Path) -> list[Relocation]:
    """Every relocation of an object file (``objdump -r``)."""
    return parse_relocations(_tool("objdump", "-r", str(path)))


def demangle(names: Iterable[str]) -> dict[str, str]:
    """``{name: demangled}`` through ``c++filt`` (a C name is its own demangling)."""
    names = list(names)
    if not names:
        return {}
    exe = find_tool("c++filt", "lab 37 demangles C++ names with it")
    done = subprocess.run([exe], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, done.stdout.splitlines(), strict=True))


_MESSAGES = (
    re.compile(r"undefined reference to [`'‘](.+?)['’]"),  # GNU ld
    re.compile(r"undefined symbol: (\S+)"),  # the dynamic loader (dlopen)
)


def undefined_in_message(message: str) -> list[str]:
    """The symbol names a linker's or loader's error message reports undefined, in order."""
    found: list[str] = []
    for pattern in _MESSAGES:
        for name in pattern.findall(message):
            if name not in found:
                found.append(name)
    return found


def explain(message: str, objects: Sequence[str | Path] = (), offered: Sequence[str] = ()) -> str:
    """Why the link (or ``dlopen``) failed: each undefined symbol, its users, a likely fix.

    ``objects`` are the objects that were linked (their relocations say who uses the
    symbol), ``offered`` names symbols some other object or library defines (to spot a C /
    C++ linkage mismatch). Returns plain text, one paragraph per symbol.
    """
    names = undefined_in_message(message)
    if not names:
        return "the message reports no undefined symbol:\n" + message.strip()
    offered_set = set(offered)
    for obj in objects:
        offered_set |= defined(obj)
    relocs = [(Path(obj).name, r) for obj in objects for r in relocations(obj)]
    readable = demangle({*names, *(r.symbol for _, r in relocs)})
    paragraphs = []
    for name in names:
        users = [
            f"{obj} ({r.section}+{r.offset:#x}, {r.type}, symbol {r.symbol})"
            for obj, r in relocs
            if name in (r.symbol, readable.get(r.symbol))
        ]
        text = f"`{name}`"
        if readable.get(name, name) != name:
            text += f" (the C++ function {readable[name]})"
        text += " is used but defined by no object or library given to the linker."
        if users:
            text += " It is referenced by " + ", ".join(users) + "."
        bare = readable.get(name, name).split("(")[0]
        if bare != name and bare in offered_set:
            text += (
                f' A symbol `{bare}` exists: it was defined with C linkage (extern "C")'
                " while the caller declared it as C++, so the names differ by mangling;"
                ' declare it extern "C" on both sides.'
            )
        else:
            text += " Link the object or library that defines it, or fix the name."
        if "undefined symbol:" in message:
            text += (
                " The library was linked with -shared, which leaves undefined symbols to the"
                " dynamic loader; -Wl,--no-undefined makes the linker report them instead."
            )
        paragraphs.append(text)
    return "\n".join(paragraphs)
