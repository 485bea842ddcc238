"""Cost models of a 3-D (+ context, expert) parallel training step: memory per GPU and time.

A layout splits ``n = tp * pp * cp * dp`` GPUs: tensor parallel (each layer's matrices over
``tp`` GPUs of one node), pipeline parallel (``pp`` stages of ``layers / pp`` layers), context
parallel (the sequence over ``cp``), data parallel (``dp`` replicas), and for MoE models expert
parallel (the experts over ``ep`` GPUs of the data-parallel group). Microbatch ``b = 1``,
the plain 1F1B schedule, full activation recomputation, mixed-precision Adam, no ZeRO: a
simplification of Narayanan et al. 2021's runs, not their exact setting (their 145.6B run
used micro-batch 2 and the interleaved schedule with v = 2; their GPT-3 175B configuration
micro-batch 1).

Memory per GPU (bytes), the first pipeline stage (it holds the embedding and the most
in-flight microbatches)::

    16 psi                                   psi: parameters on the GPU (2+2+4+4+4 bytes each)
    + (L/pp) min(pp, m) 2 s b h / cp         inputs of the layers kept for recomputation
    + s b h (10 + 24/tp + 5 a s / (h tp)) / cp   one layer's activations while recomputing

Step time (seconds) = (compute + elementwise) (1 + bubble) + exposed communication::

    compute = F / (n * peak * EFFICIENCY),   F = 24 k B s L h^2 (1 + s/6h) + 6 B s V h
    elementwise: k passes over the 2 s b h (10 + 24/tp + 5as/(h tp)) bytes of each layer's
        memory-bound ops (LayerNorm, softmax, dropout, GeLU: Korthikanti's activations), at HBM
    bubble  = (pp - 1) / m of (compute + elementwise),   m = B / (b dp) microbatches
    TP: 2(k-1) all-reduces of s b h 2 bytes per layer per microbatch (ring: 2 (t-1)/t of it)
    PP: 2 messages of s b h 2 / tp bytes per microbatch (scatter-gather over tp links)
    DP: one ring all-reduce of the 2 psi gradient bytes per step
    CP: ring attention passes (cp - 1) K/V blocks per layer per pass; EP: 2 all-to-alls

with k = 4 passes (forward, recomputed forward, backward = 2) and F the paper's FLOP count
(its eq. 3, which counts the recomputation). ``mfu`` counts 6 N tokens instead (PaLM's model
FLOPs utilisation). EFFICIENCY = 0.6 is the one calibrated constant: the fraction of the
fp16 peak that large GEMMs reach; USABLE = 0.9 of the memory is left for the tensors.

Lab: 26_context_expert_parallel_planner
Paper: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", SC 2021 (eq. 3, Sec. 2.2 bubble, Sec. 4.1 scatter-gather); Korthikanti et al.
    2022 (activation bytes); Rajbhandari et al. 2020, ZeRO (16 bytes per parameter); Chowdhery
    et al. 2022, PaLM (MFU)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EFFICIENCY",
    "USABLE",
    "Cluster",
    "Layout",
    "Model",
    "flops_per_step",
    "memory_per_gpu",
    "model_params",
    "step_time",
    "utilisation",
]

EFFICIENCY = 0.6
USABLE = 0.9
PASSES = 4  # forward, recomputed forward, backward (2x)


@dataclass(frozen=True, slots=True)
class Model:
    """A GPT: layers L, hidden h, heads a, sequence s, vocabulary V; experts E (0: dense)."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    experts: int = 0


@dataclass(frozen=True, slots=True)
class Cluster:
    """GPUs (count, per node, memory bytes, dense fp16 FLOP/s), links and HBM (bytes/s, s)."""

    name: str
    gpus: int
    per_node: int
    memory: float
    peak: float
    intra_bw: float
    intra_lat: float
    inter_bw: float
    inter_lat: float
    hbm_bw: float = 2.0e12


@dataclass(frozen=True, slots=True)
class Layout:
    """How the GPUs are split: tp * pp * cp * dp = GPUs; ep divides dp * cp."""

    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1

    def __str__(self) -> str:
        extra = (f" CP={self.cp}" if self.cp > 1 else "") + (
            f" EP={self.ep}" if self.ep > 1 else ""
        )
        return f"TP={self.tp} PP={self.pp} DP={self.dp}{extra}"


def model_params(m: Model) -> float:
    """Parameters 12 L h^2 (1 + 13/(12 h)) + (V + s) h (the paper's eq. 2); MLPs x E for MoE."""
    h, mlp = m.hidden, max(1, m.experts)
    return m.layers * (4 * h * h + 8 * h * h * mlp + 13 * h) + (m.vocab + m.seq) * h


def flops_per_step(m: Model, batch: int, passes: int = PASSES) -> float:
    """FLOPs of one step: 24 passes B s L h^2 (1 + s / 6h) + 6 B s V h (top-1 MoE = dense)."""
    b, s, h = batch, m.seq, m.hidden
    return 24 * passes * b * s * m.layers * h * h * (1 + s / (6 * h)) + 6 * b * s * m.vocab * h


def _params_per_gpu(m: Model, lay: Layout) -> float:
    h, mlp = m.hidden, max(1, m.experts) / lay.ep
    layer = (4 * h * h + 8 * h * h * mlp) / lay.tp + 13 * h
    return m.layers / lay.pp * layer + m.vocab * h / lay.tp  # first stage: the embedding


def memory_per_gpu(m: Model, lay: Layout, batch: int) -> float:
    """Bytes on the busiest GPU: states 16 psi + kept layer inputs + one layer recomputed."""
    s, h, a = m.seq / lay.cp, m.hidden, m.heads
    micro = max(1, batch // lay.dp)
    kept = m.layers / lay.pp * min(lay.pp, micro) * 2 * s * h
    working = s * h * (10 + 24 / lay.tp + 5 * a * s / (h * lay.tp))
    return 16 * _params_per_gpu(m, lay) + kept + working


def _ring(nbytes: float, p: int, bw: float, lat: float) -> float:
    """Ring all-reduce: 2 (p - 1) / p of the bytes and 2 (p - 1) latencies."""
    return 0.0 if p == 1 else 2 * (p - 1) / p * nbytes / bw + 2 * (p - 1) * lat


def step_time(m: Model, c: Cluster, lay: Layout, batch: int) -> dict[str, float]:
    """Seconds per step, by term; ``total`` is their sum (compute and bubble included)."""
    n = lay.tp * lay.pp * lay.cp * lay.dp
    micro = max(1, batch // lay.dp)  # microbatches of b = 1 per pipeline
    compute = flops_per_step(m, batch) / (n * c.peak * EFFICIENCY)
    s, h, per_stage = m.seq / lay.cp, m.hidden, m.layers / lay.pp
    act = 2 * s * h  # fp16 activation of one microbatch
    in_node = lay.tp <= c.per_node
    bw, lat = (c.intra_bw, c.intra_lat) if in_node else (c.inter_bw, c.inter_lat)
    tp = 2 * (PASSES - 1) * per_stage * micro * _ring(act, lay.tp, bw, lat)  # 2 per pass
    cross = lay.tp * lay.cp * lay.dp >= c.per_node  # neighbouring stages sit on other nodes
    pbw, plat = (c.inter_bw, c.inter_lat) if cross else (c.intra_bw, c.intra_lat)
    pp = 0.0 if lay.pp == 1 else 2 * micro * (act / lay.tp / pbw + plat)
    dbw, dlat = (
        (c.inter_bw, c.inter_lat)
        if lay.tp * lay.pp * lay.cp >= c.per_node
        else (c.intra_bw, c.intra_lat)
    )
    dp = _ring(2 * _params_per_gpu(m, lay), lay.dp, dbw, dlat)
    touched = 2 * s * h * (10 + 24 / lay.tp + 5 * m.heads * s / (h * lay.tp))  # read + write
    elementwise = PASSES * per_stage * micro * touched / c.hbm_bw
    cp_bytes = 0 if lay.cp == 1 else (lay.cp - 1) * 2 * act / lay.tp
    cp = PASSES * per_stage * micro * cp_bytes / c.inter_bw
    ep = 0.0
    if m.experts and lay.ep > 1:
        ep = 2 * PASSES * per_stage * micro * (lay.ep - 1) / lay.ep * act / lay.tp / c.inter_bw
    out = {
        "compute": compute,
        "elementwise": elementwise,
        "bubble": 0.0,
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "cp": cp,
        "ep": ep,
    }
    out["bubble"] = (compute + elementwise) * (lay.pp - 1) / micro
    out["total"] = sum(out.values())
    return out


def utilisation(m: Model, c: Cluster, lay: Layout, batch: int, seconds: float) -> dict:
    """The paper's percentage of peak (eq. 3 FLOPs) and MFU (6 N tokens) at ``seconds``/step."""
    n = lay.tp * lay.pp * lay.cp * lay.dp
    peak = n * c.peak * seconds
    return {
        "paper": flops_per_step(m, batch) / peak,
        "mfu": 6 * model_params(m) * batch * m.seq / peak,
    }
