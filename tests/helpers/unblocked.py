"""Copies of reference functions that the graders' guard does not reach.

The guard swaps the code of the original function objects only, so a clone made with the same
code object (and clones of the package functions it calls, by name in its globals) runs freely.
Tests use this to show that the reference itself passes a grader.
"""

from __future__ import annotations

import types


def unblocked(
    fn: types.FunctionType, package: str = "minitorch", memo: dict | None = None
) -> types.FunctionType:
    """Clone ``fn`` and, recursively, every ``package.*`` function its globals name."""
    memo = {} if memo is None else memo
    if fn in memo:
        return memo[fn]
    env = dict(fn.__globals__)
    clone = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    memo[fn] = clone
    for name, value in list(env.items()):
        if isinstance(value, types.FunctionType) and value.__module__.startswith(package):
            env[name] = unblocked(value, package, memo)
    return clone
