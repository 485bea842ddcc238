"""Streaming output: lab 19's engine as a token stream, TTFT and inter-token latency, and
detokenisation that never emits half a character.

A served request is seen by its client as a stream of events (time, sequence, token): the
engine appends a sequence's token at the clock of the step that sampled it, so the stream
is those tokens merged in time order. Per sequence, **TTFT** = t_1 - arrival and the
**inter-token latencies** are ITL_i = t_{i+1} - t_i (their mean is TPOT).

Tokens of a byte-level vocabulary are byte strings, and a UTF-8 character may be split
across tokens (``"é"`` is ``b"\\xc3\\xa9"``). :class:`IncrementalDetokenizer` keeps the
bytes of an unfinished character and emits text only up to the last complete character,
so the concatenated pieces (and the flush) equal
``b"".join(token bytes).decode(errors="replace")`` and no piece holds a replacement
character unless the input is invalid there.

    result = Engine(load_pretrained()).run(requests)
    for ev in token_events(result): ...                # TokenEvent(time, seq_id, index, token)
    latency_report(result)                             # per sequence: ttft, itl, tpot
    detok = IncrementalDetokenizer(vocab_bytes)
    piece = detok.push(token_id)                       # "" while a character is incomplete

Lab: 34_speculative_decoding
Paper: Kwon et al., vLLM, SOSP 2023 (streaming outputs); the Unicode Standard, UTF-8 (RFC 3629)
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.runtime.engine import Result

__all__ = [
    "IncrementalDetokenizer",
    "TokenEvent",
    "latency_report",
    "stream_text",
    "token_events",
]


@dataclass(frozen=True)
class TokenEvent:
    time: float
    seq_id: int
    index: int  # position in the sequence's output
    token: int


def token_events(result: Result) -> list[TokenEvent]:
    """Every generated token of a finished run, in the order a client receives them."""
    events = [
        TokenEvent(t, s.seq_id, i, tok)
        for s in result.seqs
        for i, (tok, t) in enumerate(zip(s.output, s.token_times, strict=True))
    ]
    return sorted(events, key=lambda e: (e.time, e.seq_id, e.index))


def latency_report(result: Result) -> dict[int, dict[str, float]]:
    """Per sequence: TTFT, mean and max inter-token latency, TPOT (seconds)."""
    out: dict[int, dict[str, float]] = {}
    for s in result.seqs:
        if not s.token_times:
            continue
        itl = np.diff(np.asarray(s.token_times, dtype=np.float64))
        out[s.seq_id] = {
            "ttft": s.token_times[0] - s.arrival,
            "itl_mean": float(itl.mean()) if itl.size else 0.0,
            "itl_max": float(itl.max()) if itl.size else 0.0,
            "tpot": s.tpot,
        }
    return out


class IncrementalDetokenizer:
    """Token ids -> text pieces over a byte vocabulary (``vocab[id]`` is a ``bytes``)."""

    def __init__(self, vocab: Sequence[bytes]) -> None:
        self.vocab = list(vocab)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.held = 0  # bytes of an unfinished character

    def push(self, token: int) -> str:
        """The text completed by this token ("" if it ends inside a character)."""
        piece = self._decoder.decode(self.vocab[int(token)])
        self.held = len(self._decoder.getstate()[0])
        return piece

    def flush(self) -> str:
        """End of stream: an unfinished character's bytes become U+FFFD (errors="replace")."""
        return self._decoder.decode(b"", final=True)


def stream_text(tokens: Sequence[int], vocab: Sequence[bytes]) -> Iterator[str]:
    """The pieces a client would print, one per token (some empty)."""
    detok = IncrementalDetokenizer(vocab)
    for tok in tokens:
        yield detok.push(tok)
    tail = detok.flush()
    if tail:
        yield tail
