"""Hardware models (layer 7): cost formulas, this machine's description, rooflines.

Imports nothing else from the package.
"""

from minitorch.hardware.costs import arithmetic_intensity, matmul_bytes, matmul_flops
from minitorch.hardware.intensity import (
    OpCost,
    attention_cost,
    gemm_cost,
    gemv_cost,
    layernorm_cost,
    softmax_cost,
)
from minitorch.hardware.machine import MachineInfo, machine_info
from minitorch.hardware.measure import measure_bandwidth, measure_peak_flops, median_seconds
from minitorch.hardware.roofline import (
    Roofline,
    attainable,
    bound,
    predicted_seconds,
    roofline_bound,
)
from minitorch.hardware.scaling import amdahl_speedup, fit_serial_fraction, gustafson_speedup
from minitorch.hardware.specs import SPECS, AcceleratorSpec

__all__ = [
    "SPECS",
    "AcceleratorSpec",
    "MachineInfo",
    "OpCost",
    "Roofline",
    "amdahl_speedup",
    "arithmetic_intensity",
    "attainable",
    "attention_cost",
    "bound",
    "fit_serial_fraction",
    "gemm_cost",
    "gemv_cost",
    "gustafson_speedup",
    "layernorm_cost",
    "machine_info",
    "matmul_bytes",
    "matmul_flops",
    "measure_bandwidth",
    "measure_peak_flops",
    "median_seconds",
    "predicted_seconds",
    "roofline_bound",
    "softmax_cost",
]
