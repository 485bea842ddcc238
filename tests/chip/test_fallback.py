"""The CPU fallback: missing ops run on the host, counted in calls and bytes each way."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.chip.device import Chip
from minitorch.chip.fallback import recording
from minitorch.chip.tensor import is_chip, move_module, to_chip, to_cpu
from tests.chip.conftest import twin

pytestmark = pytest.mark.lab31


def test_fallback_copies_down_runs_on_cpu_and_copies_back() -> None:
    chip = Chip()
    x = to_chip(torch.arange(6, dtype=torch.float32), chip)
    chip.reset_counters()
    with recording() as rep:
        y = torch.cumsum(x, 0)  # no chip kernel
    assert chip.d2h_bytes == 24 and chip.h2d_bytes == 24
    assert is_chip(y) and np.array_equal(to_cpu(y).numpy(), np.cumsum(np.arange(6.0)))
    f = rep.fallbacks["aten::cumsum"]
    assert (f.count, f.to_cpu, f.to_chip, rep.n_fallbacks, rep.fallback_bytes) == (1, 24, 24, 1, 48)
    assert "aten::cumsum" in rep.table() and "1 fallbacks, 48 bytes" in rep.table()


def test_an_in_place_fallback_mutates_the_chip_tensor() -> None:
    chip = Chip()
    x = to_chip(torch.zeros(4), chip)
    with recording() as rep:
        y = x.exp_()  # no chip kernel for exp_: the host result is written back into x
    assert y is x and np.array_equal(to_cpu(x).numpy(), np.ones(4))
    f = rep.fallbacks["aten::exp_"]
    assert (f.count, f.to_cpu, f.to_chip) == (1, 16, 16)
    with recording() as rep:
        x.add_(1.0)  # add_.Scalar: on the chip, in place
    assert rep.n_fallbacks == 0 and np.array_equal(to_cpu(x).numpy(), 2 * np.ones(4))


def test_nested_reports_both_record_and_host_inputs_are_counted() -> None:
    x = to_chip(torch.ones(4))
    with recording() as outer:
        with recording() as inner:
            y = x * torch.full((4,), 2.0)  # a CPU tensor met by a chip op: uploaded
        _ = y + 1
    assert inner.host_inputs["aten::mul.Tensor"] == 16
    assert outer.on_chip["aten::add.Tensor"] == 1 and "aten::add.Tensor" not in inner.on_chip
    assert outer.ops() == ["aten::add.Tensor", "aten::mul.Tensor"]


def test_host_operands_are_uploaded_for_the_call_only() -> None:
    chip = Chip(alignment=64)
    x = to_chip(torch.ones(16), chip)
    with recording() as rep:
        y = x + torch.arange(16.0)  # the host tensor: uploaded, used, freed
    assert rep.host_inputs["aten::add.Tensor"] == 64 and chip.h2d_copies == 2
    assert chip.bytes_live == 128 and chip.peak == 192  # x and y live; the upload was freed
    assert np.array_equal(to_cpu(y).numpy(), 1 + np.arange(16.0))


@torch.no_grad()
def test_one_decode_step_of_the_tiny_gpt(variant: str) -> None:
    """One greedy decode step (no KV cache: the whole 6-token context, argmax of the last)."""
    chip = Chip()
    tm = move_module(twin(variant), chip)
    idx = to_chip(torch.tensor([[3, 1, 4, 1, 5, 9]]), chip)
    chip.reset_counters()
    with recording() as rep:
        token = int(to_cpu(tm(idx)[0, -1].argmax()))
    assert token == int(twin(variant)(torch.tensor([[3, 1, 4, 1, 5, 9]]))[0, -1].argmax())
    # measured on torch 2.13: RoPE's complex view ops fall back (4 calls, 4608 bytes);
    # ALiBi + LayerNorm + GELU runs with none
    budget = {"rope": (4, 4608), "alibi": (0, 0)}[variant]
    assert (rep.n_fallbacks, rep.fallback_bytes) <= budget
    assert len(rep.on_chip) >= 15
