"""The verifiable task: lab 09's string problems with a reward computed by a program.

    prompts = make_prompts(("reverse", "sort"), 8, seed=0)   # [Prompt(ids, answer="bac."), ...]
    reward(prompts[0].answer, completion_ids)                # 1.0 exactly right, else 0.0

A prompt is ``<task><letters>=`` (``Rcab=``) and its answer the result and the end mark
(``bac.``). The engine generates a fixed number of tokens (lab 19 ignores the end token, so two
runs do the same work); the completion is read up to its first end mark ``.``. The reward is
1 when that text equals the answer, else 0: no learned reward model, so nothing to hack but
the task itself (the "rule-based" rewards of DeepSeek-R1). ``partial=True`` gives the fraction
of answer characters right in place instead (a denser signal, still computed, not learned).
``response_mask`` marks the tokens the policy is trained on: up to and including the first end
mark, nothing after it.

Lab: 35_rl_systems
Paper: DeepSeek-AI 2025, "DeepSeek-R1" (arXiv:2501.12948; rule-based accuracy rewards)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.model.corpus import examples
from minitorch.model.tokenizer import CharTokenizer

__all__ = ["Prompt", "completion_text", "make_prompts", "response_mask", "reward"]

_TOK = CharTokenizer()


@dataclass(frozen=True)
class Prompt:
    """Token ids of ``Rcab=`` and the exact answer text ``bac.``."""

    ids: tuple[int, ...]
    answer: str

    @property
    def text(self) -> str:
        return _TOK.decode(self.ids)


def make_prompts(
    tasks: Sequence[str], n: int, seed: int, min_len: int = 3, max_len: int = 8
) -> list[Prompt]:
    """n prompts drawn from ``seed`` (the generator of lab 09's ``corpus.examples``)."""
    return [Prompt(tuple(_TOK.encode(p)), a) for p, a in examples(tasks, n, seed, min_len, max_len)]


def completion_text(ids: Sequence[int] | np.ndarray) -> str:
    """The completion up to and including its first end mark (all of it if there is none)."""
    text = _TOK.decode(ids)
    cut = text.find(".")
    return text if cut < 0 else text[: cut + 1]


def reward(answer: str, ids: Sequence[int] | np.ndarray, partial: bool = False) -> float:
    """1.0 when the completion reads exactly ``answer``, else 0.0; ``partial``: the fraction
    of the answer's characters matched in place (a wrong length still scores what matches)."""
    got = completion_text(ids)
    if not partial:
        return float(got == answer)
    hits = sum(a == b for a, b in zip(got, answer, strict=False))
    return hits / max(len(answer), len(got))


def response_mask(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    """1.0 for each completion token up to and including the first end mark, 0.0 after."""
    arr = np.asarray(ids).reshape(-1)
    mask = np.ones(arr.shape, np.float64)
    ends = np.flatnonzero(arr == _TOK.end_id)
    if ends.size:
        mask[ends[0] + 1 :] = 0.0
    return mask
