"""A PyTorch backend for a new chip: device memory, dispatch, fallback, compile, ONNX, plugin.

The chip (``device``: numpy buffers behind handles, an allocator, link counters), a torch
tensor subclass whose data lives there (``tensor``, with its op table in ``kernels``), the CPU
fallback and its report (``fallback``), a ``torch.compile`` backend lowering FX graphs to the
course IR of lab 13 and running lab 14's passes (``compile_backend``), ONNX export, check,
onnxruntime and import back (``onnx_io``) and the chip found as a plugin by entry point
(``plugin``). These modules import torch (it is the subject here); this package's
``__init__`` imports nothing, so preloading ``minitorch.chip`` is cheap.

Import modules by full name (``minitorch.chip.tensor``); nothing is re-exported here.
"""
