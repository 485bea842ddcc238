"""Every plotting helper of the course (matplotlib). No plot is defined only in a notebook.

Each helper returns a ``matplotlib.figure.Figure`` with a title, labelled axes and units; the
notebook calls ``plt.show()``. Nothing else in the package imports ``viz``.
"""
