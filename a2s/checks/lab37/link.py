"""Grader of exercise 37.2: which symbols a link leaves undefined, against GNU ld itself.

The truth for a compiled case is ld's own answer: the grader compiles the objects with g++,
links them into one shared object with ``-Wl,--no-undefined -Wl,--no-demangle`` and reads every
``undefined reference to `name'`` (``_truth.link_of``: every object compiled afresh in a private
directory, never a file found on disk); for the fixed listings shipped here it is
``_truth.unresolved`` (needed by some object, defined by no object, no library and not by ld
itself), which the tests check agrees with ld on every compiled case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import (
    LINKER_MADE,
    NATIVE,
    link_of,
    names,
    offers_and_needs,
    unresolved,
)
from a2s.checks.table import Table

__all__ = ["BROKEN", "check_unresolved", "random_link"]

LIBM = frozenset({"tanh", "exp"})  # what the link's libraries (libm, through libstdc++) give
_U = "         "
_NAMED = [
    ("everything resolves", ({"a.o": f"entry T 0 10\nhelper U{_U}\n", "b.o": "helper T 0 8\n"},)),
    ("an object left out", ({"a.o": f"entry T 0 10\nhelper U{_U}\n"},)),
    (
        "C++ caller, C definition",
        ({"a.o": f"entry T 0 10\n_Z9a2s_scaled U{_U}\n", "b.o": "a2s_scale T 0 8\n"},),
    ),
    (
        "a static definition elsewhere",
        ({"a.o": f"run T 0 9\nhelper U{_U}\n", "b.o": "helper t 0 8\n"},),
    ),
    ("a weak undefined call", ({"a.o": f"entry T 0 10\nmaybe w{_U}\n"},)),
    ("a weak definition", ({"a.o": f"entry T 0 10\nhelper U{_U}\n", "b.o": "helper W 0 8\n"},)),
    ("a library function", ({"a.o": f"gelu T 0 40\ntanh U{_U}\n"}, LIBM)),
    ("the GOT", ({"a.o": f"_GLOBAL_OFFSET_TABLE_ U{_U}\nentry T 0 10\n"},)),
    (
        "two users of one missing name",
        ({"a.o": f"f T 0 1\nscale U{_U}\n", "b.o": f"g T 0 1\nscale U{_U}\nf U{_U}\n"},),
    ),
]

# the notebook's broken link: a C++ declaration of a function defined in extern "C"
BROKEN = {
    "caller.cpp": 'double a2s_scale(double x);\nextern "C" double twice_scaled(double x) '
    "{ return 2 * a2s_scale(x); }\n",
    "helper.cpp": 'extern "C" double a2s_scale(double x) { return 3 * x; }\n',
}

_ROLES = ("", "", "def_c", "def_cpp", "def_static", "def_weak", "call_c", "call_cpp", "call_weak")
_SRC = {
    "def_c": ('extern "C" double {n}(double x) {{ return x * {c}; }}', ""),
    "def_cpp": ("double {n}(double x) {{ return x + {c}; }}", ""),
    "def_static": ("static double {n}(double x) {{ return x - {c}; }}", "s += {n}(x);"),
    "def_weak": ('extern "C" __attribute__((weak)) double {n}(double x) {{ return {c}; }}', ""),
    "call_c": ('extern "C" double {n}(double);', "s += {n}(x);"),
    "call_cpp": ("double {n}(double);", "s += {n}(s);"),
    "call_weak": ('extern "C" double {n}(double) __attribute__((weak));', "if ({n}) s += {n}(x);"),
}


def random_link(g: Any, tag: str) -> dict[str, str]:
    """2 or 3 C++ files over 4 names, each name defined (C, C++, static, weak) or called."""
    files, strong = {}, set()
    for o in range(int(g.integers(2, 4))):
        lines, body = [], []
        for j in range(4):
            role = _ROLES[int(g.integers(0, len(_ROLES)))]
            if role in ("def_c", "def_cpp") and (j, role) in strong:
                role = ""  # one strong definition per name, or ld reports a multiple definition
            strong.add((j, role))
            if role:
                decl, use = _SRC[role]
                lines.append(decl.format(n=f"k{tag}_{j}", c=o + j + 1))
                body.append(use.format(n=f"k{tag}_{j}"))
        if g.integers(0, 3) == 0:
            lines.append('extern "C" double tanh(double);')
            body.append("s += tanh(x);")
        fn = f'extern "C" double obj{tag}_{o}(double x) {{ double s = x; {" ".join(body)} '
        fn += "return s; }"
        files[f"{'abc'[o]}.o"] = "\n".join([*lines, fn, ""])
    return files


def _linked(label: str, sources: dict[str, str]) -> tuple[str, tuple[Any, ...], None, list[str]]:
    listings, undefined = link_of(tuple(sources.values()))
    return (label, (dict(zip(sources, listings, strict=True)), LIBM), None, list(undefined))


def _draw(g: Any, i: int) -> Any:
    if i == 0:
        return _linked("the notebook's broken link (g++ and ld here)", BROKEN)
    return _linked(f"fresh link {i} (g++ -c, then ld here)", random_link(g, str(i)))


def _bare(name: str) -> str:
    m = re.match(r"_Z(\d+)", name)
    return name[m.end() : m.end() + int(m.group(1))] if m else name


def _bare_match(objects: dict[str, str], libraries: Any = ()) -> list[str]:
    offered = {_bare(n) for text in objects.values() for n in offers_and_needs(text)[0]}
    return [n for n in unresolved(objects, libraries) if _bare(n) not in offered]


def _per_object(objects: dict[str, str], libraries: Any = ()) -> list[str]:
    out: set[str] = set()
    for text in objects.values():
        out |= set(unresolved({"one": text}, libraries))
    return sorted(out)


_MISTAKES = (
    Mistake(
        " A static (lower-case t, d, b) definition in another object is local to it: it "
        "satisfies no other object's reference.",
        answer=lambda objs, libs=(): unresolved(objs, libs, local_offered=True),
    ),
    Mistake(
        " A weak undefined symbol (w) never fails a link: an absent one has address 0.",
        answer=lambda objs, libs=(): unresolved(objs, libs, weak_needed=True),
    ),
    Mistake(
        " The linker matches names exactly: _Z9a2s_scaled (a C++ declaration) is not "
        'a2s_scale (an extern "C" definition); only extern "C" on both sides makes them one.',
        answer=_bare_match,
    ),
    Mistake(
        " The libraries given to the linker define names too (libraries: here libm's tanh).",
        answer=lambda objs, libs=(): unresolved(objs),
    ),
    Mistake(
        " ld makes _GLOBAL_OFFSET_TABLE_ itself for a position-independent link.",
        answer=lambda objs, libs=(): sorted({*unresolved(objs, libs), *_got_needed(objs)}),
    ),
    Mistake(
        " Resolve across every object of the link: a name one object needs and another defines "
        "is resolved.",
        answer=_per_object,
    ),
)


def _got_needed(objs: dict[str, str]) -> set[str]:
    return {n for text in objs.values() for n in offers_and_needs(text)[1]} & LINKER_MADE


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    said = [f"missing {missing}"] * bool(missing) + [f"not undefined: {extra}"] * bool(extra)
    return (
        f"[{case.label}] unresolved returned {got!r}; ld reports {want!r} ({', '.join(said)})."
        f"{' ' + hint if hint else ''}"
    )


LINKS = Table(
    "37.2",
    truth=unresolved,
    named=_NAMED,
    draw=_draw,
    seeded=4,
    fresh=2,
    mistakes=_MISTAKES,
    read=lambda got, label: names(got, label, "unresolved"),
    hint="undefined = (U of every object) - (what every object offers, the libraries, ld's GOT).",
    what="unresolved",
    message=_message,
)


@grader("37.2", blocks=NATIVE)
def check_unresolved(student: Callable[..., Any]) -> str:
    """Exercise 37.2: unresolved(objects, libraries=()) -> names the link leaves undefined."""
    n = LINKS.grade(student)
    # once more, outside the table: the expected value is made after the call, in no frame
    got = names(plain(student(*_draw(None, 0)[1]), what="unresolved"), "again", "unresolved")
    want = _draw(None, 0)[3]
    if got != want:
        raise CheckFailure("unresolved(the notebook's broken link) differs on a second call.")
    return f"{n} links exact (3 linked by ld here); the broken link: {want}"
