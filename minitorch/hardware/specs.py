"""Spec sheets of data-centre accelerators: published peak FLOP/s per dtype, memory bandwidth.

Every figure is the vendor's datasheet number, **dense** (NVIDIA prints tensor-core figures
"with sparsity", twice the dense rate; those are halved here and the footnote says so), in
FLOP/s (int8: operations/s) and bytes/s, 1 TB/s = 1e12 B/s. ``fp64``/``fp32`` are the
non-tensor (CUDA-core) rates; ``tf32``, ``bf16``, ``fp16``, ``fp8`` and ``int8`` are
tensor-core rates. A dtype the datasheet does not list is left out, never estimated.

Not listed: **Ascend 910B**. Huawei has not published a datasheet for the 910B chip that we
could cite; the figures that circulate (FP16 280-376 TFLOPS, HBM bandwidth 0.4-1.6 TB/s)
disagree with each other, so none is entered (Huawei's 2019 launch of the first Ascend 910
gave 256 TFLOPS FP16 and 512 TOPS INT8, but no memory bandwidth, so no roofline).

Lab: 05_roofline
Paper: NVIDIA A100 Tensor Core GPU datasheet (2021); NVIDIA H100 Tensor Core GPU datasheet
(2023); NVIDIA H200 Tensor Core GPU datasheet (2024)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minitorch.hardware.roofline import Roofline

__all__ = ["NOT_LISTED", "SPECS", "AcceleratorSpec"]

T = 1e12


@dataclass(frozen=True, slots=True)
class AcceleratorSpec:
    """One accelerator's datasheet: peak rate per dtype, memory bandwidth, and the source."""

    name: str
    bandwidth: float  # bytes/s
    peak: dict[str, float] = field(default_factory=dict)  # dtype -> dense FLOP/s (int8: ops/s)
    memory_gb: float = 0.0
    source: str = ""

    def roofline(self, dtype: str) -> Roofline:
        """The roofline of this chip in ``dtype`` (KeyError when the datasheet has no figure)."""
        if dtype not in self.peak:
            raise KeyError(f"{self.name}: no published {dtype} figure (have {sorted(self.peak)})")
        return Roofline(f"{self.name} {dtype}", self.peak[dtype], self.bandwidth)

    def ridge(self, dtype: str) -> float:
        """FLOP/byte an op needs in ``dtype`` to leave the memory-bound side."""
        return self.peak[dtype] / self.bandwidth


_HOPPER = {  # H100 SXM and H200 SXM share the compute die and clocks
    "fp64": 34 * T,
    "fp32": 67 * T,
    "tf32": 989 / 2 * T,  # datasheet 989 with sparsity
    "bf16": 1979 / 2 * T,  # datasheet 1,979 with sparsity
    "fp16": 1979 / 2 * T,
    "fp8": 3958 / 2 * T,  # datasheet 3,958 with sparsity
    "int8": 3958 / 2 * T,
}

SPECS: dict[str, AcceleratorSpec] = {
    "A100": AcceleratorSpec(
        "A100 SXM 80GB",
        bandwidth=2039e9,
        peak={"fp64": 9.7 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T,
              "fp16": 312 * T, "int8": 624 * T},
        memory_gb=80,
        source="NVIDIA A100 Tensor Core GPU datasheet (2021), SXM column; dense figures",
    ),
    "H100": AcceleratorSpec(
        "H100 SXM",
        bandwidth=3.35 * T,
        peak=dict(_HOPPER),
        memory_gb=80,
        source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column; sparse halved",
    ),
    "H200": AcceleratorSpec(
        "H200 SXM",
        bandwidth=4.8 * T,
        peak=dict(_HOPPER),
        memory_gb=141,
        source="NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column; sparse halved",
    ),
}  # fmt: skip

NOT_LISTED: dict[str, str] = {
    "Ascend 910B": "no vendor datasheet to cite; published figures disagree (see module docstring)",
}
