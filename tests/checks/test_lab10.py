"""Graders of lab 10: the reference passes; wrong routing, wrong counts, a capacity-breaking
router, a padded (budget-breaking) dispatch and reference calls fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch.model.moe_dispatch as dsp
import minitorch.model.moe_router as r
from a2s.checks import lab10
from a2s.checks.core import ReferenceCalledError
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")
top_k, slots = unblocked(r.top_k_gating), unblocked(r.assign_slots)
capacity, dropped = unblocked(r.expert_capacity), unblocked(r.dropped_count)
probs_of, balance, z_loss = (
    unblocked(r.router_probs),
    unblocked(r.load_balancing_loss),
    unblocked(r.router_z_loss),
)
order_of, gather, combine = (
    unblocked(dsp.dispatch_order),
    unblocked(dsp.dispatch),
    unblocked(dsp.combine),
)


# --------------------------------------------------------------------------- 10.1 gating
def test_top_k_gating_passes(capsys):
    lab10.check_top_k_gating(top_k)
    assert "✔ Exercise 10.1 passed" in capsys.readouterr().out


def gating_unnormalized(logits, k):
    p = probs_of(logits)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    return experts, np.take_along_axis(p, experts, axis=1)


def gating_ascending(logits, k):
    experts, gates = top_k(logits, k)
    return experts[:, ::-1], gates[:, ::-1]


def gating_on_logits(logits, k):
    experts = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return experts, np.take_along_axis(logits, experts, axis=1)


def gating_unstable_ties(logits, k):
    """Ties go to the higher expert index."""
    p = np.round(probs_of(logits), 12)
    experts = np.argsort(-p - 1e-15 * np.arange(logits.shape[1]), axis=1)[:, :k]
    return experts, top_k(logits, k)[1]


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (gating_unnormalized, "renormalizes"),
        (gating_ascending, "ascending"),
        (gating_on_logits, "softmax probability"),
        (gating_unstable_ties, "lower expert index"),
    ],
)
def test_top_k_gating_rejects_wrong_routers(fn, match):
    rejects(lab10.check_top_k_gating, fn, match=match)


def test_top_k_gating_rejects_the_reference_softmax():
    def via_router_probs(logits, k):
        p = r.router_probs(logits)
        experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
        return experts, np.take_along_axis(p, experts, axis=1)

    rejects(
        lab10.check_top_k_gating, via_router_probs, match="router_probs", error=ReferenceCalledError
    )


def test_top_k_gating_rejects_the_reference():
    rejects(
        lab10.check_top_k_gating, r.top_k_gating, match="top_k_gating", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 10.2 slots
def test_assign_slots_passes(capsys):
    lab10.check_assign_slots(slots)
    assert "✔ Exercise 10.2 passed" in capsys.readouterr().out


def slots_token_major(experts, e, cap):
    n, k = experts.shape
    position, _ = slots(experts.reshape(n * k, 1), e, cap)
    position = position.reshape(n, k)
    return position, position < cap


def slots_off_by_one(experts, e, cap):
    position, _ = slots(experts, e, cap)
    return position, position <= cap  # keeps capacity + 1: breaks the capacity


def slots_no_drop(experts, e, cap):
    position, _ = slots(experts, e, cap)
    return position, np.ones_like(position, dtype=bool)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (slots_token_major, "first choice"),
        (slots_off_by_one, "over its capacity"),
        (slots_no_drop, "over its capacity"),
    ],
)
def test_assign_slots_rejects_wrong_priority_and_capacity(fn, match):
    rejects(lab10.check_assign_slots, fn, match=match)


def test_assign_slots_rejects_the_reference():
    rejects(
        lab10.check_assign_slots, r.assign_slots, match="assign_slots", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 10.3 prediction
def predict(wanted, n, cf, k):
    c = capacity(n, len(wanted), cf, k)
    return c, dropped(np.array(wanted), c)


def test_predicted_drops_passes(capsys):
    lab10.check_predicted_drops(predict)
    assert "✔ Exercise 10.3 passed" in capsys.readouterr().out


def _floor(wanted, n, cf, k):
    c = math.floor(k * n * cf / len(wanted))
    return c, sum(max(0, w - c) for w in wanted)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (_floor, "rounds up"),
        (lambda w, n, cf, k: predict(w, n, cf, 1), "k assignments"),
        (
            lambda w, n, cf, k: (
                predict(w, n, cf, k)[0],
                sum(x > predict(w, n, cf, k)[0] for x in w),
            ),
            "not experts",
        ),
    ],
)
def test_predicted_drops_rejects_wrong_counts(fn, match):
    rejects(lab10.check_predicted_drops, fn, match=match)


def test_predicted_drops_rejects_values_that_decide_their_own_equality():
    rejects(lab10.check_predicted_drops, lambda w, n, cf, k: (always_equal(0), 0), match="plain")


def test_predicted_drops_rejects_the_reference():
    def via_reference(wanted, n, cf, k):
        return r.expert_capacity(n, len(wanted), cf, k), 0

    rejects(
        lab10.check_predicted_drops,
        via_reference,
        match="expert_capacity",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 10.4 losses
def aux(logits):
    p = probs_of(logits)
    return balance(p, p.argmax(axis=1)), z_loss(logits)


def test_aux_losses_pass(capsys):
    lab10.check_aux_losses(aux)
    assert "✔ Exercise 10.4 passed" in capsys.readouterr().out


def aux_without_e(logits):
    b, z = aux(logits)
    return b / logits.shape[1], z


def aux_soft_f(logits):
    p = probs_of(logits)
    return logits.shape[1] * float((p.mean(0) ** 2).sum()), z_loss(logits)


def aux_unsquared(logits):
    m = logits.max(axis=1, keepdims=True)
    return aux(logits)[0], float((np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]).mean())


def aux_unstable(logits):
    with np.errstate(over="ignore"):
        return aux(logits)[0], float((np.log(np.exp(logits).sum(axis=1)) ** 2).mean())


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (aux_without_e, "Multiply by E"),
        (aux_soft_f, "argmax"),
        (aux_unsquared, "Square"),
        (aux_unstable, "shift by the max"),
    ],
)
def test_aux_losses_reject_wrong_formulas(fn, match):
    rejects(lab10.check_aux_losses, fn, match=match)


def test_aux_losses_reject_the_reference():
    rejects(
        lab10.check_aux_losses,
        lambda z: (0.0, r.router_z_loss(z)),
        match="router_z_loss",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 10.5 dispatch
def dispatch(x, experts, keep, e):
    order, counts = order_of(experts, keep, e)
    return gather(x, order, experts.shape[1]), counts, order


def test_dispatch_combine_passes(capsys):
    lab10.check_dispatch_combine(dispatch, combine)
    assert "✔ Exercise 10.5 passed" in capsys.readouterr().out


def dispatch_padded(x, experts, keep, e):
    """Right values, but every expert padded to its capacity: GShard's dense buffer."""
    sent, counts, order = dispatch(x, experts, keep, e)
    cap = int(keep.size)  # a generous fixed buffer per expert
    return np.concatenate([sent, np.zeros((e * cap - len(sent), x.shape[1]))]), counts, order


def dispatch_unstable(x, experts, keep, e):
    k = experts.shape[1]
    kept = np.flatnonzero(keep.reshape(-1))[::-1]
    order = kept[np.argsort(experts.reshape(-1)[kept], kind="stable")]
    return x[order // k], np.bincount(experts.reshape(-1)[kept], minlength=e), order


def dispatch_experts_descending(x, experts, keep, e):  # grouped, but the last expert first
    k = experts.shape[1]
    kept = np.flatnonzero(keep.reshape(-1))
    order = kept[np.argsort(-experts.reshape(-1)[kept], kind="stable")]
    return x[order // k], np.bincount(experts.reshape(-1)[kept], minlength=e), order


def dispatch_with_dropped(x, experts, keep, e):
    return dispatch(x, experts, np.ones_like(keep), e)


def combine_assigning(y, order, gates, n):
    k = gates.shape[1]
    out = np.zeros((n, y.shape[1]))
    out[order // k] = y * gates.reshape(-1)[order][:, None]  # assign, not add
    return out


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        ((dispatch_padded, combine), "padding every expert"),
        ((dispatch_unstable, combine), "sort stably"),
        ((dispatch_experts_descending, combine), r"Group by expert \(all of expert 0 first\)"),
        ((dispatch_with_dropped, combine), "dropped tokens are not sent"),
        ((dispatch, combine_assigning), "np.add.at"),
    ],
)
def test_dispatch_combine_rejects_padded_and_wrong(fns, match):
    rejects(lab10.check_dispatch_combine, *fns, match=match)


def test_dispatch_combine_rejects_the_reference():
    rejects(
        lab10.check_dispatch_combine,
        dispatch,
        dsp.combine,
        match="combine",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- review additions
def gating_unshifted(logits, k):
    with np.errstate(all="ignore"):
        p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    experts = np.argsort(-p, axis=1, kind="stable")[:, :k]
    gates = np.take_along_axis(p, experts, 1)
    return experts, gates / gates.sum(1, keepdims=True) if k > 1 else gates


def gating_ties_to_higher(logits, k):
    z = np.exp(logits - logits.max(1, keepdims=True))
    p = z / z.sum(1, keepdims=True)
    experts = np.argsort(p, axis=1)[:, ::-1][:, :k]
    gates = np.take_along_axis(p, experts, 1)
    return experts, gates / gates.sum(1, keepdims=True) if k > 1 else gates


def aux_unshifted(logits):
    n, e = logits.shape
    with np.errstate(all="ignore"):
        s = np.exp(logits).sum(1)
        lse, p = np.log(s), np.exp(logits) / s[:, None]
    f = np.bincount(logits.argmax(1), minlength=e) / n
    return e * float((f * p.mean(0)).sum()), float((lse**2).mean())


def aux_counts_not_fractions(logits):
    e = logits.shape[1]
    m = logits.max(1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(1)) + m[:, 0]
    p = np.exp(logits - lse[:, None])
    f = np.bincount(p.argmax(1), minlength=e)
    return float(e * (f * p.mean(0)).sum()), float((lse**2).mean())


def test_review_wrong_answers():
    rejects(lab10.check_top_k_gating, gating_unshifted, match="subtract each row's max")
    rejects(lab10.check_top_k_gating, gating_ties_to_higher, match=r"got \[2, 1\], expected")
    rejects(lab10.check_aux_losses, aux_unshifted, match="shift by the max of each row")
    rejects(lab10.check_aux_losses, aux_counts_not_fractions, match="FRACTION of tokens")


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("10.1", "Exercise code may not call torch", "test_attempt"),
    (
        "10.1",
        "nor the `minitorch` reference of the function the exercise asks you to write",
        "test_top_k_gating_rejects_the_reference",
    ),
    (
        "10.1",
        "The softmax must stay finite for logits of $10^3$",
        "test_top_k_gating_rejects_wrong_routers",
    ),
    ("10.1", "one row near $10^3$ beside one near $-10^3$", "test_attempt"),
    ("10.1", "ties to the lower index", "test_top_k_gating_rejects_wrong_routers"),
    (
        "10.1",
        "*Invariant:* for $k \\ge 2$ every row of `gates` sums to 1",
        "test_top_k_gating_rejects_wrong_routers",
    ),
    (
        "10.2",
        "no expert may keep more tokens than its capacity",
        "test_assign_slots_rejects_wrong_priority_and_capacity",
    ),
    (
        "10.2",
        "the dropped count must be exact",
        "test_assign_slots_rejects_wrong_priority_and_capacity",
    ),
    (
        "10.2",
        "a second choice never takes a slot a first choice needs",
        "test_assign_slots_rejects_wrong_priority_and_capacity",
    ),
    ("10.3", "returning the pair\n`(capacity, dropped)` of integers", "test_attempt"),
    (
        "10.3",
        "*Invariant:* `predict_drops((6, 2, 1, 1), 10, 1.0, 1) == (3, 3)`",
        "test_predicted_drops_rejects_wrong_counts",
    ),
    (
        "10.4",
        "with $f$ from each token's argmax (ties to the lower index)",
        "test_aux_losses_reject_wrong_formulas",
    ),
    (
        "10.4",
        "*Invariant:* `aux_losses(np.tile([5.0, 0, 0], (6, 1)))[0]` is $3 P_0 \\approx 2.96$",
        "test_aux_losses_reject_wrong_formulas",
    ),
    (
        "10.5",
        "`sent` must hold exactly the kept rows (padded buffers, and dropped tokens sent "
        "anyway, are rejected)",
        "test_dispatch_combine_rejects_padded_and_wrong",
    ),
    (
        "10.5",
        "`counts` and `order` must equal a plain loop's",
        "test_dispatch_combine_rejects_padded_and_wrong",
    ),
    (
        "10.5",
        "`combine` of `dispatch` with gates 1 must give every token back in place",
        "test_dispatch_combine_rejects_padded_and_wrong",
    ),
    (
        "10.5",
        "*Invariant:* `order` is a permutation of `np.flatnonzero(keep)`",
        "test_dispatch_combine_rejects_padded_and_wrong",
    ),
]
