"""A ``torch.compile`` backend for the chip: FX graph -> course IR -> lab 14's passes -> chip.

    compiled = torch.compile(model, backend=chip_backend)
    with torch.no_grad():
        y = compiled(x)                   # equal to model(x)
    last_report().kernels_before, last_report().kernels_after

TorchDynamo captures the Python of ``forward`` as an FX graph of torch calls and hands it to
the backend with example inputs; this backend traces it to ATen with ``make_fx`` (fake
tensors: shapes only, nothing computed), freezes the module's parameters and buffers into
constants, lowers the ATen graph to the course IR (:mod:`minitorch.chip.lower`) and runs the
passes of lab 14: conv-BatchNorm folding, constant folding, simplification, CSE and DCE to a
fixed point, then fusion, then memory planning (greedy by size). The callable it returns
uploads the inputs, takes the planned arena from the chip allocator (its bytes count in the
chip's live and peak figures; the interpreter's numpy temporaries stand for its slices), runs
the fused graph with the course interpreter (one launch per node) and downloads the outputs.
:class:`CompileReport` holds the op and kernel counts before and after fusion, the bytes every
kernel moves and the arena. A graph the lowering cannot handle runs eagerly
(``fallback_reason`` says why), as a backend that gives up on a graph does.

Inference only: the weights are frozen when the graph is compiled.

Lab: 31_pytorch_backend
Paper: Ansel et al. 2024, PyTorch 2 (TorchDynamo, AOTAutograd, the backend interface)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from minitorch.chip.device import Chip, default_chip
from minitorch.chip.lower import Unsupported, lower
from minitorch.compiler import fusion, interp, memory
from minitorch.compiler.convbn import fold_conv_bn
from minitorch.compiler.ir import Graph, op_counts
from minitorch.compiler.passes import PassManager, cse, dce, fold_constants, simplify

__all__ = [
    "ChipGraph",
    "CompileReport",
    "capture",
    "chip_backend",
    "dynamo_unavailable",
    "last_report",
    "optimize",
]

REPORTS: list[CompileReport] = []
GRAPHS: list[ChipGraph] = []  # every graph compiled, in order (for export)


@dataclass
class CompileReport:
    """What compiling one graph did: ATen ops in, IR kernels before and after fusion."""

    aten_ops: Counter[str] = field(default_factory=Counter)
    ir_ops: dict[str, int] = field(default_factory=dict)  # after the passes, before fusion
    kernels_before: int = 0  # IR op nodes after lowering, no pass run
    kernels_optimized: int = 0  # after folding, simplification, CSE, DCE
    kernels_after: int = 0  # after fusion: launches per call
    fused_groups: list[str] = field(default_factory=list)
    folded_conv_bn: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    arena_bytes: int = 0
    naive_bytes: int = 0
    passes: list[tuple[int, str, int, int]] = field(default_factory=list)
    fallback_reason: str | None = None
    launches: int = 0  # kernels launched by every call so far


def last_report() -> CompileReport:
    """The report of the graph compiled last in this process."""
    if not REPORTS:
        raise LookupError("no graph compiled yet by chip_backend")
    return REPORTS[-1]


def dynamo_unavailable() -> str | None:
    """Why ``torch.compile`` cannot run here (``None`` when it can)."""
    try:
        import torch._dynamo
        from torch.fx.experimental.proxy_tensor import make_fx  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the torch build
        return f"torch {torch.__version__} has no usable TorchDynamo ({exc})"
    if not hasattr(torch, "compile"):  # pragma: no cover
        return f"torch {torch.__version__} has no torch.compile"
    return None


def optimize(
    graph: Graph, fold: bool = True, fuse: bool = True
) -> tuple[Graph, Graph, CompileReport]:
    """Lab 14's pipeline on ``graph``: fold conv-BN, passes to a fixed point, fuse, plan;
    the optimized graph before fusion, the fused one and the report."""
    rep = CompileReport(kernels_before=_kernels(graph), bytes_before=fusion.bytes_moved(graph))
    if fold:
        graph, rep.folded_conv_bn = fold_conv_bn(graph)
    graph, rep.passes = PassManager([fold_constants, simplify, cse, dce]).run(graph)
    rep.kernels_optimized, rep.ir_ops = _kernels(graph), op_counts(graph)
    optimized = graph
    if fuse:
        graph = fusion.fuse(graph)
    rep.fused_groups = [n.attr("ops") for n in graph.nodes if n.op == "fused"]
    rep.kernels_after, rep.bytes_after = _kernels(graph), fusion.bytes_moved(graph)
    bufs = memory.buffers(graph)
    rep.arena_bytes = memory.peak_bytes(bufs, memory.greedy_by_size(bufs)) if bufs else 0
    rep.naive_bytes = memory.naive_bytes(bufs)
    return optimized, graph, rep


def _kernels(graph: Graph) -> int:
    return sum(n.op not in ("placeholder", "constant") for n in graph.nodes)


@dataclass
class ChipGraph:
    """A compiled graph: upload the fed inputs, run on the chip's arena, download outputs."""

    graph: Graph  # fused: what runs
    optimized: Graph  # the same before fusion (what ONNX export takes)
    feeds: list[int]
    report: CompileReport
    chip: Chip

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        chip = self.chip
        dtypes = [n.dtype for n in self.graph.nodes if n.op == "placeholder"]
        handles = [
            chip.upload(args[i].detach().cpu().numpy().astype(d))
            for i, d in zip(self.feeds, dtypes, strict=True)
        ]
        arena = chip.alloc((max(self.report.arena_bytes, 1),), np.uint8)
        try:
            outs = interp.run(self.graph, *(chip.array(h) for h in handles))
            self.report.launches += self.report.kernels_after
            results = []
            for out in outs:
                h = chip.adopt(out)
                results.append(torch.from_numpy(chip.download(h)))
                chip.free(h)
        finally:
            chip.free(arena)
            for h in handles:
                chip.free(h)
        return tuple(results)


def _frozen(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> dict[int, torch.Tensor]:
    """The example inputs that are the module's parameters or buffers (by Dynamo's names)."""
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return {
        i: x
        for i, (name, x) in enumerate(zip(names, example_inputs, strict=False))
        if isinstance(x, torch.nn.Parameter) or "_buffers_" in name or "_parameters_" in name
    }


def chip_backend(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    *,
    chip: Chip | None = None,
    fold: bool = True,
    fuse: bool = True,
) -> Callable[..., Any]:
    """The backend ``torch.compile(model, backend=chip_backend)`` calls once per graph."""
    from torch.fx.experimental.proxy_tensor import make_fx

    frozen = _frozen(gm, example_inputs)
    with torch._guards.tracing(None):  # a fresh fake mode, not Dynamo's (whose guards we'd add to)
        aten = make_fx(gm, tracing_mode="fake")(*example_inputs)
    counts = Counter(
        n.target.name()
        for n in aten.graph.nodes
        if n.op == "call_function" and hasattr(n.target, "name")
    )
    try:
        graph, feeds = lower(aten, frozen)
    except Unsupported as exc:
        rep = CompileReport(aten_ops=counts, fallback_reason=str(exc))
        REPORTS.append(rep)
        return gm.forward
    optimized, fused, rep = optimize(graph, fold=fold, fuse=fuse)
    rep.aten_ops = counts
    REPORTS.append(rep)
    compiled = ChipGraph(fused, optimized, feeds, rep, chip or default_chip())
    GRAPHS.append(compiled)
    return compiled


def capture(module: torch.nn.Module, *inputs: torch.Tensor) -> Graph:
    """``module`` traced by ``make_fx`` on fake tensors (nothing computed) and lowered: its
    parameters and buffers frozen into constants, ``inputs`` the placeholders. No Dynamo."""
    from torch.fx.experimental.proxy_tensor import make_fx

    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    names, k = list(state), len(state)

    def call(*args: torch.Tensor) -> Any:
        return torch.func.functional_call(module, dict(zip(names, args[:k], strict=True)), args[k:])

    with torch.no_grad():
        gm = make_fx(call, tracing_mode="fake")(*state.values(), *inputs)
    return lower(gm, dict(enumerate(state.values())))[0]
