"""Chiplets: link time and energy, loads between dies, the least-energy placement in budget."""

from __future__ import annotations

import itertools

import pytest

from minitorch.hardware import chiplet
from minitorch.model.train import TINY

_D2D = {"bandwidth": 1e9, "latency": 1e-6, "pj_per_bit": 0.5}
_ON = {"bandwidth": 4e9, "latency": 1e-7, "pj_per_bit": 0.1}


def test_link_time_and_energy():
    assert chiplet.link_seconds(0, _D2D) == 0.0
    assert chiplet.link_seconds(1000, _D2D) == pytest.approx(2e-6)
    assert chiplet.transfer_joules(1000, _D2D) == pytest.approx(4e-9)
    assert chiplet.link_seconds(1000, chiplet.UCIE_ADVANCED) == pytest.approx(
        chiplet.UCIE_ADVANCED.latency + 1000 / chiplet.UCIE_ADVANCED.bandwidth
    )


def test_illustrative_links_keep_the_order_the_model_needs():
    on, adv, std = chiplet.ON_DIE, chiplet.UCIE_ADVANCED, chiplet.UCIE_STANDARD
    assert on.pj_per_bit < adv.pj_per_bit < std.pj_per_bit
    assert on.bandwidth > adv.bandwidth > std.bandwidth
    assert on.latency < adv.latency < std.latency
    assert all("illustrative" in link.source for link in (on, adv, std))
    assert adv.as_dict() == {"bandwidth": 128e9, "latency": 2e-9, "pj_per_bit": 0.3}


def test_loads_are_per_direction_and_energy_splits_cut_and_kept():
    traffic = [[0, 5, 0], [2, 0, 7], [0, 0, 0]]
    assert chiplet.die_link_loads(traffic, [0, 1, 1]) == {(0, 1): 5.0, (1, 0): 2.0}
    e = chiplet.placement_energy(traffic, [0, 1, 1], _D2D, _ON)
    assert e == pytest.approx(8e-12 * (7 * 0.5 + 7 * 0.1))


def test_placements_cover_every_assignment_up_to_renaming():
    got = list(chiplet._placements(5, 3, 2))
    want = set()
    for p in itertools.product(range(3), repeat=5):
        if max(p.count(d) for d in range(3)) <= 2:
            relabel = {d: i for i, d in enumerate(dict.fromkeys(p))}
            want.add(tuple(relabel[d] for d in p))
    assert sorted(map(tuple, got)) == sorted(want)


def test_place_on_dies_is_the_brute_force_optimum():
    traffic = [[0, 0, 0, 0], [0, 0, 0, 0], [5000, 4000, 0, 0], [4000, 0, 0, 0]]
    assert chiplet.place_on_dies(traffic, 2, 2, _D2D, _ON, 1.0) == [0, 1, 1, 0]
    assert chiplet.place_on_dies(traffic, 2, 2, _D2D, _ON, 5e-6) == [0, 1, 0, 1]
    assert chiplet.place_on_dies(traffic, 2, 2, _D2D, _ON, 4e-6) is None


def test_layer_traffic_of_the_tiny_gpt():
    names, m = chiplet.layer_traffic(TINY, 256)
    assert len(names) == len(m) == 8 and all(m[i][i] == 0 for i in range(8))
    x = 2 * 256 * TINY.d_model
    assert m[0][4] == x and m[5][7] == 2 * 256 * 176 and sum(map(sum, m)) == 475136
    two = chiplet.place_on_dies(m, 2, 4, chiplet.UCIE_ADVANCED, chiplet.ON_DIE, 1e-6)
    assert two == [0, 0, 0, 0, 1, 1, 1, 1]  # attention on one die, the MLP on the other
