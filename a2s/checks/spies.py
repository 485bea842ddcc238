"""Spies for rules about *how* a result is computed: which helper ran, how many matmuls.

* :func:`counting_matmuls`: an ndarray subclass that counts the matrix products it enters
  (``@``, ``np.matmul``, ``np.dot``, ``np.einsum``, ``np.tensordot``); views, reshapes and
  transposes of it keep counting.
* :func:`spied_global`: while the block runs, the student's global ``name`` (their helper from
  the same notebook) is replaced by a wrapper, so the grader sees the calls their other
  function makes to it.
* :func:`helper_products`: both at once: how often ``fn`` called its helper ``name`` and how
  many matrix products the helper's results entered (03.3: one im2col, one matmul).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["counting_matmuls", "helper_products", "spied_global"]

_PRODUCTS = frozenset({np.matmul, np.dot, np.einsum, np.tensordot, np.inner, np.vdot})


def counting_matmuls() -> tuple[type[np.ndarray], list[int]]:
    """Return (an ndarray subclass, its counter): ``x.view(cls)`` counts products with x."""
    count = [0]

    def strip(args: Any) -> Any:
        if isinstance(args, Counted):
            return args.view(np.ndarray)
        if isinstance(args, (tuple, list)):
            return type(args)(strip(a) for a in args)
        return args

    class Counted(np.ndarray):
        def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
            if ufunc is np.matmul:
                count[0] += 1
            if "out" in kwargs:
                kwargs["out"] = strip(kwargs["out"])
            return getattr(ufunc, method)(*strip(inputs), **kwargs)  # a product is plain

        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
            if func in _PRODUCTS:
                count[0] += 1
                return func(*strip(args), **strip_kw(kwargs))
            return super().__array_function__(func, types, args, kwargs)  # views keep counting

    def strip_kw(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {k: strip(v) for k, v in kwargs.items()}

    return Counted, count


@contextmanager
def spied_global(
    fn: Any, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> Iterator[bool]:
    """Replace ``fn``'s global ``name`` by ``wrap(original)`` for the block.

    Yields whether there was such a global (a function without one cannot be spied on).
    """
    namespace = getattr(fn, "__globals__", None)
    original = namespace.get(name) if namespace is not None else None
    if namespace is None or not callable(original):
        yield False
        return
    namespace[name] = wrap(original)
    try:
        yield True
    finally:
        namespace[name] = original


@contextmanager
def helper_products(fn: Any, name: str) -> Iterator[list[int]]:
    """Yield ``[calls, products]``: calls of ``fn``'s global ``name`` while the block runs, and
    the matrix products its array results (and their views) entered."""
    counted, products = counting_matmuls()
    tally = [0, 0]

    def wrap(helper: Callable[..., Any]) -> Callable[..., Any]:
        def spied(*args: Any, **kwargs: Any) -> Any:
            tally[0] += 1
            out = helper(*args, **kwargs)
            return out.view(counted) if type(out) is np.ndarray else out

        return spied

    with spied_global(getattr(fn, "fn", fn), name, wrap):  # a guarded student: its function
        yield tally
        tally[1] = products[0]
