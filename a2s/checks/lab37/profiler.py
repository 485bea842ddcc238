"""The grader's run of torch's profiler for exercise 37.5: its own copy of the lab's model, one
forward per configuration, all in one new child process; the *top-level* events (no parent
event) of the seven operators are counted there and sent back as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from a2s.checks.errors import CheckFailure
from a2s.checks.lab37._truth import _ENV

__all__ = ["CONFIG_KEYS", "OPS"]

OPS = (
    "aten::embedding",
    "aten::layer_norm",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::softmax",
    "aten::gelu",
)
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


def _key(cfg: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(cfg[k] for k in CONFIG_KEYS)


def _profile(configs: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], dict[str, int]]:
    """``{configuration: counts}`` of every configuration, profiled in one new child process
    (nothing read from a cache: the check's counts exist only in the check's own frame)."""
    todo = {_key(c): {k: c[k] for k in CONFIG_KEYS} for c in configs}
    with tempfile.TemporaryDirectory(prefix="a2s37-") as tmp:
        args = [sys.executable, "-c", _PROFILE_CHILD, json.dumps(OPS), json.dumps(CONFIG_KEYS)]
        env = {**_ENV, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
        feed = json.dumps(list(todo.values()))
        done = subprocess.run(
            args, input=feed, capture_output=True, text=True, timeout=120, cwd=tmp, env=env
        )
    if done.returncode:
        raise CheckFailure(f"the grader's own profiler run failed: {done.stderr.strip()[-800:]}")
    rows = json.loads(done.stdout.splitlines()[-1])
    return {
        key: {op: int(counts[op]) for op in OPS} for key, counts in zip(todo, rows, strict=True)
    }
