"""Compile, assemble and link C++ by hand with the system g++, cached per machine.

``g++ kernels.cpp -shared -o libkernels.so`` hides four programs. Run one at a time they are:

1. **preprocess** (``g++ -E``): ``#include`` and macros expanded, one ``.ii`` file;
2. **compile** (``g++ -S``): the translation unit becomes assembly text for this CPU, ``.s``;
3. **assemble** (``g++ -c`` on the ``.s``, which runs ``as``): machine code in an ELF
   relocatable object, ``.o``, whose calls to functions it does not define are left as
   *relocations* against *undefined symbols*;
4. **link** (``g++ -shared`` or an executable, which runs ``ld``): objects combined, every
   symbol resolved or reported (``undefined reference to ...``), a ``.so`` or a program.

A build is cached in a directory named by a hash of the sources, the flags, the kind of
output and its name, the compiler's version and the machine, under ``$A2S_NATIVE_CACHE`` or
``~/.cache/a2s/native`` (``$XDG_CACHE_HOME/a2s/native`` when that is set): a second build
of the same sources costs one ``stat``. It is built in a temporary directory beside it and
renamed into place, so two processes building the same key never see half a build. A build
that fails is cached as well (its record and objects kept), and raises the same
:class:`BuildError` again without recompiling; the compiler is ``$CXX`` or ``g++``, and a
missing one raises :class:`ToolMissing` with what to install.

Lab: 37_python_to_machine_code
Paper: Levine, *Linkers and Loaders* (2000), ch. 1-4; the GCC manual, "Overall Options"
(``-E``, ``-S``, ``-c``); the System V ABI, ELF relocatable objects.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

__all__ = [
    "DEFAULT_FLAGS",
    "STAGES",
    "Build",
    "BuildError",
    "ToolMissing",
    "build",
    "cache_root",
    "compiler",
    "compiler_version",
    "find_tool",
    "kernel_source",
]

STAGES = ("preprocess", "compile", "assemble", "link")
DEFAULT_FLAGS = ("-O2", "-fPIC", "-std=c++17")
KINDS = ("shared", "executable")
_RECORD = "build.json"


class ToolMissing(RuntimeError):
    """A program this step needs (g++, nm, objdump, valgrind) is not installed."""


@dataclass
class BuildError(RuntimeError):
    """A stage exited non-zero: which stage, the command and what the tool printed."""

    stage: str
    command: tuple[str, ...]
    stderr: str
    directory: Path
    objects: tuple[Path, ...] = ()

    def __str__(self) -> str:
        return f"{self.stage} failed: {' '.join(self.command)}\n{self.stderr.strip()}"


@dataclass(frozen=True)
class Build:
    """What one build made, stage by stage, and whether it came from the cache."""

    key: str
    directory: Path
    output: Path
    kind: str
    files: dict[str, dict[str, Path]]  # source name -> {"ii", "s", "o"} paths
    commands: tuple[tuple[str, ...], ...]
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    cached: bool = False

    @property
    def objects(self) -> tuple[Path, ...]:
        return tuple(f["o"] for f in self.files.values())


def find_tool(name: str, what: str = "") -> str:
    """The path of program ``name`` on PATH, or :class:`ToolMissing` saying what to install."""
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(
            f"{name} is not installed (not on PATH){': ' + what if what else ''}. "
            f"On Debian or Ubuntu: apt-get install {_PACKAGE.get(name, name)}. "
            "The parts of lab 37 that need it are skipped without it."
        )
    return path


_PACKAGE = {"g++": "g++", "nm": "binutils", "objdump": "binutils", "valgrind": "valgrind"}


def compiler() -> str:
    """The C++ compiler: ``$CXX`` if set, else ``g++`` (:class:`ToolMissing` if absent)."""
    return find_tool(os.environ.get("CXX") or "g++", "lab 37 compiles its C++ kernels with it")


@functools.lru_cache(maxsize=8)
def compiler_version(cxx: str) -> str:
    """The first line of ``cxx --version`` (part of every cache key)."""
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0].strip()


def cache_root() -> Path:
    """``$A2S_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/a2s/native``, else ``~/.cache/...``."""
    env = os.environ.get("A2S_NATIVE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "a2s" / "native"


def kernel_source() -> str:
    """The text of the lab's kernels, ``minitorch/native/kernels.cpp`` (package data)."""
    return (resources.files("minitorch.native") / "kernels.cpp").read_text(encoding="utf-8")


def _key(
    sources: Mapping[str, str],
    name: str,
    flags: Sequence[str],
    link: Sequence[str],
    kind: str,
    cxx: str,
) -> str:
    blob = json.dumps(
        [
            sorted(sources.items()),
            name,
            list(flags),
            list(link),
            kind,
            compiler_version(cxx),
            platform.machine(),
            platform.system(),
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _run(
    stage: str,
    cmd: list[str],
    where: Path,
    seconds: dict[str, float],
    objects: tuple[Path, ...] = (),
) -> None:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=where, timeout=300)
    seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - start
    if done.returncode:
        raise BuildError(stage, tuple(cmd), done.stderr or done.stdout, where, objects)


def _stages(
    cxx: str,
    sources: Mapping[str, str],
    name: str,
    kind: str,
    flags: Sequence[str],
    link: Sequence[str],
    where: Path,
) -> tuple[Build, list[tuple[str, list[str]]]]:
    files: dict[str, dict[str, Path]] = {}
    plan: list[tuple[str, list[str]]] = []
    for src in sources:
        stem = Path(src).stem
        f = {
            "cpp": where / src,
            "ii": where / f"{stem}.ii",
            "s": where / f"{stem}.s",
            "o": where / f"{stem}.o",
        }
        files[src] = f
        plan.append(("preprocess", [cxx, *flags, "-E", src, "-o", f["ii"].name]))
        plan.append(("compile", [cxx, *flags, "-S", f["ii"].name, "-o", f["s"].name]))
        plan.append(("assemble", [cxx, *flags, "-c", f["s"].name, "-o", f["o"].name]))
    out = where / (f"lib{name}.so" if kind == "shared" else name)
    objs = [f["o"].name for f in files.values()]
    shared = ["-shared"] if kind == "shared" else []
    plan.append(("link", [cxx, *shared, *objs, *link, "-o", out.name]))
    made = Build("", where, out, kind, files, tuple(tuple(c) for _, c in plan))
    return made, plan


def _moved(made: Build, to: Path, **changes: object) -> Build:
    files = {s: {k: to / p.name for k, p in f.items()} for s, f in made.files.items()}
    fields = {"directory": to, "output": to / made.output.name, "files": files, **changes}
    return Build(**{**made.__dict__, **fields})  # type: ignore[arg-type]


def build(
    sources: str | Mapping[str, str],
    name: str = "kernels",
    *,
    kind: str = "shared",
    flags: Sequence[str] = DEFAULT_FLAGS,
    link: Sequence[str] = (),
    cache: Path | None = None,
) -> Build:
    """Build ``sources`` (text, or ``{file name: text}``) stage by stage, or reuse the cache.

    ``kind`` is ``"shared"`` (``lib<name>.so``) or ``"executable"`` (``<name>``); ``link``
    adds linker arguments (``-Wl,--no-undefined``, ``-lm``). Raises :class:`BuildError` for a
    failing stage (the same one again on a cached failure) and :class:`ToolMissing`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if isinstance(sources, str):
        sources = {f"{name}.cpp": sources}
    cxx = compiler()
    root = Path(cache) if cache is not None else cache_root()
    key = _key(sources, name, flags, link, kind, cxx)
    final = root / key
    if (final / _RECORD).exists():
        return _cached(final, cxx, sources, name, kind, flags, link, key)
    root.mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    made, plan = _stages(cxx, sources, name, kind, flags, link, where)
    for src, text in sources.items():
        (where / src).write_text(text, encoding="utf-8")
    seconds: dict[str, float] = {}
    record: dict[str, object] = {"ok": True}
    try:
        for stage, cmd in plan:
            _run(stage, cmd, where, seconds, made.objects if stage == "link" else ())
    except BuildError as err:
        record = {"ok": False, "stage": err.stage, "command": err.command, "stderr": err.stderr}
    (where / _RECORD).write_text(json.dumps({**record, "seconds": seconds}), encoding="utf-8")
    try:
        os.rename(where, final)
    except OSError:  # another process finished the same key first: use its build
        shutil.rmtree(where, ignore_errors=True)
        return _cached(final, cxx, sources, name, kind, flags, link, key)
    if not record["ok"]:
        return _cached(final, cxx, sources, name, kind, flags, link, key)
    return _moved(made, final, key=key, seconds=seconds)


def _cached(
    final: Path,
    cxx: str,
    sources: Mapping[str, str],
    name: str,
    kind: str,
    flags: Sequence[str],
    link: Sequence[str],
    key: str,
) -> Build:
    made, _ = _stages(cxx, sources, name, kind, flags, link, final)
    record = json.loads((final / _RECORD).read_text(encoding="utf-8"))
    if not record["ok"]:
        objects = tuple(p for p in made.objects if p.exists())
        raise BuildError(
            record["stage"], tuple(record["command"]), record["stderr"], final, objects
        )
    return _moved(made, final, key=key, seconds=record["seconds"], cached=True)
