"""A small graph compiler: an SSA IR and a tracer, graph passes, memory planning, loop nests.

Import modules by full name (``minitorch.compiler.ir``); nothing is re-exported here.
"""
