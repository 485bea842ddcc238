"""Copies of reference functions that the graders' guard does not reach.

The guard swaps the code of the original function objects only, and the forbidden-call watch
recognises a copy by its code's file and name, so a clone whose code names another file (and
clones of the package functions it calls, by name in its globals) runs freely. Under
``a2s grade`` the sealed kernel also flags reading a course function's ``__code__``.
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
    # a clone keeping the code's file and name is caught as "a copy of the reference": rename it
    code = fn.__code__.replace(co_filename=f"<unblocked clone of {fn.__module__}>")
    clone = types.FunctionType(code, env, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    memo[fn] = clone
    for name, value in list(env.items()):
        if isinstance(value, types.FunctionType) and value.__module__.startswith(package):
            env[name] = unblocked(value, package, memo)
    return clone
