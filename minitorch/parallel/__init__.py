"""Parallel training: DDP and ZeRO; tensor, sequence, pipeline, context, expert parallel; a planner.

Import modules by full name (``minitorch.parallel.data``); nothing is re-exported here.
"""
