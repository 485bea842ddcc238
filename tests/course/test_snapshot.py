"""The sealed snapshot sees a grader written as data: a table rebound or a field rewritten."""

from __future__ import annotations

import types

from a2s.checks.table import TABLES, Table
from a2s.snapshot import changes, snapshot, trusted_roots


def _module() -> types.ModuleType:
    mod = types.ModuleType("a2s.checks.lab99_fake")
    mod.TABLE = Table("99.1", truth=lambda x: x, named=[("x=1", (1,))])
    TABLES.remove(mod.TABLE)  # not a real grader: keep it out of the generic test
    return mod


def test_an_untouched_table_is_no_change() -> None:
    mod = _module()
    assert changes(*snapshot([mod]), trusted_roots()) == []


def test_a_rewritten_field_is_seen() -> None:
    mod = _module()
    state = snapshot([mod])
    object.__setattr__(mod.TABLE, "truth", lambda x: 0)  # a frozen dataclass, forced
    assert any("truth was replaced" in c for c in changes(*state, trusted_roots()))


def test_a_rebound_table_is_seen() -> None:
    mod = _module()
    state = snapshot([mod])
    mod.TABLE = Table("99.1", truth=lambda x: 0)
    TABLES.remove(mod.TABLE)
    assert any("TABLE was replaced" in c for c in changes(*state, trusted_roots()))
