"""The task's reward, rollouts from lab 19's engine with their log-probabilities, and the
trainer's recomputation: equal in the same precision, off when the engine serves bf16."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.model.checkpoint import load_pretrained
from minitorch.model.tokenizer import CharTokenizer
from minitorch.rl.rollout import (
    RolloutEngine,
    bf16_copy,
    generate,
    pack,
    recompute_logprobs,
)
from minitorch.rl.task import completion_text, make_prompts, response_mask, reward

TOK = CharTokenizer()


@pytest.fixture(scope="module")
def model():
    return load_pretrained()


@pytest.fixture(scope="module")
def prompts():
    return make_prompts(("reverse", "sort"), 4, seed=0)


def test_reward_reads_up_to_the_first_end_mark():
    assert reward("bac.", TOK.encode("bac.__abc")) == 1.0
    assert reward("bac.", TOK.encode("bac")) == 0.0  # no end mark: not the answer
    assert reward("bac.", TOK.encode("ba.c.")) == 0.0
    assert reward("bac.", TOK.encode("bbc.")) == 0.0
    assert reward("bac.", TOK.encode("bbc."), partial=True) == 0.75
    assert completion_text(TOK.encode("ab.cd.")) == "ab."
    np.testing.assert_array_equal(response_mask(TOK.encode("ab.cd")), [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(response_mask(TOK.encode("abc")), [1, 1, 1])


def test_prompts_are_lab09_tasks(prompts):
    for p in prompts:
        marker, letters = p.text[0], p.text[1:-1]
        assert p.text.endswith("=")
        want = letters[::-1] if marker == "R" else "".join(sorted(letters))
        assert p.answer == want + "."


def test_engine_logprobs_equal_the_trainer_recomputation(model, prompts):
    engine = RolloutEngine(model, temperature=2.0, seed=0)
    rollouts = generate(engine, prompts, group_size=4, max_new_tokens=10)
    assert len(rollouts) == 16 and [r.group for r in rollouts[:5]] == [0, 0, 0, 0, 1]
    batch = pack(rollouts)
    assert batch.ids.shape == (16, max(len(p.ids) for p in prompts) + 10)
    gap = np.abs(recompute_logprobs(model, batch, 2.0) - batch.engine_logp)
    assert gap.max() < 1e-4  # float32 rounding: different op order, same weights
    assert all(r.version == 0 for r in rollouts)
    for r in rollouts:
        assert r.reward == reward(r.prompt.answer, r.tokens)
    wrong_t = np.abs(recompute_logprobs(model, batch, 1.0) - batch.engine_logp)
    assert wrong_t.max() > 0.1  # the trainer must use the engine's temperature


def test_sampling_is_seeded_and_does_not_depend_on_batching(model, prompts):
    a = generate(RolloutEngine(model, 2.0, seed=3), prompts, 4)
    b = generate(RolloutEngine(model, 2.0, seed=3, token_budget=7, max_num_seqs=3), prompts, 4)
    assert [r.tokens for r in a] == [r.tokens for r in b]
    c = generate(RolloutEngine(model, 2.0, seed=4), prompts, 4)
    assert [r.tokens for r in a] != [r.tokens for r in c]


def test_bf16_engine_logprobs_drift_from_the_trainer(model, prompts):
    engine = RolloutEngine(bf16_copy(model), temperature=2.0, seed=0)
    batch = pack(generate(engine, prompts, 4))
    gap = np.abs(recompute_logprobs(model, batch, 2.0) - batch.engine_logp)[batch.mask > 0]
    assert 1e-3 < gap.max() < 0.5
    ratio = np.exp(recompute_logprobs(model, batch, 2.0) - batch.engine_logp)
    assert np.abs(ratio - 1).max() > 1e-3  # rho != 1 at the first step: recompute logp_old


def test_pack_refuses_ragged_completions(model, prompts):
    rollouts = generate(RolloutEngine(model, 2.0), prompts[:1], 2, max_new_tokens=4)
    rollouts[1].tokens = rollouts[1].tokens[:3]
    with pytest.raises(ValueError, match="different lengths"):
        pack(rollouts)
