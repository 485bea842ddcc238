"""Hardware models (layer 7): cost formulas, this machine's description, rooflines.

Imports nothing else from the package.
"""

from minitorch.hardware.costs import arithmetic_intensity, matmul_bytes, matmul_flops
from minitorch.hardware.machine import MachineInfo, machine_info

__all__ = ["MachineInfo", "arithmetic_intensity", "machine_info", "matmul_bytes", "matmul_flops"]
