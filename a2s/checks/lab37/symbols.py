"""Grader of exercise 37.1: what one object offers the linker and what it needs, from ``nm -P``.

The truth (``_truth.offers_and_needs``) reads nm's letter: ``U`` is needed; an upper-case
letter other than ``U`` (``T D B R C W V``) and the GNU unique global ``u`` are offered;
``w``/``v`` (weak undefined) are neither; other lower-case letters are local (``static``),
invisible to other objects. Names stay as nm prints them (mangled). The listings are fixed
texts shipped here, the grader's own compile of a fixed C++ file, and fresh C++ files it
writes, compiles with g++ and lists with nm itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Case, Mistake
from a2s.checks.core import grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import NATIVE, listing, names, offers_and_needs
from a2s.checks.table import Table

__all__ = ["FIXED_SOURCE", "check_offers_and_needs", "random_source"]

_NAMED = [
    ("a function and a call", ("entry T 0 1a\nhelper U         \n",)),
    ("an empty listing", ("",)),
    (
        "local (static) symbols",
        ("_ZL6helperd t 0 1e\n_ZL5countd 0 4\nscratch b 0 40\nrun T 1e 20\n",),
    ),
    ("data symbols", ("table R 0 40\nstate D 0 8\nbuf B 0 100\nshared C 10 10\nrun T 0 4\n",)),
    ("a weak definition", ("_Z7weakdefi W 0 f\nmain_entry T 0 1\n",)),
    ("a weak undefined symbol", ("maybe w         \nentry T 0 1\nneeded U         \n",)),
    ("mangled C++ names", ("_Z9a2s_scaled T 0 10\n_Z4stepRSt6vectorIdSaIdEE U         \n",)),
    ("a unique global", ("_ZZ4tickvE1n u 0 4\n_Z4tickv W 0 b\n_ZL4seedd 8 4\n",)),
    ("the GOT is needed", ("_GLOBAL_OFFSET_TABLE_ U         \nentry T 0 8\n",)),
    (
        "an archive: member headers, blank lines",
        ("\nlibk.a[a.o]:\nentry T 0 1a\nhelper U         \n\nlibk.a[b.o]:\nhelper T 0 8\n",),
    ),
]

FIXED_SOURCE = """\
extern "C" double tanh(double);
static int counter = 3;
static double helper(double x) { return x * 2; }
int zeros[10];
extern const int kSeven = 7;
double global_d = 1.5;
extern "C" double a2s_scale(double x);
double mangled(double x);
extern "C" double maybe(double) __attribute__((weak));
__attribute__((weak)) int weakdef(int x) { return x + 1; }
inline int& tick() { static int n = 0; return ++n; }
extern "C" double entry(double x) {
    counter++;
    double s = helper(x) + a2s_scale(x) + mangled(x) + tanh(x) + zeros[1] + kSeven + tick();
    return maybe ? s + maybe(x) : s;
}
"""

# (kind, declaration or definition, how the user function touches it)
_PARTS = {
    "T_c": ('extern "C" double {n}(double x) {{ return x * {c}; }}', ""),
    "T_cpp": ("double {n}(double x) {{ return x + {c}; }}", ""),
    "t": ("static double {n}(double x) {{ return x - {c}; }}", "s += {n}(x);"),
    "D": ("double {n} = {c}.5;", ""),
    "B": ("int {n}[{c}];", ""),
    "R": ("extern const int {n} = {c};", ""),
    "d": ("static int {n} = {c};", "s += {n}++;"),
    "b": ("static int {n}[{c}];", "s += {n}[0]++;"),
    "W": ("__attribute__((weak)) int {n}(int x) {{ return x + {c}; }}", ""),
    "U_c": ('extern "C" double {n}(double);', "s += {n}(x);"),
    "U_cpp": ("double {n}(double);", "s += {n}(s);"),
    "w": ('extern "C" double {n}(double) __attribute__((weak));', "if ({n}) s += {n}(x);"),
    "u": ("inline int& {n}() {{ static int k = {c}; return ++k; }}", "s += {n}();"),
}
_PREFIX = {"T_c": "fc", "T_cpp": "fp", "t": "fs", "D": "gd", "B": "gb", "R": "gr", "d": "sd"}
_PREFIX |= {"b": "sb", "W": "fw", "U_c": "uc", "U_cpp": "up", "w": "uw", "u": "tick"}


def random_source(g: Any, tag: str) -> str:
    """A C++ file of 3 to 9 random parts (functions, data, calls; global, static, weak)."""
    kinds = sorted(_PARTS)
    chosen = [kinds[int(k)] for k in g.integers(0, len(kinds), int(g.integers(3, 10)))]
    lines, body = [], []
    for j, kind in enumerate(chosen):
        decl, use = _PARTS[kind]
        n = f"{_PREFIX[kind]}{tag}_{j}"
        c = int(g.integers(1, 9))
        lines.append(decl.format(n=n, c=c))
        if use:
            body.append(use.format(n=n))
    entry = f'extern "C" double use{tag}(double x) {{ double s = x; {" ".join(body)} return s; }}'
    return "\n".join([*lines, entry, ""])


def _draw(g: Any, i: int) -> tuple[str, tuple[str]]:
    if i == 0:
        return ("g++ -c of the lab's fixed file", (listing(FIXED_SOURCE),))
    src = random_source(g, str(i))
    return (f"a fresh C++ file {i} (nm -P of g++ -c)", (listing(src),))


def _read(got: Any, label: str) -> tuple[list[str], list[str]]:
    if type(got) not in (tuple, list) or len(got) != 2:
        raise CheckFailure(
            f"[{label}] offers_and_needs must return two collections (offers, needs), "
            f"got {got!r:.200}"
        )
    return names(got[0], label, "offers"), names(got[1], label, "needs")


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    parts = []
    for side, g, w in (("offers", got[0], want[0]), ("needs", got[1], want[1])):
        missing, extra = sorted(set(w) - set(g)), sorted(set(g) - set(w))
        if missing:
            parts.append(f"{side} lacks {missing}")
        if extra:
            parts.append(f"{side} should not hold {extra}")
    return f"[{case.label}] offers_and_needs: {'; '.join(parts)}.{' ' + hint if hint else ''}"


_MISTAKES = (
    Mistake(
        " A lower-case w (or v) is a weak undefined symbol: if nothing defines it its address "
        "is 0 (the code tests it first), so the link does not need it.",
        answer=lambda text: offers_and_needs(text, weak_needed=True),
    ),
    Mistake(
        " Lower case (t, d, b, r) is local: a static function or variable, invisible to every "
        "other object, so it offers nothing (only u, a GNU unique global, is offered).",
        answer=lambda text: offers_and_needs(text, local_offered=True),
    ),
    Mistake(
        " W (or V) is a weak definition: it is offered (a strong definition elsewhere wins).",
        answer=lambda text: offers_and_needs(text, weak_offered=False),
    ),
    Mistake(
        " Data is offered too: D (initialised), B (zeroed), R (read-only), C (common).",
        answer=lambda text: offers_and_needs(text, data_offered=False),
    ),
    Mistake(
        " u is a GNU unique global (a static variable inside an inline function): offered, "
        "despite its lower case.",
        answer=lambda text: offers_and_needs(text, unique_offered=False),
    ),
    Mistake(
        " Keep the names as nm prints them (mangled, _Z...): the linker matches those, not "
        "the demangled C++ signature.",
        when=lambda got, text: any("(" in n or " " in n for n in [*got[0], *got[1]]),
    ),
)

OFFERS = Table(
    "37.1",
    truth=offers_and_needs,
    named=_NAMED,
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    read=_read,
    hint="U is needed; upper case but U, and u, are offered; w/v neither; lower case is local.",
    what="offers_and_needs",
    message=_message,
)


@grader("37.1", blocks=NATIVE)
def check_offers_and_needs(student: Callable[..., Any]) -> str:
    """Exercise 37.1: offers_and_needs(nm_text) -> (offered names, needed names)."""
    n = OFFERS.grade(student)
    # once more, outside the table: the expected value is made after the call, in no frame
    got = _read(plain(student(listing(FIXED_SOURCE)), what="offers_and_needs"), "again")
    offers, needs = offers_and_needs(listing(FIXED_SOURCE))
    if got != (offers, needs):
        raise CheckFailure("offers_and_needs(the fixed file's listing) differs on a second call.")
    return (
        f"{n} listings exact (3 compiled here); the fixed file offers {len(offers)} names, "
        f"needs {len(needs)}"
    )
