"""A memory hierarchy (register file, SRAM, L2, HBM) and the time and energy of a tiled GEMM.

A GEMM ``(M, K) @ (K, N)`` tiled ``(tm, tk, tn)`` keeps one tile of ``A``, one of ``B`` (each
**double-buffered**: the next pair loads while the current one computes) and the fp32
accumulators of one output tile in on-chip SRAM:

$$S(t_m, t_k, t_n) = 2s\\,(t_m t_k + t_k t_n) + 4\\,t_m t_n \\le \\text{SRAM}.$$

Each ``A`` tile is re-read once per column of output tiles and each ``B`` tile once per row, so
HBM moves ``Q = s (MK ceil(N/t_n) + KN ceil(M/t_m) + MN)`` bytes and the intensity is
``2MKN / Q``: small tiles re-read the operands often and drop the GEMM below the ridge point,
memory-bound even though the same GEMM with big tiles is compute-bound.

Figures (every one with its source; "assumed" marks a model choice, not a measurement):
capacities and HBM bandwidth are the H100 SXM's (NVIDIA H100 whitepaper 2022 and datasheet
2023: 256 KB registers and 256 KB L1/shared per SM, 132 SMs, 50 MB L2, 80 GB HBM3 at 3.35 TB/s).
Energies per byte are Horowitz's 45 nm figures (ISSCC 2014: 8 KB SRAM 10 pJ and 1 MB SRAM
100 pJ per 64-bit read; a bf16 FMA about 1.5 pJ), HBM2 from O'Connor et al. (MICRO 2017,
about 3.9 pJ/bit). The ratios match Eyeriss's (register 1x, buffer 6x, DRAM 200x a MAC).

Lab: 27_accelerator_architecture
Paper: Horowitz 2014, "Computing's energy problem (and what we can do about it)", ISSCC;
O'Connor et al. 2017, "Fine-grained DRAM", MICRO; Chen et al. 2016, "Eyeriss", ISCA
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "H100_HIERARCHY",
    "MAC_PJ",
    "Level",
    "MappedGemm",
    "hbm_bytes",
    "map_gemm",
    "sram_footprint",
]

# H100 SXM: 132 SMs (whitepaper). The datasheet states no clock: 1.83 GHz is the clock at which
# 132 SMs x 4,096 dense FP16 tensor FLOP per clock (2x an A100 SM, whitepaper) give the
# datasheet's 989 TFLOP/s dense FP16 (1,979 with sparsity): 989.4e12 / (132 * 4096) = 1.83e9.
_SMS, _CLOCK = 132, 1.83e9
MAC_PJ = 1.5  # bf16 multiply 1.1 pJ + add 0.4 pJ, Horowitz 2014 (45 nm)


@dataclass(frozen=True, slots=True)
class Level:
    """One level: capacity (bytes), bandwidth (bytes/s), energy (pJ/byte) and where from."""

    name: str
    capacity: float
    bandwidth: float
    pj_per_byte: float
    source: str


H100_HIERARCHY: tuple[Level, ...] = (
    Level(
        "register file",
        256e3 * _SMS,
        _SMS * 128 * 12 * _CLOCK,
        10 / 8,
        "256 KB/SM (whitepaper); bw assumed 3 fp32 operands per lane per clock; 8 KB SRAM "
        "energy (Horowitz)",
    ),
    Level(
        "SRAM (L1/shared)",
        256e3 * _SMS,
        _SMS * 128 * _CLOCK,
        100 / 8,
        "256 KB/SM (whitepaper); bw 128 B/clk/SM as measured on Volta (Jia et al. 2018); "
        "1 MB SRAM energy (Horowitz)",
    ),
    Level(
        "L2",
        50e6,
        2.4 * 3.35e12,
        2 * 100 / 8,
        "50 MB (whitepaper); bw assumed 2.4x HBM, the V100 ratio measured by Jia et al. 2018; "
        "energy assumed 2x a 1 MB SRAM for the wires",
    ),
    Level(
        "HBM3",
        80e9,
        3.35e12,
        3.9 * 8,
        "80 GB at 3.35 TB/s (datasheet); energy 3.9 pJ/bit HBM2 (O'Connor et al. 2017)",
    ),
)


def _ceil(x: int, y: int) -> int:
    return -(-x // y)


def sram_footprint(tm: int, tk: int, tn: int, elem: int = 2) -> int:
    """Bytes of SRAM a tiling needs: double-buffered A and B tiles, fp32 accumulators."""
    return 2 * elem * (tm * tk + tk * tn) + 4 * tm * tn


def hbm_bytes(m: int, k: int, n: int, tm: int, tk: int, tn: int, elem: int = 2) -> int:
    """HBM traffic of the tiled GEMM: A re-read per output-column tile, B per row tile."""
    del tk  # the inner tile changes how often the accumulators sit, not the HBM traffic
    return elem * (m * k * _ceil(n, tn) + k * n * _ceil(m, tm) + m * n)


@dataclass(frozen=True, slots=True)
class MappedGemm:
    """Time and energy of a GEMM under a tiling, and which resource binds."""

    flops: int
    hbm_bytes: int
    seconds: float
    joules: float
    bound: str  # "compute" or "memory"

    @property
    def intensity(self) -> float:
        return self.flops / self.hbm_bytes


def map_gemm(
    m: int,
    k: int,
    n: int,
    tile: tuple[int, int, int],
    peak: float,
    levels: tuple[Level, ...] = H100_HIERARCHY,
    elem: int = 2,
) -> MappedGemm:
    """Roofline time ``max(FLOPs/peak, HBM bytes/bw)`` and the energy of every level's traffic.

    Raises ``ValueError`` when the tiling does not fit the SRAM level. Traffic per level: HBM
    as :func:`hbm_bytes`, L2 the same (every tile passes through it), SRAM reads each operand
    tile once per MAC row (``elem (MKN/tn + MKN/tm)``), registers two operands per MAC.
    """
    tm, tk, tn = (min(t, d) for t, d in zip(tile, (m, k, n), strict=True))
    rf, sram, l2, hbm = levels
    if sram_footprint(tm, tk, tn, elem) > sram.capacity:
        raise ValueError(f"tile {tile} needs {sram_footprint(tm, tk, tn, elem):,} B of SRAM")
    flops, q = 2 * m * k * n, hbm_bytes(m, k, n, tm, tk, tn, elem)
    on_chip = elem * (m * k * n // tn + m * k * n // tm)
    reg = 2 * elem * m * k * n
    seconds = max(flops / peak, q / hbm.bandwidth, on_chip / sram.bandwidth)
    pj = m * k * n * MAC_PJ + reg * rf.pj_per_byte + on_chip * sram.pj_per_byte
    pj += q * (l2.pj_per_byte + hbm.pj_per_byte)
    bound = "compute" if flops / peak >= q / hbm.bandwidth else "memory"
    return MappedGemm(flops, q, seconds, pj * 1e-12, bound)
