"""Graders: one module or package per lab (``lab00``, ``lab01/``, ...) on :mod:`.core`.

Shared by concept, not per lab: :mod:`.cases` (cases as data, one runner, fresh cases),
:mod:`.compare` (reading and comparing results), :mod:`.vjp` (torch ground truth for backward
rules), :mod:`.twins` (torch copies of the course's models), :mod:`.trajectory` (optimizers step
by step against torch), :mod:`.graphs` (expression graphs, topological orders) and
:mod:`.spies` (how a result was computed: helper calls, matmul counts).
"""

from a2s.checks import runall as _runall

_runall.install()  # one line instead of a traceback for an exercise not written yet (Jupyter)
