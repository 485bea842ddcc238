"""Every modelled mistake of a table, fed to its grader as the answer, is rejected with its own
message (issue: "one generic test per mistake table").

A table's mistakes are written once, in the grader; here each one is turned into a learner's
function and graded, so a message that can never be reached (another mistake or the rule
always shown first) fails. Tables whose mistakes are recognisers (``Mistake(when=...)``), not
answers, are covered by the hand-written wrong answers in ``test_labNN.py``.
"""

from __future__ import annotations

import re

import pytest

from a2s.checks import lab04
from a2s.checks.lab04 import adamw, sgd
from tests.helpers.graders import rejects
from tests.helpers.unblocked import unblocked

# the graders' own rules are blocked for learner code (blocking by default): clones run freely
_SGD_RULE = unblocked(sgd._sgd_rule, "a2s.checks")
_ADAMW_RULE = unblocked(adamw._adamw_rule, "a2s.checks")


@pytest.mark.parametrize(
    ("wrong", "message"), sgd._SGD_MISTAKES, ids=[w for w, _ in sgd._SGD_MISTAKES]
)
def test_each_sgd_mistake_gets_its_message(wrong: str, message: str) -> None:
    def sgd_step(param, grad, buf, **cfg):
        state = {} if buf is None else {"buf": buf}
        new = _SGD_RULE(cfg, wrong)(param, grad, state, 0)
        return new, state.get("buf")

    rejects(lab04.check_sgd_step, sgd_step, match=re.escape(message))


@pytest.mark.parametrize(
    ("wrong", "message"), adamw._ADAMW_MISTAKES, ids=[w for w, _ in adamw._ADAMW_MISTAKES]
)
def test_each_adamw_mistake_gets_its_message(wrong: str, message: str) -> None:
    def adamw_step(param, grad, m, v, step, **cfg):
        state = {"m": m, "v": v}
        new = _ADAMW_RULE(cfg, wrong)(param, grad, state, step)
        return new, state["m"], state["v"]

    rejects(lab04.check_adamw_step, adamw_step, match=re.escape(message))
