"""Grader of exercise 34.6: a streaming detokenizer that never splits a UTF-8 character.

``Detokenizer(vocab_bytes)`` with ``push(token_id) -> str`` and ``flush() -> str``. The
grader builds a byte-level vocabulary per case (the 256 single bytes, then the case's
multi-byte tokens) and drives the learner's class through a stream; the truth
(:func:`stream_pieces`, here: ``_truth.py`` is at its 300 lines) is a plain loop over the
well-formed sequences of RFC 3629 that decodes, after each token, the bytes up to the last
complete character. Checks: the pieces
are ``str``; pieces + flush equal ``b"".join(token bytes).decode("utf-8", errors="replace")``;
on valid input each push returns exactly the truth's piece (a character is emitted at the
push that completes it, never held back, never with U+FFFD). Invalid input (0xff, a stream
ending mid-character) is checked on the joined text only, since when a decoder gives up on
a bad byte is a choice. The reference module and Python's incremental decoders (``codecs``,
``_codecs``, ``encodings``) are forbidden inside the calls: ``bytes.decode`` of a complete
prefix is allowed. Hints name a mistake only when the answer is that mistake. The learner's
class runs in a forked child (:func:`~a2s.checks.harness.run_apart`), every stream in one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, fresh_rng, grader, guarded, rng
from a2s.checks.harness import run_apart

__all__ = ["check_detokenizer"]

# --------------------------------------------------------------------------- truth
# Unicode Table 3-7 (RFC 3629); later bytes are 80..BF. Written without codecs.
# lead byte -> (lowest and highest second byte, the sequence's length)
_LEADS: dict[int, tuple[int, int, int]] = {
    **dict.fromkeys(range(0xC2, 0xE0), (0x80, 0xBF, 2)),
    **dict.fromkeys(range(0xE1, 0xF0), (0x80, 0xBF, 3)),
    0xE0: (0xA0, 0xBF, 3),  # no overlong 3-byte forms
    0xED: (0x80, 0x9F, 3),  # no surrogates
    **dict.fromkeys(range(0xF1, 0xF4), (0x80, 0xBF, 4)),
    0xF0: (0x90, 0xBF, 4),  # no overlong 4-byte forms
    0xF4: (0x80, 0x8F, 4),  # nothing past U+10FFFF
}


def unfinished_tail(data: bytes) -> int:
    """How many trailing bytes of ``data`` are the start of a character still to come."""
    for back in range(1, min(3, len(data)) + 1):
        tail = data[len(data) - back :]
        rule = _LEADS.get(tail[0])
        if rule is None:
            continue
        lo, hi, length = rule
        if back >= length:
            return 0
        ok = all(
            (lo <= b <= hi) if i == 1 else (0x80 <= b <= 0xBF) for i, b in enumerate(tail) if i
        )
        return back if ok else 0
    return 0


def stream_pieces(chunks: Sequence[bytes]) -> tuple[list[str], str]:
    """After each chunk, the new text up to the last complete character; then the flush
    (the unfinished tail decoded with errors="replace")."""
    data, done, pieces = b"", "", []
    for chunk in chunks:
        data += chunk
        text = data[: len(data) - unfinished_tail(data)].decode("utf-8", errors="replace")
        pieces.append(text[len(done) :])
        done = text
    return pieces, data.decode("utf-8", errors="replace")[len(done) :]


# --------------------------------------------------------------------------- grader
_BLOCKS = ("minitorch.runtime.streaming",)
_FORBID = ("torch", "codecs", "_codecs", "encodings")
_RULE = (
    "UTF-8's lead byte gives the length (0xxxxxxx 1, 110xxxxx 2, 1110xxxx 3, 11110xxx 4): "
    "keep the bytes of an unfinished character for the next push, return the rest."
)

# (label, tokens as bytes): the named edges
_NAMED: list[tuple[str, list[bytes]]] = [
    ("ASCII only", [b"Hel", b"lo", b",", b" wor", b"ld"]),
    ("'\u00e9' split across two tokens", [b"caf", b"\xc3", b"\xa9", b"!"]),
    ("4-byte emoji split 1+3", [b"a", b"\xf0", b"\x9f\x99\x82", b"b"]),
    ("4-byte emoji split 2+2", [b"a", b"\xf0\x9f", b"\x99\x82", b"b"]),
    ("4-byte emoji split 1+1+1+1", [b"a", b"\xf0", b"\x9f", b"\x99", b"\x82", b"b"]),
    ("a token ends one character and starts the next", [b"\xc3", b"\xa9\xe2", b"\x82\xac", b"x"]),
    ("an invalid byte 0xff", [b"ab", b"\xff", b"\x80c\xc3", b"\xa9"]),  # 0xff, then 10xxxxxx
    ("the stream ends mid-character", [b"ok ", b"\xf0\x9f", b"\x99"]),
]
# code points of 1, 2, 3 and 4 bytes (ASCII, Latin/Greek/Cyrillic, CJK/euro/Devanagari, emoji)
_POOL = [
    *range(0x20, 0x7F),
    *range(0xC0, 0x180),
    *range(0x391, 0x3CA),
    *range(0x410, 0x450),
    0x20AC,
    *range(0x905, 0x939),
    *range(0x4E00, 0x4E40),
    0xFFFD,  # a valid character: U+FFFD in the input is not an error
    *range(0x1F600, 0x1F650),
    0x10FFFF,
]


def _random(g: np.random.Generator, n: int) -> list[bytes]:
    """n characters of 1-4 bytes, cut at random byte boundaries into tokens of 1-6 bytes."""
    data = "".join(chr(int(c)) for c in g.choice(_POOL, n)).encode("utf-8")
    out, i = [], 0
    while i < len(data):
        k = int(g.integers(1, 7))
        out.append(data[i : i + k])
        i += k
    return out


def _vocab(tokens: Sequence[bytes]) -> tuple[list[bytes], list[int]]:
    vocab = [bytes([b]) for b in range(256)]
    index = {t: i for i, t in enumerate(vocab)}
    for t in tokens:
        if t not in index:
            index[t] = len(vocab)
            vocab.append(t)
    return vocab, [index[t] for t in tokens]


def _hint(got: list[str], tail: str, want: list[str], want_tail: str, valid: bool) -> str:
    """The modelled mistake this answer is, or the rule."""
    text, full = "".join(got) + tail, "".join(want) + want_tail
    if valid and any("\ufffd" in p and "\ufffd" not in w for p, w in zip(got, want, strict=True)):
        return (
            "a piece holds U+FFFD although the input is valid there: decoding each token "
            "alone (errors='replace') turns half a character into U+FFFD. " + _RULE
        )
    if not any(got) and text == full and len(want) > 1 and any(want[:-1]):
        return "every push returned '' and flush returned everything: stream the text. " + _RULE
    if "".join(got) == "".join(want) and want_tail and not tail:
        return (
            "flush() returned '' but the stream ended inside a character: the unfinished "
            "bytes become U+FFFD, as bytes.decode('utf-8', errors='replace') gives them."
        )
    late = ["", *want[:-1]]
    if len(want) > 1 and got == late and tail == want[-1] + want_tail:
        return (
            "each piece is the previous push's text: a character is emitted one push late. "
            "Return it at the push that completes it."
        )
    return _RULE


@grader("34.6", blocks=_BLOCKS, forbid=_FORBID, hand="property")
def check_detokenizer(detokenizer: Any) -> str:
    """Exercise 34.6: ``Detokenizer(vocab_bytes)``, ``push(id) -> str``, ``flush() -> str``."""
    cls: Callable[..., Any] = getattr(detokenizer, "fn", detokenizer)

    def drive(streams: list[tuple[list[bytes], list[int]]]) -> list[tuple[Any, Any]]:
        out = []
        for vocab, ids in streams:
            detok = cls(vocab)
            out.append(([detok.push(i) for i in ids], detok.flush()))
        return out

    run = guarded(drive, "34.6", _BLOCKS, _FORBID)
    truth = stream_pieces  # bound now: a learner's rebinding of the module's name changes nothing
    g, f = rng(3406), fresh_rng("34.6")
    cases = list(_NAMED)
    cases += [(f"random stream {i + 1} (120 characters)", _random(g, 120)) for i in range(2)]
    n = int(f.integers(80, 160))
    cases.append((fresh(f"random stream ({n} characters)"), _random(f, n)))
    streams = [_vocab(toks) for _, toks in cases]
    # apart: every stream in one forked child, so a patch of this module or a look into its
    # frames stays there; the truth is computed here, after
    answers = run_apart(run, [(list(v), list(i)) for v, i in streams])
    if not (isinstance(answers, list) and len(answers) == len(cases)):
        raise CheckFailure("the check's driver was interfered with: leave it alone.")
    tokens = chars = 0
    for (label, toks), answer in zip(cases, answers, strict=True):
        if not (isinstance(answer, (list, tuple)) and len(answer) == 2):
            raise CheckFailure(f"[{label}] the check's driver was interfered with: leave it alone.")
        got, tail = answer
        got = list(got) if isinstance(got, (list, tuple)) else got
        if not isinstance(got, list) or not all(type(p) is str for p in got):
            kinds = sorted({type(p).__name__ for p in got}) if isinstance(got, list) else "?"
            raise CheckFailure(f"[{label}] push must return a str each time, got {kinds}.")
        if type(tail) is not str:
            raise CheckFailure(f"[{label}] flush must return a str, got {type(tail).__name__}.")
        want, want_tail = truth(toks)
        data = b"".join(toks)
        full = data.decode("utf-8", errors="replace")
        try:
            data.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        hint = _hint(got, tail, want, want_tail, valid)
        if "".join(got) + tail != full:
            raise CheckFailure(
                f"[{label}] pieces + flush() give {''.join(got) + tail!r}, expected "
                f"{full!r} (the bytes decoded with errors='replace'). {hint}"
            )
        if valid:
            for k, (p, w) in enumerate(zip(got, want, strict=True)):
                if p != w:
                    raise CheckFailure(
                        f"[{label}] push #{k + 1} (token {toks[k]!r}) returned {p!r}, "
                        f"expected {w!r}. {hint}"
                    )
            if tail != want_tail:
                raise CheckFailure(f"[{label}] flush() returned {tail!r}, expected ''. {hint}")
        tokens, chars = tokens + len(toks), chars + len(full)
    return (
        f"{len(cases)} streams (1 fresh), {tokens} tokens, {chars} characters: every piece "
        "is whole characters, emitted at the push that completes them; invalid bytes as U+FFFD"
    )
