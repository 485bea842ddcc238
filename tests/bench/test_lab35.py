"""Lab 35's bench at its smallest sizes: shares of a step and bytes of a sync; no time asserted."""

from __future__ import annotations

import pytest

from a2s.bench import load
from a2s.bench.lab35 import grpo_step_split, sync_bytes
from minitorch.rl.trainer import RLConfig

SMALL = RLConfig(prompts_per_step=1, group_size=2, max_new_tokens=3)


def test_lab35_registers_its_two_experiments() -> None:
    assert {fn.__name__ for fn in load()["35"]} == {"grpo_step_split", "sync_bytes"}


def test_step_split_reports_three_shares_of_one_step() -> None:
    figs = grpo_step_split(steps=1, cfg=SMALL)
    assert [f.name.rsplit(" ", 1)[-1] for f in figs] == ["generate", "train", "sync"]
    assert all(f.unit == "%" and 0 <= f.value <= 100 for f in figs)
    assert sum(f.value for f in figs) == pytest.approx(100)
    assert "2 rollouts x 3 tokens" in figs[0].anchor


def test_sync_bytes_are_the_parameters_and_the_adapters() -> None:
    full, ratio = sync_bytes(steps=1, cfg=SMALL)
    assert (full.unit, ratio.unit) == ("KiB", "x")
    assert full.value * 1024 == 4 * 93_504  # the tiny GPT's float32 parameters
    # 2 layers x (q, o: 64->64; k, v: 64->32; w1, w3: 64->176; w2: 176->64), r = 4, float32
    lora = 4 * 2 * (4 * (64 + 64) * 2 + 4 * (64 + 32) * 2 + 4 * (64 + 176) * 3)
    assert ratio.value == pytest.approx(lora / (4 * 93_504)) and f"{lora:,} of" in ratio.anchor
