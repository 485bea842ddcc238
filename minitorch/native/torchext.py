"""The same bias + GELU as a PyTorch C++ extension, and op counts from torch's profiler.

``torch.utils.cpp_extension.load_inline`` writes the C++ source and a ``build.ninja``,
compiles them with the system g++ against torch's headers (``torch/extension.h``, pybind11)
and imports the result as a Python module; each function listed is bound by pybind11.
Building one takes a minute or more (torch's headers are large), so it is cached in a
directory named by a hash of the source, torch's version and the compiler's, under the
same cache as :mod:`minitorch.native.build`. :func:`bias_gelu_function` wraps forward and
backward in a ``torch.autograd.Function``, as an extension op joins torch's autograd.

:func:`op_counts` runs a function under ``torch.profiler.profile`` on the CPU and returns
how many times each operator (``aten::addmm`` ...) was called, from ``key_averages()``.

torch is imported inside the functions only (this module is the one place of
``minitorch.native`` that uses it); the rest of the package needs numpy alone.

Lab: 37_python_to_machine_code
Paper: the PyTorch documentation, "Custom C++ and CUDA Extensions",
``torch.utils.cpp_extension`` and ``torch.profiler``.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minitorch.native.build import ToolMissing, cache_root, compiler, compiler_version

__all__ = ["EXTENSION_SOURCE", "bias_gelu_function", "load_extension", "op_counts"]

EXTENSION_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

namespace {
constexpr double kA = 0.7978845608028654, kB = 0.044715;  // sqrt(2 / pi), the cubic term
}

// y = gelu(x + b), x (n, d) and b (d,) contiguous float64, one pass.
torch::Tensor bias_gelu_forward(torch::Tensor x, torch::Tensor b) {
  TORCH_CHECK(x.dim() == 2 && b.dim() == 1 && x.size(1) == b.size(0), "x (n, d), b (d,)");
  TORCH_CHECK(x.scalar_type() == torch::kFloat64 && b.scalar_type() == torch::kFloat64,
              "float64 tensors");
  x = x.contiguous();
  b = b.contiguous();
  auto y = torch::empty_like(x);
  const double *px = x.data_ptr<double>(), *pb = b.data_ptr<double>();
  double* py = y.data_ptr<double>();
  const int64_t n = x.size(0), d = x.size(1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double h = px[i * d + j] + pb[j];
      py[i * d + j] = 0.5 * h * (1.0 + std::tanh(kA * (h + kB * h * h * h)));
    }
  return y;
}

// dh = g * gelu'(x + b); the caller sums dh over rows for b's gradient.
torch::Tensor bias_gelu_backward(torch::Tensor x, torch::Tensor b, torch::Tensor g) {
  x = x.contiguous();
  b = b.contiguous();
  g = g.contiguous();
  TORCH_CHECK(g.sizes() == x.sizes(), "g must have x's shape");
  auto dh = torch::empty_like(x);
  const double *px = x.data_ptr<double>(), *pb = b.data_ptr<double>(), *pg = g.data_ptr<double>();
  double* pd = dh.data_ptr<double>();
  const int64_t n = x.size(0), d = x.size(1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double h = px[i * d + j] + pb[j];
      const double t = std::tanh(kA * (h + kB * h * h * h));
      const double du = kA * (1.0 + 3.0 * kB * h * h);
      pd[i * d + j] = pg[i * d + j] * (0.5 * (1.0 + t) + 0.5 * h * (1.0 - t * t) * du);
    }
  return dh;
}
"""

_FUNCTIONS = ["bias_gelu_forward", "bias_gelu_backward"]


def load_extension(cache: Path | None = None, verbose: bool = False) -> Any:
    """Build (or reuse) and import the extension module; :class:`ToolMissing` without tools."""
    cxx = compiler()
    if shutil.which("ninja") is None:
        raise ToolMissing(
            "ninja is not installed: torch.utils.cpp_extension builds with it. On Debian or"
            " Ubuntu: apt-get install ninja-build. The torch extension part of lab 37 is"
            " skipped without it."
        )
    import torch
    from torch.utils.cpp_extension import load_inline

    blob = "\0".join([EXTENSION_SOURCE, torch.__version__, compiler_version(cxx)])
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    where = (Path(cache) if cache is not None else cache_root()) / f"torch-{key}"
    where.mkdir(parents=True, exist_ok=True)
    return load_inline(
        name=f"a2s_bias_gelu_{key}",
        cpp_sources=[EXTENSION_SOURCE],
        functions=_FUNCTIONS,
        build_directory=str(where),
        extra_cflags=["-O2"],
        verbose=verbose,
    )


def bias_gelu_function(module: Any) -> Any:
    """A ``torch.autograd.Function`` whose forward and backward are the extension's."""
    import torch

    class BiasGelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, b: Any) -> Any:
            ctx.save_for_backward(x, b)
            return module.bias_gelu_forward(x, b)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, b = ctx.saved_tensors
            dh = module.bias_gelu_backward(x, b, g)
            return dh, dh.sum(0)

    return BiasGelu


def op_counts(fn: Callable[..., Any], *args: Any, prefix: str = "aten::") -> dict[str, int]:
    """``{operator: calls}`` of ``fn(*args)`` under torch's CPU profiler (``prefix`` kept)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    return {e.key: int(e.count) for e in prof.key_averages() if e.key.startswith(prefix)}
