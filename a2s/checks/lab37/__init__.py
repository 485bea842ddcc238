"""Graders of lab 37 (from Python to machine code): symbols from nm, an undefined-symbol link,
a ctypes call of a compiled kernel, page faults predicted from pages touched, the profiler's op
counts of a GPT forward, and the tiled kernel's address trace against cachegrind.

Ground truth is written in ``_truth``: the grader compiles its own C++ with the system g++,
lists it with nm, links it with GNU ld and reads ld's own messages, builds its own kernel
(with a count of the work only it reads), measures page faults in a child process, runs its own
model under torch's profiler in a child process, and runs its own build of the kernel under
valgrind's cachegrind. The reference (``minitorch.native``) is blocked while the learner's code
runs.
"""

from a2s.checks.lab37.cachesim import check_tiled_trace
from a2s.checks.lab37.ctypes_call import check_axpy
from a2s.checks.lab37.link import check_unresolved
from a2s.checks.lab37.opcounts import check_op_counts
from a2s.checks.lab37.pages import check_pages_touched
from a2s.checks.lab37.symbols import check_offers_and_needs

__all__ = [
    "check_axpy",
    "check_offers_and_needs",
    "check_op_counts",
    "check_pages_touched",
    "check_tiled_trace",
    "check_unresolved",
]
