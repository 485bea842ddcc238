"""Grader of exercise 31.6: the platform found by its entry point, only the named one imported.

The learner writes ``available(group) -> {name: entry point}`` (from
``importlib.metadata.entry_points``, importing nothing) and ``load(name, group)`` (the named
platform's entry point loaded and called: a platform object; an unknown name raises an error
whose message lists every installed name). The grader installs fake platforms for real: a
temporary folder on ``sys.path`` holding two distributions (``*.dist-info`` with ``METADATA``
and ``entry_points.txt``, so ``importlib.metadata`` finds them) that offer four platforms in a
group named afresh for each check (nothing this repository installs can answer), one of them
broken (its import raises), and a decoy group offering the same names. Each platform module,
when imported, asks the grader's process for a secret token and reports its import there: the
learner's functions run in a forked child (``harness.run_apart``), so the record of what was
imported and the tokens stay out of its reach. Listing must import nothing; loading must import
the named module only and return the object its class builds (the token proves it).
"""

from __future__ import annotations

import importlib
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from a2s.checks.compare import call
from a2s.checks.core import CheckFailure, case_label, grader
from a2s.checks.errors import StudentError
from a2s.checks.harness import run_apart

__all__ = ["check_platforms"]

_MODULE = '''from a2s.checks.harness import request
_TOKEN = request("platform.imported", {name!r})
{extra}

class Platform:
    """The fake platform {name!r} ({dist})."""

    def __init__(self):
        self.name, self.token = {name!r}, _TOKEN
'''


def _install(root: Path, stem: str, group: str, decoy: str, names: list[str]) -> dict[str, str]:
    """Two distributions offering names 0+1 (1 broken) and 2+3 in ``group`` (and a decoy
    group); the module of each platform, by name."""
    dists = {"one": (names[0], names[1]), "two": (names[2], names[3])}
    modules = {}
    for dist, offered in dists.items():
        info = root / f"{stem}_{dist}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {stem}-{dist}\nVersion: 1.0\n", encoding="utf-8"
        )
        lines, wrong = [f"[{group}]"], [f"[{decoy}]"]
        for name in offered:
            mod = f"{stem}_{name}"
            modules[name] = mod
            extra = 'raise RuntimeError("this platform is broken")' if name == names[1] else ""
            src = _MODULE.format(name=name, dist=f"{stem}-{dist}", extra=extra)
            (root / f"{mod}.py").write_text(src, encoding="utf-8")
            lines.append(f"{name} = {mod}:Platform")
            wrong.append(f"{name} = {stem}_decoy:Platform")
        (info / "entry_points.txt").write_text("\n".join([*lines, "", *wrong]) + "\n", "utf-8")
    src = _MODULE.format(name="decoy", dist="the decoy group", extra="")
    (root / f"{stem}_decoy.py").write_text(src, encoding="utf-8")
    return modules


def _in_child(available: Any, load: Any, case: str, group: str, name: str, module: str) -> Any:
    """In the learner's child: what its functions answered, as plain values (a platform only
    if its class is the one the named entry point's module defines)."""
    if case == "list":
        found = call(available, group)
        if not hasattr(found, "keys"):
            return ("type", type(found).__name__)
        return ("names", sorted(str(k) for k in found.keys()))
    try:
        plat = call(load, name, group)
    except StudentError as exc:  # the learner's own error: the answer for an unknown name
        if case != "unknown":
            raise
        msg = str(exc).split(" (called with ")[0]
        return ("error", "an error", msg.split("your function raised ", 1)[-1])
    made_by = getattr(sys.modules.get(module), "Platform", None)
    if made_by is None or type(plat) is not made_by:  # a look-alike holding a token
        what = "decoy" if getattr(plat, "name", None) == "decoy" else type(plat).__name__
        return ("platform", what if what == "decoy" else f"a {what} not of module {module}", "")
    return ("platform", str(getattr(plat, "name", "?")), str(getattr(plat, "token", "")))


@grader(
    "31.6",
    blocks=("minitorch.chip.plugin:available", "minitorch.chip.plugin:load"),
    hand="object",
)
def check_platforms(available: Callable[..., Any], load: Callable[..., Any]) -> str:
    """Exercise 31.6: available(group) lists without importing; load(name, group) imports one."""
    g = np.random.default_rng(secrets.randbits(128))  # not fresh_rng: a second check in the
    # same process would draw the same names, and a listing saved from the first replays
    stem = f"a2s_fake_platform_{int(g.integers(1 << 30)):x}"
    group, decoy = f"{stem}.platforms", f"{stem}.decoy"
    tags = [f"{int(t):02d}" for t in g.integers(0, 100, size=4)]  # names not known in advance
    names = [f"{w}{t}" for w, t in zip(("alpha", "broken", "gamma", "delta"), tags, strict=True)]
    cases = [
        ("list", "list the platforms of the group", ""),
        ("load", f"load {names[2]!r} (the second distribution)", names[2]),
        ("load", f"load {names[0]!r} (beside a broken platform)", names[0]),
        ("unknown", "load 'tpu' (not installed)", "tpu"),
    ]
    with tempfile.TemporaryDirectory(prefix="a2s-31.6-") as tmp:
        modules = _install(Path(tmp), stem, group, decoy, names)
        sys.path.insert(0, tmp)
        importlib.invalidate_caches()
        try:
            for case, label, name in cases:
                imported: list[str] = []
                tokens: dict[str, str] = {}

                def on_import(mod: str, imported: list[str] = imported, t: Any = tokens) -> str:
                    imported.append(str(mod))
                    t[str(mod)] = secrets.token_hex(8)
                    return t[str(mod)]

                with case_label(label):
                    got = run_apart(
                        _in_child,
                        available,
                        load,
                        case,
                        group,
                        name,
                        modules.get(name, ""),
                        serve={"platform.imported": on_import},
                    )
                _judge(case, label, name, got, imported, tokens, sorted(names))
        finally:
            sys.path.remove(tmp)
            for mod in [m for m in sys.modules if m.startswith(stem)]:
                del sys.modules[mod]
            importlib.invalidate_caches()
    return (
        f"{len(names)} platforms of 2 distributions listed with nothing imported; "
        "each load imported the named module only; an unknown name lists all four"
    )


def _judge(
    case: str,
    label: str,
    name: str,
    got: Any,
    imported: list[str],
    tokens: dict[str, str],
    names: list[str],
) -> None:
    if case == "list":
        if imported:
            raise CheckFailure(
                f"[{label}] listing imported {sorted(set(imported))}: list the entry points "
                "(their .name) without loading them; a broken or heavy backend must not be "
                "imported unless it is asked for."
            )
        if got[0] != "names" or got[1] != names:
            shown = got[1] if got[0] == "names" else f"a {got[1]}"
            raise CheckFailure(
                f"[{label}] available() gave {shown}; the group's installed platforms are "
                f"{names} (entry_points(group=...) over "
                "every distribution, keyed by the entry point's name)."
            )
        return
    if case == "unknown":
        missing = [n for n in names if n not in (got[2] if got[0] == "error" else "")]
        if got[0] != "error" or missing:
            why = "returned a platform" if got[0] != "error" else f"raised {got[2]!r}"
            raise CheckFailure(
                f"[{label}] load {why}; an unknown name must raise an error whose message "
                f"names every installed platform ({', '.join(names)})."
            )
        if imported:
            raise CheckFailure(
                f"[{label}] looking up an unknown name imported {sorted(set(imported))}."
            )
        return
    if got[0] != "platform" or got[1] != name or got[2] != tokens.get(name):
        who = "the decoy group's platform" if got[1] == "decoy" else f"{got[1]!r}"
        raise CheckFailure(
            f"[{label}] load returned {who}, not an instance built by the {name!r} entry point "
            "of the group asked for: ep.load() gives the class, call it."
        )
    others = sorted(set(imported) - {name})
    if others:
        raise CheckFailure(
            f"[{label}] loading {name!r} also imported {others}: load only the entry point "
            "named (selecting by name must not import the other platforms)."
        )
