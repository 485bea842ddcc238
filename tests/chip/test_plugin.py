"""The chip found by entry point, selected by name by the serving loop."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
import torch

from minitorch.chip import plugin
from tests.chip.conftest import twin

pytestmark = pytest.mark.lab31
ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_declares_the_chip_in_the_platform_group() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    eps = meta["project"]["entry-points"][plugin.GROUP]
    assert eps == {"chip": "minitorch.chip.plugin:ChipPlatform"}
    module, _, attr = eps["chip"].partition(":")
    assert getattr(__import__(module, fromlist=[attr]), attr) is plugin.ChipPlatform


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution on sys.path declaring the chip in a group of its own (as pip would)."""
    group = "a2s.platforms.test"
    info = tmp_path / "chipdemo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: chipdemo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{group}]\nchip = minitorch.chip.plugin:ChipPlatform\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return group


def test_entry_point_is_discovered_and_loaded(installed: str) -> None:
    assert set(plugin.available(installed)) == {"chip"}
    assert isinstance(plugin.load("chip", installed), plugin.ChipPlatform)
    assert isinstance(plugin.load("cpu", installed), plugin.CpuPlatform)
    with pytest.raises(LookupError, match="installed: \\['chip', 'cpu'\\]"):
        plugin.load("tpu", installed)


def test_serving_on_the_chip_equals_the_cpu(installed: str) -> None:
    prompts = [[1, 2, 3], [7, 7]]
    cpu, _ = plugin.serve(twin("alibi"), prompts, "cpu", new_tokens=3, group=installed)
    chip, rep = plugin.serve(twin("alibi"), prompts, "chip", new_tokens=3, group=installed)
    assert chip == cpu and all(len(c) == len(p) + 3 for c, p in zip(chip, prompts, strict=True))
    assert rep.n_fallbacks == 0 and rep.on_chip["aten::mm"] > 0
    assert "minitorch.chip.plugin" in sys.modules and torch.is_grad_enabled()
