"""Root pytest configuration: the course's nbval plugin for every run.

It skips cells tagged ``gpu`` and tests marked ``gpu`` when CUDA is absent, and lets a dead
kernel fail its cell at once instead of after the whole cell timeout.
"""

pytest_plugins = ["minitorch.course.nbval_plugin"]
