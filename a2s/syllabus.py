"""The lab registry and the skill matrix (docs/student_guide.md), as data.

Lab numbers are stable: a lab keeps its number and slug once it exists. A lab "exists" when
``solutions/NN_slug.ipynb`` is in the repository; the others are planned.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DIMENSIONS",
    "LABS",
    "LAYERS",
    "PROFILES",
    "REFERENCE_DIR",
    "SUBJECTS",
    "TEMPLATE_MARKER",
    "Lab",
    "Profile",
    "course_folder",
    "find_lab",
    "find_lab_notebook",
    "is_template",
    "repo_root",
    "template_problems",
]

# A released assignment repository (``a2s release``) has no solutions/: it holds its labs'
# reference copies (exercises stubbed, what a submission is graded in) and a manifest.
TEMPLATE_MARKER = Path(".a2s", "course.json")
REFERENCE_DIR = Path(".a2s", "labs")


@dataclass(frozen=True, slots=True)
class Lab:
    """One numbered lab: where it sits in the stack and what it builds."""

    number: str  # "01"
    slug: str  # "numerics"
    layer: str  # "0".."7" or "all"
    title: str
    builds: str  # what you build, one line
    module: str  # reference module(s)

    @property
    def name(self) -> str:
        return f"{self.number}_{self.slug}"

    def solution_path(self, root: Path) -> Path:
        """The notebook a submission is graded against: ``solutions/NN_slug.ipynb`` in a
        checkout; in a released template (no solutions/), its reference copy in ``.a2s/labs``."""
        if is_template(root):
            return root / REFERENCE_DIR / f"{self.name}.ipynb"
        return root / "solutions" / f"{self.name}.ipynb"

    def lab_path(self, root: Path) -> Path:
        return root / "labs" / f"{self.name}.ipynb"


LAYERS: dict[str, str] = {
    "0": "foundations",
    "1": "algorithm & model",
    "2": "framework & API",
    "3": "operator & kernel",
    "4": "compiler",
    "5": "runtime",
    "6": "driver & communication",
    "7": "hardware",
    "all": "all layers",
}

# one lab per line: number | name | layer | title | builds | reference module
_LAB_TABLE = """
00 | orientation | 0 | Orientation | the lab loop: write, check, grade, report; your machine | minitorch.hardware.costs
01 | numerics | 0 | Numerics | FP8/BF16/FP16 decoding, RNE by bit manipulation, Kahan and pairwise sums, loss scaling | minitorch.numerics
02 | autograd_scalar | 2 | Scalar autograd | a scalar reverse-mode engine and a tiny MLP | minitorch.autograd.scalar
03 | autograd_tensor | 2 | Tensor autograd | broadcasting, matmul, conv2d, pooling, batch-norm gradients | minitorch.autograd
04 | training_loop | 2 | Training loop | modules, SGD/AdamW, mixed precision, recomputation | minitorch.nn, minitorch.optim
05 | roofline | 7 | Roofline | measured peaks and the roofline of this machine | minitorch.hardware
06 | matmul_tiling | 3 | Matmul tiling | cache blocking with an LRU traffic simulator | minitorch.kernels
07 | gpu_programming_model | 3 | GPU programming model | a SIMT simulator: warps, shared memory, coalescing | minitorch.kernels
08 | fused_kernels_flash_attention | 3 | Fused kernels and FlashAttention | online softmax, FlashAttention forward/backward | minitorch.kernels
09 | transformer | 1 | Transformer | attention, GQA, RoPE, a tiny GPT | minitorch.model
10 | moe | 1 | Mixture of experts | gating, capacity, load balancing, dispatch/combine | minitorch.model
11 | quantization | 1 | Quantization | INT8/INT4, GPTQ, AWQ, SmoothQuant, KV-cache INT8 | minitorch.model
12 | lora_peft | 1 | LoRA | adapters, merge/unmerge, optimizer memory, prefix tuning | minitorch.model
13 | graph_capture_ir | 4 | Graph capture and IR | tracing to a graph IR, an interpreter | minitorch.compiler
14 | graph_passes_memory_planning | 4 | Graph passes and memory planning | folding, DCE, CSE, fusion, liveness | minitorch.compiler
15 | loop_optimization_autotuning | 4 | Loop optimization and autotuning | loop-nest IR, legality, autotuning | minitorch.compiler
16 | streams_and_overlap | 5 | Streams and overlap | a discrete-event stream simulator, overlapped allreduce | minitorch.runtime
17 | caching_allocator | 5 | Caching allocator | size-class pools, split/coalesce, fragmentation | minitorch.runtime
18 | paged_kv_cache | 5 | Paged KV cache | block manager, block tables, copy-on-write, prefix caching | minitorch.runtime
19 | continuous_batching | 5 | Continuous batching | iteration-level scheduling, chunked prefill, preemption | minitorch.runtime
20 | collectives | 6 | Collectives | the collectives on a simulated world, alpha-beta cost | minitorch.comm
21 | ring_allreduce | 6 | Ring allreduce | ring, trees, halving-doubling, real gloo processes | minitorch.comm
22 | rdma_and_transport | 6 | RDMA and transport | verbs in simulation, copies counted, a socket transport | minitorch.comm
23 | data_parallel_zero | 2 | Data parallel and ZeRO | DDP bucketing, ZeRO-1/2/3 memory | minitorch.parallel
24 | tensor_sequence_parallel | 2 | Tensor and sequence parallel | Megatron column/row parallel layers | minitorch.parallel
25 | pipeline_parallel | 2 | Pipeline parallel | GPipe, 1F1B, interleaving, bubbles | minitorch.parallel
26 | context_expert_parallel_planner | 2 | Context/expert parallel and a planner | ring attention, expert all-to-all, a 3-D planner | minitorch.parallel
27 | accelerator_architecture | 7 | Accelerator architecture | a systolic array simulator, memory hierarchy, NoC, chiplets | minitorch.hardware
28 | capstone | all | Capstone | a quantized tiny LLM served with paged KV and continuous batching | all
29 | driver_and_command_submission | 6 | Driver and command submission | a simulated PCIe accelerator: command ring and doorbell, DMA chains, completions, graphs, contexts | minitorch.driver
30 | telemetry_power_and_faults | 6 | Telemetry, power and faults | utilisation from wrapped counters, a power-capping DVFS governor, a heartbeat watchdog, retry / isolate / re-map | minitorch.driver
31 | pytorch_backend | 2 | A PyTorch backend for a new chip | ATen kernels in numpy behind a __torch_dispatch__ device (torch forbidden inside, checked against CPU torch), a CPU fallback whose copies the grader's link counts under a decode-step byte budget, conv-BatchNorm folding, an MLP exported to ONNX and run by onnxruntime; the tiny GPT compiled to the chip (91 -> 70 kernels) | minitorch.chip
32 | fault_tolerance_elastic | 5 | Fault tolerance and elastic training | resume from the newest intact checkpoint (torn, flipped, missing and uncommitted files skipped) bit-exactly, a save that survives a crash after any call (temporary name, fsync, atomic rename, manifest last), Daly's checkpoint interval predicted and measured on a failure simulator, dead and hung ranks named from heartbeats (never a slow one), stragglers from per-rank step times, a ZeRO checkpoint resharded for a new world size (each rank reads only the old shards it overlaps), an asynchronous save that holds the loop only for its copy (bounded pending copies); the job under torchrun with a killed worker | minitorch.elastic
33 | sparsity_distillation_qat | 1 | Sparsity, distillation and QAT | 2:4 sparsity: the compressed format and a sparse matmul whose bytes and multiplies the grader counts, what removing heads saves (GQA groups), the distillation loss and its gradient, QAT's straight-through fake quantizer; accuracy vs sparsity, QAT vs PTQ, KL vs max calibration | minitorch.model
34 | speculative_decoding | 1 | Speculative decoding, MLA and long context | speculative sampling proved exact by enumeration, greedy speculative decoding with counted target passes, tokens per pass predicted and measured, MLA's absorbed latent attention, KV eviction with sinks and heavy hitters under a budget, streaming text without split characters | minitorch.model, minitorch.runtime
35 | rl_systems | 6 | The RL loop as a systems problem | GRPO's group advantages and clipped k3-KL loss (value and gradient), the trainer's log-probs of engine rollouts in one counted forward, weight sync bytes and versions, step time of colocated, disaggregated and one-step-off placements, the trainer actor on a flaky transport (no rollout lost or trained twice, staleness 0 / 1) | minitorch.rl
36 | cpu_pipelines | 7 | CPU pipelines and an ISA | an assembler, a 5-stage pipeline with hazards, branch predictors, superscalar issue | minitorch.cpu
37 | python_to_machine_code | 0 | From Python to machine code | symbols from nm, an undefined-symbol link checked against ld, a ctypes call with strides, page faults of read vs mmap, cachegrind vs the LRU model | minitorch.native
"""
LABS: tuple[Lab, ...] = tuple(
    Lab(*(cell.strip() for cell in row.split("|"))) for row in _LAB_TABLE.strip().splitlines()
)

# skill matrix: key -> (label, weight); docs/student_guide.md, "Your skill report"
SUBJECTS: dict[str, tuple[str, float]] = {
    "distributed": ("distributed training/HPC", 0.25),
    "operators": ("operator and parallel optimization", 0.20),
    "frameworks": ("deep learning and frameworks", 0.20),
    "architecture": ("computer architecture", 0.15),
    "fundamentals": ("computer fundamentals", 0.10),
    "algorithms": ("algorithms", 0.10),
}
DIMENSIONS: dict[str, tuple[str, float]] = {
    "breadth": ("breadth", 0.20),
    "depth": ("depth", 0.30),
    "hands-on": ("hands-on", 0.30),
    "architecture": ("architecture thinking", 0.15),
    "transfer": ("learning transfer", 0.05),
}


@dataclass(frozen=True, slots=True)
class Profile:
    """A hiring profile: re-weighted dimensions plus a threshold that must be met."""

    key: str
    title: str
    dimension_weights: dict[str, float]
    threshold: float  # out of 10
    on: str  # "layers:3,4", "subject:distributed" or "total"


PROFILES: dict[str, Profile] = {
    "compiler": Profile(
        "compiler",
        "AI compiler engineer",
        {"breadth": 0.10, "depth": 0.40, "hands-on": 0.35, "architecture": 0.10, "transfer": 0.05},
        8.0,
        "layers:3,4",
    ),
    "training": Profile(
        "training",
        "LLM training team",
        {"breadth": 0.20, "depth": 0.30, "hands-on": 0.25, "architecture": 0.20, "transfer": 0.05},
        8.5,
        "subject:distributed",
    ),
    "intern": Profile(
        "intern",
        "intern",
        {"breadth": 0.30, "depth": 0.25, "hands-on": 0.20, "architecture": 0.10, "transfer": 0.15},
        4.0,
        "total",
    ),
}


def _is_checkout(folder: Path) -> bool:
    return (folder / "solutions").is_dir() and (folder / "minitorch").is_dir()


def is_template(root: Path) -> bool:
    """True for a released assignment repository: the manifest, and no solutions/."""
    return (root / TEMPLATE_MARKER).is_file() and not (root / "solutions").is_dir()


def template_problems(root: Path) -> list[str]:
    """What is wrong with a released template's manifest or reference copies (empty: none)."""
    try:
        manifest = json.loads((root / TEMPLATE_MARKER).read_text(encoding="utf-8"))
        refs = dict(manifest["references"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{TEMPLATE_MARKER} is unreadable ({type(exc).__name__})"]
    problems = []
    for name, sha in sorted(refs.items()):
        path = root / REFERENCE_DIR / f"{name}.ipynb"
        try:
            ok = hashlib.sha256(path.read_bytes()).hexdigest() == sha
        except OSError:
            problems.append(f"{REFERENCE_DIR / path.name} is missing")
            continue
        if not ok:
            problems.append(f"{REFERENCE_DIR / path.name} was changed since it was released")
    return problems


def repo_root() -> Path:
    """Return the course folder: a checkout (``solutions/`` and ``minitorch/``) or a released
    template (``.a2s/course.json``, labs graded against ``.a2s/labs``, the installed package's
    graders).

    ``A2S_COURSE`` names it outright; else the checkout of an editable install; else the
    nearest such folder at or above the working directory.
    """
    named = os.environ.get("A2S_COURSE")
    if named:
        folder = Path(named).expanduser().resolve()
        if _is_checkout(folder) or is_template(folder):
            return folder
        raise FileNotFoundError(
            f"A2S_COURSE={named} is neither a course checkout (solutions/ and minitorch/) nor "
            "an assignment repository (.a2s/course.json)"
        )
    here = Path(__file__).resolve().parents[1]
    if (here / "solutions").is_dir():
        return here
    cwd = Path.cwd()
    for folder in (cwd, *cwd.parents):
        if _is_checkout(folder) or is_template(folder):
            return folder
    near = next((f for f in (cwd, *cwd.parents) if (f / "labs").is_dir()), None)
    hint = (
        f"; {near} has labs/ but no {TEMPLATE_MARKER}: it was not written by `a2s release`"
        if near
        else ""
    )
    raise FileNotFoundError(
        "cannot find the course checkout (a folder with solutions/ and minitorch/) or an "
        f"assignment repository (a folder with {TEMPLATE_MARKER}){hint}; "
        "run a2s inside your assignment repository or the course clone"
    )


def course_folder(needs: str = "") -> Path:
    """:func:`repo_root` for a command: ``needs`` names one that needs solutions/ (refused in
    a template); a template's reference copies must be as released. In a template, results
    record the course commit it was released from (its own git history is the student's)."""
    root = repo_root()
    if not is_template(root):
        return root
    if needs:
        raise FileNotFoundError(
            f"`a2s {needs}` needs the course checkout (solutions/); {root} "
            "is an assignment repository, which has none"
        )
    bad = template_problems(root)
    if bad:
        raise FileNotFoundError(f"{bad[0]}: restore it (git checkout -- .a2s) to grade here")
    manifest = json.loads((root / TEMPLATE_MARKER).read_text(encoding="utf-8"))
    os.environ.setdefault("A2S_COURSE_COMMIT", str(manifest.get("course_commit") or "unknown"))
    return root


def find_lab_notebook(lab: Lab, start: Path) -> Path:
    """Return ``labs/NN_*.ipynb`` of ``lab`` in ``start`` or the nearest folder above it.

    This is the learner's clone (where they run ``a2s check``), which need not be the
    checkout ``minitorch`` was installed from. The exact name wins over other ``NN_*``.
    """
    for folder in (start, *start.parents):
        labs = folder / "labs"
        if (labs / f"{lab.name}.ipynb").is_file():
            return labs / f"{lab.name}.ipynb"
        found = sorted(labs.glob(f"{lab.number}_*.ipynb")) if labs.is_dir() else []
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise FileNotFoundError(
                f"{labs} holds several lab {lab.number} notebooks "
                f"({names}); pick one with --notebook PATH"
            )
        if found:
            return found[0]
    raise FileNotFoundError(
        f"no labs/{lab.number}_*.ipynb in {start} or any folder above it; run `a2s check` "
        "inside your clone of the course, or pass --notebook PATH"
    )


def find_lab(key: str) -> Lab:
    """Look a lab up by number ("1", "01"), slug ("numerics") or name ("01_numerics")."""
    text = key.strip().removesuffix(".ipynb")
    for lab in LABS:
        if text in (lab.number, lab.slug, lab.name) or (
            text.isdigit() and int(text) == int(lab.number)
        ):
            return lab
    known = ", ".join(lab.number for lab in LABS)
    raise KeyError(f"unknown lab {key!r}; labs are numbered {known}")
