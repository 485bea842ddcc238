"""An undefined-symbol error on purpose, three ways, and its explanation.

Two translation units: ``caller.cpp`` defines ``a2s_twice`` and calls ``a2s_scale``, which
``helper.cpp`` defines. Each compiles alone (a declaration is enough for the compiler); the
linker is where a missing definition shows:

* ``"missing"``: only ``caller.cpp`` linked into a program: GNU ld reports
  ``undefined reference to `a2s_scale'``;
* ``"mangled"``: both linked, but ``helper.cpp`` defines ``a2s_scale`` inside
  ``extern "C"`` while ``caller.cpp`` declares it as C++: the caller needs ``_Z9a2s_scaled``,
  the helper offers ``a2s_scale``, and the link fails on the mangled name;
* ``"dlopen"``: ``caller.cpp`` alone as a shared object: ``-shared`` accepts undefined
  symbols (another library may provide them at run time), so the link succeeds and the error
  comes from the dynamic loader, ``undefined symbol: a2s_scale``, when ctypes loads it.

:func:`broken` runs one case and returns the tool's message, the objects and
:func:`~minitorch.native.symbols.explain`'s explanation; :func:`fixed` builds the program
that works, for comparison.

Lab: 37_python_to_machine_code
Paper: Levine, *Linkers and Loaders* (2000), ch. 1 and 10 (dynamic linking).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from minitorch.native.build import Build, BuildError, build
from minitorch.native.loader import LoadError, load
from minitorch.native.symbols import explain

__all__ = ["CASES", "Broken", "broken", "fixed", "sources"]

CASES = ("missing", "mangled", "dlopen")

_CALLER = """\
{decl}
extern "C" double a2s_twice(double x) {{ return a2s_scale(x) + a2s_scale(x); }}
int main() {{ return a2s_twice(1.5) == 6.0 ? 0 : 1; }}
"""
_HELPER = """\
{open}double a2s_scale(double x) {{ return 2.0 * x; }}{close}
"""
_C_DECL = 'extern "C" double a2s_scale(double x);'
_CPP_DECL = "double a2s_scale(double x);  // C++ linkage: the name is mangled"


def sources(case: str) -> dict[str, str]:
    """The translation units of ``case`` (or of the working program for ``"fixed"``)."""
    if case not in (*CASES, "fixed"):
        raise ValueError(f"case must be one of {(*CASES, 'fixed')}, got {case!r}")
    decl = _CPP_DECL if case == "mangled" else _C_DECL
    out = {"caller.cpp": _CALLER.format(decl=decl)}
    if case in ("mangled", "fixed"):
        out["helper.cpp"] = _HELPER.format(open='extern "C" {\n', close="\n}")
    if case == "dlopen":
        out["caller.cpp"] = out["caller.cpp"].split("int main")[0]
    return out


@dataclass(frozen=True)
class Broken:
    """One failed case: which stage said so, its message, the objects, the explanation."""

    case: str
    stage: str  # "link" (ld) or "load" (dlopen)
    message: str
    objects: tuple[Path, ...]
    explanation: str


def broken(case: str, cache: Path | None = None) -> Broken:
    """Trigger the undefined-symbol error of ``case`` and explain it."""
    src = sources(case)
    if case == "dlopen":
        made = build(src, "caller", kind="shared", cache=cache)
        try:
            load(made.output)
        except LoadError as err:
            msg = str(err)
            return Broken(case, "load", msg, made.objects, explain(msg, made.objects))
        raise AssertionError("the library loaded: a2s_scale was found somewhere")
    try:
        build(src, "caller", kind="executable", cache=cache)
    except BuildError as err:
        why = explain(err.stderr, err.objects)
        return Broken(case, err.stage, err.stderr, err.objects, why)
    raise AssertionError(f"case {case!r} linked: the symbol was defined after all")


def fixed(cache: Path | None = None) -> Build:
    """The two units with matching linkage, linked into a program that exits 0."""
    return build(sources("fixed"), "caller", kind="executable", cache=cache)
