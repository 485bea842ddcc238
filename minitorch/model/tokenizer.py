"""A character tokenizer with a fixed 16-symbol vocabulary for the bundled tasks.

    tok = CharTokenizer()
    tok.encode("Rabc=")            # [3, 7, 8, 9, 2]
    tok.decode([9, 8, 7, 1])       # "cba."

Id 0 is padding ``_``, 1 the end mark ``.``, 2 the separator ``=``; then the task markers
``R`` (reverse), ``S`` (sort), ``C`` (copy), ``H`` (shift by one letter), then the letters
``a``..``i``. Unknown characters raise (no silent <unk>).

Lab: 09_transformer
Paper: Radford et al. 2019 (GPT-2 reads bytes; a character tokenizer is the same idea, smaller)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["VOCAB", "CharTokenizer"]

VOCAB = "_.=RSCHabcdefghi"


class CharTokenizer:
    """One id per character of ``vocab`` (16 by default)."""

    def __init__(self, vocab: str = VOCAB) -> None:
        if len(set(vocab)) != len(vocab):
            raise ValueError("vocabulary characters must be distinct")
        self.vocab = vocab
        self.stoi = {ch: i for i, ch in enumerate(vocab)}
        self.pad_id, self.end_id, self.sep_id = 0, 1, 2

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.stoi[ch] for ch in text]
        except KeyError as e:
            raise ValueError(f"character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids: Iterable[int] | np.ndarray) -> str:
        return "".join(self.vocab[int(i)] for i in np.asarray(ids).reshape(-1))
