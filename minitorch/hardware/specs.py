"""Spec sheets of data-centre accelerators: published peak FLOP/s per dtype, memory bandwidth.

Every figure is the vendor's datasheet number, **dense** (NVIDIA prints tensor-core figures
"with sparsity", twice the dense rate; those are halved here and the footnote says so), in
FLOP/s (int8: operations/s) and bytes/s, 1 TB/s = 1e12 B/s. ``fp64``/``fp32`` are the
non-tensor (CUDA-core) rates; ``tf32``, ``bf16``, ``fp16``, ``fp8`` and ``int8`` are
tensor-core rates. A dtype the datasheet does not list is left out, never estimated.

``MATRIX_UNITS`` adds the matrix engines behind the peaks (count, MACs per cycle, block shape
where published: the TPU's 128 x 128 systolic MXU, the Ascend DaVinci core's 16 x 16 x 16 cube).

Not listed: **Ascend 910B**. Huawei has not published a datasheet for the 910B chip that we
could cite; the figures that circulate (FP16 280-376 TFLOPS, HBM bandwidth 0.4-1.6 TB/s)
disagree with each other, so none is entered (Huawei's 2019 launch of the first Ascend 910
gave 256 TFLOPS FP16 and 512 TOPS INT8, but no memory bandwidth, so no roofline).

Lab: 05_roofline, 27_accelerator_architecture
Paper: NVIDIA A100 Tensor Core GPU datasheet (2021); NVIDIA H100 Tensor Core GPU datasheet
(2023); NVIDIA H200 Tensor Core GPU datasheet (2024); Jouppi et al. 2023, "TPU v4: an optically
reconfigurable supercomputer for machine learning", ISCA; Liao et al. 2021, "Ascend: a scalable
and unified architecture for ubiquitous deep neural network computing", HPCA
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minitorch.hardware.roofline import Roofline

__all__ = ["MATRIX_UNITS", "NOT_LISTED", "SPECS", "AcceleratorSpec", "MatrixUnit"]

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
        peak={
            "fp64": 9.7 * T,
            "fp32": 19.5 * T,
            "tf32": 156 * T,
            "bf16": 312 * T,
            "fp16": 312 * T,
            "int8": 624 * T,
        },
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
    "TPU v4": AcceleratorSpec(
        "TPU v4",
        bandwidth=1200e9,
        peak={"bf16": 275 * T, "int8": 275 * T},
        memory_gb=32 * 2**30 / 1e9,
        source="Google Cloud TPU v4 system-architecture page as datasheet (275 TFLOPS bf16 "
        "and int8, 32 GiB HBM2, 1,200 GB/s); Jouppi et al. ISCA 2023",
    ),
}

NOT_LISTED: dict[str, str] = {
    "Ascend 910B": "no vendor datasheet to cite; published figures disagree (see module docstring)",
}


@dataclass(frozen=True, slots=True)
class MatrixUnit:
    """A chip's matrix engines: how many, MACs per cycle each, the block shape when published."""

    name: str
    units: int
    macs_per_cycle: int  # per unit, fp16/bf16 dense
    shape: tuple[int, ...] | None  # (rows, cols) of a systolic array, (m, k, n) of a cube
    source: str


MATRIX_UNITS: dict[str, MatrixUnit] = {
    "A100": MatrixUnit(
        "A100 tensor core",
        108 * 4,
        256,
        None,
        "NVIDIA A100 whitepaper (2020): 4 per SM, 256 FP16 FMA/clock each",
    ),
    "H100": MatrixUnit(
        "H100 tensor core",
        132 * 4,
        512,
        None,
        "NVIDIA H100 whitepaper (2022): 4 per SM, 2x A100's MMA rate per clock",
    ),
    "TPU v4": MatrixUnit(
        "TPU v4 MXU",
        8,
        128 * 128,
        (128, 128),
        "Jouppi et al. ISCA 2023: 2 TensorCores x 4 MXUs, 128x128 systolic",
    ),
    "Ascend 910": MatrixUnit(
        "DaVinci cube",
        32,
        16 * 16 * 16,
        (16, 16, 16),
        "Liao et al. HPCA 2021 (Ascend): 32 DaVinci cores, 16x16x16 cube",
    ),
}
