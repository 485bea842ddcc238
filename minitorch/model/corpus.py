"""Bundled tasks generated in code (nothing downloaded): string problems with exact answers.

Each example is ``<task><letters>=<answer>.``: ``Rcab=bac.`` (reverse), ``Scab=abc.``
(sort), ``Ccab=cab.`` (copy), ``Hcab=dbc.`` (shift each letter by one, ``i`` -> ``a``).
Letters are drawn from ``a``..``i``, lengths ``min_len``..``max_len``, from a seed.

    x, y = task_batch(["reverse", "sort"], 32, seed=0)  # (32, T) ids, (32, T) targets
    # y[b, t] is the token after x[b, t] where it is part of the answer, else IGNORE (-1)

Only the answer (after ``=``) is scored, so the loss and the exact-match accuracy measure
the task itself, not the random prompt. Licence: generated here, part of this repository.

Lab: 09_transformer
Paper: Graves, Wayne & Danihelka 2014 (Neural Turing Machines: copy and sort tasks)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minitorch.model.tokenizer import CharTokenizer

__all__ = ["IGNORE", "LETTERS", "TASKS", "examples", "task_batch"]

IGNORE = -1
LETTERS = "abcdefghi"


def _shift(s: str) -> str:
    return "".join(LETTERS[(LETTERS.index(ch) + 1) % len(LETTERS)] for ch in s)


TASKS: dict[str, tuple[str, Callable[[str], str]]] = {
    "reverse": ("R", lambda s: s[::-1]),
    "sort": ("S", lambda s: "".join(sorted(s))),
    "copy": ("C", lambda s: s),
    "shift": ("H", _shift),
}


def examples(
    tasks: Sequence[str], n: int, seed: int, min_len: int = 3, max_len: int = 8
) -> list[tuple[str, str]]:
    """n (prompt, answer) pairs, e.g. ("Rcab=", "bac."), tasks drawn uniformly."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        marker, fn = TASKS[tasks[int(rng.integers(len(tasks)))]]
        length = int(rng.integers(min_len, max_len + 1))
        s = "".join(LETTERS[i] for i in rng.integers(0, len(LETTERS), length))
        out.append((f"{marker}{s}=", fn(s) + "."))
    return out


def task_batch(
    tasks: Sequence[str],
    n: int,
    seed: int,
    min_len: int = 3,
    max_len: int = 8,
    tokenizer: CharTokenizer | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (n, T) and next-token targets (n, T), T = 2 max_len + 2, right-padded;
    targets are IGNORE except where the next token belongs to the answer."""
    tok = tokenizer or CharTokenizer()
    t = 2 * max_len + 2
    x = np.full((n, t), tok.pad_id, dtype=np.int64)
    y = np.full((n, t), IGNORE, dtype=np.int64)
    for b, (prompt, answer) in enumerate(examples(tasks, n, seed, min_len, max_len)):
        ids = tok.encode(prompt + answer)
        x[b, : len(ids) - 1] = ids[:-1]
        start = len(prompt) - 1  # position of "=", whose next token is the answer's first
        y[b, start : len(ids) - 1] = ids[start + 1 :]
    return x, y
