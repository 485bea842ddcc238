"""Every plotting helper of the course (matplotlib). No plot is defined only in a notebook.

Each helper returns a ``matplotlib.figure.Figure`` with a title, labelled axes and units; the
notebook calls ``plt.show()``. Notebooks, tests and :mod:`a2s` (``a2s report --png``)
import ``viz``; no reference subpackage does (docs/architecture.md, "Import rules").
"""
