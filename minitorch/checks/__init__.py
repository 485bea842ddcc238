"""Graders: one module per lab (``lab00``, ``lab01``, ...) built on :mod:`minitorch.checks.core`."""
