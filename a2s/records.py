"""One executed notebook cell, as the nbval plugin records it and the scorer reads it.

The plugin writes one JSON line per cell (:meth:`CellRecord.to_json`); the runner reads them
back (:meth:`CellRecord.from_json`, which drops lines that are not records). Records explain
failures (exception, timeout, dead kernel, output); under ``a2s grade`` a pass comes only
from a signed verdict (:mod:`a2s.verdicts`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["CellRecord"]


@dataclass(slots=True)
class CellRecord:
    """The raw outcome of one cell, keyed by its id (never nbval's "Cell N" name)."""

    id: str
    exercise: str | None = None  # metadata.a2s.exercise of exercise and check cells
    tags: list[str] = field(default_factory=list)
    outcome: str = "passed"  # passed | failed | skipped
    ename: str | None = None  # exception name, as IPython reports it
    evalue: str | None = None
    timeout: bool = False  # interrupted at --cell-timeout (or KeyboardInterrupt)
    kernel_dead: bool = False
    message: str = ""  # nbval's failure text, colour codes removed
    stdout: str = ""  # printed output and plain-text results, last 4,000 characters
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str) -> CellRecord | None:
        """Parse one line; None for a line cut short by a kill or not a record at all."""
        try:
            row: Any = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            return None
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in row.items() if k in known})
        except TypeError:
            return None
