"""Checkpoints: exact encoding, atomic commit, torn files found and the previous one used."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from minitorch.elastic import checkpoint as C
from minitorch.elastic import job as J

pytestmark = pytest.mark.lab32


def _state(k: int = 0) -> dict:
    g = np.random.default_rng(k)
    return {
        "step": k,
        "w": g.standard_normal((64, 32)),
        "half": g.standard_normal(7).astype(np.float16),
        "idx": np.arange(5, dtype=np.int32),
        "nested": [{"t": (1, 2.5, None, "x"), "b": True}, np.zeros((0, 3))],
        "f": [0.1, -0.0, math.inf, 1e-310],
        "np_scalar": np.float64(1 / 3),
    }


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    return a == b


def test_encode_decode_is_exact() -> None:
    s = _state(3)
    back = C.decode(C.encode(s))
    assert _same({**s, "np_scalar": float(s["np_scalar"])}, back)


def test_train_state_round_trips_through_bytes() -> None:
    J.seed_everything(0)
    t = J.Trainer(J.Job())
    [t.step() for _ in range(3)]
    s = J.train_state(t)
    assert _same(s, C.decode(C.encode(s)))


def test_decode_rejects_garbage_and_truncation() -> None:
    data = C.encode(_state())
    for bad in (b"nope" * 8, data[: len(data) // 2], data[:20]):
        with pytest.raises(ValueError):
            C.decode(bad)
    with pytest.raises(TypeError):
        C.encode({"x": object()})


def test_save_commits_in_the_manifest_and_keeps_the_newest(tmp_path: Path) -> None:
    for k in (2, 4, 6):
        C.save(tmp_path, k, _state(k), keep=2)
    entries = C.read_manifest(tmp_path)
    assert [e["step"] for e in entries] == [4, 6]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt-00000004.bin",
        "ckpt-00000006.bin",
        "manifest.json",
    ]
    data = (tmp_path / "ckpt-00000006.bin").read_bytes()
    assert entries[-1]["sha256"] == C.sha256(data) and entries[-1]["bytes"] == len(data)
    step, state, skipped = C.load_latest(tmp_path)
    assert step == 6 and skipped == [] and _same(state["w"], _state(6)["w"])
    assert C.load_latest(tmp_path, at_most=5)[0] == 4
    assert C.load_latest(tmp_path / "none") == (None, None, [])


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous(
    tmp_path: Path, damage: str
) -> None:
    C.save(tmp_path, 1, _state(1))
    C.save(tmp_path, 2, _state(2))
    path = tmp_path / "ckpt-00000002.bin"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) - 100])
    elif damage == "flip":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        path.unlink()
    step, state, skipped = C.load_latest(tmp_path)
    assert step == 1 and _same(state["w"], _state(1)["w"])
    assert len(skipped) == 1 and skipped[0].startswith("step 2")
    assert ("torn" in skipped[0]) == (damage != "delete")


def test_sigkill_during_an_atomic_save_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    C.save(tmp_path, 1, _state(1))
    big = {"w": np.random.default_rng(0).standard_normal(40_000)}  # 320 kB, 4 kB per 50 ms
    written = C.kill_during_save(tmp_path, 2, big, after=8192)
    assert 0 < written < len(C.encode(big))
    assert [e["step"] for e in C.read_manifest(tmp_path)] == [1]
    assert not (tmp_path / "ckpt-00000002.bin").exists()  # only a temporary name was torn
    assert any(p.name.startswith(".ckpt-00000002.bin.tmp-") for p in tmp_path.iterdir())
    step, _, skipped = C.load_latest(tmp_path)
    assert step == 1 and skipped == []


def test_sigkill_during_an_in_place_save_is_caught_by_the_checksum(tmp_path: Path) -> None:
    C.save(tmp_path, 1, _state(1))
    big = {"w": np.random.default_rng(0).standard_normal(40_000)}
    C.kill_during_save(tmp_path, 2, big, in_place=True, after=8192)
    assert [e["step"] for e in C.read_manifest(tmp_path)] == [1, 2]  # committed, then torn
    size = (tmp_path / "ckpt-00000002.bin").stat().st_size
    assert 0 < size < len(C.encode(big))
    step, _, skipped = C.load_latest(tmp_path)
    assert step == 1 and skipped and "torn" in skipped[0]


def test_atomic_write_replaces_whole(tmp_path: Path) -> None:
    p = tmp_path / "f"
    C.atomic_write(p, b"a" * 10)
    C.atomic_write(p, b"b" * 3, chunk=1)
    assert p.read_bytes() == b"bbb" and os.listdir(tmp_path) == ["f"]
