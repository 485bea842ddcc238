"""Deprecated: the graders moved to ``a2s.checks``. This alias keeps old notebooks working.

A notebook saved before the move says ``from minitorch.checks import lab18``; that still
imports, and every ``minitorch.checks.X`` is the very module ``a2s.checks.X`` (not a copy, so
the graders' state and the seal are the same), with a ``DeprecationWarning``. New code and
every lab import ``from a2s.checks import labNN``. The stack (``minitorch``) never imports the
course otherwise; this file is the one exception, and it goes away in a later release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

_OLD, _NEW = "minitorch.checks", "a2s.checks"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``minitorch.checks.X`` to the module ``a2s.checks.X`` (imported if need be)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith(_OLD + "."):
            return None
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_NEW + spec.name[len(_OLD) :])

    def exec_module(self, module: ModuleType) -> None:  # the real module already ran
        return None


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())

warnings.warn(
    "minitorch.checks moved to a2s.checks: write `from a2s.checks import labNN`",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    return getattr(importlib.import_module(_NEW), name)
