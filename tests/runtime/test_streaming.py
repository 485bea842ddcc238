"""Streaming: the engine's tokens as time-ordered events with TTFT and inter-token
latencies on the cost-model clock, and byte-level detokenisation that holds back a
split UTF-8 character until it is complete."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.runtime.engine import CostModel, Engine
from minitorch.runtime.streaming import (
    IncrementalDetokenizer,
    latency_report,
    stream_text,
    token_events,
)
from minitorch.runtime.workload import tiny_workload


def test_events_are_time_ordered_and_latencies_match_the_engine() -> None:
    reqs = tiny_workload(6, rate=40.0, seed=1)
    result = Engine(None, num_blocks=64, max_num_seqs=3, cost=CostModel()).run(reqs)
    events = token_events(result)
    assert len(events) == sum(r.max_new_tokens for r in reqs)
    times = [e.time for e in events]
    assert times == sorted(times)
    for s in result.seqs:  # each sequence's events, in order, are its output
        mine = [e for e in events if e.seq_id == s.seq_id]
        assert [e.index for e in mine] == list(range(len(s.output)))
    report = latency_report(result)
    for s in result.seqs:
        r = report[s.seq_id]
        assert r["ttft"] == pytest.approx(s.ttft) and r["ttft"] > 0
        assert r["tpot"] == pytest.approx(r["itl_mean"])
        assert r["itl_max"] >= r["itl_mean"] >= 0
    gaps = np.concatenate([np.diff(s.token_times) for s in result.seqs])
    assert result.metrics()["itl_p99"] == pytest.approx(float(np.percentile(gaps, 99)))


BYTES = [bytes([b]) for b in range(256)]


def test_split_characters_are_held_back() -> None:
    text = "naïve café → 東京 🙂"
    ids = list(text.encode("utf-8"))
    pieces = list(stream_text(ids, BYTES))
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    detok = IncrementalDetokenizer(BYTES)
    euro = "€".encode()  # three bytes
    assert detok.push(euro[0]) == "" and detok.held == 1
    assert detok.push(euro[1]) == "" and detok.held == 2
    assert detok.push(euro[2]) == "€" and detok.held == 0


def test_multi_byte_tokens_and_an_unfinished_stream() -> None:
    vocab = [b"ab", b"\xc3", b"\xa9t", b"\xe2\x82"]
    assert list(stream_text([0, 1, 2], vocab)) == ["ab", "", "ét"]
    detok = IncrementalDetokenizer(vocab)
    assert detok.push(3) == ""
    assert detok.flush() == "\ufffd"  # an unfinished character, as errors="replace"
