"""Graders of lab 19 (continuous batching): the scheduling step, preemption by recompute,
the engine's batched step, and the predicted number of steps of static and continuous batching.

Ground truth is written here: plain loops for the scheduler's rules, the tiny GPT's own
no-cache ``generate`` run one request at a time for the engine, and list scheduling for the
step counts. The ``minitorch.runtime`` scheduler and engine are blocked and torch is
forbidden in student code.
"""

from a2s.checks.lab19.engine import check_engine_step
from a2s.checks.lab19.predict import check_predict_steps
from a2s.checks.lab19.schedule import check_preemption, check_schedule_step

__all__ = ["check_engine_step", "check_predict_steps", "check_preemption", "check_schedule_step"]
