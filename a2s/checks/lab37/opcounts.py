"""Grader of exercise 37.5: the profiler's op counts of a GPT forward, predicted from its
configuration.

The truth (``_truth.profiled_counts``) is torch's profiler itself: the grader writes its own
copy of the lab's model (embeddings, per layer a layer norm, a fused QKV linear, two batched
matmuls around a softmax, an output linear, a layer norm and a GELU MLP; a final layer norm and
an LM head), runs one forward of every configuration of the run in one child process under
``torch.profiler.profile`` and counts the *top-level* events (no parent event) named
``aten::embedding``, ``layer_norm``, ``addmm``, ``mm``, ``bmm``, ``softmax``, ``gelu``. The
learner's function gets the configuration (a dict) and may not call torch (nor the reference):
the point is to predict the counts from the architecture.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from a2s.checks.cases import Case, Mistake, run_cases
from a2s.checks.core import case_label, grader, plain
from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import _ENV, NATIVE
from a2s.checks.table import Table
from minitorch.native.profiled import OPS, TINY_SIZES  # the operators and sizes asked about

# --------------------------------------------------------------------------- 37.5
CONFIG_KEYS = ("vocab_size", "block_size", "n_layer", "n_head", "d_model", "batch", "bias")

# the grader's own model, run in a child process under torch's profiler: the top-level events
# (no parent event) of one forward are counted, for every configuration given on stdin
_PROFILE_CHILD = r"""
import json, sys
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

OPS = set(json.loads(sys.argv[1]))

def run(cfg):
    V, T, L, H, C, B, bias = (cfg[k] for k in json.loads(sys.argv[2]))
    g = torch.Generator().manual_seed(1)
    rnd = lambda *s: torch.randn(*s, generator=g) * 0.02
    layers = [[(rnd(o, i), rnd(o) if bias else None)
               for o, i in ((3 * C, C), (C, C), (4 * C, C), (C, 4 * C))] for _ in range(L)]
    wte, wpe, head = rnd(V, C), rnd(T, C), rnd(V, C)
    idx = torch.randint(0, V, (B, T), generator=g)
    hd = C // H
    def lin(x, wb):
        w, b = wb
        return torch.mm(x, w.t()) if b is None else torch.addmm(b, x, w.t())
    def split_heads(z):
        return z.reshape(B, T, H, hd).transpose(1, 2).reshape(B * H, T, hd)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = F.embedding(idx, wte) + F.embedding(torch.arange(T), wpe)
        x = x.reshape(B * T, C)
        for qkv, proj, fc1, fc2 in layers:
            q, k, v = lin(F.layer_norm(x, (C,)), qkv).split(C, dim=1)
            s = torch.bmm(split_heads(q), split_heads(k).transpose(1, 2)) / hd ** 0.5
            p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
            y = torch.bmm(p, split_heads(v)).reshape(B, H, T, hd).transpose(1, 2)
            x = x + lin(y.reshape(B * T, C), proj)
            x = x + lin(F.gelu(lin(F.layer_norm(x, (C,)), fc1)), fc2)
        torch.mm(F.layer_norm(x, (C,)), head.t())
    counts = dict.fromkeys(sorted(OPS), 0)
    for e in prof.events():
        if e.cpu_parent is None and e.name in OPS:
            counts[e.name] += 1
    return counts

print(json.dumps([run(c) for c in json.load(sys.stdin)]))
"""


@functools.lru_cache(maxsize=1)
def _profiled() -> dict[tuple[Any, ...], dict[str, int]]:
    """The counts profiled so far in this process, by configuration (kept per process)."""
    return {}


def _key(cfg: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(cfg[k] for k in CONFIG_KEYS)


def _profile(configs: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], dict[str, int]]:
    """``{configuration: counts}`` of every configuration, profiled in one new child process
    (nothing read from a cache: the check's counts exist only in the check's own frame)."""
    todo = {_key(c): {k: c[k] for k in CONFIG_KEYS} for c in configs}
    args = [sys.executable, "-c", _PROFILE_CHILD, json.dumps(OPS), json.dumps(CONFIG_KEYS)]
    feed = json.dumps(list(todo.values()))
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        env = {**_ENV, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(
            args, input=feed, capture_output=True, text=True, timeout=120, cwd=tmp, env=env
        )
    if done.returncode:
        raise CheckFailure(f"the grader's own profiler run failed: {done.stderr.strip()[-800:]}")
    rows = json.loads(done.stdout.splitlines()[-1])
    return {
        key: {op: int(counts[op]) for op in OPS} for key, counts in zip(todo, rows, strict=True)
    }


def profiled_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """``{op: top-level calls}`` of one forward of ``cfg`` under torch's profiler."""
    seen = _profiled()  # the table's truth outside a check (the check profiles afresh)
    if _key(cfg) not in seen:  # with the table's named and seeded ones: one child
        public = [c.args[0] for c in OP_COUNTS.cases() if "fresh case" not in c.label]
        seen.update(_profile([cfg, *(c for c in public if _key(c) not in seen)]))
    return dict(seen[_key(cfg)])


def closed_counts(cfg: Mapping[str, Any], **mistake: bool) -> dict[str, int]:
    """The counts from the configuration (the switches are the modelled mistakes)."""
    n, h, b = cfg["n_layer"], cfg["n_head"], cfg["batch"]
    no_head, one_matmul = mistake.get("no_head", False), mistake.get("one_matmul", False)
    bias = bool(cfg["bias"]) or mistake.get("bias_always", False)
    rep = h if mistake.get("per_head") else 1
    rows = b if mistake.get("per_batch") else 1
    return {
        "aten::embedding": 2,
        "aten::layer_norm": 2 * n + 1,
        "aten::addmm": 4 * n * rows if bias else 0,
        "aten::mm": (0 if bias else 4 * n * rows) + (0 if no_head else rows),
        "aten::bmm": (1 if one_matmul else 2) * n * rep,
        "aten::softmax": n * rep,
        "aten::gelu": n,
    }


__all__ = ["TINY", "check_op_counts"]

TINY = dict(TINY_SIZES)  # the tiny GPT's sizes: a configuration, not an answer


def _cfg(**change: Any) -> tuple[dict[str, Any]]:
    return ({**TINY, **change},)


_NAMED = [
    ("the tiny GPT's sizes, with biases", _cfg()),
    ("the tiny GPT's sizes, no biases", _cfg(bias=False)),
    ("one layer, one head", _cfg(n_layer=1, n_head=1, d_model=16)),
    ("eight heads", _cfg(n_head=8)),
    ("a batch of 5", _cfg(batch=5, block_size=8)),
    ("six layers, no biases", _cfg(n_layer=6, d_model=32, bias=False)),
]


def _draw(g: Any, i: int) -> tuple[str, tuple[dict[str, Any]]]:
    heads = int(g.choice([1, 2, 4, 8]))
    cfg = {
        "vocab_size": int(g.integers(8, 65)),
        "block_size": int(g.integers(2, 17)),
        "n_layer": int(g.integers(1, 6)),
        "n_head": heads,
        "d_model": heads * int(g.choice([4, 8])),
        "batch": int(g.integers(1, 5)),
        "bias": bool(g.integers(0, 2)),
    }
    return (f"{cfg['n_layer']} layers, {heads} heads, bias={cfg['bias']}", (cfg,))


def _read(got: Any, label: str) -> dict[str, int]:
    if type(got) is not dict or any(type(k) is not str for k in got):
        raise CheckFailure(
            f"[{label}] op_counts must return a dict {{operator name: calls}}, got {got!r:.200}"
        )
    extra = sorted(set(got) - set(OPS))
    if extra:
        raise CheckFailure(f"[{label}] op_counts: {extra} are not among the operators {OPS}.")
    # a Python or numpy int (plain values are exact types: no bool, no subclass)
    if any((type(v) is not int and not isinstance(v, np.integer)) or v < 0 for v in got.values()):
        raise CheckFailure(f"[{label}] op_counts: every count must be an int >= 0, got {got!r}")
    return {op: int(got.get(op, 0)) for op in OPS}


def _same(got: Any, want: Any) -> bool:
    return bool(got == want)


def _message(case: Case, got: Any, want: Any, hint: str) -> str:
    wrong = [f"{op} {got[op]} (the profiler: {want[op]})" for op in OPS if got[op] != want[op]]
    return f"[{case.label}] op_counts: {'; '.join(wrong)}.{' ' + hint.lstrip() if hint else ''}"


def _wrong(**switch: bool) -> Callable[[dict[str, Any]], dict[str, int]]:
    return lambda cfg: closed_counts(cfg, **switch)


_MISTAKES = (
    Mistake(
        " The LM head is a linear too: one more aten::mm (it has no bias) after the final norm.",
        answer=_wrong(no_head=True),
    ),
    Mistake(
        " The heads are folded into the batch of one torch.bmm: attention makes two bmm calls "
        "and one softmax per layer, whatever the number of heads.",
        answer=_wrong(per_head=True),
    ),
    Mistake(
        " Attention has two matmuls per layer: Q K^T (the scores) and P V (the weighted values).",
        answer=_wrong(one_matmul=True),
    ),
    Mistake(
        " Without a bias a linear is torch.mm, not torch.addmm (addmm adds the bias in the same "
        "call).",
        answer=_wrong(bias_always=True),
    ),
    Mistake(
        " The batch is folded into the rows of one (B T, C) matrix: a linear is one call for the "
        "whole batch, not one per sequence.",
        answer=_wrong(per_batch=True),
    ),
)

OP_COUNTS = Table(
    "37.5",
    truth=profiled_counts,
    named=_NAMED,
    draw=_draw,
    seeded=3,
    fresh=2,
    mistakes=_MISTAKES,
    read=_read,
    hint="Count per layer: 2 layer norms, 4 linears (addmm with a bias, mm without), 2 bmm, "
    "1 softmax, 1 gelu; plus 2 embeddings, the final norm and the LM head.",
    what="op_counts",
    same=_same,
    message=_message,
)


# what the learner's function may not call: torch (the default), nor anything that would run
# it elsewhere (a child process, a fork): the point is to predict (a library call through
# ctypes is the sealed kernel's to veto, like every ctypes load)
_OS = ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve")
FORBID: tuple[str, ...] = ("torch", "subprocess", "multiprocessing", "_posixsubprocess")
FORBID += ("concurrent.futures.process", *(f"os:{name}" for name in _OS))


@grader(
    "37.5",
    blocks=NATIVE,
    forbid=FORBID,
    hand="the fresh configurations are answered before the grader profiles any of them, then "
    "every case is compared with the counts of that one child process",
)
def check_op_counts(student: Callable[..., Any]) -> str:
    """Exercise 37.5: op_counts(config) -> {aten operator: top-level calls in one forward}."""
    cases = OP_COUNTS.cases()
    fresh = [c for c in cases if "fresh case" in c.label]
    # this run's fresh configurations are answered first, before their counts exist anywhere in
    # this process; then one child profiles every configuration, and the counts stay here
    early = []
    for case in fresh:
        with case_label(case.label):
            answer = student(*case.args)
        early.append(_read(plain(answer, what=OP_COUNTS.what, case=case.label), case.label))
    truth = _profile([case.args[0] for case in cases] + [TINY])
    for case in cases:
        case.expected = truth[_key(case.args[0])]
    for case, got in zip(fresh, early, strict=True):
        if not _same(got, case.expected):
            raise CheckFailure(_message(case, got, case.expected, case.diagnose(got, _same)))
    n = run_cases(
        student, cases, message=OP_COUNTS.write, same=_same, read=_read, what=OP_COUNTS.what
    )
    tiny = truth[_key(TINY)]
    return (
        f"{n} configurations equal to torch.profiler's top-level counts (one child process); "
        f"the tiny GPT's forward: {sum(tiny.values())} calls of these {len(OPS)} operators"
    )
