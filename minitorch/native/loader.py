"""Load a shared object with ctypes and call its kernels on numpy arrays, no copies.

``ctypes.CDLL(path)`` is ``dlopen``: the dynamic loader maps the ``.so`` into the process,
resolves its undefined symbols against the libraries already loaded (``tanh`` from libm) and
runs its initialisers; ``lib.a2s_bias_gelu`` is then ``dlsym``, the address of the machine
code. Python knows nothing of C types, so each function gets its ``argtypes`` (pointers to
C-contiguous float64 arrays, ``long`` sizes) and ``restype``; a numpy array is passed as the
address of its buffer, so the kernel writes into the output array in place.

:func:`kernels` builds ``kernels.cpp`` (cached, :mod:`minitorch.native.build`), loads it once
per process and returns :class:`Kernels`, whose methods check shapes and dtypes before the C
code sees a pointer (the C code trusts its arguments: a wrong size is a wild write).

Lab: 37_python_to_machine_code
Paper: the Python documentation, ``ctypes``; ``dlopen(3)``; Drepper, *How To Write Shared
Libraries* (2011).
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minitorch.native.build import build, kernel_source

__all__ = ["Kernels", "LoadError", "kernels", "load"]

_F64 = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_LONG = ctypes.c_long
SIGNATURES: dict[str, list[object]] = {
    "a2s_matmul_ijk": [_F64, _F64, _F64, _LONG],
    "a2s_matmul_ikj": [_F64, _F64, _F64, _LONG],
    "a2s_matmul_tiled": [_F64, _F64, _F64, _LONG, _LONG, _LONG, _LONG],
    "a2s_bias_gelu": [_F64, _F64, _F64, _LONG, _LONG],
    "a2s_bias_gelu_backward": [_F64, _F64, _F64, _F64, _LONG, _LONG],
}


class LoadError(OSError):
    """``dlopen`` refused the library (often an undefined symbol), with the loader's words."""


def load(path: str | Path) -> ctypes.CDLL:
    """``dlopen`` ``path`` with every symbol resolved now; :class:`LoadError` if it cannot be."""
    try:
        return ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    except OSError as err:
        raise LoadError(f"cannot load {path}: {err}") from err


def _f64(x: object, what: str, ndim: int) -> np.ndarray:
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


@dataclass(frozen=True)
class Kernels:
    """The loaded kernels, as numpy functions (inputs cast to contiguous float64)."""

    lib: ctypes.CDLL
    path: Path

    def matmul(self, a: np.ndarray, b: np.ndarray, order: str = "ikj") -> np.ndarray:
        """``A @ B`` for square matrices by the ``ijk`` or ``ikj`` loop nest."""
        if order not in ("ijk", "ikj"):
            raise ValueError(f"order must be 'ijk' or 'ikj', got {order!r}")
        a, b = _f64(a, "a", 2), _f64(b, "b", 2)
        n = a.shape[0]
        if a.shape != (n, n) or b.shape != (n, n):
            raise ValueError(f"square matrices of one size needed, got {a.shape} and {b.shape}")
        c = np.zeros((n, n))
        getattr(self.lib, f"a2s_matmul_{order}")(a, b, c, n)
        return c

    def matmul_tiled(self, a: np.ndarray, b: np.ndarray, tile: int = 32) -> np.ndarray:
        """``A @ B`` for ``A (n, k)``, ``B (k, m)`` by tiles of ``tile`` (lab 06's order)."""
        a, b = _f64(a, "a", 2), _f64(b, "b", 2)
        (n, k), (k2, m) = a.shape, b.shape
        if k != k2:
            raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
        if int(tile) < 1:
            raise ValueError(f"tile must be >= 1, got {tile}")
        c = np.zeros((n, m))
        self.lib.a2s_matmul_tiled(a, b, c, n, k, m, int(tile))
        return c

    def _bias(self, x: object, b: object) -> tuple[np.ndarray, np.ndarray]:
        x, b = _f64(x, "x", 2), _f64(b, "b", 1)
        if b.shape != (x.shape[1],):
            raise ValueError(f"bias of shape ({x.shape[1]},) needed, got {b.shape}")
        return x, b

    def bias_gelu(self, x: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``gelu(x + b)`` (tanh form) in one pass over ``x``."""
        x, b = self._bias(x, b)
        y = np.empty_like(x)
        self.lib.a2s_bias_gelu(x, b, y, *x.shape)
        return y

    def bias_gelu_backward(self, x: np.ndarray, b: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``g * gelu'(x + b)``: the gradient with respect to ``x`` (sum its rows for ``b``)."""
        x, b = self._bias(x, b)
        g = _f64(g, "g", 2)
        if g.shape != x.shape:
            raise ValueError(f"g must have x's shape {x.shape}, got {g.shape}")
        dh = np.empty_like(x)
        self.lib.a2s_bias_gelu_backward(x, b, g, dh, *x.shape)
        return dh


def bind(lib: ctypes.CDLL) -> None:
    """Give every kernel of :data:`SIGNATURES` its argument and result types."""
    for name, args in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = None


@functools.lru_cache(maxsize=4)
def _loaded(path: Path) -> Kernels:
    lib = load(path)
    bind(lib)
    return Kernels(lib, path)


def kernels(cache: Path | None = None) -> Kernels:
    """Build (or reuse) ``kernels.cpp`` as a shared object, load it once, return the kernels."""
    return _loaded(build(kernel_source(), "kernels", cache=cache).output)
