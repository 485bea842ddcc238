"""Pipeline schedules: which forward (F) and backward (B) each stage runs, in which order.

A schedule for ``p`` stages and ``m`` microbatches is a list of ``p`` lists of ops, one list
per stage, run in order. An op is ``(kind, microbatch, chunk)`` with ``kind`` "F" or "B";
``chunk`` is the model chunk of the stage (0 unless the schedule is interleaved). With ``v``
chunks per stage the model is cut into ``v * p`` virtual stages: chunk ``c`` of stage ``s``
is virtual stage ``c * p + s`` (Megatron's assignment), so a microbatch visits the stages
``v`` times round the ring.

* :func:`gpipe` (Huang et al. 2019): every forward, then every backward. Bubble
  ``(p - 1) / (m + p - 1)``; each stage holds all ``m`` microbatches' activations.
* :func:`one_f_one_b` (PipeDream-Flush, Narayanan et al. 2019/2021): stage ``s`` runs
  ``p - s - 1`` warm-up forwards, then alternates one forward and one backward, then drains
  the backwards. Same bubble as GPipe, but at most ``min(p - s, m)`` microbatches in flight.
* :func:`interleaved` (Narayanan et al. SC 2021): 1F1B over ``v`` chunks per stage, in
  groups of ``p`` microbatches; the bubble shrinks to ``(p - 1) / (v m + p - 1)`` at the
  price of ``v`` times more point-to-point messages.

    gpipe(2, 3)   # [[F0 F1 F2 B0 B1 B2], [F0 F1 F2 B0 B1 B2]] as ("F", mb, 0) tuples
    one_f_one_b(2, 3)[0]   # [("F",0,0), ("F",1,0), ("B",0,0), ("F",2,0), ("B",1,0), ("B",2,0)]

Lab: 25_pipeline_parallel
Paper: Huang et al., "GPipe" (NeurIPS 2019); Narayanan et al., "PipeDream" (SOSP 2019) and
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (SC 2021).
"""

from __future__ import annotations

__all__ = [
    "Op",
    "Schedule",
    "bubble_formula",
    "gpipe",
    "interleaved",
    "one_f_one_b",
    "warmup_count",
]

Op = tuple[str, int, int]
Schedule = list[list[Op]]


def _check(p: int, m: int, v: int = 1) -> None:
    if p < 1 or m < 1 or v < 1:
        raise ValueError(f"need p, m, v >= 1, got p={p}, m={m}, v={v}")


def gpipe(p: int, m: int) -> Schedule:
    """GPipe: all ``m`` forwards, then all ``m`` backwards, on each of the ``p`` stages."""
    _check(p, m)
    one = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    return [list(one) for _ in range(p)]


def one_f_one_b(p: int, m: int) -> Schedule:
    """1F1B (PipeDream-Flush): warm-up ``min(p - s - 1, m)`` forwards, then F/B pairs, drain."""
    _check(p, m)
    out: Schedule = []
    for s in range(p):
        warm = min(p - s - 1, m)
        ops: list[Op] = [("F", j, 0) for j in range(warm)]
        for j in range(m - warm):  # steady state: one forward, one backward
            ops += [("F", warm + j, 0), ("B", j, 0)]
        ops += [("B", j, 0) for j in range(m - warm, m)]
        out.append(ops)
    return out


def _micro_chunk(k: int, p: int, v: int, forward: bool) -> tuple[int, int]:
    """The k-th forward (or backward) of a stage: microbatch and chunk (Megatron's order)."""
    group, within = divmod(k, p * v)
    chunk = within // p
    return group * p + within % p, chunk if forward else v - 1 - chunk


def warmup_count(p: int, m: int, v: int, s: int) -> int:
    """Forwards stage ``s`` runs before its first backward in the interleaved schedule."""
    if v == 1:
        return min(p - s - 1, m)
    return min((p - s - 1) * 2 + (v - 1) * p, m * v)


def interleaved(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B with ``v`` model chunks per stage (``m`` a multiple of ``p``)."""
    _check(p, m, v)
    if v > 1 and m % p:
        raise ValueError(f"interleaving needs m ({m}) to be a multiple of p ({p})")
    total = m * v
    out: Schedule = []
    for s in range(p):
        warm = warmup_count(p, m, v, s)
        ops: list[Op] = []
        f = b = 0
        for _ in range(warm):
            ops.append(("F", *_micro_chunk(f, p, v, True)))
            f += 1
        for _ in range(total - warm):
            ops.append(("F", *_micro_chunk(f, p, v, True)))
            f += 1
            ops.append(("B", *_micro_chunk(b, p, v, False)))
            b += 1
        while b < total:
            ops.append(("B", *_micro_chunk(b, p, v, False)))
            b += 1
        out.append(ops)
    return out


def bubble_formula(p: int, m: int, v: int = 1) -> float:
    """Idle fraction of a flushed pipeline: ``(p - 1) / (v m + p - 1)`` (v = 1: GPipe, 1F1B)."""
    _check(p, m, v)
    return (p - 1) / (v * m + p - 1)
