"""Lab 34 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). 34.1, 34.2 and
34.5 run the learner's function in a forked child whose oracles, models and cache are requests
to the grader's process; 34.3 is a table and 34.4 runs in-process.

What was tried, beyond the usual (the reference, the grader's truth, torch, values whose ``==``
says yes, a replayed table, frames, ``gc``, a patched grader module):

* 34.1: forged ``next`` and ``done`` requests through ``a2s.checks.harness.request``, a residual
  drawn by a chain of coins (honest: the law is the same), coins skipped when certain;
* 34.2: the target rebuilt from ``tiny_gpt.npz`` with unblocked parts (``np.load`` + ``Block``),
  an uncounted forward, used alone or padded with one counted pass; the grader's GPT found
  through ``gc`` in the child. Both passed before: the target is now the checkpoint jittered
  by a fresh draw per check, and the child's copy of the models is zeroed;
* 34.4: answers recorded on one run and replayed on the next (the fresh case's weights were
  drawn from the fixed seed; they now come from the fresh seed);
* 34.5: a policy tuned to the score pattern (sinks and a few heavy tokens) without the rule;
* 34.6: codecs' incremental decoder, ``codecs.iterdecode``, ``encodings.utf_8``, an
  ``io.TextIOWrapper`` over a ``BytesIO`` (all caught: they reach ``_codecs``). Found: the 0xff
  case (0xff, then ASCII) let pass a hand-written decoder that reads 0xff as a 2-byte lead and
  a "longest strict prefix, else all replaced" answer (it turns the character after a bad byte
  into U+FFFD); fixed: 0xff is now followed by a continuation byte and a split character.
  Kept as a strict xfail: ``_codecs.utf_8_decode`` called through ``map`` (C calling C fires no
  profile event).

Frame and ``gc`` reflection into the grader's own process is the sealed kernel's
(``a2s grade``), see docs/trust.md.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from a2s.checks import lab34
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.checks.test_lab34 import absorb, absorb_loop  # the wrong answers its tests use
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

REF, FORBID = ReferenceCalledError, ForbiddenCallError


# --------------------------------------------------------------------------- the solutions
def verify(p_rows, q_rows, draft, coin, sample):
    out = []
    for i, x in enumerate(draft):
        p, q = np.asarray(p_rows[i]), np.asarray(q_rows[i])
        if coin(min(1.0, p[x] / q[x])):
            out.append(int(x))
            continue
        r = np.maximum(p - q, 0.0)
        out.append(sample(r / r.sum()))
        return out
    out.append(sample(np.asarray(p_rows[len(draft)])))
    return out


def verify_variant(bug):
    """The realistic mistakes of 34.1, each as a learner would write it."""

    def step(p_rows, q_rows, draft, coin, sample):
        out = []
        for i, x in enumerate(draft):
            p, q = np.asarray(p_rows[i]), np.asarray(q_rows[i])
            ratio = p[x] / q[x]
            if bug == "q / p":
                ratio = q[x] / p[x] if p[x] > 0 else 1.0
            if coin(ratio if bug == "unclipped" else min(1.0, ratio)):
                out.append(int(x))
                continue
            r = np.maximum(q - p, 0.0) if bug == "q - p" else np.maximum(p - q, 0.0)
            if bug == "from p":
                out.append(sample(p))
            else:
                out.append(sample(r if bug == "unnormalised" else r / r.sum()))
            if bug != "no stop":
                return out
        if bug != "no bonus":
            out.append(sample(np.asarray(p_rows[len(draft) - (bug == "bonus -1")])))
        return out

    return step


def spec_greedy(target, draft, prompt, n, gamma, bug=""):
    toks, goal = list(prompt), len(prompt) + n
    if bug == "plain":
        while len(toks) < goal:
            toks.append(int(np.argmax(target(toks)[-1])))
        return toks
    while len(toks) < goal:
        g = min(gamma, goal - len(toks) - 1)
        ctx = list(toks)
        for _ in range(g):
            ctx.append(int(np.argmax(draft(ctx)[-1])))
        if bug == "per position":
            best = [int(np.argmax(target(ctx[: len(toks) + i])[-1])) for i in range(g + 1)]
        elif bug == "shift":
            rows = np.asarray(target(ctx))
            best = np.argmax(rows[max(len(rows) - g - 2, 0) :], axis=-1)
        else:
            best = np.argmax(target(ctx)[-(g + 1) :], axis=-1)
        k = 0
        while k < g and ctx[len(toks) + k] == best[k]:
            k += 1
        fix = ctx[len(toks) + k] if bug == "kept" and k < g else int(best[k])
        toks += [*ctx[len(toks) : len(toks) + k], fix]
    return toks[:goal]


def evict(kept, mass, budget, sinks, recent):
    need = len(kept) - budget
    if need <= 0:
        return []
    newest = set(kept[-recent:]) if recent else set()
    cands = sorted(
        (m, p) for p, m in zip(kept, mass, strict=True) if p >= sinks and p not in newest
    )
    return [p for _, p in cands[:need]]


def file_gpt():
    """The tiny GPT rebuilt from the checkpoint file with unblocked parts: an uncounted target."""
    import json

    from minitorch.autograd import Tensor, no_grad
    from minitorch.model.blocks import Block, make_norm
    from minitorch.model.checkpoint import DEFAULT_PATH
    from minitorch.model.config import GPTConfig
    from minitorch.nn import Sequential

    with np.load(DEFAULT_PATH) as f:
        cfg = GPTConfig.from_dict(json.loads(str(f["__config__"])))
        state = {k: f[k].astype(np.float64) for k in f.files if not k.startswith("__")}
    rng = np.random.default_rng(0)
    blocks = Sequential(*(Block(cfg, rng, np.float64) for _ in range(cfg.n_layer)))
    norm = make_norm(cfg, np.float64)
    blocks.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("blocks.")})
    norm.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("norm_f.")})
    emb = state["tok_emb.weight"]
    head = state.get("lm_head.weight", emb)

    def forward(tokens):
        with no_grad():
            h = norm(blocks(Tensor(emb[np.asarray(tokens)][None])))
        return np.asarray(h.data[0]) @ head.T

    return forward


def _mine(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


# --------------------------------------------------------------------------- 34.1 verify
def verify_lists(p_rows, q_rows, draft, coin, sample):
    out = []
    for i, x in enumerate(draft):
        p, q = [float(v) for v in p_rows[i]], [float(v) for v in q_rows[i]]
        if coin(min(1.0, p[x] / q[x])):
            out.append(x)
            continue
        r = [max(0.0, a - b) for a, b in zip(p, q, strict=True)]
        return [*out, sample([v / sum(r) for v in r])]
    return [*out, sample([float(v) for v in p_rows[len(draft)]])]


def verify_recursive(p_rows, q_rows, draft, coin, sample, i=0):
    if i == len(draft):
        return [sample(np.asarray(p_rows[i]))]
    p, q, x = np.asarray(p_rows[i]), np.asarray(q_rows[i]), draft[i]
    if p[x] >= q[x] or coin(p[x] / q[x]):  # a sure accept needs no coin: the same law
        return [int(x), *verify_recursive(p_rows, q_rows, draft, coin, sample, i + 1)]
    r = np.clip(p - q, 0.0, None)
    return [sample(r / r.sum())]


def verify_coin_chain(p_rows, q_rows, draft, coin, sample):
    """The residual drawn by a chain of coins, token j with r_j / (r_j + ... + r_V): same law."""
    out = []
    for i, x in enumerate(draft):
        p, q = np.asarray(p_rows[i]), np.asarray(q_rows[i])
        if coin(min(1.0, p[x] / q[x])):
            out.append(int(x))
            continue
        r = np.maximum(p - q, 0.0)
        for j in range(len(r) - 1):
            rest = r[j:].sum()
            if rest > 0 and coin(min(1.0, r[j] / rest)):
                return [*out, j]
        return [*out, len(r) - 1]
    return [*out, sample(np.asarray(p_rows[-1]))]


def verify_forged_done(p, q, d, coin, sample):
    from a2s.checks.harness import request

    out = verify(p, q, d, coin, sample)
    request("done", out)  # the grader's own step, sent by hand
    return out


def verify_forged_next(p, q, d, coin, sample):
    from a2s.checks.harness import request

    request("next")
    return verify(p, q, d, coin, sample)


def verify_own_rng(p, q, d, coin, sample):
    gen = np.random.default_rng()
    return verify(p, q, d, lambda pr: gen.random() < pr, lambda r: int(gen.choice(len(r), p=r)))


def verify_patched_grader(p, q, d, coin, sample):
    from a2s.checks.lab34 import verify as grader_module

    grader_module._Session._judge = lambda self: None  # the child's copy only
    return [sample(np.asarray(p[0]))]


def verify_gc(p, q, d, coin, sample):
    import gc

    for o in gc.get_objects():
        if type(o).__name__ == "_Session":
            o.problem, o.cases = "", o.cases[:1]  # the child's copy only
    return [sample(np.asarray(p[0]))]


def verify_frames(p, q, d, coin, sample):
    f = sys._getframe(1)
    while f is not None and "session" not in f.f_locals:
        f = f.f_back
    if f is not None:
        f.f_locals["session"].problem = ""
    return [sample(np.asarray(p[0]))]


def verify_truth(p, q, d, coin, sample):
    from a2s.checks.lab34._truth import verify_rule

    return verify_rule(p, q, d, coin, sample)


def verify_reference(p, q, d, coin, sample):
    from minitorch.model.speculative import verify as ref

    return ref(p, q, d, np.random.default_rng(0))[0]


def _v(fn):
    return lambda: lab34.check_verify(fn)


class Verifier:
    def __call__(self, p_rows, q_rows, draft, coin, sample):
        return verify(p_rows, q_rows, draft, coin, sample)


VERIFY = [
    honest("34.1", "plain lists", _v(verify_lists)),
    honest("34.1", "recursion, no coin when sure", _v(verify_recursive)),
    honest("34.1", "the residual by a chain of coins", _v(verify_coin_chain)),
    honest("34.1", "a callable class", _v(Verifier())),
    honest("34.1", "functools.wraps decorator", _v(_mine(verify))),
    wrong("34.1", "resample from p", _v(verify_variant("from p")), match="not from p"),
    wrong("34.1", "residual q - p", _v(verify_variant("q - p")), match="draft's excess"),
    wrong("34.1", "no bonus token", _v(verify_variant("no bonus")), match="one more token"),
    wrong("34.1", "no stop at a rejection", _v(verify_variant("no stop")), match="first rej"),
    wrong("34.1", "ratio not clipped", _v(verify_variant("unclipped")), match=r"min\(1"),
    wrong("34.1", "residual not normalised", _v(verify_variant("unnormalised")), match="normal"),
    wrong("34.1", "ratio q / p", _v(verify_variant("q / p")), match=r"min\(1, p_i"),
    wrong("34.1", "bonus from the row before", _v(verify_variant("bonus -1")), match="not the r"),
    cheat("34.1", "the reference", _v(verify_reference), match="reference", error=REF),
    cheat("34.1", "the grader's rule", _v(verify_truth), match="reference|truth", error=REF),
    cheat("34.1", "a forged done", _v(verify_forged_done), match="list of emitted tokens"),
    cheat("34.1", "a forged next", _v(verify_forged_next), match="new step began"),
    cheat("34.1", "its own np.random", _v(verify_own_rng), match="not the rule|coin|random"),
    cheat("34.1", "patches the grader's judge", _v(verify_patched_grader), match="not the rule"),
    cheat("34.1", "edits the session through gc", _v(verify_gc), match="not the rule"),
    cheat("34.1", "walks the frames", _v(verify_frames), match="not the rule"),
    cheat(
        "34.1",
        "tokens whose == says yes",
        _v(lambda p, q, d, coin, sample: [always_equal(int(d[0]) if d else 0)]),
        match="plain|subclass",
    ),
]


# --------------------------------------------------------------------------- 34.2 greedy
def greedy_recursive(target, draft, prompt, n, gamma):
    if n == 0:
        return list(prompt)
    g, ctx = min(gamma, n - 1), list(prompt)
    for _ in range(g):
        ctx.append(int(np.argmax(draft(ctx)[-1])))
    best = [int(b) for b in np.argmax(target(ctx)[len(prompt) - 1 :], axis=1)]
    k = next((i for i in range(g) if ctx[len(prompt) + i] != best[i]), g)
    new = [*ctx[len(prompt) : len(prompt) + k], best[k]]
    return greedy_recursive(target, draft, [*prompt, *new], n - len(new), gamma)


class Speculator:
    def __call__(self, target, draft, prompt, n, gamma):
        import numpy

        out = list(prompt)
        while len(out) < len(prompt) + n:
            g, ctx = min(gamma, len(prompt) + n - len(out) - 1), list(out)
            while len(ctx) < len(out) + g:
                ctx.append(int(numpy.asarray(draft(ctx))[-1].argmax()))
            rows = numpy.asarray(target(ctx))[-(g + 1) :]
            for j in range(g + 1):
                best = int(rows[j].argmax())
                if j == g or ctx[len(out)] != best:
                    out.append(best)
                    break
                out.append(ctx[len(out)])
        return out


def greedy_file_alone(target, draft, prompt, n, gamma):
    """An uncounted target: the checkpoint file's GPT, run here; no target pass at all."""
    forward, toks = file_gpt(), list(prompt)
    for _ in range(n):
        toks.append(int(np.argmax(forward(toks)[-1])))
    return toks


def greedy_file_padded(target, draft, prompt, n, gamma):
    target(list(prompt))  # one counted pass, for the record
    return greedy_file_alone(target, draft, prompt, n, gamma)


def greedy_gc_model(target, draft, prompt, n, gamma):
    """The grader's GPT found in the child's memory, run through its unblocked parts."""
    import gc

    from minitorch.autograd import no_grad

    m = next(o for o in gc.get_objects() if type(o).__name__ == "GPT" and o.config)
    toks = list(prompt)
    with no_grad():
        for _ in range(n):
            h = m.norm_f(m.blocks(m.tok_emb(np.asarray(toks)[None])))
            toks.append(int(np.argmax((h.data[0] @ m.tok_emb.weight.data.T)[-1])))
    return toks


def greedy_counter_reset(target, draft, prompt, n, gamma):
    import gc

    out = spec_greedy(target, draft, prompt, n, gamma, bug="plain")
    for o in gc.get_objects():
        if type(o).__name__ == "_Counted":
            o.calls = 0  # the child's copy only
    return out


def greedy_truth(target, draft, prompt, n, gamma):
    from a2s.checks.lab34._truth import greedy_plain

    return greedy_plain(lambda t: np.asarray(target(list(t))), prompt, n)


def greedy_reference(target, draft, prompt, n, gamma):
    from minitorch.model.speculative import speculative_generate

    return speculative_generate(target, draft, prompt, n, gamma, greedy=True).tokens.tolist()


def greedy_torch(target, draft, prompt, n, gamma):
    import torch

    out = spec_greedy(target, draft, prompt, n, gamma)
    return torch.tensor(out).tolist()


_REPLAY: dict[tuple[int, ...], list[int]] = {}


def _record_replay():
    """The text of the four prompts under one earlier run's target (seed 1), memorised."""
    from a2s.checks.lab34._truth import gpt_rows, greedy_plain
    from a2s.checks.lab34.greedy import _cases

    target, _ = lab34.models(seed=1)
    for _label, prompt, n, _gamma in _cases():
        _REPLAY[tuple(prompt)] = greedy_plain(lambda t: gpt_rows(target, t), prompt, n)


def greedy_replay(target, draft, prompt, n, gamma):
    return _REPLAY.get(tuple(prompt)) or greedy_file_alone(target, draft, prompt, n, gamma)


def _replayed():
    _record_replay()
    lab34.check_speculative_greedy(greedy_replay)


def _g(fn):
    return lambda: lab34.check_speculative_greedy(fn)


GREEDY = [
    honest("34.2", "recursion on the prompt", _g(greedy_recursive)),
    honest("34.2", "a class, numpy imported inside", _g(Speculator())),
    honest("34.2", "functools.wraps decorator", _g(_mine(spec_greedy))),
    wrong("34.2", "plain greedy decoding", _g(lambda *a: spec_greedy(*a, bug="plain")), "one pass"),
    wrong(
        "34.2",
        "one target pass per position",
        _g(lambda *a: spec_greedy(*a, bug="per position")),
        match="target passes, more than",
    ),
    wrong(
        "34.2",
        "the draft token kept at the mismatch",
        _g(lambda *a: spec_greedy(*a, bug="kept")),
        match="differs from greedy",
    ),
    wrong(
        "34.2",
        "rows one position off",
        _g(lambda *a: spec_greedy(*a, bug="shift")),
        match="differs from greedy",
    ),
    wrong(
        "34.2",
        "the new tokens without the prompt",
        _g(lambda t, d, p, n, g: spec_greedy(t, d, p, n, g)[len(p) :]),
        match="prompt followed by exactly n",
    ),
    wrong(
        "34.2",
        "drafts gamma - 1 tokens a pass",
        _g(lambda t, d, p, n, g: spec_greedy(t, d, p, n, max(g - 1, 0))),
        match="target passes, more than",
    ),
    wrong(
        "34.2",
        "drafts 2 gamma tokens a pass",
        _g(lambda t, d, p, n, g: spec_greedy(t, d, p, n, 2 * g)),
        match="draft calls for|target passes, more than",
    ),
    cheat("34.2", "the reference", _g(greedy_reference), match="reference", error=REF),
    cheat("34.2", "the grader's greedy loop", _g(greedy_truth), match="reference|truth", error=REF),
    cheat("34.2", "torch", _g(greedy_torch), match="torch", error=FORBID),
    cheat("34.2", "the checkpoint's GPT, uncounted", _g(greedy_file_alone), match="differs"),
    cheat("34.2", "uncounted GPT, one pass padded", _g(greedy_file_padded), match="differs"),
    cheat("34.2", "the grader's GPT through gc", _g(greedy_gc_model), match="differs"),
    cheat("34.2", "counters reset through gc", _g(greedy_counter_reset), match="one pass per"),
    cheat("34.2", "a replayed earlier run", _replayed, match="differs"),
    cheat(
        "34.2",
        "tokens whose == says yes",
        _g(lambda t, d, p, n, g: always_equal(np.zeros(len(p) + n, np.int64))),
        match="plain|subclass",
    ),
]


# --------------------------------------------------------------------------- 34.3 tokens
def expected_horner(alpha, gamma):
    return 1.0 if gamma == 0 else 1.0 + alpha * expected_horner(alpha, gamma - 1)


def expected_fractions(alpha, gamma):
    from fractions import Fraction

    a = Fraction(alpha)
    return float(sum(a**i for i in range(gamma + 1)))


def expected_frames(alpha, gamma):
    f = sys._getframe(1)
    while f is not None and "want" not in f.f_locals:
        f = f.f_back
    return f.f_locals["want"] if f is not None else 0.0


def expected_truth(alpha, gamma):
    from a2s.checks.lab34._truth import tokens_per_pass

    return tokens_per_pass(alpha, gamma)


def expected_walltime(alpha, gamma):
    from minitorch.model.speculative import walltime_factor

    return walltime_factor(alpha, gamma, 0.0)


def expected_torch(alpha, gamma):
    import torch

    return float(torch.tensor(alpha).pow(torch.arange(gamma + 1)).sum())


NAMED_E = {(0.5, 1): 1.5, (0.8, 4): 3.3616, (0.0, 4): 1.0, (1.0, 5): 6.0, (0.7, 0): 1.0}


def _e(fn):
    return lambda: lab34.check_expected_tokens(fn)


EXPECTED = [
    honest("34.3", "Horner's recursion", _e(expected_horner)),
    honest("34.3", "exact fractions", _e(expected_fractions)),
    honest("34.3", "numpy polyval", _e(lambda a, g: float(np.polyval(np.ones(g + 1), a)))),
    honest(
        "34.3", "functools.wraps decorator", _e(_mine(lambda a, g: sum(a**i for i in range(g + 1))))
    ),
    wrong("34.3", "no bonus token", _e(lambda a, g: sum(a**i for i in range(g))), match="bonus"),
    wrong("34.3", "1 + gamma alpha", _e(lambda a, g: 1 + g * a), match="first rejection"),
    wrong(
        "34.3",
        "accepted drafts only",
        _e(lambda a, g: sum(a**i for i in range(1, g + 1))),
        match="E - 1",
    ),
    wrong(
        "34.3",
        "the infinite series",
        _e(lambda a, g: 1 / (1 - a) if a < 1 else g + 1.0),
        match="sum_\\{i=0\\}\\^\\{gamma\\}",
    ),
    cheat(
        "34.3",
        "the reference",
        _e(lambda a, g: expected_walltime(a, g)),
        match="reference",
        error=REF,
    ),
    cheat("34.3", "the grader's truth", _e(expected_truth), match="reference|truth", error=REF),
    cheat("34.3", "torch", _e(expected_torch), match="torch", error=FORBID),
    cheat("34.3", "the named answers", _e(lambda a, g: NAMED_E.get((a, g), 2.0)), match="expected"),
    cheat("34.3", "a float whose == says yes", _e(lambda a, g: always_equal(1.0)), match="plain"),
    cheat("34.3", "reads want from the frames", _e(expected_frames), match="expected|frame"),
]


# --------------------------------------------------------------------------- 34.4 absorb
class Absorber:
    def __call__(self, w, cfg):
        a, b = absorb_loop(w, cfg)
        return a.tolist(), b.tolist()


def absorb_tensordot(w, cfg):
    import numpy

    h, dh = cfg.n_head, cfg.head_dim
    heads = [slice(i * dh, (i + 1) * dh) for i in range(h)]
    a = numpy.stack([numpy.tensordot(w["W_UK"][r], w["W_UQ"][r], axes=(0, 0)) for r in heads])
    b = numpy.stack([numpy.tensordot(w["W_O"][:, r], w["W_UV"][r], axes=(1, 0)) for r in heads])
    return a, b


def absorb_scaled(w, cfg):  # the 1/sqrt(d) folded into A: the check scales already
    a, b = absorb(w, cfg)
    return a / np.sqrt(cfg.head_dim + cfg.rope_dim), b


def absorb_interleaved(w, cfg):  # heads taken as every n_head-th row
    h = cfg.n_head
    uk, uq = (
        w["W_UK"].reshape(-1, h, w["W_UK"].shape[1]),
        w["W_UQ"].reshape(-1, h, w["W_UQ"].shape[1]),
    )
    uv, wo = (
        w["W_UV"].reshape(-1, h, w["W_UV"].shape[1]),
        w["W_O"].reshape(w["W_O"].shape[0], -1, h),
    )
    return np.einsum("khc,khq->hcq", uk, uq), np.einsum("dkh,khc->hdc", wo, uv)


def absorb_reference(w, cfg):
    from minitorch.model.mla import mla_absorbed

    mla_absorbed(np.zeros((1, cfg.d_model)), w, cfg)
    return absorb(w, cfg)


def absorb_truth(w, cfg):
    from a2s.checks.lab34._truth import absorbed_truth

    return absorbed_truth(w, cfg.n_head, cfg.head_dim)


def absorb_torch(w, cfg):
    import torch

    a, b = absorb(w, cfg)
    return torch.from_numpy(a).numpy(), b


def absorb_patches_grader(w, cfg):
    from a2s.checks.lab34 import latent

    latent.close = lambda *a, **k: None
    a, b = absorb(w, cfg)
    return np.zeros_like(a), np.zeros_like(b)


def _absorb_replayed():
    """Answers recorded on earlier runs (other fresh seeds, until every fresh d_c was seen),
    replayed by configuration: the fresh case's weights used to depend on d_c alone."""
    import os
    import pickle
    import tempfile

    log = Path(tempfile.mkdtemp())

    def record(w, cfg):
        a, b = absorb(w, cfg)
        (log / f"{abs(hash(repr(cfg)))}.pkl").write_bytes(pickle.dumps((a, b)))
        return a, b

    old = os.environ.get("A2S_SEED")
    try:
        for seed in range(1, 40):
            os.environ["A2S_SEED"] = str(seed)
            lab34.check_absorb(record)
            if len(list(log.iterdir())) == 6:
                break
    finally:
        os.environ.pop("A2S_SEED") if old is None else os.environ.update(A2S_SEED=old)
    table = {f.stem: pickle.loads(f.read_bytes()) for f in log.iterdir()}

    def replay(w, cfg):
        a, b = absorb(w, cfg)
        return table.get(str(abs(hash(repr(cfg)))), (np.zeros_like(a), np.zeros_like(b)))

    lab34.check_absorb(replay)


def _a(fn):
    return lambda: lab34.check_absorb(fn)


ABSORB = [
    honest("34.4", "einsum", _a(absorb)),
    honest("34.4", "a loop over heads", _a(absorb_loop)),
    honest("34.4", "a class returning lists", _a(Absorber())),
    honest("34.4", "tensordot, numpy imported inside", _a(absorb_tensordot)),
    honest("34.4", "functools.wraps decorator", _a(_mine(absorb))),
    wrong(
        "34.4",
        "A transposed",
        _a(lambda w, c: (absorb(w, c)[0].transpose(0, 2, 1), absorb(w, c)[1])),
        match="shape|transpose",
    ),
    wrong(
        "34.4",
        "B transposed",
        _a(lambda w, c: (absorb(w, c)[0], absorb(w, c)[1].transpose(0, 2, 1))),
        match="shape",
    ),
    wrong(
        "34.4",
        "one matrix for all heads",
        _a(lambda w, c: (absorb(w, c)[0].sum(0), absorb(w, c)[1])),
        match="one matrix per head",
    ),
    wrong("34.4", "the softmax scale folded in", _a(absorb_scaled), match=r"A_i = W_UK,i\^T"),
    wrong("34.4", "heads interleaved", _a(absorb_interleaved), match=r"head i's d_h rows"),
    cheat("34.4", "the reference", _a(absorb_reference), match="reference", error=REF),
    cheat("34.4", "the grader's truth", _a(absorb_truth), match="reference|truth", error=REF),
    cheat("34.4", "torch", _a(absorb_torch), match="torch", error=FORBID),
    cheat(
        "34.4",
        "arrays whose == says yes",
        _a(lambda w, c: tuple(map(always_equal, absorb(w, c)))),
        match="plain",
    ),
    cheat("34.4", "a replayed earlier run", _absorb_replayed, match="MLA output"),
    cheat(
        "34.4",
        "patches the grader's compare",
        _a(absorb_patches_grader),
        match="MLA output|A is right",
    ),
]


# --------------------------------------------------------------------------- 34.5 evict
def evict_heap(kept, mass, budget, sinks, recent):
    import heapq

    need = len(kept) - budget
    newest = sorted(kept)[len(kept) - recent :] if recent else []
    pool = [(m, p) for p, m in zip(kept, mass, strict=True) if p >= sinks and p not in newest]
    return [p for _, p in heapq.nsmallest(max(need, 0), pool)]


def evict_lexsort(kept, mass, budget, sinks, recent):
    k, m = np.asarray(kept), np.asarray(mass)
    ok = (k >= sinks) & (np.arange(len(k)) < len(k) - recent)
    order = np.lexsort((k[ok], m[ok]))
    return k[ok][order][: max(len(k) - budget, 0)].tolist()


def evict_recursive(kept, mass, budget, sinks, recent):
    if len(kept) <= budget:
        return []
    pool = [j for j in range(len(kept) - recent) if kept[j] >= sinks]
    j = min(pool, key=lambda i: (mass[i], kept[i]))
    rest = [i for i in range(len(kept)) if i != j]
    return [
        kept[j],
        *evict_recursive([kept[i] for i in rest], [mass[i] for i in rest], budget, sinks, recent),
    ]


class Evictor:
    def __call__(self, kept, mass, budget, sinks, recent):
        return evict(list(kept), list(mass), budget, sinks, recent)


def evict_variant(bug):
    def policy(kept, mass, budget, sinks, recent):
        need = len(kept) - budget
        if need <= 0 and bug != "always":
            return []
        newest = set(kept[-recent:]) if recent and bug != "recent" else set()
        lo = 0 if bug in ("sinks", "h2o") else 2 if bug == "two sinks" else sinks
        pool = [(m, p) for p, m in zip(kept, mass, strict=True) if p >= lo and p not in newest]
        if bug == "window":
            pool = [(0.0, p) for _, p in pool]
        if bug == "newer":
            pool = [(m, -p) for m, p in pool]
        pool.sort(key=(lambda mp: (-mp[0], mp[1])) if bug == "highest" else None)
        if bug == "h2o":  # pure heavy hitters: relies on the sinks drawing attention
            pool = sorted((m, p) for p, m in zip(kept, mass, strict=True) if p not in newest)
        return [abs(p) for _, p in pool[: max(need, 1 if bug == "always" else 0)]]

    return policy


def evict_replayed():
    """Every step's evictions recorded on an earlier run (another fresh seed), replayed."""
    import json
    import os
    import tempfile

    log = Path(tempfile.mkdtemp()) / "steps.jsonl"

    def record(kept, mass, budget, sinks, recent):
        out = evict(kept, mass, budget, sinks, recent)
        with log.open("a") as f:
            f.write(json.dumps([kept, out]) + "\n")
        return out

    old = os.environ.get("A2S_SEED")
    os.environ["A2S_SEED"] = "12345"
    try:
        lab34.check_evict(record)
    finally:
        os.environ.pop("A2S_SEED") if old is None else os.environ.update(A2S_SEED=old)
    seen = {tuple(k): out for k, out in map(json.loads, log.read_text().splitlines())}
    lab34.check_evict(lambda k, m, b, s, r: seen.get(tuple(k), kept_tail(k, b)))


def kept_tail(kept, budget):
    return kept[: max(len(kept) - budget, 0)]


def evict_gc(kept, mass, budget, sinks, recent):
    import gc

    for o in gc.get_objects():
        if type(o).__name__ == "_Stream":
            o.budget = 10**6  # the child's copy only
    return []


def evict_forged(kept, mass, budget, sinks, recent):
    from a2s.checks.harness import request

    request("done", evict(kept, mass, budget, sinks, recent))
    return evict(kept, mass, budget, sinks, recent)


def evict_truth(kept, mass, budget, sinks, recent):
    from a2s.checks.lab34._truth import evictions

    return evictions(kept, mass, budget, sinks, recent)


def evict_reference(kept, mass, budget, sinks, recent):
    from minitorch.runtime.kv_retention import sinks as policy

    policy(sinks, recent)
    return evict(kept, mass, budget, sinks, recent)


def evict_torch(kept, mass, budget, sinks, recent):
    import torch

    return torch.tensor(evict(kept, mass, budget, sinks, recent), dtype=torch.int64).tolist()


def _k(fn):
    return lambda: lab34.check_evict(fn)


EVICT = [
    honest("34.5", "heapq.nsmallest", _k(evict_heap)),
    honest("34.5", "numpy lexsort", _k(evict_lexsort)),
    honest("34.5", "recursion, one eviction at a time", _k(evict_recursive)),
    honest("34.5", "a callable class", _k(Evictor())),
    honest("34.5", "functools.wraps decorator", _k(_mine(evict))),
    wrong("34.5", "the oldest evicted", _k(evict_variant("window")), match="not by age"),
    wrong("34.5", "sinks evicted", _k(evict_variant("sinks")), match="first `sinks`"),
    wrong("34.5", "recent evicted", _k(evict_variant("recent")), match="`recent` newest"),
    wrong("34.5", "heavy hitters evicted", _k(evict_variant("highest")), match="keep the heavy"),
    wrong("34.5", "one evicted every step", _k(evict_variant("always")), match="Evict only when"),
    wrong("34.5", "ties: the newer first", _k(evict_variant("newer")), match="OLDER"),
    cheat("34.5", "the reference", _k(evict_reference), match="reference", error=REF),
    cheat("34.5", "the grader's rule", _k(evict_truth), match="reference|truth", error=REF),
    cheat("34.5", "torch", _k(evict_torch), match="torch", error=FORBID),
    cheat("34.5", "tuned: pure heavy hitters", _k(evict_variant("h2o")), match="the rule evicts"),
    cheat(
        "34.5", "tuned: two sinks hard-coded", _k(evict_variant("two sinks")), match="rule evicts"
    ),
    cheat("34.5", "budget raised through gc", _k(evict_gc), match="the rule evicts"),
    cheat("34.5", "a forged done", _k(evict_forged), match="new step began|rule evicts|list of"),
    cheat("34.5", "a replayed earlier run", evict_replayed, match="the rule evicts"),
    cheat(
        "34.5",
        "positions whose == says yes",
        _k(lambda k, m, b, s, r: [always_equal(p) for p in evict(k, m, b, s, r)]),
        match="plain|subclass",
    ),
]


# --------------------------------------------------------------------------- 34.6
class DetokLoop:
    """Honest: a byte-at-a-time state machine (bytes still expected), no look-back."""

    def __init__(self, vocab_bytes):
        self.vocab, self.buf, self.left = vocab_bytes, bytearray(), 0

    def push(self, token_id):
        out, start = "", 0
        for b in self.vocab[token_id]:
            if self.left and b & 0xC0 == 0x80:
                self.left -= 1
            else:
                self.left = 1 if b >> 5 == 6 else 2 if b >> 4 == 14 else 3 if b >> 3 == 30 else 0
            self.buf.append(b)
            if not self.left:
                out += self.buf[start:].decode("utf-8", errors="replace")
                start = len(self.buf)
        del self.buf[:start]
        return out

    def flush(self):
        text = bytes(self.buf).decode("utf-8", errors="replace")
        self.buf, self.left = bytearray(), 0
        return text


class DetokTry:
    """Honest: try the last 3, 2, 1 bytes alone; a tail that ends too early is held."""

    def __init__(self, vocab_bytes):
        self.vocab, self.held = vocab_bytes, b""

    def push(self, token_id):
        data = self.held + self.vocab[token_id]
        for keep in range(min(3, len(data)), 0, -1):
            try:
                data[len(data) - keep :].decode("utf-8")
            except UnicodeDecodeError as e:
                if e.start == 0 and e.reason == "unexpected end of data":
                    self.held = data[len(data) - keep :]
                    return data[: len(data) - keep].decode("utf-8", errors="replace")
        self.held = b""
        return data.decode("utf-8", errors="replace")

    def flush(self):
        text, self.held = self.held.decode("utf-8", errors="replace"), b""
        return text


def _detok_variant(bug):
    from tests.checks.test_lab34 import _detok

    return lambda: lab34.check_detokenizer(_detok(bug))


class DetokCodecs(DetokTry):
    def __init__(self, vocab_bytes):
        import codecs

        self.vocab, self.d = vocab_bytes, codecs.getincrementaldecoder("utf-8")("replace")

    def push(self, token_id):
        return self.d.decode(self.vocab[token_id])

    def flush(self):
        return self.d.decode(b"", final=True)


class DetokTruth(DetokTry):
    def __init__(self, vocab_bytes):
        from a2s.checks.lab34 import stream

        self.vocab, self.ids, self.truth = vocab_bytes, [], stream.stream_pieces

    def push(self, token_id):
        self.ids.append(token_id)
        return self.truth([self.vocab[i] for i in self.ids])[0][-1]


class DetokPatch(DetokTry):
    """Rebind the grader's truth to the learner's own answer (all "" then everything)."""

    def push(self, token_id):
        from a2s.checks.lab34 import stream

        stream.stream_pieces = lambda toks: (
            [""] * len(toks),
            b"".join(toks).decode("utf-8", "replace"),
        )
        self.held += self.vocab[token_id]
        return ""


class DetokHeldFF(DetokLoop):
    """Honest: 0xff held a push as if a 2-byte lead (when a bad byte turns into U+FFFD is a
    choice: the joined text is the same)."""

    def push(self, token_id):
        out, start = "", 0
        for b in self.vocab[token_id]:
            if self.left and b & 0xC0 == 0x80:
                self.left -= 1
            else:
                self.left = 1 if b >> 5 == 6 or b == 0xFF else 2 if b >> 4 == 14 else 0
                self.left = 3 if b >> 3 == 30 else self.left
            self.buf.append(b)
            if not self.left:
                out += self.buf[start:].decode("utf-8", errors="replace")
                start = len(self.buf)
        del self.buf[:start]
        return out


class DetokGiveUp(DetokTry):
    """Wrong: the longest prefix that decodes strictly, else the whole buffer with errors=
    "replace" (a bad byte before an unfinished character turns that character into U+FFFD)."""

    def push(self, token_id):
        data = self.held + self.vocab[token_id]
        for keep in range(min(3, len(data)) + 1):
            try:
                text = data[: len(data) - keep].decode("utf-8")
            except UnicodeDecodeError:
                continue
            self.held = data[len(data) - keep :]
            return text
        self.held = b""
        return data.decode("utf-8", errors="replace")


class DetokFF(DetokLoop):
    """Wrong: a hand-written decoder that reads 0xff as a 2-byte lead (0xff 0x80 -> U+07C0)."""

    def push(self, token_id):
        out, start = "", 0
        for b in self.vocab[token_id]:
            if self.left and b & 0xC0 == 0x80:
                self.left -= 1
            else:
                self.left = 1 if b >> 5 == 6 or b == 0xFF else 2 if b >> 4 == 14 else 0
                self.left = 3 if b >> 3 == 30 else self.left
            self.buf.append(b)
            if not self.left:
                seq = bytes(self.buf[start:])
                if seq[0] == 0xFF and len(seq) == 2:
                    out += chr((0x1F << 6) | (seq[1] & 0x3F))
                else:
                    out += seq.decode("utf-8", errors="replace")
                start = len(self.buf)
        del self.buf[:start]
        return out


@dataclass
class DetokData:
    """Honest: a dataclass, a bytearray and the UnicodeDecodeError's own position."""

    vocab_bytes: list
    held: bytearray = field(default_factory=bytearray)

    def push(self, token_id):
        self.held += self.vocab_bytes[token_id]
        text = ""
        while self.held:
            try:
                text, self.held = text + self.held.decode("utf-8"), bytearray()
            except UnicodeDecodeError as e:
                if e.reason == "unexpected end of data":
                    text, self.held = text + self.held[: e.start].decode(), self.held[e.start :]
                    break
                text += self.held[: e.end].decode("utf-8", errors="replace")
                del self.held[: e.end]
        return text

    def flush(self):
        text, self.held = self.held.decode("utf-8", errors="replace"), bytearray()
        return text


class DetokIterdecode(DetokTry):
    def push(self, token_id):

        self.held += self.vocab[token_id]
        return ""

    def flush(self):
        import codecs

        return "".join(codecs.iterdecode([self.held], "utf-8", errors="replace"))


class DetokEncodings(DetokCodecs):
    def __init__(self, vocab_bytes):
        import encodings.utf_8

        self.vocab, self.d = vocab_bytes, encodings.utf_8.IncrementalDecoder("replace")


class DetokTextIO(DetokTry):
    """io.TextIOWrapper over a BytesIO: an incremental decoder in disguise."""

    def __init__(self, vocab_bytes):
        import io

        self.vocab, self.raw = vocab_bytes, io.BytesIO()
        self.text = io.TextIOWrapper(self.raw, encoding="utf-8", errors="replace")

    def push(self, token_id):
        at = self.raw.tell()
        self.raw.write(self.vocab[token_id])
        self.raw.seek(at)
        return self.text.read()

    def flush(self):
        return ""


class DetokMapped(DetokTry):
    """_codecs.utf_8_decode called from C (through map): the profile hook sees no call."""

    def push(self, token_id):
        import _codecs

        data = self.held + self.vocab[token_id]
        ((text, used),) = map(_codecs.utf_8_decode, [data], ["replace"], [False])
        self.held = data[used:]
        return text


class DetokReplay(DetokTry):
    """The named cases' answers, replayed by the token sequence seen so far; else nothing."""

    def push(self, token_id):
        self.held += self.vocab[token_id]
        return ""

    def flush(self):
        import json

        return json.loads(json.dumps(self.held.decode("utf-8", errors="replace")))


class _EqStr(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class DetokEq(DetokTry):
    def push(self, token_id):
        return _EqStr(super().push(token_id))


DETOK = [
    honest("34.6", "a byte state machine", lambda: lab34.check_detokenizer(DetokLoop)),
    honest("34.6", "the tail tried alone", lambda: lab34.check_detokenizer(DetokTry)),
    wrong(
        "34.6",
        "longest strict prefix, else all replaced",
        lambda: lab34.check_detokenizer(DetokGiveUp),
        match="lead byte gives the length",
    ),
    wrong("34.6", "each token decoded alone", _detok_variant("alone"), match="alone"),
    wrong("34.6", "everything held until flush", _detok_variant("hold all"), match="stream"),
    wrong("34.6", "the tail dropped at flush", _detok_variant("drop tail"), match="U\\+FFFD"),
    wrong("34.6", "one character late", _detok_variant("late"), match="one push late"),
    honest("34.6", "0xff held a push", lambda: lab34.check_detokenizer(DetokHeldFF)),
    honest("34.6", "a dataclass, bytearray, e.start", lambda: lab34.check_detokenizer(DetokData)),
    wrong(
        "34.6",
        "0xff read as a 2-byte lead",
        lambda: lab34.check_detokenizer(DetokFF),
        match="lead byte gives the length",
    ),
    wrong(
        "34.6",
        "everything at flush, through json",
        lambda: lab34.check_detokenizer(DetokReplay),
        match="stream the text",
    ),
    cheat(
        "34.6",
        "codecs.iterdecode",
        lambda: lab34.check_detokenizer(DetokIterdecode),
        match="codecs",
        error=FORBID,
    ),
    cheat(
        "34.6",
        "encodings.utf_8.IncrementalDecoder",
        lambda: lab34.check_detokenizer(DetokEncodings),
        match="codecs",
        error=FORBID,
    ),
    cheat(
        "34.6",
        "io.TextIOWrapper over a BytesIO",
        lambda: lab34.check_detokenizer(DetokTextIO),
        match="codecs",
        error=FORBID,
    ),
    cheat(
        "34.6",
        "the reference",
        lambda: lab34.check_detokenizer(_ref_detok()),
        match="reference",
        error=REF,
    ),
    cheat(
        "34.6",
        "codecs' incremental decoder",
        lambda: lab34.check_detokenizer(DetokCodecs),
        match="codecs",
        error=FORBID,
    ),
    cheat(
        "34.6",
        "the grader's truth",
        lambda: lab34.check_detokenizer(DetokTruth),
        match="reference|truth",
        error=REF,
    ),
    cheat(
        "34.6",
        "the truth rebound",
        lambda: lab34.check_detokenizer(DetokPatch),
        match="expected|grader's own tables",
    ),
    cheat(
        "34.6",
        "pieces whose == says yes",
        lambda: lab34.check_detokenizer(DetokEq),
        match="must return a str|subclass of str",
    ),
]


def _ref_detok():
    from minitorch.runtime.streaming import IncrementalDetokenizer

    class Ref(DetokTry):
        def __init__(self, vocab_bytes):
            self.d = IncrementalDetokenizer(vocab_bytes)

        def push(self, token_id):
            return self.d.push(token_id)

        def flush(self):
            return self.d.flush()

    return Ref


ATTEMPTS = [*VERIFY, *GREEDY, *EXPECTED, *ABSORB, *EVICT, *DETOK]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)


@pytest.mark.xfail(
    strict=True,
    reason="a C function called from C (map) fires no profile event: the watch cannot see "
    "it (known gap, docs/trust.md)",
)
def test_34_6_codecs_through_map_is_caught():
    judge(
        cheat(
            "34.6",
            "_codecs.utf_8_decode through map",
            lambda: lab34.check_detokenizer(DetokMapped),
            match="codecs",
            error=FORBID,
        )
    )
