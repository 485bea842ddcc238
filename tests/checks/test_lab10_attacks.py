"""Lab 10 tried as a class would: correct answers written differently, typical mistakes, cheats.

Every attempt runs in-process against the grader (:mod:`tests.helpers.attacks`). Frame, ``gc``
and code-swap attacks are the sealed kernel's (``a2s grade``), see docs/trust.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from a2s.checks import lab10
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError
from tests.helpers.attacks import attempt_id, cheat, honest, judge, wrong
from tests.helpers.graders import always_equal

TRUTH = "a2s.checks.lab10"


# --------------------------------------------------------------------------- 10.1 gating
def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def gating(logits, k):
    p = softmax(logits)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    gates = np.take_along_axis(p, experts, axis=1)
    return experts, gates / gates.sum(1, keepdims=True) if k > 1 else gates


def gating_loops(logits, k):
    experts, gates = [], []
    for row in logits.tolist():
        top = max(row)
        w = [math.exp(v - top) for v in row]
        total = sum(w)
        p = [v / total for v in w]
        best = sorted(range(len(p)), key=lambda i: (-p[i], i))[:k]
        g = [p[i] for i in best]
        if k > 1:
            g = [v / sum(g) for v in g]
        experts.append(best)
        gates.append(g)
    return np.array(experts), np.array(gates)


def gating_softmax_of_top_logits(logits, k):
    experts = np.argsort(-logits, axis=1, kind="stable")[:, :k]  # same order as p
    if k == 1:
        return experts, np.take_along_axis(softmax(logits), experts, axis=1)
    return experts, softmax(np.take_along_axis(logits, experts, axis=1))


def gating_global_max(logits, k):
    e = np.exp(logits - logits.max())  # one max for the whole batch
    p = e / e.sum(1, keepdims=True)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    g = np.take_along_axis(p, experts, axis=1)
    return experts, g / g.sum(1, keepdims=True) if k > 1 else g


def gating_ties_high(logits, k):
    p = softmax(logits)
    experts = np.argsort(p, axis=1, kind="stable")[:, ::-1][:, :k]
    g = np.take_along_axis(p, experts, axis=1)
    return experts, g / g.sum(1, keepdims=True) if k > 1 else g


def gating_unnormalised(logits, k):
    p = softmax(logits)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    return experts, np.take_along_axis(p, experts, axis=1)


def _torch_gating(logits, k):
    import torch

    v, i = torch.topk(torch.softmax(torch.from_numpy(logits), -1), k, dim=-1)
    return i.numpy(), (v / v.sum(-1, keepdim=True) if k > 1 else v).numpy()


def _ref_gating(logits, k):
    from minitorch.model.moe_router import top_k_gating

    return top_k_gating(logits, k)


def _ref_probs(logits, k):
    from minitorch.model.moe_router import router_probs

    p = router_probs(logits)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    g = np.take_along_axis(p, experts, axis=1)
    return experts, g / g.sum(1, keepdims=True) if k > 1 else g


def _truth_gating(logits, k):
    from a2s.checks.lab10 import gating

    return gating.loop_top_k(logits, k)


GATING = [
    honest("10.1", "plain Python loops", lambda: lab10.check_top_k_gating(gating_loops)),
    honest(
        "10.1",
        "softmax over the top-k logits",
        lambda: lab10.check_top_k_gating(gating_softmax_of_top_logits),
    ),
    wrong(
        "10.1",
        "one max for the whole batch",
        lambda: lab10.check_top_k_gating(gating_global_max),
        match="each row's max",
    ),
    wrong(
        "10.1",
        "ties to the higher index",
        lambda: lab10.check_top_k_gating(gating_ties_high),
        match="lower expert index|ascending",
    ),
    wrong(
        "10.1",
        "top-2 gates not renormalised",
        lambda: lab10.check_top_k_gating(gating_unnormalised),
        match="renormalizes",
    ),
    wrong(
        "10.1",
        "top-1 gate of 1",
        lambda: lab10.check_top_k_gating(
            lambda z, k: (gating(z, k)[0], np.ones((len(z), k))) if k == 1 else gating(z, k)
        ),
        match="keeps the probability",
    ),
    cheat(
        "10.1",
        "torch.topk",
        lambda: lab10.check_top_k_gating(_torch_gating),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "10.1",
        "the reference",
        lambda: lab10.check_top_k_gating(_ref_gating),
        match="top_k_gating",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.1",
        "the reference's router_probs",
        lambda: lab10.check_top_k_gating(_ref_probs),
        match="router_probs",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.1",
        "the grader's loop_top_k",
        lambda: lab10.check_top_k_gating(_truth_gating),
        match=TRUTH + "|torch",
        error=(ReferenceCalledError, ForbiddenCallError),
    ),
    cheat(
        "10.1",
        "an array whose == always says yes",
        lambda: lab10.check_top_k_gating(
            lambda z, k: (always_equal(gating(z, k)[0]), gating(z, k)[1])
        ),
        match="subclass",
    ),
]


# --------------------------------------------------------------------------- 10.2 slots
def slots(experts, e, cap):
    n, k = experts.shape
    position = np.zeros((n, k), dtype=np.int64)
    filled = [0] * e
    for j in range(k):
        for t in range(n):
            position[t, j] = filled[experts[t, j]]
            filled[experts[t, j]] += 1
    return position, position < cap


def slots_cumsum(experts, e, cap):
    flat = experts.T.reshape(-1)  # choice-major: every first choice, then the second
    onehot = np.eye(e, dtype=np.int64)[flat]
    pos = (np.cumsum(onehot, 0) - onehot)[np.arange(flat.size), flat]
    position = pos.reshape(experts.shape[1], -1).T
    return position, position < cap


def slots_token_major(experts, e, cap):
    p, _ = slots(experts.reshape(-1, 1), e, cap)
    p = p.reshape(experts.shape)
    return p, p < cap


def _truth_slots(experts, e, cap):
    from a2s.checks.lab10.gating import loop_slots

    return loop_slots(experts, e, cap)


def _ref_slots(experts, e, cap):
    from minitorch.model.moe_router import assign_slots

    return assign_slots(experts, e, cap)


def _lab26_slots(experts, e, cap):
    from minitorch.parallel.expert import global_positions

    k = experts.shape[1]
    counts = np.stack([np.bincount(experts[:, j], minlength=e) for j in range(k)])[None]
    p = global_positions(experts, counts, 0)
    return p, p < cap


def _torch_slots(experts, e, cap):
    import torch

    p, _ = slots(experts, e, cap)
    return torch.from_numpy(p).numpy(), torch.from_numpy(p < cap).numpy()


SLOTS = [
    honest("10.2", "two loops", lambda: lab10.check_assign_slots(slots)),
    honest("10.2", "choice-major cumsum", lambda: lab10.check_assign_slots(slots_cumsum)),
    wrong(
        "10.2",
        "token-major priority",
        lambda: lab10.check_assign_slots(slots_token_major),
        match="first choice, in token order",
    ),
    wrong(
        "10.2",
        "keep = position <= capacity",
        lambda: lab10.check_assign_slots(
            lambda x, e, c: (slots(x, e, c)[0], slots(x, e, c)[0] <= c)
        ),
        match="over its capacity",
    ),
    wrong(
        "10.2",
        "positions from 1",
        lambda: lab10.check_assign_slots(
            lambda x, e, c: (slots(x, e, c)[0] + 1, slots(x, e, c)[0] + 1 < c)
        ),
        match="earlier assignments",
    ),
    cheat(
        "10.2",
        "the grader's loop_slots",
        lambda: lab10.check_assign_slots(_truth_slots),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "10.2",
        "the reference",
        lambda: lab10.check_assign_slots(_ref_slots),
        match="assign_slots",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.2",
        "lab 26's global_positions",
        lambda: lab10.check_assign_slots(_lab26_slots),
        match="global_positions",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.2",
        "torch",
        lambda: lab10.check_assign_slots(_torch_slots),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "10.2",
        "keep everything, capacity ignored",
        lambda: lab10.check_assign_slots(
            lambda x, e, c: (slots(x, e, c)[0], np.ones(x.shape, bool))
        ),
        match="over its capacity",
    ),
]


# --------------------------------------------------------------------------- 10.3 predict
def predict(wanted, n, cf, k):
    cap = int(np.ceil(k * n * cf / len(wanted)))
    return cap, int(sum(max(0, w - cap) for w in wanted))


def predict_fraction(wanted, n, cf, k):
    from fractions import Fraction

    cap = math.ceil(Fraction(k * n) * Fraction(cf) / len(wanted))
    return cap, sum(w - min(w, cap) for w in wanted)


def _truth_predict(wanted, n, cf, k):
    from a2s.checks.lab10.losses import _want

    return _want(wanted, n, cf, k)


def _ref_predict(wanted, n, cf, k):
    from minitorch.model.moe_router import dropped_count, expert_capacity

    cap = expert_capacity(n, len(wanted), cf, k)
    return cap, dropped_count(np.array(wanted), cap)


PREDICT = [
    honest("10.3", "numpy ceil", lambda: lab10.check_predicted_drops(predict)),
    honest("10.3", "exact fractions", lambda: lab10.check_predicted_drops(predict_fraction)),
    wrong(
        "10.3",
        "capacity floored",
        lambda: lab10.check_predicted_drops(
            lambda w, n, cf, k: (c := int(k * n * cf / len(w)), sum(max(0, x - c) for x in w))
        ),
        match="rounds up",
    ),
    wrong(
        "10.3",
        "k forgotten",
        lambda: lab10.check_predicted_drops(lambda w, n, cf, k: predict(w, n, cf, 1)),
        match="k assignments",
    ),
    wrong(
        "10.3",
        "counts overflowing experts",
        lambda: lab10.check_predicted_drops(
            lambda w, n, cf, k: (
                predict(w, n, cf, k)[0],
                sum(x > predict(w, n, cf, k)[0] for x in w),
            )
        ),
        match="assignments, not experts",
    ),
    wrong(
        "10.3",
        "capacity left a numpy float",
        lambda: lab10.check_predicted_drops(
            lambda w, n, cf, k: (np.ceil(k * n * cf / len(w)), predict(w, n, cf, k)[1])
        ),
        match="integers",
    ),
    cheat(
        "10.3",
        "the grader's closed form",
        lambda: lab10.check_predicted_drops(_truth_predict),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "10.3",
        "the reference",
        lambda: lab10.check_predicted_drops(_ref_predict),
        match="expert_capacity",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.3",
        "an int whose == always says yes",
        lambda: lab10.check_predicted_drops(lambda w, n, cf, k: (always_equal(0), always_equal(0))),
        match="subclass",
    ),
    cheat(
        "10.3",
        "replays the invariant",
        lambda: lab10.check_predicted_drops(lambda w, n, cf, k: (3, 3)),
        match="expected",
    ),
    cheat(
        "10.3",
        "torch ceil",
        lambda: lab10.check_predicted_drops(
            lambda w, n, cf, k: (
                int(__import__("torch").tensor(k * n * cf / len(w)).ceil()),
                predict(w, n, cf, k)[1],
            )
        ),
        match="torch",
        error=ForbiddenCallError,
    ),
]


# --------------------------------------------------------------------------- 10.4 losses
def aux(logits):
    n, e = logits.shape
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    p = np.exp(logits - lse[:, None])
    f = np.bincount(p.argmax(axis=1), minlength=e) / n
    return float(e * (f * p.mean(axis=0)).sum()), float((lse**2).mean())


def aux_loops(logits):
    n, e = logits.shape
    counts, psum, z = [0] * e, [0.0] * e, 0.0
    for row in logits.tolist():
        top = max(row)
        s = sum(math.exp(v - top) for v in row)
        lse = top + math.log(s)
        z += lse * lse
        p = [math.exp(v - lse) for v in row]
        counts[p.index(max(p))] += 1
        psum = [a + b for a, b in zip(psum, p, strict=True)]
    return e * sum(c / n * q / n for c, q in zip(counts, psum, strict=True)), z / n


def _torch_aux(logits):
    from a2s.checks.lab10.losses import torch_aux_losses

    return torch_aux_losses(logits)


def _ref_aux(logits):
    from minitorch.model.moe_router import load_balancing_loss, router_z_loss

    p = softmax(logits)
    return load_balancing_loss(p, p.argmax(1)), router_z_loss(logits)


AUX = [
    honest("10.4", "logsumexp by hand", lambda: lab10.check_aux_losses(aux)),
    honest("10.4", "plain Python loops", lambda: lab10.check_aux_losses(aux_loops)),
    wrong(
        "10.4",
        "no factor E",
        lambda: lab10.check_aux_losses(lambda z: (aux(z)[0] / z.shape[1], aux(z)[1])),
        match="Multiply by E",
    ),
    wrong(
        "10.4",
        "f replaced by P",
        lambda: lab10.check_aux_losses(
            lambda z: (z.shape[1] * float((softmax(z).mean(0) ** 2).sum()), aux(z)[1])
        ),
        match="argmax",
    ),
    wrong(
        "10.4",
        "logsumexp not squared",
        lambda: lab10.check_aux_losses(
            lambda z: (
                aux(z)[0],
                float((np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)).mean()),
            )
        ),
        match="Square",
    ),
    wrong(
        "10.4",
        "unshifted logsumexp",
        lambda: lab10.check_aux_losses(
            lambda z: (aux(z)[0], float((np.log(np.exp(z).sum(1)) ** 2).mean()))
        ),
        match="overflow",
    ),
    cheat(
        "10.4",
        "the grader's torch twin",
        lambda: lab10.check_aux_losses(_torch_aux),
        match="torch|" + TRUTH,
        error=(ForbiddenCallError, ReferenceCalledError),
    ),
    cheat(
        "10.4",
        "the reference",
        lambda: lab10.check_aux_losses(_ref_aux),
        match="load_balancing_loss",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.4",
        "a float whose == always says yes",
        lambda: lab10.check_aux_losses(lambda z: (always_equal(1.0), always_equal(1.0))),
        match="subclass",
    ),
    cheat(
        "10.4",
        "replays the invariant",
        lambda: lab10.check_aux_losses(lambda z: (2.96, 1.0)),
        match="balance loss",
    ),
]


# --------------------------------------------------------------------------- 10.5 dispatch
def dispatch(x, experts, keep, e):
    k = experts.shape[1]
    kept = np.flatnonzero(keep.reshape(-1))
    flat = experts.reshape(-1)[kept]
    order = kept[np.argsort(flat, kind="stable")]
    return x[order // k], np.bincount(flat, minlength=e), order


def combine(out, order, gates, n):
    y = np.zeros((n, out.shape[1]))
    np.add.at(y, order // gates.shape[1], out * gates.reshape(-1)[order][:, None])
    return y


def dispatch_loops(x, experts, keep, e):
    n, k = experts.shape
    order = [
        t * k + j
        for i in range(e)
        for t in range(n)
        for j in range(k)
        if keep[t, j] and experts[t, j] == i
    ]
    counts = [sum(1 for f in order if experts[f // k, f % k] == i) for i in range(e)]
    return np.array([x[f // k] for f in order]).reshape(len(order), x.shape[1]), counts, order


def combine_loops(out, order, gates, n):
    k = gates.shape[1]
    y = np.zeros((n, out.shape[1]))
    for r, f in enumerate(order):
        y[f // k] += gates[f // k, f % k] * out[r]
    return y


def combine_fancy(out, order, gates, n):
    y = np.zeros((n, out.shape[1]))
    y[order // gates.shape[1]] += out * gates.reshape(-1)[order][:, None]  # repeats lost
    return y


def dispatch_padded(x, experts, keep, e):
    sent, counts, order = dispatch(x, experts, keep, e)
    cap = int(keep.sum() // e + 1) if keep.size else 1
    return np.concatenate([sent, np.zeros((e * cap - len(sent), x.shape[1]))]), counts, order


def dispatch_unstable(x, experts, keep, e):
    k = experts.shape[1]
    kept = np.flatnonzero(keep.reshape(-1))[::-1]  # reversed within an expert
    flat = experts.reshape(-1)[kept]
    order = kept[np.argsort(flat, kind="stable")]
    return x[order // k], np.bincount(flat, minlength=e), order


def _truth_dispatch(x, experts, keep, e):
    from a2s.checks.lab10.dispatch import loop_dispatch

    order, counts = loop_dispatch(experts, keep, e)
    return x[np.array(order, dtype=np.int64) // experts.shape[1]], counts, order


def _ref_dispatch(x, experts, keep, e):
    from minitorch.model import moe_dispatch

    order = moe_dispatch.dispatch_order(experts, keep, e)
    return dispatch(x, experts, keep, e)[0], np.bincount(experts[keep], minlength=e), order


def _torch_combine(out, order, gates, n):
    import torch

    y = torch.zeros(n, out.shape[1], dtype=torch.float64)
    k = gates.shape[1]
    rows = torch.from_numpy(np.asarray(order) // k)
    y.index_add_(0, rows, torch.from_numpy(out * gates.reshape(-1)[order][:, None]))
    return y.numpy()


def dc(d, c):
    return lambda: lab10.check_dispatch_combine(d, c)


DISPATCH = [
    honest("10.5", "stable argsort, np.add.at", dc(dispatch, combine)),
    honest("10.5", "plain loops, lists", dc(dispatch_loops, combine_loops)),
    wrong("10.5", "buffer padded to capacity", dc(dispatch_padded, combine), match="padding"),
    wrong("10.5", "y[rows] += drops repeated rows", dc(dispatch, combine_fancy), match="add.at"),
    wrong(
        "10.5",
        "token order reversed in an expert",
        dc(dispatch_unstable, combine),
        match="sort stably",
    ),
    wrong(
        "10.5",
        "combine without the gates",
        dc(dispatch, lambda o, r, g, n: combine(o, r, np.ones_like(g), n)),
        match="gates",
    ),
    cheat(
        "10.5",
        "the grader's loop_dispatch",
        dc(_truth_dispatch, combine),
        match=TRUTH,
        error=ReferenceCalledError,
    ),
    cheat(
        "10.5",
        "the reference's dispatch_order",
        dc(_ref_dispatch, combine),
        match="dispatch_order",
        error=ReferenceCalledError,
    ),
    cheat(
        "10.5",
        "torch index_add_",
        dc(dispatch, _torch_combine),
        match="torch",
        error=ForbiddenCallError,
    ),
    cheat(
        "10.5",
        "an array whose == always says yes",
        dc(
            lambda x, ex, kp, e: (
                (always_equal(dispatch(x, ex, kp, e)[0]), *dispatch(x, ex, kp, e)[1:])
            ),
            combine,
        ),
        match="subclass",
    ),
]

ATTEMPTS = GATING + SLOTS + PREDICT + AUX + DISPATCH


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=attempt_id)
def test_attempt(attempt):
    judge(attempt)
