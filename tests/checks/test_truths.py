"""The shared ground truth (:mod:`a2s.checks.truths`): blocked for learner code by default,
free for the graders, and the same values as the copies it replaced."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from a2s.checks import truths
from a2s.checks.core import ReferenceCalledError, guarded
from a2s.checks.guard import TRUTH_MODULES

_G = np.random.default_rng(19)
_Q, _K = _G.standard_normal((4, 5, 8)), _G.standard_normal((2, 5, 8))
ARGS = {
    "attention": (_Q, _K, _K),
    "torch_attention": (_Q, _K, _K),
    "gelu_tanh": (_Q,),
    "gelu_torch": (_Q,),
    "layer_norm": (_Q, 1.0, 0.0),
    "rms_norm": (_Q, np.ones(8), 1e-5),
    "rms_norm_torch": (_Q, np.ones(8), 1e-5),
    "chunks": (10, 3),
    "chunk_bounds": (10, 3),
    "rank_inputs": (np.random.default_rng(0), 3, 4, True),
    "loop_sum": ([np.arange(3), np.arange(3)],),
}


def test_every_shared_truth_is_covered_here() -> None:
    assert "a2s.checks.truths" in TRUTH_MODULES
    assert sorted(ARGS) == sorted(truths.__all__)


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_learner_calling_a_shared_truth_is_rejected(name: str) -> None:
    fn, args = getattr(truths, name), ARGS[name]

    def learner(*given):  # the learner's function, in any lab's check
        return fn(*given)

    for exercise in ("09.1", "24.4"):
        with pytest.raises(ReferenceCalledError, match=rf"a2s\.checks\.truths\.{name}\b"):
            guarded(learner, exercise, ())(*args)
    fn(*args)  # outside a check it is callable, and its code is back
    assert fn.__code__.co_name == name


def test_the_graders_call_the_shared_truth_freely() -> None:
    from a2s.checks.lab24._truth import plain_attention

    x = _G.standard_normal((3, 2, 4))
    w = [_G.standard_normal((4, 4)) for _ in range(4)]

    def learner(f):  # a grader function handed over calls the shared truth inside the check
        return f(x, w, np.zeros(4), 2)

    got = guarded(learner, "24.2", ())(plain_attention)
    assert np.array_equal(got, plain_attention(x, w, np.zeros(4), 2))


def test_the_shared_truths_keep_the_values_of_the_copies_they_replaced() -> None:
    q, k, v = (_G.standard_normal((2, 6, 4)) for _ in range(3))
    s = np.einsum("hid,hjd->hij", q, k) / 2.0 + np.triu(np.full((6, 6), -np.inf), 1)
    w = np.exp(s - s.max(-1, keepdims=True))
    assert np.allclose(truths.attention(q, k, v), w / w.sum(-1, keepdims=True) @ v, 0, 1e-14)
    assert np.allclose(truths.torch_attention(q, k, v), truths.attention(q, k, v), 0, 1e-12)
    qg = _G.standard_normal((1, 4, 6, 4))  # GQA: query heads 0, 1 read K/V head 0
    kg, vg = _G.standard_normal((1, 2, 6, 4)), _G.standard_normal((1, 2, 6, 4))
    want = truths.attention(qg, np.repeat(kg, 2, 1), np.repeat(vg, 2, 1))
    assert np.allclose(truths.attention(qg, kg, vg), want, 0, 1e-14)
    assert np.allclose(truths.torch_attention(qg, kg, vg), want, 0, 1e-12)
    last = truths.attention(q[:, 4:], k, v, offset=4)  # the last 2 of 6 positions
    assert np.allclose(last, truths.attention(q, k, v)[:, 4:], 0, 1e-14)
    assert np.allclose(truths.torch_attention(q[:, 4:], k, v, offset=4), last, 0, 1e-12)
    x = _G.standard_normal((3, 7)) * 3
    assert np.allclose(truths.gelu_tanh(x), truths.gelu_torch(x), 0, 1e-14)
    assert np.allclose(
        truths.rms_norm(x, 1.5, 1e-6), truths.rms_norm_torch(x, np.full(7, 1.5), 1e-6)
    )
    ln = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    assert np.allclose(truths.layer_norm(x, 1.0, 0.0), ln, 0, 1e-14)
    assert truths.chunks(10, 4) == [3, 3, 2, 2]
    assert truths.chunk_bounds(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert truths.loop_sum([np.arange(3), np.arange(3) * 2]).tolist() == [0, 3, 6]


def test_a_truth_handed_to_a_thread_pool_is_the_learners_call() -> None:
    """A work item is the call of whoever submitted it (:mod:`a2s.checks.truth_threads`):
    the default guard rejects it, as the ``blocks=`` stub does."""
    from a2s.checks.lab24._truth import BLOCKS, plain_attention

    x = _G.standard_normal((3, 2, 4))
    w = [_G.standard_normal((4, 4)) for _ in range(4)]

    def learner(x, w):
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(plain_attention, x, w, np.zeros(4), 2).result()

    for blocks in ((), BLOCKS):
        with pytest.raises(ReferenceCalledError, match="plain_attention"):
            guarded(learner, "24.2", blocks)(x, w)
