"""Graders of lab 27 (accelerator architecture): systolic dataflows, GEMM mapping, SRAM tiles,
a mesh network-on-chip, and a layer placed on chiplets under a die-to-die link budget.

Ground truth is written in the graders: exact integer products, closed-form cycle counts, the
wavefront counted by formula, SRAM footprints and HBM traffic of a tiling, a plain XY router,
and an exhaustive search over placements on dies (``_truth``). The reference simulators
(``minitorch.hardware.systolic``, ``memory_hierarchy``, ``noc``, ``chiplet``) are blocked
while the student's code runs.
"""

from a2s.checks.lab27.dataflow import check_output_stationary, check_weight_stationary
from a2s.checks.lab27.dies import check_place_on_dies
from a2s.checks.lab27.mapping import check_choose_tiles, check_mapped_cycles, gpt_gemms
from a2s.checks.lab27.mesh import check_mesh

__all__ = [
    "check_choose_tiles",
    "check_mapped_cycles",
    "check_mesh",
    "check_output_stationary",
    "check_place_on_dies",
    "check_weight_stationary",
    "gpt_gemms",
]
