"""Graders of lab 37 (from Python to machine code): symbols from nm, an undefined-symbol link,
a ctypes call of a compiled kernel, and page faults predicted from pages touched.

Ground truth is written in ``_truth``: the grader compiles its own C++ with the system g++,
lists it with nm, links it with GNU ld and reads ld's own messages, builds its own kernel
(with a count of the work only it reads) and measures page faults in a child process. The
reference (``minitorch.native``) is blocked while the learner's code runs.
"""

from a2s.checks.lab37.ctypes_call import check_axpy
from a2s.checks.lab37.link import check_unresolved
from a2s.checks.lab37.pages import check_pages_touched
from a2s.checks.lab37.symbols import check_offers_and_needs

__all__ = ["check_axpy", "check_offers_and_needs", "check_pages_touched", "check_unresolved"]
