"""Lab 34's bench at its smallest sizes: passes, tokens and bytes counted; no time asserted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from a2s.bench import load
from a2s.bench.lab34 import _acceptance, mla_kv_bytes, speculative_decoding
from a2s.figures import missed_target


def test_lab34_registers_its_two_experiments() -> None:
    assert {fn.__name__ for fn in load()["34"]} == {"speculative_decoding", "mla_kv_bytes"}


def test_acceptance_counts_judged_drafts_with_the_short_last_draft() -> None:
    # n = 6, gamma = 2: drafts of 2 (k = 2: 3 tokens), 2 (k = 0: 1 token), 1 (k = 1: 2 tokens)
    run = SimpleNamespace(accepted=[2, 0, 1])
    assert _acceptance([run], 6, 2) == (3, 2 + 1 + 1)
    # n = 3, gamma = 4: one draft of 2, both accepted, then nothing is left
    assert _acceptance([SimpleNamespace(accepted=[2])], 3, 4) == (2, 2)


def test_speculative_figures_count_passes_and_tokens() -> None:
    n = 6
    passes, tokens, wall = speculative_decoding(prompts=1, n=n, gamma=2, repeats=1)
    assert (passes.unit, tokens.unit, wall.unit) == ("passes", "tokens", "x")
    assert "same tokens: True" in passes.anchor and "plain greedy 1.00" in passes.anchor
    assert 1 / n <= passes.value <= 1.0 and (passes.value * n).is_integer()  # whole passes
    assert tokens.value == pytest.approx(1 / passes.value)
    assert "(1 - a^(g+1)) / (1 - a)" in tokens.anchor
    assert not missed_target(passes.value, passes.anchor)  # target <= 1.0: met
    assert wall.value > 0 and not missed_target(wall.value, wall.anchor)


def test_mla_caches_twelve_elements_a_token_against_mha_sixty_four() -> None:
    (fig,) = mla_kv_bytes(tokens=4)
    assert (fig.value, fig.unit) == (96, "B")  # (d_c 8 + rope 4) x 8 B
    assert "MHA 512 B" in fig.anchor and "closed forms 96 and 512 B" in fig.anchor
