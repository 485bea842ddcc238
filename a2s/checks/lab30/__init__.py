"""Graders of lab 30 (telemetry, power and faults): counters with wrap-around, a power-capping
governor, the clock of least energy, a heartbeat watchdog, and the runtime's response to
faults.

Ground truth is written in :mod:`._truth`: counters integrated and decoded by loops, the power
and RC thermal model in closed form, a poll loop, and a fleet of GPUs that keeps its own
record of every submission. ``minitorch.driver``'s lab 30 modules are blocked while the
learner's code runs.
"""

from a2s.checks.lab30.counters import check_counter_rates
from a2s.checks.lab30.energy import check_energy_clock
from a2s.checks.lab30.governor import CAP, DECODE_TRACE, TABLE, check_governor
from a2s.checks.lab30.recovery import check_run_commands
from a2s.checks.lab30.watchdog import check_watchdog

__all__ = [
    "CAP",
    "DECODE_TRACE",
    "TABLE",
    "check_counter_rates",
    "check_energy_clock",
    "check_governor",
    "check_run_commands",
    "check_watchdog",
]
